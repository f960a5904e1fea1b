"""One error tree for riddlectl, and the exit codes the command line maps it to.

Every error carries the place at fault (`where`: a file, an id, `<stdin>:3`) and, when
known, the field; `str(error)` is the one line a user sees on stderr.
"""

from __future__ import annotations

from enum import IntEnum


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


class InvalidDocument(RiddleError):
    """A document that is not a valid riddle (bad JSON, wrong type, bad id, bad answer)."""


class InvalidData(RiddleError):
    """A data item that cannot be used: outside the data dir, missing, too big, not UTF-8."""


class DuplicateId(RiddleError):
    """An id that is already in the spool, final or not."""


class UnknownRiddle(RiddleError):
    exit_code = ExitCode.UNKNOWN_ID


class WaitTimeout(RiddleError):
    exit_code = ExitCode.TIMEOUT


class SpoolUnusable(RiddleError):
    """The spool cannot be used: missing, not a spool, not readable or writable, disk full.

    Raised before anything is changed, or after an atomic step that left nothing half-done.
    """

    exit_code = ExitCode.SPOOL_UNUSABLE


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
