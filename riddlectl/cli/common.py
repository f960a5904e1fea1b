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
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

import typer
from typer.core import TyperCommand, TyperGroup

from riddlectl import settings as settings_mod
from riddlectl.errors import ExitCode, RiddleError

if TYPE_CHECKING:
    from riddlectl.agent import Stop
    from riddlectl.identity import Actor
    from riddlectl.settings import Settings

F = TypeVar("F", bound=Callable[..., Any])


class Command(TyperCommand):
    """A command whose usage line names its arguments as its help does, in one convention:
    upper case, `...` when repeatable, in brackets when optional (`hold ID...`,
    `status [ID...]`; typer writes `{ID}` and `[ID]`)."""

    def collect_usage_pieces(self, ctx: Any) -> list[str]:
        pieces = [self.options_metavar] if self.options_metavar else []
        for param in self.get_params(ctx):
            if param.param_type_name == "argument":
                pieces.append(argument_usage(param))
        return pieces


def argument_usage(param: Any) -> str:
    """An argument as a usage line names it (`ID...`, `[FILE...]`)."""
    name = param.metavar or (param.name or "").upper()
    if param.nargs != 1 and not name.endswith("..."):
        name += "..."
    return name if param.required else f"[{name}]"


class Group(TyperGroup):
    """A group whose list of commands gives each command's whole summary (the first
    paragraph of its help), wrapped, never cut short with `...`."""

    def format_commands(self, ctx: Any, formatter: Any) -> None:
        rows = []
        for name in self.list_commands(ctx):
            command = self.get_command(ctx, name)
            if command is not None and not command.hidden:
                rows.append((name, summary(command)))
        if rows:
            with formatter.section("Commands"):
                formatter.write_dl(rows)


def summary(command: Any) -> str:
    """A command's summary: the first paragraph of its help, on one line."""
    text = command.short_help or command.help or ""
    return " ".join(text.split("\n\n")[0].split())


class _Commands(typer.Typer):
    def command(self, *args: Any, cls: Any = None, **kwargs: Any) -> Any:
        return super().command(*args, cls=cls or Command, **kwargs)


def command_group(**options: Any) -> typer.Typer:
    """The `typer.Typer` a command module registers its commands on.

    Help is plain text, as for the root command, with our conventions for usage lines and
    summaries (`Command`, `Group`), and errors are ours (`guarded`), not typer's pretty
    tracebacks.
    """
    return _Commands(
        cls=Group,
        rich_markup_mode=None,
        pretty_exceptions_enable=False,
        add_completion=False,
        **options,
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
            *before, last = exc.lines()
            for line in before:
                typer.echo(f"riddlectl: {line}", err=True)
            fail(last, exc.exit_code)
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


def timeout_needs_wait(timeout: float | None, wait: bool) -> None:
    """`--timeout` bounds `--wait`: given alone it would be dropped, so it is refused."""
    if timeout is not None and not wait:
        raise RiddleError("only with --wait", where="--timeout")


def read_ids(ids: list[str]) -> list[str]:
    """Ids from arguments, where `-` stands for whitespace-separated ids on stdin; an id
    given twice is kept once, where it first came."""
    out: list[str] = []
    for value in ids:
        out += sys.stdin.read().split() if value == "-" else [value]
    return list(dict.fromkeys(out))


# The exit status of a command ended by Ctrl-C, as a shell reports one killed by SIGINT.
INTERRUPTED = 128 + signal.SIGINT


@dataclass
class Signals:
    """How a long-running command is asked to stop: SIGTERM or SIGINT sets `stop` (handlers
    still running get the stop grace), a second one sets `hurry` too (they are ended at
    once). `first` is the signal that asked first."""

    stop: Stop = field(default_factory=lambda: _stop())
    hurry: threading.Event = field(default_factory=threading.Event)
    first: int | None = None

    def exit_if_interrupted(self) -> None:
        """After the orderly wind-down: a command ended by SIGINT exits 130; one ended by
        SIGTERM (how service managers stop agents) carries on to its own exit status."""
        if self.first == signal.SIGINT:
            raise typer.Exit(INTERRUPTED)


def _stop() -> Stop:
    from riddlectl.agent import Stop

    return Stop()


def stop_on_signals() -> Signals:
    """Catch SIGTERM and SIGINT from now on, into the `Signals` returned."""
    signals = Signals()

    def handler(signum: int, frame: Any) -> None:
        if signals.stop.is_set():
            signals.hurry.set()
        if signals.first is None:
            signals.first = signum
        signals.stop.request(f"signal {signal.Signals(signum).name}")

    signal.signal(signal.SIGTERM, handler)
    signal.signal(signal.SIGINT, handler)
    return signals
