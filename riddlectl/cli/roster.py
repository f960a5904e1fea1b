"""`agents`: the agents alive now, what each holds, and those recently gone."""

from __future__ import annotations

import time
from typing import Annotated, Any

import typer

from riddlectl import runtime
from riddlectl.cli.common import command_group, emit_json, guarded, resolve
from riddlectl.ops import agents as roster

app = command_group()

COLUMNS = (
    "STATE",
    "HOST",
    "PID",
    "STAGES",
    "HANDLERS",
    "CONC",
    "STARTED",
    "SEEN",
    "HANDLED",
    "FAILED",
    "HOLDS",
)


@app.command()
@guarded
def agents(
    ctx: typer.Context,
    as_json: Annotated[
        bool, typer.Option("--json", help="One JSON object: every agent, whatever --all.")
    ] = False,
    everything: Annotated[
        bool, typer.Option("--all", help="Show one-shot runs that stopped too.")
    ] = False,
) -> None:
    """The agents alive now (what each holds) and those gone within the last hour,
    newest first; one-shot runs that stopped are counted in one line unless --all."""
    spool = runtime.open_spool(resolve(ctx), create=False)
    listed = roster.agents(spool)
    if as_json:
        emit_json(listed)
        return
    now = time.time()
    arranged = roster.arranged(listed, everything)
    if arranged.rows:
        for line in _aligned([list(COLUMNS), *(_row(a, now) for a in arranged.rows)]):
            typer.echo(line)
    if arranged.folded:
        runs = "run" if arranged.folded == 1 else "runs"
        typer.echo(f"+ {arranged.folded} one-shot {runs} in the last hour (--all shows them)")
    if not arranged.rows and not arranged.folded:
        typer.echo("no agents")


def _row(agent: dict[str, Any], now: float) -> list[str]:
    if agent["state"] == "alive":
        held = [f"{h['id']} ({h['stage']}, {roster.ago(h['since'], now)})" for h in agent["holds"]]
        holds = ", ".join(held) or "-"
    else:
        abandoned = ", ".join(f"{h['id']} ({h['stage']})" for h in agent["abandoned"])
        holds = f"abandoned {abandoned}" if abandoned else "-"
    state = agent["state"] + (" (once)" if agent.get("once") else "")
    return [
        state,
        str(agent["host"]),
        str(agent["pid"]),
        ",".join(agent["stages"] or []) or "-",
        roster.handlers_shown(agent),
        str(agent["concurrency"]),
        roster.ago(agent["started"], now),
        roster.ago(agent["seen"], now),
        str(agent["handled"]),
        str(agent["failed"]),
        holds,
    ]


def _aligned(rows: list[list[str]]) -> list[str]:
    """Columns padded to their widest cell, two spaces apart; the last one not padded."""
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]) - 1)]
    return [
        "  ".join([*(cell.ljust(w) for cell, w in zip(row, widths, strict=False)), row[-1]])
        for row in rows
    ]
