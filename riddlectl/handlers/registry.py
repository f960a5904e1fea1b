"""Handlers by name: what a stage's handler names resolve to (see `base` for what a
handler is).

Names: a built-in (`text`, `table`, `ocr`, `speech`, `calculator`, `gatekeeper`), an entry
point in the group `riddlectl.handlers`, `module:attr`, `cmd:COMMAND` for an external
command, `http:URL` (or the bare `http://…`, `https://…`) for an endpoint, or
`openai:MODEL` for a language model (see `models`).

A handler's identity (`NamedHandler.identity`) keys the extraction cache, so that changing
what a handler runs extracts files again: a built-in's version (for the extractors, with a
digest of the modules doing the work; for `speech`, with the names its grammar listens
for, since those come from the riddle); a Python callable's
`version` attribute, or else the SHA-256 of its module's file; for a command, its command
line and the content of the files it runs (see `handlers.command`); for an endpoint, its
URL; for a model, its name and base URL.
"""

from __future__ import annotations

import importlib
import os
import sys
from importlib.metadata import entry_points
from typing import Any

from riddlectl.document import datatypes
from riddlectl.errors import ConfigError
from riddlectl.handlers.base import NamedHandler, file_digest
from riddlectl.settings import Settings

ENTRY_POINT_GROUP = "riddlectl.handlers"


#: The other stages' built-ins: name -> the handler as module:function.
_BUILTIN_HANDLERS: dict[str, dict[str, str]] = {
    "solve": {"calculator": "riddlectl.handlers.builtin.calculator:calculator"},
    "validate": {"gatekeeper": "riddlectl.handlers.builtin.calculator:gatekeeper"},
}


def builtin_names(stage: str) -> list[str]:
    """The names of `stage`'s built-in handlers."""
    if stage == "extract":
        return list(datatypes.extractors())
    return list(_BUILTIN_HANDLERS.get(stage, {}))


def _builtin(stage: str, name: str) -> NamedHandler | None:
    """The built-in `name` of `stage`, its module imported now; None when there is none.

    The built-in extractors are those of the table of data types (`document.datatypes`):
    each is its family's `extractor`, keyed in the cache by its family's `version()`.
    A family is imported only when an agent loads its extractor, so `riddlectl status`
    never imports an extractor's dependencies; it must import, and its `version` run,
    without the extractor's extra (the agent loads every default extractor as it
    starts): the handler says which extra is missing when an item needs it.
    """
    if stage == "extract":
        found = datatypes.extractors().get(name)
        if found is None:
            return None
        family, types = found
        try:
            fn, identity = _function(f"{family}:extractor"), str(_function(f"{family}:version")())
        except ImportError as exc:  # its module must import without its extra; say so
            raise ConfigError(f"built-in extractor cannot be loaded: {exc}", where=name) from None
        return NamedHandler(name, fn, frozenset(types), identity)
    handler = _BUILTIN_HANDLERS.get(stage, {}).get(name)
    return NamedHandler(name, _function(handler)) if handler else None


def _function(spec: str) -> Any:
    module_name, _, attr = spec.partition(":")
    return getattr(importlib.import_module(module_name), attr)


