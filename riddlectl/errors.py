"""One error tree for riddlectl, and the exit codes the command line maps it to.

Every error carries the place at fault (`where`: a file, an id, `<stdin>:3`) and, when
known, the field; `str(error)` is the one line a user sees on stderr.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from enum import IntEnum
from typing import Any


class ExitCode(IntEnum):
    """The exit codes of every command (docs/reference.md#exit-codes)."""

    OK = 0
    FAILED = 1
    USAGE = 2
    UNKNOWN_ID = 3
    TIMEOUT = 4
    SPOOL_UNUSABLE = 5
    INTERNAL = 70  # a bug in riddlectl (sysexits' EX_SOFTWARE); reported in one line too


class RiddleError(Exception):
    """Base of every error riddlectl raises on purpose."""

    exit_code: ExitCode = ExitCode.USAGE

    def __init__(self, message: str, *, where: str | None = None, field: str | None = None):
        self.message = message
        self.where = where
        self.field = field
        super().__init__(str(self))

    def __str__(self) -> str:
        place = ": ".join(p for p in (self.where, self.field) if p)
        return f"{place}: {self.message}" if place else self.message

    def lines(self) -> list[str]:
        """What a user is told, one line each (one for most errors)."""
        return [str(self)]


class InvalidDocument(RiddleError):
    """A document that is not a valid riddle (bad JSON, wrong type, bad id, bad answer)."""


class InvalidData(RiddleError):
    """A data item that cannot be used: outside the data dir, missing, too big, not UTF-8."""


class DuplicateId(RiddleError):
    """An id that is already in the spool, final or not."""


class UnknownRiddle(RiddleError):
    exit_code = ExitCode.UNKNOWN_ID


class UnknownRiddles(UnknownRiddle):
    """Several ids the spool does not have, found by one look at all of them: each is
    reported on a line of its own (`lines`)."""

    def __init__(self, each: Sequence[UnknownRiddle]):
        self.each = list(each)
        super().__init__(self.each[0].message, where=self.each[0].where)

    def lines(self) -> list[str]:
        return [str(exc) for exc in self.each]


class WaitTimeout(RiddleError):
    exit_code = ExitCode.TIMEOUT


class SpoolUnusable(RiddleError):
    """The spool cannot be used: missing, not a spool, not readable or writable, disk full.

    Raised before anything is changed, or after an atomic step that left nothing half-done.
    """

    exit_code = ExitCode.SPOOL_UNUSABLE


class SchemaOutdated(SpoolUnusable):
    """A database spool whose schema is older than this code knows: `riddlectl init`
    migrates it. Commands refuse it; `doctor` reports it as a finding."""


class SpoolUnavailable(SpoolUnusable):
    """The spool cannot be used now, for a reason that may pass: a database server that is
    down, starting up, read-only or full, or that refuses this role. A one-shot command
    exits 5 on it; a long-running agent waits and tries again."""


class ClaimLost(RiddleError):
    """A commit of a claim the spool gave back meanwhile, its holder taken for dead (a
    host cut off from a shared spool): refused, so that it never overwrites what the
    riddle's next holder did."""

    exit_code = ExitCode.FAILED


class ConfigError(RiddleError):
    """Bad settings: a config file that does not parse, an unknown handler, a bad flag."""


class HandlerRefused(Exception):
    """Raised by a handler when the riddle cannot be handled and retrying would not help.

    The riddle fails at once (the external-command equivalent is exit status 65).
    `usage`, when set, is what the attempt cost (see `HandlerFailed`).
    """

    usage: dict[str, object] | None = None


class HandlerFailed(Exception):
    """A handler attempt that went wrong in a way worth retrying (crash, bad output).

    `retry_after`: seconds the other side asked to wait before the next attempt (an HTTP
    `Retry-After`), which the back-off honours; `usage`: what the failed attempt cost
    (tokens, calls), recorded in the riddle's history like a successful one's.
    """

    def __init__(
        self,
        message: str,
        *,
        retry_after: float | None = None,
        usage: dict[str, object] | None = None,
    ) -> None:
        super().__init__(message)
        self.retry_after = retry_after
        self.usage = usage


class HandlerTimeout(HandlerFailed):
    """A handler ran past its timeout and was stopped."""


class DocumentTooLarge(RiddleError):
    """A document that would be larger than its limit: `sizes` holds the size of each
    (by id) that a refused commit would have stored."""

    def __init__(
        self,
        message: str,
        *,
        where: str | None = None,
        field: str | None = None,
        sizes: dict[str, int] | None = None,
    ):
        super().__init__(message, where=where, field=field)
        self.sizes = sizes or {}


# -- what pydantic found wrong, in one line ---------------------------------------------------
# Every place a pydantic `ValidationError` reaches a user (a document, a handler's reply,
# an answer spec, a form) says it through these, so that it reads as one line naming each
# field, never as pydantic's multi-line report with its URLs. They take the error's
# `errors()` list, so this bottom layer needs no pydantic import.

_MUST_BE = {
    "string_type": "must be a string",
    "int_type": "must be an integer",
    "int_parsing": "must be an integer",
    "int_from_float": "must be an integer",
    "float_type": "must be a number",
    "float_parsing": "must be a number",
    "bool_type": "must be true or false",
    "bool_parsing": "must be true or false",
    "dict_type": "must be an object",
    "model_type": "must be an object",
    "model_attributes_type": "must be an object",
    "list_type": "must be a list",
    "tuple_type": "must be a list",
    "none_required": "must be null",
}
_BOUNDS = {
    "greater_than_equal": ("ge", "must be at least {}"),
    "greater_than": ("gt", "must be greater than {}"),
    "less_than_equal": ("le", "must be at most {}"),
    "less_than": ("lt", "must be less than {}"),
    "too_short": ("min_length", "must have at least {} items"),
    "too_long": ("max_length", "must have at most {} items"),
    "string_too_short": ("min_length", "must be at least {} characters long"),
    "string_too_long": ("max_length", "must be at most {} characters long"),
    "string_pattern_mismatch": ("pattern", "must match {}"),
}
_SHOWN = 40  # characters of a wrong value shown after "got"


def field_path(loc: Sequence[int | str], skip: int = 0) -> str | None:
    """A field's path as jq writes it and the data checks name it: `data[0].file_plain`;
    `skip` leaves out leading parts that are no field (a union's tag)."""
    path = ""
    for part in loc[skip:]:
        path += f"[{part}]" if isinstance(part, int) else f".{part}" if path else str(part)
    return path or None


def problem(error: Mapping[str, Any]) -> str:
    """What is wrong with one field, without its name: `must be a string (got 42)`."""
    kind = str(error.get("type", ""))
    ctx = error.get("ctx") or {}
    if kind == "missing":
        return "is missing"
    if kind == "extra_forbidden":
        return "is not a known field"
    if kind in _MUST_BE:
        return f"{_MUST_BE[kind]} (got {_shown(error.get('input'))})"
    if kind in _BOUNDS and _BOUNDS[kind][0] in ctx:
        key, text = _BOUNDS[kind]
        return f"{text.format(ctx[key])} (got {_shown(error.get('input'))})"
    if kind == "literal_error" and "expected" in ctx:
        return f"must be {ctx['expected']} (got {_shown(error.get('input'))})"
    if kind in ("union_tag_invalid", "union_tag_not_found") and "expected_tags" in ctx:
        return f"must be one of {ctx['expected_tags']} (got {_shown(ctx.get('tag'))})"
    lines = str(error.get("msg", "")).strip().splitlines() or ["is not valid"]
    message = lines[0].removeprefix("Value error, ").removeprefix("Assertion failed, ")
    if message.startswith("Input should be "):
        return f"must be {message.removeprefix('Input should be ')}"
    return message


def problems_line(errors: Sequence[Mapping[str, Any]], skip: int = 0) -> str:
    """Every error of a `ValidationError.errors()` list in one line, each naming its
    field: `solution must be a string (got [1]); explanation must be a string (got null)`."""
    parts = []
    for error in errors:
        field = field_path(tuple(error.get("loc", ())), skip)
        parts.append(f"{field} {problem(error)}" if field else problem(error))
    return "; ".join(dict.fromkeys(parts)) or "is not valid"


def _shown(value: Any) -> str:
    """A wrong value as JSON writes it (`null`, `"x"`, `[1]`), cut short."""
    try:
        text = json.dumps(value, ensure_ascii=False, default=repr)
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= _SHOWN else text[: _SHOWN - 1] + "…"
