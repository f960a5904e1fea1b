"""Wiring: from resolved `Settings` to a spool, an event log and a pipeline.

The CLI and the tests both build their objects here, so a command and a test of the same
thing run the same code.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from riddlectl import settings as settings_mod
from riddlectl import spool as spools
from riddlectl.identity import Actor
from riddlectl.pipeline.retry import RetryPolicy
from riddlectl.settings import Settings
from riddlectl.spool import spool_error
from riddlectl.spool.contract import Spool
from riddlectl.spool.events import EventLog

# The pipeline, the handlers and the extraction cache are imported by the functions that
# wire them: commands that only read the spool (`status`, `show`) start without them.
if TYPE_CHECKING:
    from riddlectl.handlers.base import NamedHandler
    from riddlectl.pipeline.jobs import Pipeline
    from riddlectl.pipeline.stages import StageContext

__all__ = ["open_spool", "pipeline", "resolve_settings", "spool_error", "stage_context"]


def resolve_settings(
    flags: Mapping[str, Any] | None = None, env: Mapping[str, str] | None = None
) -> Settings:
    """Settings for these flags, reading the config file of the spool they name (a
    directory spool's `config.toml`) unless `--config`/`RIDDLECTL_CONFIG` names one."""
    flags = {k: v for k, v in (flags or {}).items() if v is not None}
    env = os.environ if env is None else env
    own = None
    if settings_mod.chosen_config(flags, env) is None:
        own = spools.settings_file(settings_mod.spool_location(flags, env))
    return settings_mod.resolve(flags, env, config_file=own)


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
    return spools.schemes.open_location(settings.spool, _options(settings, actor, create, writable))


def find_spool(settings: Settings, actor: Actor | None = None) -> Spool | None:
    """The spool of `settings` when there is one yet, opened for writing; else None."""
    return spools.find_spool(settings.spool, _options(settings, actor, False, True))


def make_spool(settings: Settings, actor: Actor | None = None) -> Spool:
    """A new spool where `settings` say, made all or nothing."""
    return spools.make_spool(settings.spool, _options(settings, actor, True, True))


def _options(
    settings: Settings, actor: Actor | None, create: bool, writable: bool
) -> spools.schemes.OpenOptions:
    return spools.schemes.OpenOptions(
        create=create,
        writable=writable,
        actor=actor,
        durable=settings.fsync,
        drop_in_grace=settings.drop_in_grace,
        limits=settings.limits,
        events_max_bytes=settings.events_max_bytes,
        data_dir=Path(settings.data_dir),
        max_data_bytes=settings.max_data_bytes,
    )


def event_log(settings: Settings) -> EventLog:
    """The event log of the spool of `settings`, which must exist."""
    return open_spool(settings, create=False).events


def pipeline(settings: Settings, spool: Spool, actor: Actor) -> Pipeline:
    """The pipeline of `actor` over `spool`, which was opened for the same actor: the
    spool logs, as that actor, the input it sets aside and the claims it finds abandoned
    (`Spool.log_set_aside`, `Spool.log_abandoned`)."""
    from riddlectl.pipeline.jobs import Pipeline

    policy = RetryPolicy(settings.max_attempts, settings.retry_base, settings.retry_cap)
    return Pipeline(spool, spool.events, actor, policy, settings.max_abandoned)


def recover_events(settings: Settings) -> int:
    """Log the events of commits whose writer died before logging them (`events`)."""
    from riddlectl.pipeline.ledger import event_committed

    spool = open_spool(settings, create=False)
    return spool.events.recover(lambda event: event_committed(spool, event))


def stage_handlers(settings: Settings, stages: Iterable[str]) -> dict[str, list[NamedHandler]]:
    """Every handler of `stages`, resolved now: a `ConfigError` naming the first that
    cannot be (a program that is not there or cannot run, a module that does not import,
    an endpoint without a usable URL). An agent calls this before it opens the spool."""
    from riddlectl.handlers.registry import load_stage

    return {
        stage: load_stage(
            stage, settings.handlers_for(stage) if stage != "manage" else (), settings
        )
        for stage in stages
    }


def stage_context(
    settings: Settings, stage: str, spool: Spool, handlers: list[NamedHandler] | None = None
) -> StageContext:
    """What `stage` needs to run on `spool`: its handlers (`handlers`, else resolved now,
    see `stage_handlers`), the data directory, the limits."""
    from riddlectl.pipeline.stages import StageContext

    if handlers is None:
        handlers = stage_handlers(settings, (stage,))[stage]
    return StageContext(
        data_dir=Path(settings.data_dir),
        spool_root=spool.local_root,
        spool_name=spool.name,
        store=spool.extractions,
        handlers=handlers,
        timeout=settings.timeout,
        max_trials=settings.max_trials,
        max_data_bytes=settings.max_data_bytes,
    )
