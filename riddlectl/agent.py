"""The agent loop: claim from an inbox, handle, commit forward; sleep until woken.

watchdog events only wake the loop; the directory scan in `Spool.claim` is the truth,
since events are duplicated, dropped under load, and fire before a file is complete. A
`Worker` runs one or more stages in one thread; `run_workers` runs several of them and,
with `once`, stops when no riddle can move any more.
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

from riddlectl import wakeups
from riddlectl.pipeline import Pipeline
from riddlectl.queues import INBOX, Queue
from riddlectl.stages import StageContext

IDLE_POLL = 1.0  # seconds between rescans when nothing wakes the loop
# Seconds before looking again at riddles another agent held, doubling while they stay
# held: the usual holder is the previous stage finishing its commit (a directory flush,
# about 0.2 ms, after the rename that woke us), the rare one a peer still handling it.
CONTENDED_PAUSES = (0.0002, 0.0005, 0.001, 0.002)
MIN_PAUSE = 0.02  # first idle pause of `run --once`, doubling up to IDLE_POLL
SWEEP_EVERY = 1.0  # seconds between sweeps of waiting/ for parents to resume
RECOVER_EVERY = 5.0  # seconds between looks for events of dead agents left to log
BATCH = 8  # riddles claimed at once per stage


@dataclass
class Worker:
    """One thread's share of the work: the given stages, in pipeline order."""

    pipeline: Pipeline
    contexts: dict[str, StageContext]
    stop: threading.Event = field(default_factory=threading.Event)
    batch: int = BATCH
    contended: int = 0  # riddles skipped in the last tick because another agent held them
    _last_sweep: float = 0.0
    _last_recovery: float = field(default_factory=time.monotonic)

    @property
    def stages(self) -> list[str]:
        return list(self.contexts)

    def tick(self) -> int:
        """One pass over every stage; how many riddles were handled."""
        handled = 0
        self.contended = 0
        for stage in reversed(self.stages):  # downstream first: finish before starting
            handled += self._drain(stage)
        if {"solve", "manage"} & set(
            self.stages
        ) and time.monotonic() - self._last_sweep > SWEEP_EVERY:
            self._last_sweep = time.monotonic()
            handled += self.pipeline.sweep_waiting()
        if time.monotonic() - self._last_recovery > RECOVER_EVERY:
            self._last_recovery = time.monotonic()
            self.pipeline.recover_events()
        return handled

    def _drain(self, stage: str) -> int:
        spool = self.pipeline.spool
        claims = spool.claim(INBOX[stage], limit=self.batch)
        self.contended += spool.contended
        self.pipeline.handle_many(claims, stage, self.contexts[stage], self.stop)
        return len(claims)

    def pending(self) -> int:
        """Riddles in this worker's inboxes: they can still move, now or later."""
        spool = self.pipeline.spool
        return sum(len(spool.ids(INBOX[stage])) for stage in self.stages)


class DiskTrouble:
    """Back-off while the spool cannot be written (full disk, read-only mount).

    Says so on stderr once per streak and once a minute after, waits 0.5 s, doubling up
    to 30 s, and starts over when a tick succeeds. Nothing is lost meanwhile: a commit is
    atomic, so the riddle stays where it was, and its claim is given back.
    """

    def __init__(self) -> None:
        self.failures = 0
        self.last_said = 0.0

    def back_off(self, exc: OSError) -> float:
        self.failures += 1
        delay = min(30.0, 0.5 * 2 ** (self.failures - 1))
        if self.failures == 1 or time.monotonic() - self.last_said > 60:
            self.last_said = time.monotonic()
            sys.stderr.write(f"riddlectl: cannot write the spool: {exc}; retrying in {delay:g} s\n")
            sys.stderr.flush()
        return delay

    def clear(self) -> None:
        if self.failures:
            sys.stderr.write("riddlectl: the spool is writable again\n")
            sys.stderr.flush()
        self.failures = 0


def run_workers(
    workers: list[Worker],
    *,
    once: bool,
    stop: threading.Event,
    watch_dirs: Iterable[Path] = (),
    on_tick: Callable[[], None] | None = None,
) -> None:
    """Run workers in threads until `stop` is set, or (with `once`) until nothing can move."""
    wake = threading.Event()
    watching = wakeups.watch(watch_dirs, wake)
    busy = [0] * len(workers)
    lock = threading.Lock()
    idle_rounds = [0]

    trouble = DiskTrouble()

    def loop(index: int, worker: Worker) -> None:
        worker.stop = stop
        pause = MIN_PAUSE
        contended = 0  # looks in a row that found riddles held by others
        while not stop.is_set():
            with lock:
                busy[index] += 1
            try:
                handled = worker.tick()
                trouble.clear()
            except OSError as exc:
                handled = 0
                stop.wait(trouble.back_off(exc))
                continue
            except Exception as exc:
                handled = 0
                sys.stderr.write(f"riddlectl: agent error: {type(exc).__name__}: {exc}\n")
                stop.wait(1.0)
                continue
            finally:
                with lock:
                    busy[index] -= 1
            if on_tick is not None:
                on_tick()
            if handled:
                pause, contended = MIN_PAUSE, 0
                continue
            if worker.contended:
                # Their holder is moving them on right now (our wake-up came from its
                # rename): look again in a moment rather than after a full idle pause.
                stop.wait(CONTENDED_PAUSES[min(contended, len(CONTENDED_PAUSES) - 1)])
                contended += 1
                continue
            contended = 0
            if once and _finished(workers, busy, lock, idle_rounds):
                stop.set()
                break
            # Idle back-off: a wake-up from watchdog cuts it short, work resets it.
            if wake.wait(pause if once else IDLE_POLL):
                pause = MIN_PAUSE
            else:
                pause = min(pause * 2, IDLE_POLL)
            wake.clear()

    threads = [
        threading.Thread(target=loop, args=(i, w), daemon=True) for i, w in enumerate(workers)
    ]
    for thread in threads:
        thread.start()
    try:
        while any(t.is_alive() for t in threads):
            for thread in threads:
                thread.join(0.2)
    finally:
        stop.set()
        if watching is not None:
            watching.stop()


def _finished(
    workers: list[Worker], busy: list[int], lock: threading.Lock, idle_rounds: list[int]
) -> bool:
    """True when no worker is busy and no inbox holds a riddle, twice in a row.

    Twice, because a parent resumed by the waiting sweep of another thread lands in an
    inbox between two looks.
    """
    with lock:
        if any(busy):
            idle_rounds[0] = 0
            return False
    # Every worker runs the same stages on the same spool: one of them can tell.
    worker = workers[0]
    waiting = worker.pipeline.spool.ids(Queue.WAITING)
    if worker.pending() or (waiting and worker.pipeline.sweep_waiting()):
        idle_rounds[0] = 0
        return False
    idle_rounds[0] += 1
    return idle_rounds[0] >= 2
