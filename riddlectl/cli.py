"""The command line: a thin typer layer over the library.

Each command parses its options, resolves the settings once, calls one library function,
renders the result for people (or as JSON), and maps errors to the exit codes of SPEC §4.
"""

from __future__ import annotations

import functools
import logging
import signal
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any, TypeVar

import orjson
import typer

from riddlectl import admin, report, runtime
from riddlectl import settings as settings_mod
from riddlectl import submit as submitting
from riddlectl.doctor import examine
from riddlectl.errors import ExitCode, RiddleError
from riddlectl.identity import Actor
from riddlectl.models import riddle_json_schema
from riddlectl.queues import STAGES, Queue
from riddlectl.runner import RunSummary
from riddlectl.runner import run as run_agents
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


# -- init, schema -------------------------------------------------------------------------------


@app.command()
@guarded
def init(ctx: typer.Context) -> None:
    """Create the spool layout and the data directory; idempotent."""
    settings = resolve(ctx)
    runtime.open_spool(settings)
    Path(settings.data_dir).mkdir(parents=True, exist_ok=True)
    typer.echo(f"spool ready at {settings.spool}", err=True)


@app.command()
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
    files: Annotated[list[str] | None, typer.Argument(help="JSON files, or - for stdin.")] = None,
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
        str | None, typer.Option(help="Typed answer: text, int, number, json_list (fill) or noul.")
    ] = None,
    no_extract: Annotated[bool, typer.Option("--no-extract", help="Skip extraction.")] = False,
    no_validate: Annotated[bool, typer.Option("--no-validate", help="Skip validation.")] = False,
    riddle_id: Annotated[
        str | None, typer.Option("--id", help="Id of the riddle built from flags.")
    ] = None,
    priority: Annotated[int | None, typer.Option(help="Priority (higher first).")] = None,
    wait: Annotated[bool, typer.Option("--wait", help="Wait and print the results.")] = False,
    timeout: Annotated[float | None, typer.Option(help="With --wait: seconds to wait.")] = None,
) -> None:
    """Submit riddles; prints each new id on its own line."""
    settings = resolve(ctx)
    parsed = _submission(
        files or [],
        question,
        context,
        data or [],
        answer_kind,
        not no_extract,
        not no_validate,
        riddle_id,
    )
    riddles = submitting.prepare(parsed, settings, priority)
    spool = runtime.open_spool(settings)
    pipeline = runtime.pipeline(settings, spool, actor("submit"))
    ids = submitting.submit(pipeline, riddles)
    if wait:
        _print_results(report.results(spool, ids, wait=True, timeout=timeout), as_json=False)
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
    return submitting.parse_sources(sources)


# -- status, show, result -------------------------------------------------------------------------


@app.command()
@guarded
def status(
    ctx: typer.Context,
    ids: Annotated[
        list[str] | None, typer.Argument(help="Riddle ids (- reads them from stdin).")
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="One JSON object.")] = False,
    as_jsonl: Annotated[bool, typer.Option("--jsonl", help="One riddle per line.")] = False,
    stage: Annotated[
        str | None, typer.Option(help="Only this stage's inbox or this queue.")
    ] = None,
    limit: Annotated[int, typer.Option(help="Recent riddles listed without ids.")] = 20,
    watch: Annotated[bool, typer.Option("--watch", help="Refresh every second.")] = False,
) -> None:
    """Counts per queue and recent riddles; or each given riddle's state."""
    settings = resolve(ctx)
    spool = runtime.open_spool(settings, create=False)
    wanted = read_ids(ids or [])
    while True:
        if wanted:
            riddles = report.by_ids(spool, wanted)
        elif stage:
            queue = report.queue_named(stage)
            riddles = report.summaries(spool, [(queue, i) for i in sorted(spool.ids(queue))])
        else:
            riddles = report.summaries(spool, spool.recent(limit))
        if as_jsonl:
            emit_jsonl(riddles)
        elif as_json:
            emit_json(
                {"spool": str(settings.spool), "counts": report.counts(spool), "riddles": riddles}
            )
        else:
            _print_status(report.counts(spool), riddles, bool(wanted))
        if not watch:
            break
        threading.Event().wait(1.0)


