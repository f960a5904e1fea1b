"""Inspecting: `status`, `show`, `result`, `events`."""

from __future__ import annotations

import functools
import sys
import time
from collections.abc import Callable
from typing import Annotated, Any

import orjson
import typer

from riddlectl import runtime
from riddlectl.cli.common import (
    INTERRUPTED,
    command_group,
    emit_json,
    emit_jsonl,
    fail,
    guarded,
    read_ids,
    resolve,
    timeout_needs_wait,
)
from riddlectl.errors import ExitCode
from riddlectl.ops import report

app = command_group()

# -- status, show, result -------------------------------------------------------------------------


@app.command()
@guarded
def status(
    ctx: typer.Context,
    ids: Annotated[
        list[str] | None,
        typer.Argument(help="Riddle ids (- reads them from stdin).", metavar="ID..."),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="One JSON object.")] = False,
    as_jsonl: Annotated[bool, typer.Option("--jsonl", help="One riddle per line.")] = False,
    stage: Annotated[
        str | None, typer.Option(help="Only this stage's inbox or this queue.", metavar="NAME")
    ] = None,
    limit: Annotated[
        int | None,
        typer.Option(
            help="Riddles listed without ids, newest first (0: all). Default: all with "
            "--json/--jsonl, 20 otherwise.",
            min=0,
            metavar="N",
        ),
    ] = None,
    watch: Annotated[bool, typer.Option("--watch", help="Refresh every second.")] = False,
) -> None:
    """Counts per queue and recent riddles; or each given riddle's state."""
    if ids and stage is not None:  # it would be dropped: ids name the riddles shown
        fail("--stage: not with ids (it lists a queue; ids name the riddles)", ExitCode.USAGE)
    settings = resolve(ctx)
    spool = runtime.open_spool(settings, create=False)
    # Ids given (`-` among them) show those riddles only: `-` that reads none shows none.
    wanted = read_ids(ids) if ids else None
    show = functools.partial(_show_status, settings, spool, wanted, stage, limit)
    try:
        if watch and not (as_json or as_jsonl) and _interactive():
            _watch_in_place(show)
            return
        while True:
            show(as_json, as_jsonl)
            if not watch:
                break
            time.sleep(1.0)
    except KeyboardInterrupt:  # Ctrl-C is how --watch ends, and says so in its status
        raise typer.Exit(INTERRUPTED) from None


def _interactive() -> bool:
    from rich.console import Console

    return Console().is_interactive  # a terminal that can move its cursor


def _watch_in_place(show: Callable[..., None]) -> None:
    """`status --watch` on a terminal: the table redrawn in place every second, as `top`
    does. (Piped, each refresh is printed in full, so a reader sees every state.)"""
    from rich.live import Live
    from rich.text import Text

    with Live(auto_refresh=False, transient=False) as live:
        while True:
            lines: list[str] = []
            show(False, False, lines.append)
            live.update(Text("\n".join(lines), no_wrap=True, overflow="ellipsis"), refresh=True)
            time.sleep(1.0)


def _show_status(
    settings: Any,
    spool: Any,
    wanted: list[str] | None,
    stage: str | None,
    limit: int | None,
    as_json: bool,
    as_jsonl: bool,
    echo: Callable[[str], Any] = typer.echo,
) -> None:
    if stage == report.CORRUPT and wanted is None:
        _show_corrupt(settings, spool, as_json, as_jsonl, echo)
        return
    more = 0
    if wanted is not None:
        riddles = report.by_ids(spool, wanted)
    else:
        # Machine output is never cut unless asked; a person sees the newest few.
        shown = limit if limit is not None else 0 if as_json or as_jsonl else report.SHOWN
        found, more = report.listing(spool, stage, shown)
        riddles = report.summaries(spool, found)
    if as_jsonl:
        emit_jsonl(riddles)
    elif as_json:
        counts = report.counts(spool)
        emit_json({"spool": spool.name, "counts": counts, "riddles": riddles})
    else:
        _print_status(report.counts(spool), riddles, wanted is not None, echo)
        if more:
            echo(f"… {more} more (--limit 0 for all)")


def _show_corrupt(
    settings: Any, spool: Any, as_json: bool, as_jsonl: bool, echo: Callable[[str], Any]
) -> None:
    """`status --stage corrupt`: the files set aside, each with its reason."""
    files = report.corrupt_files(spool)
    if as_jsonl:
        emit_jsonl(files)
    elif as_json:
        emit_json({"spool": spool.name, "counts": report.counts(spool), "corrupt": files})
    else:
        echo("  ".join(f"{name} {n}" for name, n in report.counts(spool).items()))
        if files:
            echo(f"{'FILE':28} REASON")
        for f in files:
            echo(f"{f['file']:28} {f['reason']}")


