"""The agent loop: claim from an inbox, handle, commit forward; sleep until woken.

Wake-ups (`Spool.watch`) only hint; what `Spool.claim` finds is the truth, since wake-ups
are duplicated, dropped under load, and come before a file is complete. A
`Worker` runs one or more stages in one thread; `run_workers` runs several of them (a
`Crew`, which grows while handlers hang) and, with `once`, stops when no riddle can move
any more. Stopping waits a grace period for the handlers still running, then kills them.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from riddlectl import inflight, logbook, trace
from riddlectl.agent.slots import Slots
from riddlectl.errors import SpoolUnusable
from riddlectl.pipeline.jobs import Pipeline
from riddlectl.pipeline.stages import MANAGE, SOLVE, Stage, StageContext, stage_named
from riddlectl.spool.contract import Claim
from riddlectl.spool.crashpoints import CARRIED, reach
from riddlectl.spool.states import Queue

log = logbook.logger(__name__)

IDLE_POLL = 1.0  # seconds between rescans when nothing wakes the loop
# Seconds before looking again at riddles another agent held, doubling while they stay
# held: the usual holder is the previous stage finishing its commit (a directory flush,
# about 0.2 ms, after the rename that woke us), the rare one a peer still handling it.
# Looked at every 0.2 ms for the first 2 ms: pauses doubling from the start (0.2, 0.5, 1)
# overshot a directory flush of about 1 ms by up to 0.7 ms, once per stage of the trip.
CONTENDED_PAUSES = (0.0002,) * 10 + (0.0005, 0.001, 0.002)
MIN_PAUSE = 0.02  # first idle pause of `run --once`, doubling up to IDLE_POLL
SWEEP_EVERY = 1.0  # seconds between sweeps of waiting/ for parents to resume
RECOVER_EVERY = 5.0  # seconds between looks for events of dead agents left to log
BATCH = 8  # riddles claimed at once per stage
MAX_SPARES = 8  # worker threads an agent adds while handler calls hang
STOP_GRACE = 10.0  # seconds handler calls still running may take once an agent is stopping
GIVE_BACK_WAIT = 5.0  # seconds for workers to give their riddles back once calls are ended


@dataclass
class Worker:
    """One thread's share of the work: the given stages, in pipeline order."""

    pipeline: Pipeline
    contexts: dict[str, StageContext]
    stop: threading.Event = field(default_factory=threading.Event)
    batch: int = BATCH
    contended: int = 0  # riddles skipped in the last tick because another agent held them
    drained: bool = False  # the last tick emptied every inbox it looked at (`Spool.drained`)
    spare: bool = False  # added while handlers hang; retires when idle
    on_slow: Callable[[], None] | None = None  # called when one of its handler calls is slow
    # Each bounded stage's slots (`--concurrency N`), shared by the agent's workers.
    slots: dict[str, Slots] = field(default_factory=dict)
    _last_sweep: float = 0.0
    _last_recovery: float = field(default_factory=time.monotonic)

    @property
    def stages(self) -> list[Stage]:
        return [stage_named(name) for name in self.contexts]

    def tick(self) -> int:
        """One pass over every stage; how many riddles it took on (claimed from its
        inboxes, or parents it resumed): none means there was nothing to do."""
        moved = 0
        self.contended = 0
        self.drained = True
        trace.woke()
        stages = self.stages
        for stage in reversed(stages):  # downstream first: finish before starting
            moved += self._drain(stage)
        # Parents wait for children that solve or manage finish; those agents resume them.
        sweeps = SOLVE in stages or MANAGE in stages
        if sweeps and time.monotonic() - self._last_sweep > SWEEP_EVERY:
            self._last_sweep = time.monotonic()
            resumed = self.pipeline.parents.sweep()
            moved += resumed
            self.drained = self.drained and not resumed
        if time.monotonic() - self._last_recovery > RECOVER_EVERY:
            self._last_recovery = time.monotonic()
            self.pipeline.recover_events()
        return moved

    def _drain(self, stage: Stage) -> int:
        spool = self.pipeline.spool
        slots = self.slots.get(stage.name)
        if slots is not None and not slots.take():
            self.drained = False  # its riddles wait for a slot here, or for another agent
            return 0
        try:
            claims = spool.claim_and_begin(stage.inbox, limit=self.batch)
        except BaseException:
            if slots is not None:
                slots.give()
            raise
        trace.claimed()
        self.contended += spool.contended
        self.drained = self.drained and spool.drained
        self._run(stage, claims, slots)
        return len(claims)

    def _run(self, stage: Stage, claims: list[Claim], taken: Slots | None = None) -> None:
        """Run `stage` on `claims` (`taken`: the stage's slot this worker holds, given back
        here); with several stages, carry each riddle it moves on to another of them
        straight on in this thread (`run_batch`'s `carried`): its commit is made as ever,
        but no wake-up, listing or claim stands between the two stages. Riddles carried to
        a stage with no slot free are given back, for a worker with one to take."""
        onward = {other.inbox: other for other in self.stages} if len(self.contexts) > 1 else {}
        pending: list[tuple[Stage, list[Claim]]] = [(stage, claims)]
        try:
            while pending and not self.stop.is_set():
                stage, claims = pending.pop()
                slots = self.slots.get(stage.name)
                if taken is None and slots is not None and not slots.take():
                    pending.append((stage, claims))
                    break
                taken = None
                carried: dict[Queue, list[Claim]] = {queue: [] for queue in onward}
                try:
                    self.pipeline.attempts.run_batch(
                        claims,
                        stage,
                        self.contexts[stage.name],
                        self.stop,
                        self.on_slow,
                        carried if onward else None,
                    )
                finally:
                    if slots is not None:
                        slots.give()
                    pending += [(onward[q], kept) for q, kept in carried.items() if kept]
                if any(carried.values()):
                    reach(CARRIED)
                    trace.carried()
        finally:
            if taken is not None:  # stopping before the first batch ran
                taken.give()
            for _, left in pending:  # stopping, or an error: given back where they are
                for claim in left:
                    if claim.open:
                        with contextlib.suppress(OSError):
                            self.pipeline.spool.release(claim)

    def pending(self) -> int:
        """Riddles in this worker's inboxes: they can still move, now or later."""
        spool = self.pipeline.spool
        return sum(len(spool.ids(stage.inbox)) for stage in self.stages)


