"""Running agents: `run` and `agent`."""

from __future__ import annotations

import sys
from typing import Annotated, Any

import typer

from riddlectl import runtime
from riddlectl.agent.supervisor import RunSummary
from riddlectl.agent.supervisor import run as run_agents
from riddlectl.cli import logs
from riddlectl.cli.common import (
    Signals,
    command_group,
    emit_json,
    fail,
    guarded,
    quiet_watchdog,
    resolve,
    stop_on_signals,
)
from riddlectl.errors import ExitCode, RiddleError
from riddlectl.settings import ENV_VARS
from riddlectl.spool.states import STAGES

app = command_group()

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


def _own_stage(stage: str, values: list[str]) -> tuple[str, ...]:
    """An agent's handlers, given as `HANDLER` or as `run` takes them, `STAGE=HANDLER`;
    one for another stage is refused rather than run at the wrong stage."""
    specs = []
    for value in values:
        named, sep, spec = value.partition("=")
        if sep and named in STAGES:
            if named != stage or not spec:
                raise RiddleError(
                    f"this agent runs {stage}; give a handler for {stage} "
                    f"(HANDLER or {stage}=HANDLER)",
                    where="--handler",
                    field=value,
                )
            value = spec
        specs.append(value)
    return tuple(specs)


def _setting(help: str, setting: str, default: str, metavar: str) -> Any:
    """An option that overrides one setting of `riddlectl.toml` (and its variable)."""
    return typer.Option(help=help, envvar=ENV_VARS[setting], show_default=default, metavar=metavar)


TimeoutOpt = Annotated[
    float | None, _setting("Seconds per handler call.", "timeout", "60", "SECONDS")
]
AttemptsOpt = Annotated[
    int | None, _setting("Attempts per stage in all.", "max_attempts", "3", "N")
]
TrialsOpt = Annotated[
    int | None, _setting("Trials before a rejected riddle fails.", "max_trials", "3", "N")
]
LogLevelOpt = Annotated[
    str | None,
    _setting(
        "Log events of this level and above on stderr: debug, info, warning, error.",
        "log_level",
        "info",
        "LEVEL",
    ),
]
LogFormatOpt = Annotated[
    str | None,
    _setting("One log line an event, as text or json.", "log_format", "text", "FORMAT"),
]
ConcurrencyOpt = Annotated[
    int | None,
    typer.Option(
        help="At most N handler calls in flight per stage, spares included (N worker threads).",
        min=1,
        max=64,
        show_default="one thread, and spares while handlers hang",
        metavar="N",
    ),
]


@app.command()
@guarded
def run(
    ctx: typer.Context,
    once: Annotated[
        bool, typer.Option("--once", help="Work until nothing can move, then exit.")
    ] = False,
    stages: Annotated[
        str, typer.Option(help="Comma-separated stages to run.", metavar="STAGES")
    ] = ",".join(STAGES),
    handler: Annotated[
        list[str] | None,
        typer.Option(
            "--handler",
            help="STAGE=HANDLER (repeatable, in order): a built-in, module:attr, "
            "cmd:COMMAND, http:URL (or a bare http://… URL) or openai:MODEL.",
            metavar="STAGE=HANDLER",
        ),
    ] = None,
    concurrency: ConcurrencyOpt = None,
    timeout: TimeoutOpt = None,
    max_attempts: AttemptsOpt = None,
    max_trials: TrialsOpt = None,
    log_level: LogLevelOpt = None,
    log_format: LogFormatOpt = None,
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
        log_level=log_level,
        log_format=log_format,
    )
    logs.install(settings.log_level, settings.log_format)
    # Every handler is resolved before the spool is looked at: a mistyped one is exit 2
    # at once, with no riddle touched (and no waiting for a database first).
    handlers = runtime.stage_handlers(settings, chosen)
    # Only `init` makes a spool. A long-running agent waits out a read-only spool and a
    # database that cannot be used yet (`await_spool`); a --once run (cron) is told at once.
    if once:
        runtime.open_spool(settings, create=False, writable=True)
    quiet_watchdog()
    signals = stop_on_signals()
    stop, hurry = signals.stop, signals.hurry
    if quiet or as_json or not sys.stdout.isatty():
        summary = run_agents(
            settings,
            chosen,
            once=once,
            concurrency=concurrency,
            stop=stop,
            hurry=hurry,
            handlers=handlers,
        )
    else:
        from riddlectl.agent.supervisor import await_spool
        from riddlectl.cli.progress import RunProgress

        if not once and not await_spool(settings, stop):  # the bar needs the spool
            signals.exit_if_interrupted()
            raise typer.Exit(0)  # stopped while waiting for it
        with RunProgress(runtime.open_spool(settings, create=False)) as progress:
            summary = run_agents(
                settings,
                chosen,
                once=once,
                concurrency=concurrency,
                stop=stop,
                hurry=hurry,
                on_tick=progress.update,
                handlers=handlers,
            )
    _finish(summary, quiet, as_json, once, signals)


@app.command()
@guarded
def agent(
    ctx: typer.Context,
    stage: Annotated[
        str, typer.Argument(help="extract, solve, validate or manage.", metavar="STAGE")
    ],
    handler: Annotated[
        list[str] | None,
        typer.Option(
            "--handler",
            help="Handler for this stage, as HANDLER or STAGE=HANDLER (repeatable, in "
            "order): a built-in, module:attr, cmd:COMMAND, http:URL (or a bare http://… "
            "URL) or openai:MODEL.",
            metavar="HANDLER",
        ),
    ] = None,
    concurrency: ConcurrencyOpt = None,
    once: Annotated[bool, typer.Option("--once", help="Exit when the inbox is empty.")] = False,
    timeout: TimeoutOpt = None,
    max_attempts: AttemptsOpt = None,
    max_trials: TrialsOpt = None,
    log_level: LogLevelOpt = None,
    log_format: LogFormatOpt = None,
) -> None:
    """One agent process for one stage; runs until SIGTERM/SIGINT."""
    if stage not in STAGES:
        fail(f"unknown stage {stage!r}; one of {', '.join(STAGES)}", ExitCode.USAGE)
    if handler and stage == "manage":
        fail("manage takes no handlers", ExitCode.USAGE)
    handlers = {stage: _own_stage(stage, handler)} if handler else None
    settings = resolve(
        ctx,
        timeout=timeout,
        max_attempts=max_attempts,
        max_trials=max_trials,
        handlers=handlers,
        log_level=log_level,
        log_format=log_format,
    )
    logs.install(settings.log_level, settings.log_format)
    loaded = runtime.stage_handlers(settings, (stage,))  # as for `run`
    if once:
        runtime.open_spool(settings, create=False, writable=True)
    quiet_watchdog()
    signals = stop_on_signals()
    summary = run_agents(
        settings,
        (stage,),
        once=once,
        concurrency=concurrency,
        stop=signals.stop,
        hurry=signals.hurry,
        name="agent",
        handlers=loaded,
    )
    _finish(summary, quiet=not once, as_json=False, once=once, signals=signals)


def _finish(summary: RunSummary, quiet: bool, as_json: bool, once: bool, signals: Signals) -> None:
    """The summary, then the exit status: 130 after Ctrl-C, else 1 when a riddle of a
    --once run failed."""
    if as_json:
        emit_json(summary.as_dict())
    elif not quiet:
        typer.echo(
            f"{summary.done_count} done, {summary.failed_count} failed, {summary.held} held, "
            f"{summary.handled} hand-offs in {summary.seconds:.1f} s"
        )
    signals.exit_if_interrupted()
    if once and summary.failed_count:
        raise typer.Exit(int(ExitCode.FAILED))