def _print_status(counts: dict[str, int], riddles: list[dict[str, Any]], detailed: bool) -> None:
    if not detailed:
        typer.echo("  ".join(f"{name} {n}" for name, n in counts.items()))
    if riddles:
        typer.echo(f"{'ID':28} {'QUEUE':9} {'TRIAL':>5} {'SOLVED':6} SOLUTION / ERROR")
    for r in riddles:
        detail = r["solution"] if r["solution"] is not None else ""
        if r["error"]:
            detail = f"{detail}  error: {r['error']}".strip()
        typer.echo(f"{r['id']:28} {r['queue']:9} {r['trial']:>5} {r['solved']!s:6} {detail}")


@app.command()
@guarded
def show(ctx: typer.Context, riddle_id: Annotated[str, typer.Argument(metavar="ID")]) -> None:
    """Print the whole document, wherever it is."""
    spool = runtime.open_spool(resolve(ctx), create=False)
    _, riddle = spool.require(riddle_id)
    emit_json(riddle.to_json())


@app.command()
@guarded
def result(
    ctx: typer.Context,
    ids: Annotated[list[str], typer.Argument(help="Riddle ids (- reads them from stdin).")],
    wait: Annotated[bool, typer.Option("--wait", help="Wait until every riddle is final.")] = False,
    timeout: Annotated[float | None, typer.Option(help="With --wait: seconds to wait.")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="The documents as JSON.")] = False,
) -> None:
    """Print each riddle's solution; exit 1 if one failed, 4 if one is not final."""
    spool = runtime.open_spool(resolve(ctx), create=False)
    _print_results(report.results(spool, read_ids(ids), wait=wait, timeout=timeout), as_json)


def _print_results(found: list[report.Result], as_json: bool) -> None:
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


def read_ids(ids: list[str]) -> list[str]:
    """Ids from arguments, where `-` stands for whitespace-separated ids on stdin."""
    out = []
    for value in ids:
        out += sys.stdin.read().split() if value == "-" else [value]
    return out


# -- run, agent -----------------------------------------------------------------------------------


def _handler_flags(values: list[str]) -> dict[str, tuple[str, ...]]:
    table: dict[str, list[str]] = {}
    for value in values:
        stage, sep, spec = value.partition("=")
        if not sep or stage not in ("extract", "solve", "validate") or not spec:
            raise RiddleError(
                "expected STAGE=HANDLER with STAGE extract, solve or validate",
                where="--handler",
                field=value,
            )
        table.setdefault(stage, []).append(spec)
    return {stage: tuple(specs) for stage, specs in table.items()}


def _stop_on_signals() -> threading.Event:
    stop = threading.Event()

    def handler(signum: int, frame: Any) -> None:
        if stop.is_set() and signum == signal.SIGINT:
            raise KeyboardInterrupt
        stop.set()

    signal.signal(signal.SIGTERM, handler)
    signal.signal(signal.SIGINT, handler)
    return stop


TimeoutOpt = Annotated[
    float | None,
    typer.Option(help="Seconds per handler call.", envvar=ENV_VARS["timeout"], show_default="60"),
]
AttemptsOpt = Annotated[
    int | None,
    typer.Option(
        help="Attempts per stage in all.", envvar=ENV_VARS["max_attempts"], show_default="3"
    ),
]
TrialsOpt = Annotated[
    int | None,
    typer.Option(
        help="Trials before a rejected riddle fails.",
        envvar=ENV_VARS["max_trials"],
        show_default="3",
    ),
]
ConcurrencyOpt = Annotated[int, typer.Option(help="Worker threads.", min=1, max=64)]


