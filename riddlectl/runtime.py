"""Wiring: from resolved `Settings` to a spool, an event log and a pipeline.

The CLI and the tests both build their objects here, so a command and a test of the same
thing run the same code.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from riddlectl.errors import ConfigError
from riddlectl.events import EventLog
from riddlectl.extractions import ExtractionStore
from riddlectl.fsspool import FsSpool
from riddlectl.handlers import load_stage
from riddlectl.identity import Actor
from riddlectl.models import Riddle
from riddlectl.pipeline import Pipeline, event_committed
from riddlectl.queues import STAGE_OF_INBOX, Queue
from riddlectl.retry import RetryPolicy
from riddlectl.settings import Settings
from riddlectl.spool import Spool
from riddlectl.stages import StageContext


def open_spool(settings: Settings, actor: Actor | None = None, *, create: bool = True) -> FsSpool:
    """The spool of `settings`; made (idempotently) when `create`, else it must exist."""
    root = Path(settings.spool)
    if not create and not (root / "incoming").is_dir():
        raise ConfigError(f"no spool at {root} (create one with `riddlectl init`)", where="--spool")
    spool = FsSpool(
        root,
        durable=settings.fsync,
        actor=actor,
        drop_in_grace=settings.drop_in_grace,
        limits=settings.limits,
    )
    spool.init()
    return spool


def event_log(settings: Settings) -> EventLog:
    return EventLog(Path(settings.spool) / "events.jsonl", settings.events_max_bytes)


def pipeline(settings: Settings, spool: Spool, actor: Actor) -> Pipeline:
    policy = RetryPolicy(settings.max_attempts, settings.retry_base, settings.retry_cap)
    events = event_log(settings)
    if isinstance(spool, FsSpool):
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
    spool = FsSpool(Path(settings.spool), limits=settings.limits)
    return event_log(settings).recover(lambda event: event_committed(spool, event))


def stage_context(settings: Settings, stage: str) -> StageContext:
    handlers = load_stage(stage, settings.handlers_for(stage)) if stage != "manage" else []
    return StageContext(
        data_dir=Path(settings.data_dir),
        spool_root=Path(settings.spool),
        store=ExtractionStore(Path(settings.spool), durable=settings.fsync),
        handlers=handlers,
        timeout=settings.timeout,
        max_trials=settings.max_trials,
        max_data_bytes=settings.max_data_bytes,
    )
