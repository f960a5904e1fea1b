"""`riddlectl corrupt list|show|drop|resubmit`: the files set aside as no riddle."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from riddlectl import runtime
from riddlectl.cli.common import actor, command_group, emit_json, fail, guarded, resolve
from riddlectl.errors import ExitCode

app = command_group()
corrupt_app = command_group(
    help="The files set aside as no riddle (corrupt/ in the spool), each with its reason.",
    no_args_is_help=True,
)
app.add_typer(corrupt_app, name="corrupt")

NameArg = Annotated[
    str, typer.Argument(help="A set-aside file's name (as `list` shows it).", metavar="NAME")
]


@corrupt_app.command("list")
@guarded
def list_(
    ctx: typer.Context,
    as_json: Annotated[bool, typer.Option("--json", help="One JSON array.")] = False,
) -> None:
    """Each set-aside file: its name, size and the reason it was set aside."""
    from riddlectl.ops import corrupt

    spool = runtime.open_spool(resolve(ctx), create=False)
    files = corrupt.listing(spool)
    if as_json:
        emit_json(files)
        return
    for entry in files:
        size = entry["bytes"] if entry["kind"] is None else "-"  # a FIFO, a link: no size
        typer.echo(f"{entry['name']}\t{size}\t{entry['reason']}")


@corrupt_app.command()
@guarded
def show(ctx: typer.Context, name: NameArg) -> None:
    """The file's content, byte for byte, on stdout (its reason: `list`). An entry that
    is no regular file (a FIFO, a symbolic link, a directory) is not opened: one line
    says what it is (exit 2)."""
    from riddlectl.ops import corrupt

    spool = runtime.open_spool(resolve(ctx), create=False)
    sys.stdout.buffer.write(corrupt.content(spool, name))
    sys.stdout.flush()


@corrupt_app.command()
@guarded
def drop(
    ctx: typer.Context,
    names: Annotated[list[str], typer.Argument(help="Set-aside files' names.", metavar="NAME...")],
) -> None:
    """Delete set-aside files (all or none: an unknown name, exit 3, drops nothing)."""
    from riddlectl.ops import corrupt

    spool = runtime.open_spool(resolve(ctx), create=False, writable=True)
    from riddlectl.entries import shown

    for name in corrupt.drop(spool, names):
        typer.echo(shown(name))


@corrupt_app.command()
@guarded
def resubmit(
    ctx: typer.Context,
    name: NameArg,
    source: Annotated[
        str | None,
        typer.Argument(
            help="A corrected version to submit in its place (- for stdin); "
            "without it, the file as it is.",
            metavar="FILE",
        ),
    ] = None,
) -> None:
    """Submit a set-aside file again, as it is or corrected, checked as `submit` checks;
    once stored, the set-aside file goes. Prints each new id."""
    from riddlectl.ops import corrupt

    raw: bytes | None = None
    origin = source or ""
    if source == "-":
        raw, origin = sys.stdin.buffer.read(), "<stdin>"
    elif source is not None:
        try:
            raw = Path(source).read_bytes()
        except OSError as exc:
            fail(f"{source}: {exc.strerror or exc}", ExitCode.USAGE)
    settings = resolve(ctx)
    spool = runtime.open_spool(settings, create=False, writable=True)
    pipeline = runtime.pipeline(settings, spool, actor("corrupt"))
    for riddle_id in corrupt.resubmit(pipeline, settings, name, raw, origin):
        typer.echo(riddle_id)
