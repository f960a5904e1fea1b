"""`serve` (the web UI and its JSON API) and `metrics` (Prometheus text on stdout).

The web packages come with `pip install 'riddlectl[web]'` and are imported only here,
when one of these commands runs.
"""

from __future__ import annotations

import signal
from typing import Annotated

import typer

from riddlectl.cli.common import INTERRUPTED, command_group, fail, guarded, resolve
from riddlectl.errors import ExitCode

app = command_group()


@app.command()
@guarded
def serve(
    ctx: typer.Context,
    host: Annotated[str, typer.Option(help="Address to listen on.", metavar="HOST")] = "127.0.0.1",
    port: Annotated[
        int, typer.Option(help="Port (0: any free one).", min=0, max=65535, metavar="PORT")
    ] = 8080,
    read_only: Annotated[
        bool, typer.Option("--read-only", help="Show the spool; refuse every change.")
    ] = False,
    token: Annotated[
        str | None,
        typer.Option(
            envvar="RIDDLECTL_WEB_TOKEN",
            help="Require this token on every request (needed off loopback).",
            metavar="TOKEN",
        ),
    ] = None,
    allow_host: Annotated[
        list[str] | None,
        typer.Option(help="Another host name the server answers to (repeatable).", metavar="HOST"),
    ] = None,
) -> None:
    """Serve the web UI (/app/table, /app/new), the JSON API (/api) and /metrics."""
    from riddlectl.web.security import is_loopback

    if not is_loopback(host) and not token:
        fail(
            f"serve: --host {host} is not a loopback address: give --token "
            "(every request must then carry it)",
            ExitCode.USAGE,
        )
    if token is not None and len(token) < 8:
        fail("serve: --token: use at least 8 characters", ExitCode.USAGE)
    from riddlectl.web import require_extra

    require_extra()
    settings = resolve(ctx)
    from riddlectl.web.security import Guard
    from riddlectl.web.server import bind
    from riddlectl.web.server import serve as run
    from riddlectl.web.service import Service

    sock = bind(host, port)
    web = Service.open(settings, read_only=read_only)
    guard = Guard(host=host, token=token, read_only=read_only, allow_hosts=tuple(allow_host or ()))
    mode = " (read-only)" if read_only else ""
    stopped_by = run(
        web, guard, sock, lambda url: typer.echo(f"riddlectl: serving {url}{mode}", err=True)
    )
    if stopped_by == signal.SIGINT:  # Ctrl-C, after the same orderly stop as SIGTERM's
        raise typer.Exit(INTERRUPTED)


@app.command()
@guarded
def metrics(ctx: typer.Context) -> None:
    """Print the spool's metrics in Prometheus text format (for a textfile collector)."""
    import time

    from riddlectl import runtime
    from riddlectl.ops import agents, report
    from riddlectl.spool.states import Queue
    from riddlectl.web.metrics import Tally, ages

    spool = runtime.open_spool(resolve(ctx), create=False)
    tally = Tally()
    tally.observe_all(spool.events.read())
    oldest: dict[str, float | None] = {}
    for queue in Queue:  # a read of every document: this command is for a collector's cron
        created = [r.created or r.updated or 0.0 for r in spool.iter_queue(queue)]
        oldest[queue.value] = min(created) if created else None
    text = tally.render(
        report.counts(spool),
        ages(oldest, time.time()),
        agents.alive_per_stage(spool),
        spool.health(),
    )
    typer.echo(text, nl=False)
