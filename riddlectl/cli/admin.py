"""Acting on riddles: `retry`, `hold`, `release`, `cancel`, `purge`, `doctor`."""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any

import typer

from riddlectl import runtime
from riddlectl.cli.common import (
    actor,
    command_group,
    emit_json,
    fail,
    guarded,
    read_ids,
    resolve,
)
from riddlectl.errors import ExitCode, RiddleError, SchemaOutdated
from riddlectl.ops import admin
from riddlectl.ops.doctor import examine
from riddlectl.spool.contract import Finding
from riddlectl.spool.states import Queue

app = command_group()

# -- acting on riddles -------------------------------------------------------------------------


def _acting(ctx: typer.Context, command: str) -> Any:
    settings = resolve(ctx)
    who = actor(command)
    spool = runtime.open_spool(settings, who, create=False, writable=True)
    spool.on_wait = _say_waiting  # a command waiting on an agent says so, not stays silent
    return runtime.pipeline(settings, spool, who)


IdsArg = Annotated[
    list[str] | None,
    typer.Argument(help="Riddle ids (- reads them from stdin).", metavar="ID..."),
]
# Commands that act on ids are given at least one (or `-`): none is a usage error, exit 2.
NeededIdsArg = Annotated[
    list[str], typer.Argument(help="Riddle ids (- reads them from stdin).", metavar="ID...")
]


def _each(pipeline: Any, command: str, ids: list[str], act: Callable[[str], str]) -> None:
    """Apply `act` to every id, reporting each; exit with the worst error's code.

    Every id is checked first: when one is unknown or cannot be acted on, each such is
    reported and nothing is done (exit 3 if one is unknown, else 2).
    """
    refused = admin.refusals(pipeline.spool, command, ids)
    for exc in refused:
        typer.echo(f"riddlectl: {exc}", err=True)
    if refused:
        raise typer.Exit(max(int(exc.exit_code) for exc in refused))
    worst = 0
    for riddle_id in ids:
        try:
            typer.echo(act(riddle_id))
        except RiddleError as exc:
            typer.echo(f"riddlectl: {exc}", err=True)
            worst = max(worst, int(exc.exit_code))
        except TimeoutError as exc:
            typer.echo(f"riddlectl: {exc}", err=True)
            worst = max(worst, int(ExitCode.TIMEOUT))
    if worst:
        raise typer.Exit(worst)


def _say_waiting(riddle_id: str) -> None:
    typer.echo(f"riddlectl: {riddle_id}: waiting for the agent handling it…", err=True)


@app.command()
@guarded
def retry(
    ctx: typer.Context,
    ids: IdsArg = None,
    failed: Annotated[bool, typer.Option("--failed", help="Every failed riddle.")] = False,
    from_step: Annotated[
        str | None,
        typer.Option("--from", help="Start again at extract, solve or validate.", metavar="STEP"),
    ] = None,
    reset_trials: Annotated[
        bool, typer.Option("--reset-trials", help="Set status.trial to 0.")
    ] = False,
) -> None:
    """Put riddles back into the pipeline (default: every failed one)."""
    if from_step is not None and from_step not in admin.RETRY_STEPS:
        fail(
            f"--from: expected one of {', '.join(admin.RETRY_STEPS)}, got {from_step!r}",
            ExitCode.USAGE,
        )
    pipeline = _acting(ctx, "retry")
    wanted = read_ids(ids or [])
    if failed or not ids:  # `-` that reads no ids acts on none, not on every failed one
        wanted += [i for i in admin.failed_ids(pipeline) if i not in wanted]
    _each(
        pipeline,
        "retry",
        wanted,
        lambda i: f"{i}\t{admin.retry(pipeline, i, from_step, reset_trials).value}",
    )


@app.command()
@guarded
def hold(ctx: typer.Context, ids: NeededIdsArg) -> None:
    """Park riddles in hold/ (one already held stays held)."""
    pipeline = _acting(ctx, "hold")
    _each(pipeline, "hold", read_ids(ids), lambda i: f"{i}\t{admin.hold(pipeline, i).value}")


@app.command()
@guarded
def release(ctx: typer.Context, ids: NeededIdsArg) -> None:
    """Put held riddles back where they were (one not held stays where it is)."""
    pipeline = _acting(ctx, "release")
    _each(
        pipeline,
        "release",
        read_ids(ids),
        lambda i: f"{i}\t{admin.release(pipeline, i).value}",
    )


@app.command()
@guarded
def cancel(ctx: typer.Context, ids: NeededIdsArg) -> None:
    """Move riddles and their sub-riddles to failed/ with error `cancelled` (one already
    final stays as it is)."""
    pipeline = _acting(ctx, "cancel")
    _each(pipeline, "cancel", read_ids(ids), lambda i: "\n".join(admin.cancel(pipeline, i)) or i)


