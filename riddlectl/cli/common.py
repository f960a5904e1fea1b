"""What every command shares: settings, output, and errors turned into exit codes.

Command modules import this, never `riddlectl.cli.app`, so the root command can load them
on demand without an import cycle. It stays light: `riddlectl status` imports it, so
anything heavy (orjson, the runtime) is imported where it is used.
"""

from __future__ import annotations

import contextlib
import functools
import os
import signal
import sys
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

import typer

from riddlectl import settings as settings_mod
from riddlectl.errors import ExitCode, RiddleError

if TYPE_CHECKING:
    from riddlectl.identity import Actor
    from riddlectl.settings import Settings

F = TypeVar("F", bound=Callable[..., Any])


def command_group(**options: Any) -> typer.Typer:
    """The `typer.Typer` a command module registers its commands on.

    Help is plain text, as for the root command, and errors are ours (`guarded`), not
    typer's pretty tracebacks.
    """
    return typer.Typer(
        rich_markup_mode=None, pretty_exceptions_enable=False, add_completion=False, **options
    )


def guarded(fn: F) -> F:
    """Turn library errors into one stderr line and the documented exit code.

    Any `OSError` that gets this far is the spool's (or the data directory's) doing: a
    full or read-only disk, a path that is not a directory. It becomes one line naming
    the path, with exit 5.
    """

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except RiddleError as exc:
            fail(str(exc), exc.exit_code)
        except TimeoutError as exc:
            fail(str(exc), ExitCode.TIMEOUT)
        except BrokenPipeError:  # `riddlectl status --jsonl | head`
            quiet_stdout()
            raise typer.Exit(0) from None
        except OSError as exc:
            from riddlectl.runtime import spool_error

            flags = getattr(kwargs.get("ctx"), "obj", None) or {}
            where = settings_mod.spool_location(flags)
            fail(str(spool_error(exc, where)), ExitCode.SPOOL_UNUSABLE)

    return wrapper  # type: ignore[return-value]


def quiet_stdout() -> None:
    """After a closed pipe, point stdout at /dev/null so the exit flush cannot fail again."""
    with contextlib.suppress(OSError):
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)


def fail(message: str, code: int) -> None:
    typer.echo(f"riddlectl: {message}", err=True)
    raise typer.Exit(int(code))


def emit_json(value: Any) -> None:
    import orjson

    sys.stdout.buffer.write(orjson.dumps(value, option=orjson.OPT_INDENT_2) + b"\n")
    sys.stdout.flush()


def emit_jsonl(values: list[Any]) -> None:
    import orjson

    for value in values:
        sys.stdout.buffer.write(orjson.dumps(value) + b"\n")
    sys.stdout.flush()


def resolve(ctx: typer.Context, **flags: Any) -> Settings:
    """Settings for this command: the global options plus the command's own flags."""
    from riddlectl.runtime import resolve_settings

    try:
        return resolve_settings({**(ctx.obj or {}), **flags})
    except RiddleError as exc:
        fail(str(exc), exc.exit_code)
        raise  # unreachable; fail() raises


def actor(command: str) -> Actor:
    from riddlectl.identity import Actor

    return Actor(command)


def quiet_watchdog() -> None:
    """For commands that watch directories (agents, bench): watchdog logs an error when an
    observer stops while events are queued; harmless at shutdown, and stderr is for our
    one-line errors."""
    import logging

    logging.getLogger("watchdog").addHandler(logging.NullHandler())
    logging.getLogger("watchdog").propagate = False


def read_ids(ids: list[str]) -> list[str]:
    """Ids from arguments, where `-` stands for whitespace-separated ids on stdin; an id
    given twice is kept once, where it first came."""
    out: list[str] = []
    for value in ids:
        out += sys.stdin.read().split() if value == "-" else [value]
    return list(dict.fromkeys(out))


def stop_on_signals() -> tuple[threading.Event, threading.Event]:
    """(stop, hurry): SIGTERM or SIGINT sets `stop` (handlers still running get the stop
    grace), a second one sets `hurry` too (they are ended at once)."""
    from riddlectl.agent import Stop

    stop, hurry = Stop(), threading.Event()

    def handler(signum: int, frame: Any) -> None:
        if stop.is_set():
            hurry.set()
        stop.request(f"signal {signal.Signals(signum).name}")

    signal.signal(signal.SIGTERM, handler)
    signal.signal(signal.SIGINT, handler)
    return stop, hurry