@app.command()
@guarded
def run(
    ctx: typer.Context,
    once: Annotated[
        bool, typer.Option("--once", help="Work until nothing can move, then exit.")
    ] = False,
    stages: Annotated[str, typer.Option(help="Comma-separated stages to run.")] = ",".join(STAGES),
    handler: Annotated[
        list[str] | None, typer.Option("--handler", help="STAGE=HANDLER (repeatable, in order).")
    ] = None,
    concurrency: ConcurrencyOpt = 1,
    timeout: TimeoutOpt = None,
    max_attempts: AttemptsOpt = None,
    max_trials: TrialsOpt = None,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No summary.")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="The summary as JSON.")] = False,
) -> None:
    """Run every stage's agent in this process; with --once, exit 1 if a riddle failed."""
    chosen = tuple(s.strip() for s in stages.split(",") if s.strip())
    unknown = [s for s in chosen if s not in STAGES]
    if unknown or not chosen:
        fail(
            f"--stages: unknown stage {', '.join(unknown) or '(none)'}; one of {', '.join(STAGES)}",
            ExitCode.USAGE,
        )
    settings = resolve(
        ctx,
        timeout=timeout,
        max_attempts=max_attempts,
        max_trials=max_trials,
        handlers=_handler_flags(handler or []) or None,
    )
    stop = _stop_on_signals()
    if quiet or as_json or not sys.stdout.isatty():
        summary = run_agents(settings, chosen, once=once, concurrency=concurrency, stop=stop)
    else:
        from riddlectl.progress import RunProgress

        with RunProgress(runtime.open_spool(settings)) as progress:
            summary = run_agents(
                settings,
                chosen,
                once=once,
                concurrency=concurrency,
                stop=stop,
                on_tick=progress.update,
            )
    _finish(summary, quiet, as_json, once)


@app.command()
@guarded
def agent(
    ctx: typer.Context,
    stage: Annotated[str, typer.Argument(help="extract, solve, validate or manage.")],
    handler: Annotated[
        list[str] | None,
        typer.Option("--handler", help="Handler for this stage (repeatable, in order)."),
    ] = None,
    concurrency: ConcurrencyOpt = 1,
    once: Annotated[bool, typer.Option("--once", help="Exit when the inbox is empty.")] = False,
    timeout: TimeoutOpt = None,
    max_attempts: AttemptsOpt = None,
    max_trials: TrialsOpt = None,
) -> None:
    """One agent process for one stage; runs until SIGTERM/SIGINT."""
    if stage not in STAGES:
        fail(f"unknown stage {stage!r}; one of {', '.join(STAGES)}", ExitCode.USAGE)
    if handler and stage == "manage":
        fail("manage takes no handlers", ExitCode.USAGE)
    handlers = {stage: tuple(handler)} if handler else None
    settings = resolve(
        ctx, timeout=timeout, max_attempts=max_attempts, max_trials=max_trials, handlers=handlers
    )
    summary = run_agents(
        settings,
        (stage,),
        once=once,
        concurrency=concurrency,
        stop=_stop_on_signals(),
        name="agent",
    )
    _finish(summary, quiet=not once, as_json=False, once=once)


def _finish(summary: RunSummary, quiet: bool, as_json: bool, once: bool) -> None:
    if as_json:
        emit_json(summary.as_dict())
    elif not quiet:
        typer.echo(
            f"{len(summary.done)} done, {len(summary.failed)} failed, {summary.held} held, "
            f"{summary.handled} hand-offs in {summary.seconds:.1f} s"
        )
    if once and summary.failed:
        raise typer.Exit(int(ExitCode.FAILED))


# -- acting on riddles -------------------------------------------------------------------------


def _acting(ctx: typer.Context, command: str) -> Any:
    settings = resolve(ctx)
    spool = runtime.open_spool(settings, create=False)
    return runtime.pipeline(settings, spool, actor(command))


IdsArg = Annotated[list[str] | None, typer.Argument(help="Riddle ids (- reads them from stdin).")]


def _each(ids: list[str], act: Callable[[str], str]) -> None:
    """Apply `act` to every id, reporting each; exit with the worst error's code."""
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


