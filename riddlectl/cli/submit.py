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
    timeout_needs_wait,
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
        list[str] | None,
        typer.Argument(help="JSON files, or - for stdin.", metavar="FILE..."),
    ] = None,
    question: Annotated[
        str | None, typer.Option(help="Build a riddle with this question.", metavar="TEXT")
    ] = None,
    context: Annotated[
        str | None, typer.Option(help="Context of every riddle submitted.", metavar="TEXT")
    ] = None,
    data: Annotated[
        list[str] | None,
        typer.Option(
            "--data",
            help="Data file of every riddle submitted, relative to the data directory "
            "(repeatable; replaces the documents' data).",
            autocompletion=_complete_data,
            metavar="FILE",
        ),
    ] = None,
    answer_kind: Annotated[
        str | None,
        typer.Option(
            help=f"Typed answer of every riddle submitted: {', '.join(FILL_KINDS)} (fill) or noul.",
            metavar="KIND",
        ),
    ] = None,
    no_extract: Annotated[bool, typer.Option("--no-extract", help="Skip extraction.")] = False,
    no_validate: Annotated[bool, typer.Option("--no-validate", help="Skip validation.")] = False,
    riddle_id: Annotated[
        str | None,
        typer.Option("--id", help="Id of the riddle submitted (one riddle only).", metavar="ID"),
    ] = None,
    priority: Annotated[
        int | None,
        typer.Option(
            help="Priority of every riddle submitted, a 64-bit whole number; higher goes first.",
            show_default="0",
            callback=_stored_priority,
            metavar="N",
        ),
    ] = None,
    wait: Annotated[bool, typer.Option("--wait", help="Wait and print the results.")] = False,
    timeout: Annotated[
        float | None,
        typer.Option(help="With --wait: seconds to wait.", min=0, metavar="SECONDS"),
    ] = None,
) -> None:
    """Submit riddles; prints each new id on its own line. An option given beside files
    or stdin applies to every riddle they hold, over the documents' own fields."""
    timeout_needs_wait(timeout, wait)
    settings = resolve(ctx)
    spool = runtime.open_spool(settings, create=False, writable=True)
    parsed = _submission(files or [], question, settings.max_document_bytes)
    overrides = submitting.Overrides(
        riddle_id=riddle_id,
        context=context,
        data=tuple(data) if data is not None else None,
        answer_kind=answer_kind,
        no_extract=no_extract,
        no_validate=no_validate,
        priority=priority,
    )
    riddles = submitting.prepare(parsed, settings, overrides)
    del parsed  # the JSON as parsed, 3 KB a riddle: its memory serves the store's rows
    pipeline = runtime.pipeline(settings, spool, actor("submit"))
    ids = submitting.submit(pipeline, riddles)
    if wait:
        print_results(report.results(spool, ids, wait=True, timeout=timeout), as_json=False)
    else:
        typer.echo("\n".join(ids))


def _submission(files: list[str], question: str | None, limit: int) -> list[tuple[str, Any]]:
    if question is not None:
        if files:
            raise RiddleError("give files or --question, not both", where="submit")
        return [submitting.from_question(question)]
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
    directory: Annotated[
        Path,
        typer.Argument(help="The directory to take riddle files from.", metavar="DIRECTORY"),
    ],
    watch: Annotated[bool, typer.Option("--watch", help="Keep looking until interrupted.")] = False,
    wait: Annotated[
        bool,
        typer.Option(
            "--wait", help="Wait for files left as younger than the grace, then take them too."
        ),
    ] = False,
    poll: Annotated[
        float | None,
        typer.Option(
            help="Seconds between looks with --watch (0.05 or more; 1).",
            min=0.05,
            metavar="SECONDS",
        ),
    ] = None,
) -> None:
    """Move riddle files (*.json, *.jsonl) from DIRECTORY into the spool's incoming queue
    (drop-in rules); print each name moved. Files that are no riddle are set aside in
    DIRECTORY/corrupt/ with NAME.reason beside each, and named on stderr; what was left
    for a later look, and other names left alone, are counted on stderr."""
    from riddlectl.ops.ingest import ingest as run_ingest

    # What would be dropped unsaid is refused, as `--timeout` without `--wait` is.
    if poll is not None and not watch:
        raise RiddleError("only with --watch", where="--poll")
    if wait and watch:
        raise RiddleError("not with --watch, which waits for every file already", where="--wait")
    settings = resolve(ctx)
    spool = runtime.open_spool(settings, create=False, writable=True)
    # A signal stops it between files, never inside a write to the spool.
    signals = stop_on_signals()
    look = run_ingest(
        spool,
        directory,
        settings,
        watch=watch,
        wait=wait,
        poll=1.0 if poll is None else poll,
        stop=signals.stop,
        on_moved=_say_moved,
        on_set_aside=_say_set_aside,
    )
    _say_left(directory, look, None if watch else settings.drop_in_grace)
    signals.exit_if_interrupted()


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