class DiskTrouble:
    """Back-off while the spool cannot be written (full disk, read-only mount) or used (a
    database server that is down, restarting or refusing).

    Logs it (`spool-waiting`) once per streak and once a minute after, waits 0.5 s,
    doubling up to 30 s, and starts over, saying so (`spool-back`), when a tick succeeds.
    Nothing is lost meanwhile: a commit is atomic, so the riddle stays where it was, and
    its claim is given back.
    """

    def __init__(self, agent: str | None = None) -> None:
        self.agent = agent
        self.failures = 0
        self.last_said = 0.0
        self.unusable = False  # the last trouble was the spool's, not the disk's

    def back_off(self, exc: OSError | SpoolUnusable) -> float:
        self.failures += 1
        self.unusable = isinstance(exc, SpoolUnusable)
        delay = min(30.0, 0.5 * 2.0 ** (self.failures - 1))
        if self.failures == 1 or time.monotonic() - self.last_said > 60:
            self.last_said = time.monotonic()
            what = exc if isinstance(exc, SpoolUnusable) else f"cannot write the spool: {exc}"
            log.warning(
                "spool-waiting",
                extra={"agent": self.agent, "error": str(what), "retry": f"in {delay:g} s"},
            )
        return delay

    def clear(self) -> None:
        if self.failures:
            again = "can be used" if self.unusable else "is writable"
            log.info("spool-back", extra={"agent": self.agent, "spool": f"{again} again"})
        self.failures = 0


