"""`run` and `agent`: agents for some stages in this process, until stopped or (once) idle."""

from __future__ import annotations

import gc
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, TypeVar

from riddlectl import logbook, runtime
from riddlectl.agent.slots import Slots
from riddlectl.agent.worker import Worker, run_workers
from riddlectl.errors import SpoolUnavailable
from riddlectl.identity import Actor
from riddlectl.settings import Settings
from riddlectl.spool.agents import Seat
from riddlectl.spool.contract import Spool
from riddlectl.spool.states import INBOX, STAGES, Queue

if TYPE_CHECKING:
    from riddlectl.handlers.base import NamedHandler
    from riddlectl.pipeline.stages import StageContext

log = logbook.logger(__name__)


@dataclass
class RunSummary:
    """What one `run`/`agent` moved to a final queue, and how long it took."""

    done: list[str] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)
    handled: int = 0
    seconds: float = 0.0
    held: int = 0
    keep_ids: bool = True
    done_before: int = 0  # counted, no longer listed (keep_ids False)
    failed_before: int = 0

    @property
    def done_count(self) -> int:
        return self.done_before + len(self.done)

    @property
    def failed_count(self) -> int:
        return self.failed_before + len(self.failed)

    def as_dict(self) -> dict[str, object]:
        return {
            "done": len(self.done),
            "failed": len(self.failed),
            "held": self.held,
            "handled": self.handled,
            "seconds": round(self.seconds, 3),
            "failed_ids": self.failed,
        }


def run(
    settings: Settings,
    stages: tuple[str, ...] = STAGES,
    *,
    once: bool = False,
    concurrency: int | None = None,
    stop: threading.Event | None = None,
    hurry: threading.Event | None = None,
    name: str = "run",
    on_tick: Callable[[RunSummary], None] | None = None,
    handlers: dict[str, list[NamedHandler]] | None = None,
) -> RunSummary:
    """Run agents for `stages` in `concurrency` threads; see `agent.run_workers`. With
    `concurrency` N, at most N handler calls are in flight per stage, spares included
    (`agent.slots`); without, one thread, and spares while handlers hang. Setting `stop`
    stops them, giving handler calls still running `settings.stop_grace` seconds;
    setting `hurry` too ends those at once.

    Every handler is resolved first (`handlers`, else `runtime.stage_handlers` now):
    one that cannot be is a `ConfigError` before the spool is opened or waited for."""
    loaded = handlers if handlers is not None else runtime.stage_handlers(settings, stages)
    stop = stop or threading.Event()
    summary = RunSummary(keep_ids=once)
    started = time.monotonic()
    actor = Actor(f"{name}:{'+'.join(stages)}")
    contexts: dict[str, StageContext] = {}
    seats: list[Seat] = []  # this agent's record in the spool, once it is registered
    threads = concurrency or 1
    slots = {s: Slots(concurrency) for s in stages if s != "manage"} if concurrency else {}

    def make_worker() -> Worker:
        # A spool object each: one keeps what a thread's claims need (its inbox backlogs).
        worker_spool = runtime.open_spool(settings, actor, create=False)
        pipeline = runtime.pipeline(settings, worker_spool, actor)
        pipeline.on_move = lambda riddle_id, queue: _count(summary, riddle_id, queue, seats)
        pipeline.attempts.seat = seats[0] if seats else None
        # The stages read extractions through the spool object the thread claims with: on
        # PostgreSQL a claim brings a riddle's extractions, kept by that object's cache.
        own = {name: replace(ctx, store=worker_spool.extractions) for name, ctx in contexts.items()}
        return Worker(pipeline, own, slots=slots)

    def start() -> tuple[Spool, list[Worker]]:
        # Only `init` makes a spool: an agent's role need not be allowed to make one.
        spool = runtime.open_spool(settings, actor, create=False)
        contexts.clear()
        contexts.update(
            (stage, runtime.stage_context(settings, stage, spool, loaded.get(stage)))
            for stage in STAGES
            if stage in stages
        )
        if not seats:
            seats.extend(_seat(spool, _record(actor, contexts, threads) | {"once": once}))
        workers = [make_worker() for _ in range(threads)]
        spool.recover(workers[0].pipeline.committed)  # what agents that died left behind
        return spool, workers

    begun = start() if once else patiently(start, stop, actor.name)
    if begun is None:
        _stopped(actor, summary, started, getattr(stop, "why", ""), "before the spool answered")
        return summary
    spool, workers = begun
    log.info(
        "started",
        extra={
            "agent": actor.name,
            "pid": actor.pid,
            "stages": list(contexts),
            "handlers": {stage: [h.name for h in ctx.handlers] for stage, ctx in contexts.items()},
            "concurrency": concurrency or "1+spares",
            "spool": spool.name,
            "once": once,
        },
    )
    # What is loaded by now (modules, schemas, handlers) lives as long as the agent: kept
    # out of the collector's passes, which walked it again and again (solve: 0.31 ->
    # 0.22 ms of CPU per riddle).
    gc.freeze()
    tick = (lambda: on_tick(summary)) if on_tick else None
    try:
        run_workers(
            workers,
            once=once,
            stop=stop,
            inboxes=[INBOX[s] for s in contexts],
            on_tick=tick,
            spare=make_worker,
            hurry=hurry,
            grace=settings.stop_grace,
        )
    finally:
        for seat in seats:
            seat.close()
        spool.close()
        summary.seconds = time.monotonic() - started
        summary.held = len(spool.ids(Queue.HOLD))
        why = getattr(stop, "why", "") or ("nothing left to move" if once else "stopped")
        _stopped(actor, summary, started, why)
    return summary


