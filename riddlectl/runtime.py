"""Wiring: from resolved `Settings` to a spool, an event log and a pipeline.

The CLI and the tests both build their objects here, so a command and a test of the same
thing run the same code.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from stat import S_ISDIR
from typing import TYPE_CHECKING, Any

from riddlectl.errors import SpoolUnusable
from riddlectl.identity import Actor
from riddlectl.pipeline.retry import RetryPolicy
from riddlectl.settings import Settings
from riddlectl.spool.contract import Spool
from riddlectl.spool.fs.events import EventLog
from riddlectl.spool.fs.fsspool import FsSpool
from riddlectl.spool.states import STAGE_OF_INBOX, Queue

# The pipeline, the handlers and the extraction cache are imported by the functions that
# wire them: commands that only read the spool (`status`, `show`) start without them.
if TYPE_CHECKING:
    from riddlectl.document.model import Riddle
    from riddlectl.pipeline.ledger import Pipeline
    from riddlectl.pipeline.stages import StageContext


def open_spool(
    settings: Settings,
    actor: Actor | None = None,
    *,
    create: bool = True,
    writable: bool = False,
) -> FsSpool:
    """The spool of `settings`.

    `create`: made (idempotently) if need be; only `init` and the library do this.
    Otherwise it must already be a spool (`SpoolUnusable` naming the path if it is
    missing, not a directory, not a spool or unreadable). `writable`: it must be writable
    too (else `SpoolUnusable`), and the directories a writer needs besides the queues are
    made. Nothing is created in a place that is refused.
    """
    root = Path(settings.spool)
    spool = FsSpool(
        root,
        durable=settings.fsync,
        actor=actor,
        drop_in_grace=settings.drop_in_grace,
        limits=settings.limits,
    )
    try:
        if not create:
            check_spool(root)
        if create or writable:
            if writable and root.is_dir():
                check_writable(root)
            spool.init()
            if writable:
                check_writable(root)
    except OSError as exc:
        raise spool_error(exc, root) from None
    return spool


def check_spool(root: Path) -> None:
    """`SpoolUnusable` unless `root` is a readable directory with the spool's layout."""
    try:
        info = os.stat(root)
    except FileNotFoundError:
        raise SpoolUnusable(NO_SPOOL, where=str(root)) from None
    if not S_ISDIR(info.st_mode):
        raise SpoolUnusable("not a directory, so not a spool", where=str(root))
    os.listdir(root)  # PermissionError for a spool this user may not read
    # incoming/ is where users drop riddles: the one directory every spool has. Writers
    # make the rest of the layout if it is missing (see FsSpool.init).
    if not (root / "incoming").is_dir():
        raise SpoolUnusable(
            "not a spool (it has no incoming/); create one with riddlectl init",
            where=str(root),
        )


def check_writable(root: Path) -> None:
    if os.statvfs(root).f_flag & os.ST_RDONLY:
        raise SpoolUnusable("cannot write: the file system is read-only", where=str(root))
    if not os.access(root, os.W_OK | os.X_OK):
        raise SpoolUnusable("cannot write: Permission denied", where=str(root))


def spool_error(exc: OSError, root: Path) -> SpoolUnusable:
    """An `OSError` met on the spool, as the one-line error that names its path."""
    if isinstance(exc, FileNotFoundError) and not root.exists():
        return SpoolUnusable(NO_SPOOL, where=str(root))
    if isinstance(exc, NotADirectoryError):
        return SpoolUnusable("not a directory, so not a spool", where=str(root))
    return SpoolUnusable(exc.strerror or str(exc), where=str(exc.filename or root))


NO_SPOOL = "no spool here (create one with riddlectl init)"


def event_log(settings: Settings) -> EventLog:
    return EventLog(Path(settings.spool) / "events.jsonl", settings.events_max_bytes)


def pipeline(settings: Settings, spool: Spool, actor: Actor) -> Pipeline:
    from riddlectl.pipeline.ledger import Pipeline

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
    from riddlectl.pipeline.ledger import event_committed

    spool = FsSpool(Path(settings.spool), limits=settings.limits)
    return event_log(settings).recover(lambda event: event_committed(spool, event))


def stage_context(settings: Settings, stage: str) -> StageContext:
    from riddlectl.handlers.registry import load_stage
    from riddlectl.pipeline.stages import StageContext
    from riddlectl.spool.fs.extractions import ExtractionStore

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