@app.command()
@guarded
def retry(
    ctx: typer.Context,
    ids: IdsArg = None,
    failed: Annotated[bool, typer.Option("--failed", help="Every failed riddle.")] = False,
    from_step: Annotated[
        str | None, typer.Option("--from", help="Start again at extract, solve or validate.")
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
    if failed or not wanted:
        wanted += [i for i in admin.failed_ids(pipeline) if i not in wanted]
    _each(wanted, lambda i: f"{i}\t{admin.retry(pipeline, i, from_step, reset_trials).value}")


@app.command()
@guarded
def hold(ctx: typer.Context, ids: IdsArg = None) -> None:
    """Park riddles in hold/."""
    pipeline = _acting(ctx, "hold")
    _each(read_ids(ids or []), lambda i: f"{i}\t{admin.hold(pipeline, i).value}")


@app.command()
@guarded
def release(ctx: typer.Context, ids: IdsArg = None) -> None:
    """Put held riddles back where they were."""
    pipeline = _acting(ctx, "release")
    _each(read_ids(ids or []), lambda i: f"{i}\t{admin.release(pipeline, i).value}")


@app.command()
@guarded
def cancel(ctx: typer.Context, ids: IdsArg = None) -> None:
    """Move riddles and their sub-riddles to failed/ with error `cancelled`."""
    pipeline = _acting(ctx, "cancel")
    _each(read_ids(ids or []), lambda i: "\n".join(admin.cancel(pipeline, i)) or i)


@app.command()
@guarded
def purge(
    ctx: typer.Context,
    older_than: Annotated[str, typer.Option(help="Age such as 7d, 12h, 30m, 90s.")],
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
    as_json: Annotated[bool, typer.Option("--json", help="Findings as JSON.")] = False,
) -> None:
    """Check the spool; exit 0 when nothing is left to report, 1 otherwise."""
    findings = examine(_acting(ctx, "doctor"), fix=fix)
    left = [f for f in findings if not f.fixed]
    if as_json:
        emit_json({"findings": [f.as_dict() for f in findings], "ok": not left})
    else:
        for f in findings:
            mark = "fixed" if f.fixed else "found"
            typer.echo(f"{mark}\t{f.kind}\t{f.subject}\t{f.detail}")
        typer.echo("spool is healthy" if not left else f"{len(left)} problem(s) left", err=True)
    if left:
        raise typer.Exit(int(ExitCode.FAILED))


# -- events ---------------------------------------------------------------------------------------


@app.command()
@guarded
def events(
    ctx: typer.Context,
    follow: Annotated[
        bool, typer.Option("--follow", "-f", help="Keep printing new events.")
    ] = False,
) -> None:
    """The event log as JSON Lines."""
    log = runtime.event_log(resolve(ctx))
    stream = log.follow() if follow else log.read()
    try:
        for event in stream:
            sys.stdout.buffer.write(orjson.dumps(event) + b"\n")
            if follow:
                sys.stdout.flush()
    except KeyboardInterrupt:
        pass
    sys.stdout.flush()


@app.command()
@guarded
def bench(
    riddles: Annotated[
        int, typer.Option(help="Generated riddles for the throughput run.", min=1)
    ] = 2000,
    agents_per_stage: Annotated[int, typer.Option(help="Agent processes per stage.", min=1)] = 1,
    no_fsync: Annotated[bool, typer.Option("--no-fsync", help="Writes without fsync.")] = False,
    status_riddles: Annotated[
        int, typer.Option(help="Also time `status` over a spool this large.", min=0)
    ] = 0,
    as_json: Annotated[bool, typer.Option("--json", help="One JSON object.")] = False,
) -> None:
    """Run the built-in pipeline on generated riddles in a temporary spool; report speed."""
    from riddlectl import bench as benchmark

    options = benchmark.BenchOptions(
        riddles=riddles,
        agents_per_stage=agents_per_stage,
        fsync=not no_fsync,
        status_riddles=status_riddles,
    )
    outcome = benchmark.run_bench(options)
    if as_json:
        emit_json(outcome)
    else:
        typer.echo(benchmark.render(outcome))


def main() -> None:
    # watchdog logs an error when an observer stops while events are queued; harmless at
    # shutdown, and stderr is for our one-line errors.
    logging.getLogger("watchdog").addHandler(logging.NullHandler())
    logging.getLogger("watchdog").propagate = False
    app()
