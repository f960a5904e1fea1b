"""The command line: a thin typer layer over the library.

Each command parses its options, resolves the settings once, calls one library function,
renders the result for people (or as JSON), and maps errors to the exit codes of
docs/reference.md#exit-codes.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import os
import sys
from collections.abc import Callable
from importlib.metadata import version as package_version
from pathlib import Path
from typing import Annotated, Any, TypeVar

import orjson
import typer

from riddlectl import settings as settings_mod
from riddlectl.errors import ExitCode, RiddleError
from riddlectl.identity import Actor
from riddlectl.runtime import spool_error
from riddlectl.settings import ENV_VARS, Settings

app = typer.Typer(
    name="riddlectl",
    help="Run multi-agent riddle solving over a crash-safe filesystem spool.",
    no_args_is_help=True,
    add_completion=True,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)

F = TypeVar("F", bound=Callable[..., Any])


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
            _quiet_stdout()
            raise typer.Exit(0) from None
        except OSError as exc:
            flags = getattr(kwargs.get("ctx"), "obj", None) or {}
            fail(str(spool_error(exc, settings_mod.spool_path(flags))), ExitCode.SPOOL_UNUSABLE)

    return wrapper  # type: ignore[return-value]


def _quiet_stdout() -> None:
    """After a closed pipe, point stdout at /dev/null so the exit flush cannot fail again."""
    with contextlib.suppress(OSError):
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)


def fail(message: str, code: int) -> None:
    typer.echo(f"riddlectl: {message}", err=True)
    raise typer.Exit(int(code))


def emit_json(value: Any) -> None:
    sys.stdout.buffer.write(orjson.dumps(value, option=orjson.OPT_INDENT_2) + b"\n")
    sys.stdout.flush()


def emit_jsonl(values: list[Any]) -> None:
    for value in values:
        sys.stdout.buffer.write(orjson.dumps(value) + b"\n")
    sys.stdout.flush()


def _print_version(value: bool) -> None:
    if value:
        typer.echo(f"riddlectl {package_version('riddlectl')}")
        raise typer.Exit(0)


@app.callback()
def main_options(
    ctx: typer.Context,
    spool: Annotated[
        Path | None,
        typer.Option(
            "--spool",
            envvar=ENV_VARS["spool"],
            help="Spool directory.",
            show_default="./spool",
            metavar="PATH",
        ),
    ] = None,
    data_dir: Annotated[
        Path | None,
        typer.Option(
            "--data-dir",
            envvar=ENV_VARS["data_dir"],
            help="Data directory that file_plain paths are relative to.",
            show_default="./data/share",
            metavar="PATH",
        ),
    ] = None,
    version: Annotated[
        bool,
        typer.Option(
            "--version", help="Print the version and exit.", callback=_print_version, is_eager=True
        ),
    ] = False,
) -> None:
    ctx.obj = {"spool": spool, "data_dir": data_dir}


def resolve(ctx: typer.Context, **flags: Any) -> Settings:
    """Settings for this command: the global options plus the command's own flags."""
    try:
        return settings_mod.resolve({**(ctx.obj or {}), **flags})
    except RiddleError as exc:
        fail(str(exc), exc.exit_code)
        raise  # unreachable; fail() raises


def actor(command: str) -> Actor:
    return Actor(command)


def read_ids(ids: list[str]) -> list[str]:
    """Ids from arguments, where `-` stands for whitespace-separated ids on stdin; an id
    given twice is kept once, where it first came."""
    out = []
    for value in ids:
        out += sys.stdin.read().split() if value == "-" else [value]
    return list(dict.fromkeys(out))


def main(argv: list[str] | None = None) -> None:
    """The `riddlectl` command: every way out is an exit code, never a traceback."""
    # watchdog logs an error when an observer stops while events are queued; harmless at
    # shutdown, and stderr is for our one-line errors.
    logging.getLogger("watchdog").addHandler(logging.NullHandler())
    logging.getLogger("watchdog").propagate = False
    try:
        # Not standalone: click's own error display is a usage block; ours is one line.
        code = app(args=argv, prog_name="riddlectl", standalone_mode=False)
    except typer.TyperException as exc:  # click's usage errors (bad option, missing argument)
        code = usage_error(exc)
    except typer.Abort:  # end of input at a prompt
        code = 130
    except BrokenPipeError:
        _quiet_stdout()
        code = 0
    except Exception as exc:  # a bug: still one line, the traceback on request
        if os.environ.get("RIDDLECTL_DEBUG"):
            raise
        typer.echo(
            f"riddlectl: internal error: {type(exc).__name__}: {exc} "
            "(RIDDLECTL_DEBUG=1 shows the traceback)",
            err=True,
        )
        code = ExitCode.INTERNAL
    sys.exit(int(code) if isinstance(code, int) else 0)


def usage_error(exc: Exception) -> int:
    """Print a click usage error as `riddlectl: COMMAND: message`; its exit code (2)."""
    ctx = getattr(exc, "ctx", None)
    if getattr(exc, "show", None) and type(exc).__name__ == "NoArgsIsHelpError":
        exc.show()  # type: ignore[attr-defined]  # `riddlectl` alone: the help
        return int(getattr(exc, "exit_code", ExitCode.USAGE))
    format_message = getattr(exc, "format_message", None)
    message = format_message() if callable(format_message) else str(exc)
    message = message.strip().rstrip(".")
    message = message[:1].lower() + message[1:]
    place = ctx.info_name if ctx is not None and ctx.parent is not None else None
    typer.echo(f"riddlectl: {place + ': ' if place else ''}{message}", err=True)
    return int(getattr(exc, "exit_code", ExitCode.USAGE))