def run_workers(
    workers: list[Worker],
    *,
    once: bool,
    stop: threading.Event,
    inboxes: Iterable[Queue] = (),
    on_tick: Callable[[], None] | None = None,
    spare: Callable[[], Worker] | None = None,
    hurry: threading.Event | None = None,
    grace: float = STOP_GRACE,
) -> None:
    """Run workers in threads until `stop` is set, or (with `once`) until nothing can move.

    While handler calls hang, spare workers made by `spare` join in (see `Crew`). Once
    `stop` is set, the handler calls still running have `grace` seconds (none once `hurry`
    is set) before they are ended and their riddles given back (see `inflight`). Arrivals
    in `inboxes` wake idle workers.
    """
    wake = threading.Event()
    watching = workers[0].pipeline.spool.watch(inboxes, wake) if workers else None
    crew = Crew(workers, spare, once=once, stop=stop, wake=wake, on_tick=on_tick)
    try:
        crew.start()
        while crew.alive() and not stop.is_set():
            crew.join(0.2)
        wake.set()  # idle workers see `stop` now, not at their next look
        _wind_down(crew, hurry or threading.Event(), grace)
    finally:
        stop.set()
        if watching is not None:
            watching.stop()


def _wind_down(crew: Crew, hurry: threading.Event, grace: float) -> None:
    """Wait up to `grace` s for the handler calls still running, then end them."""
    running = len(crew.calls.running())
    agent = crew.trouble.agent
    if running and crew.alive():
        log.info("stopping", extra={"agent": agent, "running": running, "grace": grace})
    deadline = time.monotonic() + grace
    while crew.alive() and time.monotonic() < deadline and not hurry.is_set():
        crew.join(0.05)
    if not crew.alive():
        return
    groups, threads = crew.calls.stop()
    if groups:
        # Their riddles are given back, unchanged, for the next agent.
        log.warning("handlers-killed", extra={"agent": agent, "killed": groups})
    if threads:
        # Python cannot kill a thread: abandoned, their riddles given back.
        log.warning("handlers-abandoned", extra={"agent": agent, "threads": threads})
    deadline = time.monotonic() + GIVE_BACK_WAIT
    while crew.alive() and time.monotonic() < deadline:
        crew.join(0.05)


