"""Handlers by name: what a stage's handler names resolve to (see `base` for what a
handler is).

Names: a built-in (`text`, `calculator`, `gatekeeper`), an entry point in the group
`riddlectl.handlers`, `module:attr`, `cmd:COMMAND` for an external command, `http:URL`
for an endpoint, or `openai:MODEL` for a language model (see `models`).

A handler's identity (`NamedHandler.identity`) keys the extraction cache, so that changing
what a handler runs extracts files again: a built-in's version (for `text`, with a digest
of the modules doing the work); a Python callable's
`version` attribute, or else the SHA-256 of its module's file; for a command, its command
line and the content of the files it runs (see `handlers.command`); for an endpoint, its
URL; for a model, its name and base URL.
"""

from __future__ import annotations

import functools
import hashlib
import importlib
import os
import sys
from importlib.metadata import entry_points
from typing import Any

from riddlectl.errors import ConfigError
from riddlectl.handlers.base import NamedHandler, file_digest
from riddlectl.settings import Settings

ENTRY_POINT_GROUP = "riddlectl.handlers"


def _builtins() -> dict[str, dict[str, NamedHandler]]:
    from riddlectl.handlers.builtin import catalog as b

    return {
        "extract": {
            "text": NamedHandler("text", b.text_extractor, frozenset({"text"}), _text_version())
        },
        "solve": {"calculator": NamedHandler("calculator", b.calculator)},
        "validate": {"gatekeeper": NamedHandler("gatekeeper", b.gatekeeper)},
    }


def load(spec: str, stage: str, settings: Settings | None = None) -> NamedHandler:
    """Resolve one handler name for `stage`, or `ConfigError` naming it; `settings` are
    those of endpoints and models (the defaults when not given)."""
    if spec.startswith("cmd:"):
        from riddlectl.handlers.command import CommandHandler

        command = CommandHandler(spec.removeprefix("cmd:"), stage)
        return NamedHandler(spec, command)
    if spec.startswith("http:"):
        from riddlectl.handlers.http import HttpHandler

        return NamedHandler(spec, HttpHandler(spec.removeprefix("http:"), stage, _or(settings)))
    if spec.startswith("openai:"):
        from riddlectl.handlers.models import model_handler

        return NamedHandler(spec, model_handler(spec.removeprefix("openai:"), stage, _or(settings)))
    builtin = _builtins().get(stage, {}).get(spec)
    if builtin is not None:
        return builtin
    target = _entry_point(spec) or _import(spec)
    if target is None:
        known = ", ".join(sorted(_builtins().get(stage, {}))) or "none"
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


@functools.cache
def _text_version() -> str:
    """The `text` extractor's version and a digest of the code it runs, so that a riddlectl
    whose extractor reads files differently does not reuse the old one's extractions."""
    from riddlectl.document import numbers
    from riddlectl.handlers.builtin import catalog as builtin_handlers
    from riddlectl.handlers.builtin import numberphrases, numberwords, textfacts

    modules = (builtin_handlers, numbers, numberwords, numberphrases, textfacts)
    digests = [file_digest(m.__file__ or "") or "-" for m in modules]
    code = hashlib.sha256("\0".join(digests).encode()).hexdigest()[:8]
    return f"{builtin_handlers.TEXT_VERSION}.{code}"


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
            return point.load()
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
    return [load(spec, stage, settings) for spec in specs]