def _stopped(actor: Actor, summary: RunSummary, started: float, why: str, when: str = "") -> None:
    log.info(
        "stopped",
        extra={
            "agent": actor.name,
            "why": f"{why or 'stopped'} {when}".strip(),
            "done": summary.done_count,
            "failed": summary.failed_count,
            "handled": summary.handled,
            "seconds": round(time.monotonic() - started, 3),
        },
    )


def _seat(spool: Spool, record: dict[str, Any]) -> list[Seat]:
    """The agent's record in the spool, or none when the spool cannot take it now (a full
    or read-only disk): the record is for `riddlectl agents` to show, and an agent that
    waits out such a disk must not stop for want of it."""
    try:
        return [spool.register_agent(record)]
    except OSError as exc:
        log.warning(
            "no-record",
            extra={
                "agent": spool.actor.name if spool.actor else None,
                "error": exc.strerror or str(exc),
            },
        )
        return []


def _record(actor: Actor, contexts: dict[str, StageContext], concurrency: int) -> dict[str, Any]:
    """What an agent says of itself in the spool (see `Spool.register_agent`)."""
    return {
        "agent": actor.name,
        "stages": list(contexts),
        "handlers": {stage: [h.name for h in ctx.handlers] for stage, ctx in contexts.items()},
        "concurrency": concurrency,
    }


AWAIT_FIRST, AWAIT_CAP = 0.5, 30.0  # seconds between tries, doubling


T = TypeVar("T")


def patiently(start: Callable[[], T], stop: threading.Event, agent: str | None = None) -> T | None:
    """`start()`, tried again with back-off while the spool cannot be used for now (a
    database server down or starting up, or one refusing this role); logged once
    (`spool-waiting`), and once when it went through (`spool-back`). None when `stop` was
    set meanwhile. Any other `SpoolUnusable` (no spool there) is raised: waiting would not
    help."""
    delay, waited = AWAIT_FIRST, False
    while not stop.is_set():
        try:
            begun = start()
        except SpoolUnavailable as exc:
            if not waited:
                log.warning(
                    "spool-waiting",
                    extra={"agent": agent, "error": str(exc), "retry": f"in {delay:g} s"},
                )
                waited = True
            stop.wait(delay)
            delay = min(AWAIT_CAP, delay * 2)
            continue
        if waited:
            # The words of the worker's DiskTrouble: one line to look for, whichever
            # waited (starting up here, or an agent at work there).
            log.info("spool-back", extra={"agent": agent, "spool": "can be used again"})
        return begun
    return None


def await_spool(settings: Settings, stop: threading.Event) -> bool:
    """Wait until the spool can be used (see `patiently`); False when stopped first."""

    def usable() -> bool:
        runtime.open_spool(settings, create=False).close()
        return True

    return patiently(usable, stop) is not None


_count_lock = threading.Lock()
KEEP_IDS = 10_000


def _count(summary: RunSummary, riddle_id: str, queue: Queue, seats: list[Seat]) -> None:
    for seat in seats:
        seat.tally(handled=1, failed=int(queue is Queue.FAILED))
    with _count_lock:
        summary.handled += 1  # every hand-off, not only final ones
        if queue is Queue.DONE:
            summary.done.append(riddle_id)
        elif queue is Queue.FAILED:
            summary.failed.append(riddle_id)
        if not summary.keep_ids and len(summary.done) + len(summary.failed) > KEEP_IDS:
            # A long-running agent keeps counts, not an ever-growing list of ids.
            summary.done_before += len(summary.done)
            summary.failed_before += len(summary.failed)
            summary.done.clear()
            summary.failed.clear()