class Crew:
    """The worker threads of one agent: its own workers, and spares while handlers hang.

    When a worker's handler call runs past `inflight.SLOW` seconds, the worker gives back
    the riddles of its batch it has not started, and the crew adds a spare worker if fewer
    workers than it started with are free (at most `MAX_SPARES`), so other riddles move on
    while one hangs. A spare retires when it finds nothing to do and enough workers are
    free without it.
    """

    def __init__(
        self,
        workers: list[Worker],
        spare: Callable[[], Worker] | None,
        *,
        once: bool,
        stop: threading.Event,
        wake: threading.Event,
        on_tick: Callable[[], None] | None,
    ) -> None:
        self.workers = list(workers)
        self.base = len(workers)
        self.make_spare = spare
        self.once = once
        self.stop = stop
        self.wake = wake
        self.on_tick = on_tick
        self.calls = inflight.Calls()
        self.lock = threading.Lock()
        self.busy: dict[int, int] = {}  # id(worker) -> ticks under way
        self.threads: list[threading.Thread] = []
        self.idle_rounds = 0
        self.trouble = DiskTrouble(workers[0].pipeline.actor.name if workers else None)

    def start(self) -> None:
        for worker in self.workers:
            self._launch(worker)

    def alive(self) -> bool:
        with self.lock:
            return any(thread.is_alive() for thread in self.threads)

    def join(self, seconds: float) -> None:
        with self.lock:
            thread = next((t for t in self.threads if t.is_alive()), None)
        if thread is not None:
            thread.join(seconds)

    def _launch(self, worker: Worker) -> None:
        worker.stop = self.stop
        worker.on_slow = self.add_spare
        thread = threading.Thread(target=self._loop, args=(worker,), daemon=True)
        with self.lock:
            self.busy[id(worker)] = 0
            self.threads = [t for t in self.threads if t.is_alive()] + [thread]
        thread.start()

    def add_spare(self) -> None:
        """A worker's handler call turned slow: add a spare worker if one is wanted."""
        if self.make_spare is None or self.stop.is_set():
            return
        with self.lock:
            spares = len(self.workers) - self.base
            if len(self.workers) - self.calls.slow() >= self.base or spares >= MAX_SPARES:
                return
            if not self._room():
                return  # every stage at its bound: a spare could only wait
            try:
                worker = self.make_spare()
            except OSError:
                return  # the disk is in trouble: the workers there say so
            worker.spare = True
            self.workers.append(worker)
        self._launch(worker)

    def _room(self) -> bool:
        """Whether some stage of this agent can take on a riddle now (see `Slots`)."""
        worker = self.workers[0]
        return any(
            (slots := worker.slots.get(name)) is None or slots.free() for name in worker.contexts
        )

    def _retire(self, worker: Worker) -> bool:
        with self.lock:
            if not worker.spare or len(self.workers) - self.calls.slow() <= self.base:
                return False
            self.workers.remove(worker)
            self.busy.pop(id(worker), None)
            return True

    def _loop(self, worker: Worker) -> None:
        pause = MIN_PAUSE
        contended = 0  # looks in a row that found riddles held by others
        with inflight.bound(self.calls):
            while not self.stop.is_set():
                moved = self._tick(worker)
                if moved is None:
                    continue
                if self.on_tick is not None:
                    self.on_tick()
                if moved:
                    pause, contended = MIN_PAUSE, 0
                    if not self.once and worker.drained:
                        # Every inbox was emptied: a riddle arriving meanwhile has set
                        # `wake`, so wait for it instead of asking the spool again at once
                        # (on PostgreSQL a query per stage and riddle at low load).
                        self.wake.wait(IDLE_POLL)
                        self.wake.clear()
                    continue
                if worker.contended:
                    # Their holder is moving them on right now (our wake-up came from its
                    # rename): look again in a moment rather than after a full idle pause.
                    self.stop.wait(CONTENDED_PAUSES[min(contended, len(CONTENDED_PAUSES) - 1)])
                    contended += 1
                    continue
                contended = 0
                if self._retire(worker):
                    return
                if self.once and self._finished():
                    self.stop.set()
                    return
                # Idle back-off: a wake-up from watchdog cuts it short, work resets it.
                if self.wake.wait(pause if self.once else IDLE_POLL):
                    pause = MIN_PAUSE
                else:
                    pause = min(pause * 2, IDLE_POLL)
                self.wake.clear()

    def _tick(self, worker: Worker) -> int | None:
        """One tick of `worker`: riddles it took on, or None after an error (backed off)."""
        with self.lock:
            self.busy[id(worker)] += 1
        try:
            moved = worker.tick()
            self.trouble.clear()
            return moved
        except (OSError, SpoolUnusable) as exc:
            self.stop.wait(self.trouble.back_off(exc))
        except Exception as exc:  # a bug: said, and the loop goes on after a pause
            log.error(
                "agent-error",
                extra={"agent": self.trouble.agent, "error": f"{type(exc).__name__}: {exc}"},
            )
            self.stop.wait(1.0)
        finally:
            with self.lock:
                self.busy[id(worker)] -= 1
        return None

    def _finished(self) -> bool:
        """True when no worker is busy and no inbox holds a riddle, twice in a row.

        Twice, because a parent resumed by the waiting sweep of another thread lands in an
        inbox between two looks.
        """
        with self.lock:
            if any(self.busy.values()):
                self.idle_rounds = 0
                return False
            worker = self.workers[0]  # every worker runs the same stages on the same spool
        waiting = worker.pipeline.spool.ids(Queue.WAITING)
        if worker.pending() or (waiting and worker.pipeline.parents.sweep()):
            with self.lock:
                self.idle_rounds = 0
            return False
        with self.lock:
            self.idle_rounds += 1
            return self.idle_rounds >= 2