@app.command()
@guarded
def purge(
    ctx: typer.Context,
    older_than: Annotated[
        str, typer.Option(help="Age such as 7d, 12h, 30m, 90s.", metavar="DURATION")
    ],
    done: Annotated[bool, typer.Option("--done", help="Purge done/.")] = False,
    failed: Annotated[bool, typer.Option("--failed", help="Purge failed/.")] = False,
) -> None:
    """Delete finished riddles older than DURATION (both queues unless one is named)."""
    try:
        seconds = admin.parse_duration(older_than)
    except ValueError:
        fail(
            f"--older-than: expected a duration like 7d, 12h, 30m or 90s, got {older_than!r}",
            ExitCode.USAGE,
        )
    queues = [q for q, on in ((Queue.DONE, done), (Queue.FAILED, failed)) if on]
    pipeline = _acting(ctx, "purge")
    for riddle_id in admin.purge(pipeline, queues or [Queue.DONE, Queue.FAILED], seconds):
        typer.echo(riddle_id)


@app.command()
@guarded
def doctor(
    ctx: typer.Context,
    fix: Annotated[bool, typer.Option("--fix", help="Repair what is safe to repair.")] = False,
    strict: Annotated[
        bool, typer.Option("--strict", help="Exit 1 on warnings about the surroundings too.")
    ] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Findings as JSON.")] = False,
) -> None:
    """Check the spool; exit 0 when no problem of the spool is left (warnings about its
    surroundings, such as the server's settings, are printed as `warn` lines), 1
    otherwise."""
    try:
        pipeline = _acting(ctx, "doctor")
    except SchemaOutdated as exc:  # every other command refuses it: doctor says what to do
        pipeline, findings = None, [Finding("old-schema", exc.where or "", exc.message)]
    else:
        database = pipeline.spool.health()
        findings = examine(pipeline, fix=fix, figures=database)
    problems = [f for f in findings if not f.fixed and not f.warning]
    warnings = [f for f in findings if not f.fixed and f.warning]
    failing = problems + (warnings if strict else [])
    if as_json:
        shown: dict[str, object] = {
            "findings": [f.as_dict() for f in findings],
            "ok": not failing,
            "problems": len(problems),
            "warnings": len(warnings),
        }
        if pipeline is not None and database is not None:
            shown["database"] = database
        emit_json(shown)
    else:
        for f in findings:
            mark = "fixed" if f.fixed else "warn" if f.warning else "found"
            typer.echo(f"{mark}\t{f.kind}\t{f.subject}\t{f.detail}")
        typer.echo(_verdict(len(problems), len(warnings)), err=True)
    if failing:
        raise typer.Exit(int(ExitCode.FAILED))


def _verdict(problems: int, warnings: int) -> str:
    said = f"{problems} problem(s) left" if problems else "spool is healthy"
    if warnings:
        said += f"; {warnings} warning(s) about its surroundings"
    return said


# -- copying a spool ---------------------------------------------------------------------------


@app.command("copy")
@guarded
def copy_spool(
    ctx: typer.Context,
    target: Annotated[
        str,
        typer.Option("--to", help="The spool to copy into (made if need be).", metavar="SPOOL"),
    ],
    source: Annotated[
        str | None,
        typer.Option(
            "--from",
            help="The spool to copy (a directory or URL; default: --spool).",
            metavar="SPOOL",
        ),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the counts as JSON.")] = False,
) -> None:
    """Copy a whole spool into a new one, of either kind: riddles with their ids, queues
    and documents, drop-ins, set-aside files and events. Refuses while agents hold claims
    on either; exit 1 when an entry could not be copied (each is named)."""
    from dataclasses import replace

    from riddlectl.ops.copy import copy, target_spool
    from riddlectl.spool import display_name

    settings = resolve(ctx)
    source = source or settings.spool
    names = (display_name(source), display_name(target))
    origin = runtime.open_spool(replace(settings, spool=source), create=False)
    into_settings = replace(settings, spool=target)
    into = target_spool(
        origin,
        names,
        lambda: runtime.find_spool(into_settings),
        lambda: runtime.make_spool(into_settings),
    )
    copied = copy(
        origin,
        into,
        names,
        on_missed=lambda e: typer.echo(f"riddlectl: {e.where}: not copied: {e.reason}", err=True),
    )
    if as_json:
        emit_json(
            {
                "riddles": {queue.value: n for queue, n in copied.riddles.items()},
                "drop_ins": {queue.value: n for queue, n in copied.drop_ins.items()},
                "set_aside": copied.set_aside,
                "events": copied.events,
                "not_copied": [{"entry": e.where, "reason": e.reason} for e in copied.missed],
            }
        )
    else:
        riddles, drop_ins = sum(copied.riddles.values()), sum(copied.drop_ins.values())
        typer.echo(
            f"copied {riddles} riddle(s), {drop_ins} drop-in(s), {copied.set_aside} set-aside "
            f"file(s) and {copied.events} event(s) to {names[1]}"
            + (f"; {len(copied.missed)} entry(ies) not copied" if copied.missed else ""),
            err=True,
        )
    if copied.missed:
        raise typer.Exit(int(ExitCode.FAILED))
