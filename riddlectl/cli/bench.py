"""`riddlectl bench`: the pipeline's speed, the peers' beside it, and the command's start."""

from __future__ import annotations

from collections.abc import Callable
from enum import StrEnum
from typing import Annotated, Any

import typer

from riddlectl.cli.common import command_group, emit_json, fail, guarded, quiet_watchdog
from riddlectl.errors import ExitCode

app = command_group()


class BenchMode(StrEnum):
    agents = "agents"
    run = "run"


@app.command()
@guarded
def bench(
    ctx: typer.Context,
    riddles: Annotated[
        int, typer.Option(help="Generated riddles for the throughput run.", min=1, metavar="N")
    ] = 2000,
    latency_riddles: Annotated[
        int,
        typer.Option(
            help="Riddles sent one at a time for the latency run (p50, p99).", min=1, metavar="N"
        ),
    ] = 100,
    agents_per_stage: Annotated[
        int, typer.Option(help="Agent processes per stage.", min=1, metavar="N")
    ] = 1,
    no_fsync: Annotated[bool, typer.Option("--no-fsync", help="Writes without fsync.")] = False,
    mode: Annotated[
        BenchMode,
        typer.Option(
            help="agents: one `agent` process per stage; run: every stage in one `run` process.",
            metavar="MODE",
        ),
    ] = BenchMode.agents,
    rounds: Annotated[
        int,
        typer.Option(
            help="With --peers: riddlectl's run and the peers' in turn, this many times.",
            min=1,
            metavar="N",
        ),
    ] = 2,
    pause: Annotated[
        float,
        typer.Option(
            help="With --peers: seconds between one run and the next, so that the files "
            "one run deleted do not slow the next one's flushes.",
            min=0,
            metavar="SECONDS",
        ),
    ] = 30.0,
    status_riddles: Annotated[
        int, typer.Option(help="Also time `status` over a spool this large.", min=0, metavar="N")
    ] = 0,
    submit_riddles: Annotated[
        int,
        typer.Option(
            help="Also time one `submit -` of this many riddles (JSON Lines).", min=0, metavar="N"
        ),
    ] = 0,
    peers: Annotated[
        str | None,
        typer.Option(
            help="Also run the same pipeline on these peer queues, comma-separated, or all "
            "(naive, dirq, persist-queue, huey-file); procrastinate, on the PostgreSQL server "
            "of a postgresql:// --spool, "
            "by name.",
            metavar="NAMES",
        ),
    ] = None,
    startup: Annotated[
        bool,
        typer.Option(
            "--startup",
            help="Only time how long `status` and `--version` take to start, against "
            "importing typer and pydantic.",
        ),
    ] = False,
    web: Annotated[
        bool,
        typer.Option(
            "--web",
            help="Only time the web UI: its pages over --web-riddles riddles, and the "
            "server's CPU with 20 live tabs open while --riddles riddles flow.",
        ),
    ] = False,
    web_riddles: Annotated[
        int, typer.Option(help="With --web: riddles in the spool served.", min=100, metavar="N")
    ] = 100_000,
    web_events: Annotated[
        int,
        typer.Option(
            help="With --web: events in the log served (the dashboard's).", min=0, metavar="N"
        ),
    ] = 1_000_000,
    web_samples: Annotated[
        int, typer.Option(help="With --web: requests timed per page.", min=1, metavar="N")
    ] = 40,
    startup_runs: Annotated[
        int, typer.Option(help="With --startup: runs of each command.", min=1, metavar="N")
    ] = 20,
    extractors: Annotated[
        bool,
        typer.Option(
            "--extractors",
            help="Only score the built-in extractors on generated data files: accuracy and "
            "time per item, per data type.",
        ),
    ] = False,
    cases: Annotated[
        int,
        typer.Option(help="With --extractors: generated files per data type.", min=1, metavar="N"),
    ] = 200,
    seed: Annotated[
        int, typer.Option(help="With --extractors: the generators' seed.", metavar="N")
    ] = 1,
    types: Annotated[
        str | None,
        typer.Option(
            help="With --extractors: only these data types, comma-separated "
            "(csv, json, image, audio).",
            metavar="TYPES",
        ),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="One JSON object.")] = False,
) -> None:
    """Run the built-in pipeline on generated riddles in a new spool of the kind --spool
    names (a temporary directory, or a schema of its own on a PostgreSQL server, dropped
    at the end); report speed. --extractors, --startup and --web time other things."""
    if extractors:
        _bench_extractors(cases, seed, types, as_json)
    elif startup:
        _bench_startup(startup_runs, as_json)
    elif web:
        _web_bench(web_riddles, riddles, as_json, web_events, web_samples)
    else:
        shape = {
            "mode": mode.value,
            "rounds": rounds,
            "agents_per_stage": agents_per_stage,
            "latency_riddles": latency_riddles,
            "pause": pause,
        }
        _bench_pipeline(
            ctx, riddles, shape, no_fsync, status_riddles, submit_riddles, peers, as_json
        )


def _bench_pipeline(
    ctx: typer.Context,
    riddles: int,
    shape: dict[str, Any],
    no_fsync: bool,
    status_riddles: int,
    submit_riddles: int,
    peers: str | None,
    as_json: bool,
) -> None:
    from riddlectl.settings import spool_location

    quiet_watchdog()
    from riddlectl.bench import peers as peer_bench
    from riddlectl.bench import pipeline as benchmark
    from riddlectl.bench.summary import render

    try:
        chosen = peer_bench.choose(peers) if peers is not None else ()
    except ValueError as exc:
        fail(f"--peers: {exc}", ExitCode.USAGE)
    options = benchmark.BenchOptions(
        riddles=riddles,
        **shape,
        fsync=not no_fsync,
        status_riddles=status_riddles,
        submit_riddles=submit_riddles,
        peers=chosen,
        spool=spool_location(ctx.obj or {}),
    )
    _emit(benchmark.run_bench(options), render, as_json)


def _bench_startup(runs: int, as_json: bool) -> None:
    from riddlectl.bench import startup as startup_bench

    _emit(startup_bench.measure(runs), startup_bench.render, as_json)


def _emit(outcome: Any, render: Callable[[Any], str], as_json: bool) -> None:
    if as_json:
        emit_json(outcome)
    else:
        typer.echo(render(outcome))


def _bench_extractors(cases: int, seed: int, types: str | None, as_json: bool) -> None:
    from riddlectl.bench.extractors import runner

    chosen = [t.strip() for t in types.split(",") if t.strip()] if types is not None else None
    unknown = sorted(set(chosen or ()) - set(runner.GENERATORS))
    if chosen is not None and (unknown or not chosen):
        known = ", ".join(runner.GENERATORS)
        fail(
            f"--types: unknown data type {', '.join(unknown) or '(none)'} (known: {known})",
            ExitCode.USAGE,
        )
    _emit(runner.run_extractor_bench(cases, seed, chosen), runner.render, as_json)


def _web_bench(
    riddles: int, flow: int, as_json: bool, events: int = 1_000_000, samples: int = 40
) -> None:
    from riddlectl.web import require_extra

    require_extra()
    from riddlectl.bench.web import WebBenchOptions, render, run_web_bench

    _emit(
        run_web_bench(WebBenchOptions(riddles=riddles, flow=flow, events=events, samples=samples)),
        render,
        as_json,
    )
