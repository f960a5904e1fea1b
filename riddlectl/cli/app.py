"""The `riddlectl` command: global options, and every command loaded on demand.

Each command parses its options, resolves the settings once, calls one library function,
renders the result for people (or as JSON), and maps errors to the exit codes of
docs/reference.md#exit-codes.
The commands live in their own modules, named in `COMMANDS`; only the module of the
command being run is imported, so `riddlectl status` does not pay for the agent runner,
the doctor or the handlers. `--help` and shell completion load them all.
"""

from __future__ import annotations

import importlib
import os
import sys
from pathlib import Path
from typing import Annotated, Any

import typer

from riddlectl.cli.common import INTERRUPTED, Group, quiet_stdout
from riddlectl.errors import ExitCode
from riddlectl.settings import CONFIG_VAR, ENV_VARS

# Command name -> the module (in riddlectl.cli) that defines it, in the order `--help`
# lists them: the way through the pipeline first, then inspecting, acting, and the rest.
# A new command is registered on its module's `app` and named here.
COMMANDS: dict[str, str] = {
    "init": "submit",
    "submit": "submit",
    "ingest": "submit",
    "run": "agents",
    "agent": "agents",
    "agents": "roster",
    "status": "query",
    "show": "query",
    "result": "query",
    "events": "query",
    "retry": "admin",
    "hold": "admin",
    "release": "admin",
    "cancel": "admin",
    "purge": "admin",
    "doctor": "admin",
    "copy": "admin",
    "corrupt": "corrupt",
    "cache": "cache",
    "serve": "web",
    "metrics": "web",
    "schema": "submit",
    "bench": "bench",
}


class LazyGroup(Group):
    """The root command's group: a command's module is imported, and the command built,
    when it is first asked for (to run it, to show its help, to complete it).

    Every module defines `app`, a `typer.Typer` (see `common.command_group`) holding its
    commands.
    """

    def list_commands(self, ctx: Any) -> list[str]:
        return list(COMMANDS)

    def get_command(self, ctx: Any, cmd_name: str) -> Any:
        if cmd_name not in self.commands and cmd_name in COMMANDS:
            self.commands[cmd_name] = _load(cmd_name)
        return self.commands.get(cmd_name)

    def resolve_command(self, ctx: Any, args: list[str]) -> Any:
        unknown = args and args[0] not in COMMANDS and not args[0].startswith("-")
        if unknown and not ctx.resilient_parsing:
            # typer suggests among the commands built so far; suggest among all of them.
            import difflib

            close = difflib.get_close_matches(args[0], list(COMMANDS))
            hint = f". Did you mean {', '.join(repr(c) for c in close)}?" if close else "."
            ctx.fail(f"No such command {args[0]!r}{hint}")
        return super().resolve_command(ctx, args)


def _load(name: str) -> Any:
    """The click command `name`, built from its module's `app` (only that command: typer
    reads every parameter's annotations, which is worth skipping for the others)."""
    commands = importlib.import_module(f"riddlectl.cli.{COMMANDS[name]}").app
    for info in commands.registered_commands:
        if (info.name or typer.main.get_command_name(info.callback.__name__)) == name:
            return typer.main.get_command_from_info(
                info,
                pretty_exceptions_short=commands.pretty_exceptions_short,
                rich_markup_mode=commands.rich_markup_mode,
            )
    return typer.main.get_group(commands).commands[name]  # a group of its own (`cache`)


app = typer.Typer(
    cls=LazyGroup,
    name="riddlectl",
    help="Run multi-agent riddle solving over a crash-safe spool: a directory, or "
    "PostgreSQL shared by many hosts.",
    no_args_is_help=True,
    add_completion=True,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)


def _print_version(value: bool) -> None:
    if value:
        from importlib.metadata import version

        typer.echo(f"riddlectl {version('riddlectl')}")
        raise typer.Exit(0)


@app.callback()
def main_options(
    ctx: typer.Context,
    spool: Annotated[
        str | None,
        typer.Option(
            "--spool",
            envvar=ENV_VARS["spool"],
            help="Spool: a directory (PATH or file://PATH), or a postgresql:// URL for a "
            "spool shared by hosts.",
            show_default="./spool",
            metavar="PATH|URL",
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
    config: Annotated[
        Path | None,
        typer.Option(
            "--config",
            envvar=CONFIG_VAR,
            help="Read settings from this TOML file instead of the spool's own "
            "config.toml (the way to configure a PostgreSQL spool).",
            metavar="FILE",
        ),
    ] = None,
    version: Annotated[
        bool,
        typer.Option(
            "--version", help="Print the version and exit.", callback=_print_version, is_eager=True
        ),
    ] = False,
) -> None:
    ctx.obj = {"spool": spool, "data_dir": data_dir, "config": config}


def main(argv: list[str] | None = None) -> None:
    """The `riddlectl` command: every way out is an exit code, never a traceback."""
    try:
        # Not standalone: click's own error display is a usage block; ours is one line.
        code = app(args=argv, prog_name="riddlectl", standalone_mode=False)
    except typer.TyperException as exc:  # click's usage errors (bad option, missing argument)
        code = usage_error(exc)
    except (typer.Abort, KeyboardInterrupt):  # Ctrl-C (click turns it into Abort)
        code = INTERRUPTED
    except BrokenPipeError:
        quiet_stdout()
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
    # The command as typed (`cache clear`), not its last word.
    place = ctx.command_path.partition(" ")[2] if ctx is not None and ctx.parent else None
    typer.echo(f"riddlectl: {place + ': ' if place else ''}{message}", err=True)
    return int(getattr(exc, "exit_code", ExitCode.USAGE))