def load(spec: str, stage: str, settings: Settings | None = None) -> NamedHandler:
    """Resolve one handler name for `stage`, or `ConfigError` naming it; `settings` are
    those of endpoints and models (the defaults when not given)."""
    if spec.startswith("cmd:"):
        from riddlectl.handlers.command import CommandHandler

        command = CommandHandler(spec.removeprefix("cmd:"), stage)
        return NamedHandler(spec, command)
    if spec.startswith(("http:", "https:")):
        from riddlectl.handlers.http import HttpHandler

        # A bare `http://…` or `https://…` is the endpoint itself, named as `http:URL` is.
        url = spec if spec.startswith(("http://", "https://")) else spec.removeprefix("http:")
        return NamedHandler(f"http:{url}", HttpHandler(url, stage, _or(settings)))
    if spec.startswith("transcribe:"):
        return _transcribe(spec, stage, _or(settings))
    if spec.startswith("openai:"):
        from riddlectl.handlers.models import model_handler

        return NamedHandler(spec, model_handler(spec.removeprefix("openai:"), stage, _or(settings)))
    builtin = _builtin(stage, spec)
    if builtin is not None:
        return builtin
    target = _entry_point(spec) or _import(spec)
    if target is None:
        known = ", ".join(builtin_names(stage)) or "none"
        raise ConfigError(
            f"unknown handler (built-ins for {stage}: {known}; or module:attr, "
            "an entry point, cmd:COMMAND)",
            where=spec,
        )
    if not callable(target):
        raise ConfigError("is not callable", where=spec)
    types = getattr(target, "types", None)
    version = getattr(target, "version", None)
    return NamedHandler(
        spec,
        target,
        frozenset(types) if types else None,
        str(version) if version is not None else _module_version(target),
    )


def _transcribe(spec: str, stage: str, settings: Settings) -> NamedHandler:
    """`transcribe:MODEL`: audio heard by a transcription endpoint (extract only)."""
    if stage != "extract":
        raise ConfigError(f"transcribe: handlers extract audio, not {stage}", where=spec)
    from riddlectl.handlers.builtin.speech.endpoint import TranscribeExtractor

    handler = TranscribeExtractor(spec.removeprefix("transcribe:"), settings)
    return NamedHandler(spec, handler, frozenset(handler.types), handler.base_url)


def _module_version(target: Any) -> str:
    """The SHA-256 of the file of the module defining `target` (loaded once per agent, so
    what it runs is what was hashed); "1" when it has no file."""
    name = getattr(target, "__module__", None) or type(target).__module__
    path = getattr(sys.modules.get(name), "__file__", None)
    digest = file_digest(path) if path else None
    return digest[:16] if digest else "1"


def _entry_point(name: str) -> Any:
    for point in entry_points(group=ENTRY_POINT_GROUP):
        if point.name == name:
            try:
                return point.load()
            except Exception as exc:  # its package is broken or half installed
                raise ConfigError(
                    f"entry point {point.value} does not load: {type(exc).__name__}: {exc}",
                    where=name,
                ) from None
    return None


def _import(spec: str) -> Any:
    """`module:attr`, the module found as `python -m` finds it: in the current directory
    too, so `my_agents.py` beside the spool works without installing it."""
    module_name, _, attr = spec.partition(":")
    if not attr:
        return None
    _with_current_directory()
    try:
        target: Any = importlib.import_module(module_name)
    except ImportError as exc:
        raise ConfigError(f"cannot import {module_name}: {exc}", where=spec) from None
    except Exception as exc:  # the module itself failed: a syntax error, a raise at import
        raise ConfigError(
            f"importing {module_name} failed: {type(exc).__name__}: {exc}", where=spec
        ) from None
    for part in attr.split("."):
        target = getattr(target, part, None)
        if target is None:
            raise ConfigError(f"{module_name} has no {attr}", where=spec)
    return target


def _with_current_directory() -> None:
    # Appended, not put first as `python -m` does: a file in the current directory must not
    # shadow the standard library or an installed package (a stray queue.py, say) for the
    # rest of this process.
    here = os.getcwd()
    if here not in sys.path and "" not in sys.path:
        sys.path.append(here)


def _or(settings: Settings | None) -> Settings:
    return settings if settings is not None else Settings()


def load_stage(
    stage: str, specs: tuple[str, ...] | list[str], settings: Settings | None = None
) -> list[NamedHandler]:
    handlers = [load(spec, stage, settings) for spec in specs]
    if stage == "extract":
        from riddlectl.handlers.builtin.speech.agree import apply_policy

        return apply_policy(handlers, _or(settings).audio_policy)
    return handlers
