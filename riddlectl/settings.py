"""One settings object, resolved once: defaults < config file < environment < flags.

The config file is the one `--config`/`RIDDLECTL_CONFIG` names, else the one that belongs
to the spool (a directory spool's `config.toml`): the spool package says which
(`riddlectl.runtime.resolve_settings` puts the two together). Nothing here runs at
import; `resolve` is called with the flags given. Relative paths are relative to the
current directory, like every Unix tool. The spool is a location string that only the
spool package interprets.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any

from riddlectl.document import datatypes
from riddlectl.document.codec import MAX_DOCUMENT_BYTES, MIN_DOCUMENT_BYTES, Limits
from riddlectl.errors import ConfigError, SpoolUnusable


def default_handlers() -> dict[str, tuple[str, ...]]:
    """Each stage's handlers when none are configured: every built-in extractor of the
    table of data types (`document.datatypes`, read now, so that a data type registered
    at run time is seen), the `calculator` solver and the `gatekeeper` validator."""
    return {
        "extract": tuple(datatypes.extractors()),
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
    "openai_base_url": "OPENAI_BASE_URL",
    "openai_max_tokens": "RIDDLECTL_OPENAI_MAX_TOKENS",
    "openai_max_calls": "RIDDLECTL_OPENAI_MAX_CALLS",
    "openai_prompts": "RIDDLECTL_OPENAI_PROMPTS",
    "openai_response_format": "RIDDLECTL_OPENAI_RESPONSE_FORMAT",
    "endpoint_concurrency": "RIDDLECTL_ENDPOINT_CONCURRENCY",
    "max_sub_riddles": "RIDDLECTL_MAX_SUB_RIDDLES",
    "max_sub_depth": "RIDDLECTL_MAX_SUB_DEPTH",
    "audio_policy": "RIDDLECTL_AUDIO_POLICY",
    "log_level": "RIDDLECTL_LOG_LEVEL",
    "log_format": "RIDDLECTL_LOG_FORMAT",
}

# The config file that replaces the spool's own (any kind of spool).
CONFIG_VAR = "RIDDLECTL_CONFIG"

# The key of `openai:` handlers is read from the environment when a call is made, and
# nowhere else: it is no setting, so no config file, document or log can hold it.
OPENAI_KEY_VAR = "OPENAI_API_KEY"


@dataclass(frozen=True)
class Settings:
    spool: str = "spool"  # a location: a directory, or a URL (see riddlectl.spool.schemes)
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
    handlers: Mapping[str, tuple[str, ...]] = field(default_factory=default_handlers)
    # Agents that call endpoints (`http:URL`, `openai:MODEL`); see docs/models.md.
    openai_base_url: str = "https://api.openai.com/v1"
    openai_max_tokens: int = 512  # completion tokens per call
    openai_max_calls: int = 20  # model calls per riddle, over all its attempts
    openai_prompts: Path | None = None  # a TOML file of prompt templates overriding ours
    # How the answer's JSON schema is asked for: "json_schema" (OpenAI, vLLM, llama.cpp's
    # llama-server, Ollama) or "json_object" (llama-cpp-python's server).
    openai_response_format: str = "json_schema"
    endpoint_concurrency: int = 4  # calls in flight per endpoint (host and port), per agent
    max_sub_riddles: int = 4  # sub-questions a model may split one riddle into
    max_sub_depth: int = 1  # how deep sub-riddles split by a model may nest (0: never)
    # What an audio value needs: "best" (what one recogniser heard, with its confidence)
    # or "agree" (two recognisers of different kinds heard the same); docs/data-types.md.
    audio_policy: str = "best"
    # Headers of `http:` requests; `${VAR}` in a value is read from the environment.
    http_headers: Mapping[str, str] = field(default_factory=dict)
    # What `run` and `agent` log on stderr, and how (docs/operations.md#logs).
    log_level: str = "info"
    log_format: str = "text"

    def handlers_for(self, stage: str) -> tuple[str, ...]:
        return tuple(self.handlers.get(stage, ()))

    @property
    def limits(self) -> Limits:
        return Limits(self.max_document_bytes)


# Settings whose values must be at least this (beyond the positive numbers of all).
MINIMUMS = {"max_document_bytes": MIN_DOCUMENT_BYTES, "max_sub_depth": 0}
# Settings that take one of a few words.
CHOICES = {
    "log_level": ("debug", "info", "warning", "error"),
    "log_format": ("text", "json"),
}


def _convert(name: str, value: Any, source: str) -> Any:
    kind = {f.name: f.type for f in fields(Settings)}[name]
    try:
        if kind in ("Path", "Path | None"):
            return Path(str(value))
        if kind == "str":
            if not isinstance(value, str) or not value:
                raise ValueError(value)
            if name in CHOICES and value.lower() not in CHOICES[name]:
                raise ValueError(value)
            return value.lower() if name in CHOICES else value
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
        if name in CHOICES:
            least = f" (one of {', '.join(CHOICES[name])})"
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
        elif key == "http_headers":
            out[key] = _headers_table(value, str(path))
        else:
            out[key] = _convert(key, value, str(path))
    return out


def _handlers_table(value: Any, source: str) -> dict[str, tuple[str, ...]]:
    if not isinstance(value, dict):
        raise ConfigError("must be a table of stage = [handlers]", where=source, field="handlers")
    table = default_handlers()
    for stage, names in value.items():
        if stage not in ("extract", "solve", "validate") or not isinstance(names, list):
            raise ConfigError(
                "expected extract/solve/validate = [names]", where=source, field=f"handlers.{stage}"
            )
        table[stage] = tuple(str(n) for n in names)
    return table


def _headers_table(value: Any, source: str) -> dict[str, str]:
    if not isinstance(value, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in value.items()
    ):
        raise ConfigError(
            'must be a table of "Header-Name" = "value"', where=source, field="http_headers"
        )
    return dict(value)


def spool_location(flags: Mapping[str, Any], env: Mapping[str, str] | None = None) -> str:
    """The spool these flags (and the environment) name: flag > environment > default."""
    env = os.environ if env is None else env
    return os.fspath(flags.get("spool") or env.get(ENV_VARS["spool"]) or Settings.spool)


def chosen_config(flags: Mapping[str, Any], env: Mapping[str, str] | None = None) -> Path | None:
    """The config file named by `--config` or `RIDDLECTL_CONFIG`, if any."""
    env = os.environ if env is None else env
    named = flags.get("config") or env.get(CONFIG_VAR)
    return Path(named) if named else None


def resolve(
    flags: Mapping[str, Any] | None = None,
    env: Mapping[str, str] | None = None,
    config_file: Path | None = None,
) -> Settings:
    """Settings for this invocation. `flags` holds only the options given (None = unset);
    `config_file` is read when given (a missing file is no error unless it was named by
    `--config`/`RIDDLECTL_CONFIG`)."""
    flags = {k: v for k, v in (flags or {}).items() if v is not None}
    env = os.environ if env is None else env
    named = chosen_config(flags, env)
    values: dict[str, Any] = {"spool": spool_location(flags, env)}
    if named is not None:
        if not named.is_file():
            raise ConfigError("no such config file", where=str(named))
        values.update(_from_config(named))
    elif config_file is not None:
        values.update(_from_config(config_file))
    for name, var in ENV_VARS.items():
        if name != "spool" and env.get(var):
            values[name] = _convert(name, env[var], var)
    for name, value in flags.items():
        if name in ("spool", "config"):
            continue
        if name == "handlers":
            given = values["handlers"] if "handlers" in values else default_handlers()
            values["handlers"] = {**given, **value}
        else:
            values[name] = _convert(name, value, f"--{name.replace('_', '-')}")
    return replace(Settings(), **values)
