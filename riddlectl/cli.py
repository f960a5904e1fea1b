"""The command line: a thin typer layer over the library.

Each command parses its options, resolves the settings once, calls one library function,
renders the result for people (or as JSON), and maps errors to the exit codes of SPEC §4.
"""

from __future__ import annotations

import functools
import logging
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any, TypeVar

import orjson
import typer

from riddlectl import settings as settings_mod
from riddlectl.errors import ExitCode, RiddleError
from riddlectl.identity import Actor
from riddlectl.settings import ENV_VARS, Settings

app = typer.Typer(
    name="riddlectl",
    help="Run multi-agent riddle solving over a crash-safe filesystem spool.",
    no_args_is_help=True,
    add_completion=True,
    pretty_exceptions_enable=False,
)

F = TypeVar("F", bound=Callable[..., Any])


def guarded(fn: F) -> F:
    """Turn library errors into one stderr line and the documented exit code."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except RiddleError as exc:
            fail(str(exc), exc.exit_code)
        except TimeoutError as exc:
            fail(str(exc), ExitCode.TIMEOUT)
        except BrokenPipeError:  # `riddlectl status --jsonl | head`
            sys.stderr.close()
            raise typer.Exit(0) from None

    return wrapper  # type: ignore[return-value]


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


@app.callback()
def main_options(
    ctx: typer.Context,
    spool: Annotated[
        Path | None,
        typer.Option(
            "--spool", envvar=ENV_VARS["spool"], help="Spool directory.", show_default="./spool"
        ),
    ] = None,
    data_dir: Annotated[
        Path | None,
        typer.Option(
            "--data-dir",
            envvar=ENV_VARS["data_dir"],
            help="Data directory that file_plain paths are relative to.",
            show_default="./data/share",
        ),
    ] = None,
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
    """Ids from arguments, where `-` stands for whitespace-separated ids on stdin."""
    out = []
    for value in ids:
        out += sys.stdin.read().split() if value == "-" else [value]
    return out


def main() -> None:
    # watchdog logs an error when an observer stops while events are queued; harmless at
    # shutdown, and stderr is for our one-line errors.
    logging.getLogger("watchdog").addHandler(logging.NullHandler())
    logging.getLogger("watchdog").propagate = False
    app()


# The commands live in their own modules and register themselves on `app` when imported.
from riddlectl import cli_admin, cli_agents, cli_cache, cli_query, cli_submit  # noqa: E402, F401