def _print_status(
    counts: dict[str, int],
    riddles: list[dict[str, Any]],
    detailed: bool,
    echo: Callable[[str], Any],
) -> None:
    if not detailed:
        echo("  ".join(f"{name} {n}" for name, n in counts.items()))
    if riddles:
        echo(f"{'ID':28} {'QUEUE':9} {'TRIAL':>5} {'SOLVED':6} SOLUTION / ERROR")
    for r in riddles:
        detail = r["solution"] if r["solution"] is not None else ""
        if r["error"]:
            detail = f"{detail}  error: {r['error']}".strip()
        solved = "yes" if r["solved"] else "no"  # as the web pages say it; JSON says true
        echo(f"{r['id']:28} {r['queue']:9} {r['trial']:>5} {solved:6} {detail}")


@app.command()
@guarded
def show(
    ctx: typer.Context,
    ids: Annotated[
        list[str], typer.Argument(help="Riddle ids (- reads them from stdin).", metavar="ID...")
    ],
) -> None:
    """Print the whole document, wherever it is (several: a JSON array of them)."""
    spool = runtime.open_spool(resolve(ctx), create=False)
    docs = [riddle.to_json() for _, _, riddle in report.find_all(spool, read_ids(ids))]
    if docs:  # `-` that read no ids acts on none and prints nothing, as `xargs -r` would
        emit_json(docs[0] if len(docs) == 1 else docs)


@app.command()
@guarded
def result(
    ctx: typer.Context,
    ids: Annotated[
        list[str], typer.Argument(help="Riddle ids (- reads them from stdin).", metavar="ID...")
    ],
    wait: Annotated[bool, typer.Option("--wait", help="Wait until every riddle is final.")] = False,
    timeout: Annotated[
        float | None,
        typer.Option(help="With --wait: seconds to wait.", min=0, metavar="SECONDS"),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="The documents as JSON.")] = False,
) -> None:
    """Print each riddle's solution; exit 1 if one failed, 4 if one is not final."""
    timeout_needs_wait(timeout, wait)
    spool = runtime.open_spool(resolve(ctx), create=False)
    print_results(report.results(spool, read_ids(ids), wait=wait, timeout=timeout), as_json)


def print_results(found: list[report.Result], as_json: bool) -> None:
    if as_json:
        docs = [r.riddle.to_json() for r in found]
        emit_json(docs[0] if len(docs) == 1 else docs)
    else:
        for r in found:
            if r.final:
                text = (r.solution or "") if r.queue.value == "done" else ""
                typer.echo(f"{r.riddle_id}\t{text}" if len(found) > 1 else text)
    for r in found:
        if r.queue.value == "failed":
            typer.echo(f"riddlectl: {r.riddle_id}: failed: {r.riddle.error}", err=True)
    if any(not r.final for r in found):
        late = ", ".join(r.riddle_id for r in found if not r.final)
        fail(f"{late}: not final yet", ExitCode.TIMEOUT)
    if any(r.queue.value == "failed" for r in found):
        raise typer.Exit(int(ExitCode.FAILED))


# -- events ---------------------------------------------------------------------------------------


@app.command()
@guarded
def events(
    ctx: typer.Context,
    follow: Annotated[
        bool,
        typer.Option(
            "--follow", "-f", help="Keep printing new events (alone: from the end of the log)."
        ),
    ] = False,
    ids: Annotated[
        list[str] | None,
        typer.Option("--id", help="Only this riddle's events (repeatable).", metavar="ID"),
    ] = None,
    since: Annotated[
        str | None,
        typer.Option(
            "--since",
            help="Only events since then: a duration ago (10m, 2h, 7d) or an ISO 8601 time "
            "(UTC unless it says).",
            metavar="DURATION|TIME",
        ),
    ] = None,
    tail: Annotated[
        int | None,
        typer.Option(
            "--tail",
            "-n",
            help="Only the last N (with --follow: then new ones).",
            min=0,
            metavar="N",
        ),
    ] = None,
) -> None:
    """The event log as JSON Lines, oldest first; each event with `at` (ISO 8601, UTC)."""
    from riddlectl.ops import events as log_view

    try:
        narrowing = log_view.Narrowing(
            frozenset(ids or ()), None if since is None else log_view.parse_since(since), tail
        )
    except ValueError as exc:
        fail(f"events: --since: {exc}", ExitCode.USAGE)
    settings = resolve(ctx)
    runtime.open_spool(settings, create=False)
    runtime.recover_events(settings)  # first what agents killed mid-commit did not log
    log = runtime.event_log(settings)
    stream = log_view.follow(log, narrowing) if follow else log_view.read(log, narrowing)
    out = sys.stdout.buffer
    try:
        for event in stream:
            if event is None:
                sys.stdout.flush()
            else:
                out.write(orjson.dumps(event) + b"\n")
    except KeyboardInterrupt:  # what was printed stays whole; the status says how it ended
        sys.stdout.flush()
        raise typer.Exit(INTERRUPTED) from None
    sys.stdout.flush()
