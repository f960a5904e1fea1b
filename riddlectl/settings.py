"""One settings object, resolved once: defaults < spool/config.toml < environment < flags.

Nothing here runs at import; `resolve` is called by the CLI (or a test) with the flags it
was given. Relative paths are relative to the current directory, like every Unix tool.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any

from riddlectl.document.codec import MAX_DOCUMENT_BYTES, MIN_DOCUMENT_BYTES, Limits
from riddlectl.errors import ConfigError, SpoolUnusable

DEFAULT_HANDLERS: dict[str, tuple[str, ...]] = {
    # The built-in extractors, one per family of data types (handlers.registry's table).
    "extract": ("text", "table"),
    "solve": ("calculator",),
    "validate": ("gatekeeper",),
}

# Environment variable of each setting (the CLI's --help shows them too).
ENV_VARS = {
    "spool": "RIDDLECTL_SPOOL",
    "data_dir": "RIDDLECTL_DATA",
    "max_trials": "SOLUTION_MAX_TRIALS",
    "timeout": "RIDDLECTL_TIMEOUT",
    "stop_grace": "RIDDLECTL_STOP_GRACE",
    "max_attempts": "RIDDLECTL_MAX_ATTEMPTS",
    "max_abandoned": "RIDDLECTL_MAX_ABANDONED",
    "max_data_bytes": "RIDDLECTL_MAX_DATA_BYTES",
    "max_document_bytes": "RIDDLECTL_MAX_DOCUMENT_BYTES",
    "drop_in_grace": "RIDDLECTL_DROP_IN_GRACE",
    "fsync": "RIDDLECTL_FSYNC",
    "events_max_bytes": "RIDDLECTL_EVENTS_MAX_BYTES",
}


@dataclass(frozen=True)
class Settings:
    spool: Path = Path("spool")
    data_dir: Path = Path("data/share")
    max_trials: int = 3
    timeout: float = 60.0
    stop_grace: float = 10.0  # seconds a stopping agent waits for handlers still running
    max_attempts: int = 3
    max_abandoned: int = 5
    max_data_bytes: int = 10 * 1024 * 1024
    max_document_bytes: int = MAX_DOCUMENT_BYTES
    drop_in_grace: float = 5.0
    fsync: bool = True
    events_max_bytes: int = 64 * 1024 * 1024
    retry_base: float = 0.5
    retry_cap: float = 30.0
    handlers: Mapping[str, tuple[str, ...]] = field(default_factory=lambda: dict(DEFAULT_HANDLERS))

    def handlers_for(self, stage: str) -> tuple[str, ...]:
        return tuple(self.handlers.get(stage, ()))

    @property
    def limits(self) -> Limits:
        return Limits(self.max_document_bytes)


# Settings whose values must be at least this (beyond the positive numbers of all).
MINIMUMS = {"max_document_bytes": MIN_DOCUMENT_BYTES}


def _convert(name: str, value: Any, source: str) -> Any:
    kind = {f.name: f.type for f in fields(Settings)}[name]
    try:
        if kind == "Path":
            return Path(str(value))
        if kind == "bool":
            if isinstance(value, bool):
                return value
            if str(value).lower() in ("1", "true", "yes", "on"):
                return True
            if str(value).lower() in ("0", "false", "no", "off"):
                return False
            raise ValueError(value)
        if kind == "int":
            result = int(value)
            if result < MINIMUMS.get(name, 1):
                raise ValueError(value)
            return result
        if kind == "float":
            seconds = float(value)
            if not seconds > 0:
                raise ValueError(value)
            return seconds
    except (TypeError, ValueError):
        least = f" (at least {MINIMUMS[name]})" if name in MINIMUMS else ""
        raise ConfigError(f"invalid value {value!r}{least}", where=source, field=name) from None
    return value


def _from_config(path: Path) -> dict[str, Any]:
    try:
        text = path.read_text("utf-8")
    except (FileNotFoundError, NotADirectoryError):
        return {}  # no config; a spool that is not a directory is refused where it is used
    except OSError as exc:
        raise SpoolUnusable(f"cannot read: {exc.strerror}", where=str(path)) from None
    except UnicodeDecodeError as exc:
        raise ConfigError(f"does not parse: {exc}", where=str(path)) from None
    import tomllib  # only for a spool that has a config file

    try:
        raw = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"does not parse: {exc}", where=str(path)) from None
    known = {f.name for f in fields(Settings)} - {"spool"}
    out: dict[str, Any] = {}
    for key, value in raw.items():
        if key not in known:
            raise ConfigError("unknown setting", where=str(path), field=key)
        if key == "handlers":
            out[key] = _handlers_table(value, str(path))
        else:
            out[key] = _convert(key, value, str(path))
    return out


def _handlers_table(value: Any, source: str) -> dict[str, tuple[str, ...]]:
    if not isinstance(value, dict):
        raise ConfigError("must be a table of stage = [handlers]", where=source, field="handlers")
    table = dict(DEFAULT_HANDLERS)
    for stage, names in value.items():
        if stage not in ("extract", "solve", "validate") or not isinstance(names, list):
            raise ConfigError(
                "expected extract/solve/validate = [names]", where=source, field=f"handlers.{stage}"
            )
        table[stage] = tuple(str(n) for n in names)
    return table


def spool_path(flags: Mapping[str, Any], env: Mapping[str, str] | None = None) -> Path:
    """The spool these flags (and the environment) name: flag > environment > default."""
    env = os.environ if env is None else env
    return Path(flags.get("spool") or env.get(ENV_VARS["spool"]) or Settings.spool)


def resolve(
    flags: Mapping[str, Any] | None = None, env: Mapping[str, str] | None = None
) -> Settings:
    """Settings for this invocation. `flags` holds only the options given (None = unset)."""
    flags = {k: v for k, v in (flags or {}).items() if v is not None}
    env = os.environ if env is None else env
    spool = spool_path(flags, env)
    values: dict[str, Any] = {"spool": spool, **_from_config(spool / "config.toml")}
    for name, var in ENV_VARS.items():
        if name != "spool" and env.get(var):
            values[name] = _convert(name, env[var], var)
    for name, value in flags.items():
        if name == "handlers":
            values["handlers"] = {**values.get("handlers", DEFAULT_HANDLERS), **value}
        else:
            values[name] = _convert(name, value, f"--{name.replace('_', '-')}")
    return replace(Settings(), **values)
