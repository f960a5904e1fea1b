"""Wiring: from resolved `Settings` to a spool, an event log and a pipeline.

The CLI and the tests both build their objects here, so a command and a test of the same
thing run the same code.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from riddlectl import spool as spools
from riddlectl.identity import Actor
from riddlectl.pipeline.retry import RetryPolicy
from riddlectl.settings import Settings
from riddlectl.spool import spool_error
from riddlectl.spool.contract import Spool
from riddlectl.spool.events import EventLog
from riddlectl.spool.states import STAGE_OF_INBOX, Queue

# The pipeline, the handlers and the extraction cache are imported by the functions that
# wire them: commands that only read the spool (`status`, `show`) start without them.
if TYPE_CHECKING:
    from riddlectl.document.model import Riddle
    from riddlectl.pipeline.ledger import Pipeline
    from riddlectl.pipeline.stages import StageContext

__all__ = ["open_spool", "pipeline", "spool_error", "stage_context"]


def open_spool(
    settings: Settings,
    actor: Actor | None = None,
    *,
    create: bool = True,
    writable: bool = False,
) -> Spool:
    """The spool of `settings` (`riddlectl.spool.open_spool` chooses which kind).

    `create`: made (idempotently) if need be; only `init` and the library do this.
    Otherwise it must already be a spool (`SpoolUnusable` naming the path if it is
    missing, not a directory, not a spool or unreadable). `writable`: it must be writable
    too (else `SpoolUnusable`), and the directories a writer needs besides the queues are
    made. Nothing is created in a place that is refused.
    """
    return spools.open_spool(
        settings.spool,
        create=create,
        writable=writable,
        actor=actor,
        durable=settings.fsync,
        drop_in_grace=settings.drop_in_grace,
        limits=settings.limits,
        events_max_bytes=settings.events_max_bytes,
    )


def event_log(settings: Settings) -> EventLog:
    """The event log of the spool of `settings`, which must exist."""
    return open_spool(settings, create=False).events


def pipeline(settings: Settings, spool: Spool, actor: Actor) -> Pipeline:
    from riddlectl.pipeline.ledger import Pipeline

    policy = RetryPolicy(settings.max_attempts, settings.retry_base, settings.retry_cap)
    events = spool.events
    spool.on_corrupt = lambda queue, name, reason: events.append(
        {
            "time": time.time(),
            "id": None,
            "file": name,
            "stage": STAGE_OF_INBOX.get(queue),
            "from": queue.value,
            "to": "corrupt",
            "outcome": "corrupt",
            **actor.as_dict(),
            "rev": None,
            "error": reason,
        }
    )
    spool.on_abandoned = lambda queue, riddle, owner, count: events.append(
        abandoned_event(queue, riddle, owner, count)
    )
    return Pipeline(spool, events, actor, policy, settings.max_abandoned)


def abandoned_event(
    queue: Queue, riddle: Riddle, owner: dict[str, Any], count: int
) -> dict[str, Any]:
    """The event of a claim found abandoned: the dead holder as its agent, host and pid."""
    return {
        "time": time.time(),
        "id": riddle.id,
        "stage": STAGE_OF_INBOX.get(queue, queue.value),
        "from": queue.value,
        "to": queue.value,
        "outcome": "abandoned",
        "agent": owner.get("agent"),
        "host": owner.get("host"),
        "pid": owner.get("pid"),
        "rev": riddle.rev,
        "error": f"its agent died while handling it ({count} in a row)",
        "claimed": owner.get("time"),
    }


def recover_events(settings: Settings) -> int:
    """Log the events of commits whose writer died before logging them (`events`)."""
    from riddlectl.pipeline.ledger import event_committed

    spool = open_spool(settings, create=False)
    return spool.events.recover(lambda event: event_committed(spool, event))


def stage_context(settings: Settings, stage: str, spool: Spool) -> StageContext:
    from riddlectl.handlers.registry import load_stage
    from riddlectl.pipeline.stages import StageContext

    handlers = load_stage(stage, settings.handlers_for(stage)) if stage != "manage" else []
    return StageContext(
        data_dir=Path(settings.data_dir),
        spool_root=Path(settings.spool),
        store=spool.extractions,
        handlers=handlers,
        timeout=settings.timeout,
        max_trials=settings.max_trials,
        max_data_bytes=settings.max_data_bytes,
    )
