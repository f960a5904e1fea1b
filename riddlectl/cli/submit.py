"""`init`, `schema`, `submit` and `ingest`."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from riddlectl import runtime
from riddlectl import settings as settings_mod
from riddlectl.cli.common import (
    actor,
    command_group,
    emit_json,
    guarded,
    resolve,
    stop_on_signals,
)
from riddlectl.cli.query import print_results
from riddlectl.document.answers import FILL_KINDS
from riddlectl.document.model import riddle_json_schema
from riddlectl.errors import RiddleError
from riddlectl.ops import report
from riddlectl.ops import submit as submitting

if TYPE_CHECKING:
    from riddlectl.ops.ingest import Look

app = command_group()

# -- init, schema -------------------------------------------------------------------------------


def _stored_priority(value: int | None) -> int | None:
    # A document holds 64-bit integers: a bigger priority could never be stored. Checked
    # here rather than with typer's min/max, whose 19-digit bounds would fill the help.
    if value is not None and not -(2**63) <= value < 2**63:
        raise typer.BadParameter("must be a 64-bit whole number (-2^63 to 2^63-1)")
    return value


@app.command()
@guarded
def init(ctx: typer.Context) -> None:
    """Create the spool layout and the data directory; idempotent."""
    settings = resolve(ctx)
    spool = runtime.open_spool(settings, writable=True)
    data_dir = Path(settings.data_dir)
    try:
        data_dir.mkdir(parents=True, exist_ok=True)
    except (FileExistsError, NotADirectoryError):
        raise RiddleError("not a directory", where=str(data_dir), field="--data-dir") from None
    typer.echo(f"spool ready at {spool.name}", err=True)


@app.command()
@guarded
def schema() -> None:
    """Print the JSON Schema of the riddle document."""
    emit_json(riddle_json_schema())


# -- submit -------------------------------------------------------------------------------------


def _complete_data(ctx: typer.Context, incomplete: str) -> list[str]:
    """Shell completion for --data: files below the data directory."""
    base = Path(
        (ctx.parent.params.get("data_dir") if ctx.parent else None)
        or settings_mod.resolve().data_dir
    )
    if not base.is_dir():
        return []
    found = [str(p.relative_to(base)) for p in base.rglob("*") if p.is_file()]
    return sorted(f for f in found if f.startswith(incomplete))[:200]


@app.command()
@guarded
def submit(
    ctx: typer.Context,
    files: Annotated[
        list[str] | None, typer.Argument(help="JSON files, or - for stdin.", metavar="FILE")
    ] = None,
    question: Annotated[str | None, typer.Option(help="Build a riddle with this question.")] = None,
    context: Annotated[str, typer.Option(help="Context of the riddle built from flags.")] = "",
    data: Annotated[
        list[str] | None,
        typer.Option(
            "--data",
            help="Data file, relative to the data directory (repeatable).",
            autocompletion=_complete_data,
        ),
    ] = None,
    answer_kind: Annotated[
        str | None,
        typer.Option(help=f"Typed answer: {', '.join(FILL_KINDS)} (fill) or noul."),
    ] = None,
    no_extract: Annotated[bool, typer.Option("--no-extract", help="Skip extraction.")] = False,
    no_validate: Annotated[bool, typer.Option("--no-validate", help="Skip validation.")] = False,
    riddle_id: Annotated[
        str | None, typer.Option("--id", help="Id of the riddle built from flags.")
    ] = None,
    priority: Annotated[
        int | None,
        typer.Option(
            help="Priority, a 64-bit whole number; higher goes first.",
            show_default="0",
            callback=_stored_priority,
        ),
    ] = None,
    wait: Annotated[bool, typer.Option("--wait", help="Wait and print the results.")] = False,
    timeout: Annotated[
        float | None, typer.Option(help="With --wait: seconds to wait.", min=0)
    ] = None,
) -> None:
    """Submit riddles; prints each new id on its own line."""
    settings = resolve(ctx)
    spool = runtime.open_spool(settings, create=False, writable=True)
    parsed = _submission(
        files or [],
        question,
        context,
        data or [],
        answer_kind,
        not no_extract,
        not no_validate,
        riddle_id,
        settings.max_document_bytes,
    )
    riddles = submitting.prepare(parsed, settings, priority)
    del parsed  # the JSON as parsed, 3 KB a riddle: its memory serves the store's rows
    pipeline = runtime.pipeline(settings, spool, actor("submit"))
    ids = submitting.submit(pipeline, riddles)
    if wait:
        print_results(report.results(spool, ids, wait=True, timeout=timeout), as_json=False)
    else:
        typer.echo("\n".join(ids))


def _submission(
    files: list[str],
    question: str | None,
    context: str,
    data: list[str],
    answer_kind: str | None,
    extract: bool,
    validate: bool,
    riddle_id: str | None,
    limit: int,
) -> list[tuple[str, Any]]:
    if question is not None:
        if files:
            raise RiddleError("give files or --question, not both", where="submit")
        return [
            (
                "--question",
                submitting.from_flags(
                    question,
                    context=context,
                    data=data,
                    answer_kind=answer_kind,
                    extract=extract,
                    validate=validate,
                    riddle_id=riddle_id,
                ),
            )
        ]
    if not files:
        if sys.stdin.isatty():
            raise RiddleError(
                "nothing to submit: give FILE…, - for stdin, or --question", where="submit"
            )
        files = ["-"]
    sources = []
    for name in files:
        if name == "-":
            sources.append(submitting.Source("<stdin>", sys.stdin.buffer.read()))
            continue
        try:
            sources.append(submitting.Source(name, Path(name).read_bytes()))
        except OSError as exc:
            raise RiddleError(f"cannot read: {exc.strerror}", where=name) from None
    return submitting.parse_sources(sources, limit)


# -- ingest -------------------------------------------------------------------------------------


@app.command()
@guarded
def ingest(
    ctx: typer.Context,
    directory: Annotated[Path, typer.Argument(help="The directory to take riddle files from.")],
    watch: Annotated[bool, typer.Option("--watch", help="Keep looking until interrupted.")] = False,
    wait: Annotated[
        bool,
        typer.Option(
            "--wait", help="Wait for files left as younger than the grace, then take them too."
        ),
    ] = False,
    poll: Annotated[
        float, typer.Option(help="Seconds between looks with --watch.", min=0.05)
    ] = 1.0,
) -> None:
    """Move riddle files (*.json, *.jsonl) from DIRECTORY into the spool's incoming queue
    (drop-in rules); print each name moved. Files that are no riddle are set aside in
    DIRECTORY/corrupt/ with NAME.reason beside each, and named on stderr; what was left
    for a later look, and other names left alone, are counted on stderr."""
    from riddlectl.ops.ingest import ingest as run_ingest

    settings = resolve(ctx)
    spool = runtime.open_spool(settings, create=False, writable=True)
    # A signal stops it between files, never inside a write to the spool.
    stop, _ = stop_on_signals()
    look = run_ingest(
        spool,
        directory,
        settings,
        watch=watch,
        wait=wait,
        poll=poll,
        stop=stop,
        on_moved=_say_moved,
        on_set_aside=_say_set_aside,
    )
    _say_left(directory, look, None if watch else settings.drop_in_grace)


def _say_moved(name: str) -> None:
    typer.echo(name)
    sys.stdout.flush()  # for whoever follows the output of `ingest --watch`


def _say_set_aside(path: str, reason: str) -> None:
    typer.echo(f"riddlectl: {path}: {reason}", err=True)


def _say_left(directory: Path, look: Look, grace: float | None) -> None:
    """What the last look left in DIRECTORY: files too young yet (unless watching:
    `grace` None), and other names."""
    if look.young and grace is not None:
        typer.echo(
            f"riddlectl: {directory}: {look.young} file(s) younger than the {grace:g} s grace "
            "left for the next look (--wait waits for them)",
            err=True,
        )
    if look.other:
        typer.echo(
            f"riddlectl: {directory}: {look.other} other file(s) left alone "
            "(riddle files are *.json and *.jsonl)",
            err=True,
        )
