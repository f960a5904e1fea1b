"""`agents`: the agents alive now, what each holds, and those recently gone."""

from __future__ import annotations

import time
from typing import Annotated, Any

import typer

from riddlectl import runtime
from riddlectl.cli.common import command_group, emit_json, guarded, resolve
from riddlectl.ops import agents as roster

app = command_group()


@app.command()
@guarded
def agents(
    ctx: typer.Context,
    as_json: Annotated[bool, typer.Option("--json", help="One JSON object.")] = False,
) -> None:
    """The agents alive now (what each holds) and those gone within the last hour."""
    spool = runtime.open_spool(resolve(ctx), create=False)
    listed = roster.agents(spool)
    if as_json:
        emit_json(listed)
        return
    now = time.time()
    if not listed["alive"] and not listed["gone"]:
        typer.echo("no agents")
        return
    typer.echo("ALIVE  HOST  PID  STAGES  CONC  STARTED  SEEN  HANDLED  FAILED  HOLDS")
    for agent in listed["alive"]:
        holds = [f"{h['id']} ({h['stage']}, {_ago(now, h['since'])})" for h in agent["holds"]]
        typer.echo(_line("alive", agent, now, ", ".join(holds) or "-"))
    for agent in listed["gone"]:
        abandoned = ", ".join(f"{h['id']} ({h['stage']})" for h in agent["abandoned"])
        what = f"abandoned {abandoned}" if abandoned else "-"
        typer.echo(_line(agent["how"], agent, now, what))


def _line(state: str, agent: dict[str, Any], now: float, holds: str) -> str:
    return "  ".join(
        str(part)
        for part in (
            state,
            agent["host"],
            agent["pid"],
            ",".join(agent["stages"] or []) or "-",
            agent["concurrency"],
            _ago(now, agent["started"]),
            _ago(now, agent["seen"]),
            agent["handled"],
            agent["failed"],
            holds,
        )
    )


def _ago(now: float, then: object) -> str:
    """How long ago, as people say it: 4s, 12m, 3h, 2d ago."""
    if not isinstance(then, int | float):
        return "-"
    seconds = max(0, int(now - then))
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{seconds // size}{unit} ago"
    return f"{seconds}s ago"
