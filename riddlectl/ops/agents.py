"""`riddlectl agents`, `/app/agents`, `/api/agents`: the agents alive now and those gone.

From the agents' own records in the spool (`Spool.agents`): alive is what the spool's
lock says, not how recently an agent was seen. An agent gone `died` when it was not
stopped; what it was handling then are the claims it abandoned (given back to the queue
by the next agent of that stage, which counts one abandoned attempt). One that `stopped`
finished or gave back what it held.
"""

from __future__ import annotations

import time
from collections import Counter
from dataclasses import dataclass
from typing import Any

from riddlectl.spool.contract import Spool
from riddlectl.spool.states import STAGES

FIELDS = (
    "id",
    "agent",
    "host",
    "pid",
    "stages",
    "handlers",
    "concurrency",
    "started",
    "seen",
    "handled",
    "failed",
    "once",
)


def agents(spool: Spool) -> dict[str, list[dict[str, Any]]]:
    """`{"alive": [...], "gone": [...]}`: the alive each with `holds`, the gone each with
    `how` (`died` or `stopped`), `gone` (when, as far as is known: last seen or stopped)
    and `abandoned` (what it was handling when it died)."""
    alive, gone = [], []
    for record in spool.agents():
        entry = {key: record.get(key) for key in FIELDS}
        holds = [_held(h) for h in record.get("holds") or []]
        if record.get("alive"):
            alive.append({**entry, "holds": holds})
        else:
            stopped = record.get("stopped")
            gone.append(
                {
                    **entry,
                    "how": "stopped" if stopped else "died",
                    "gone": stopped or record.get("seen"),
                    "abandoned": [] if stopped else holds,
                }
            )
    return {"alive": alive, "gone": gone}


@dataclass
class Roster:
    """The agents as people look at them (`riddlectl agents`, `/app/agents`).

    `rows`: the alive (newest started first), then the gone that died, then those that
    stopped (each newest gone first); each row is the agent's entry with `state` (`alive`,
    `died` or `stopped`). `folded`: one-shot runs (`run --once`, `agent --once`) that
    stopped, left out of `rows` unless all were asked for: they come and go by the dozen
    and would hide a just-killed agent."""

    rows: list[dict[str, Any]]
    folded: int


def arranged(listed: dict[str, list[dict[str, Any]]], everything: bool = False) -> Roster:
    """`listed` (from `agents`) in the order people read it; see `Roster`."""
    alive = sorted(listed["alive"], key=lambda a: _when(a["started"]), reverse=True)
    gone = sorted(listed["gone"], key=lambda a: _when(a["gone"]), reverse=True)
    died = [a for a in gone if a["how"] == "died"]
    stopped = [a for a in gone if a["how"] != "died"]
    shown = stopped if everything else [a for a in stopped if not a.get("once")]
    rows = [
        *({**a, "state": "alive"} for a in alive),
        *({**a, "state": "died"} for a in died),
        *({**a, "state": "stopped"} for a in shown),
    ]
    return Roster(rows, len(stopped) - len(shown))


def handlers_shown(agent: dict[str, Any]) -> str:
    """An agent's handlers in one word: `calculator` for one stage; `extract=text,table;
    solve=calculator` for several (stages without handlers left out); `-` for none."""
    handlers = {s: list(h) for s, h in dict(agent.get("handlers") or {}).items() if h}
    if len(handlers) == 1 and len(agent.get("stages") or []) == 1:
        return ",".join(next(iter(handlers.values())))
    return ";".join(f"{stage}={','.join(h)}" for stage, h in handlers.items()) or "-"


def ago(then: object, now: float | None = None) -> str:
    """How long ago, as people say it: 4s, 12m, 3h, 2d ago; `-` when not known."""
    if not isinstance(then, int | float):
        return "-"
    now = time.time() if now is None else now
    seconds = max(0, int(now - then))
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{seconds // size}{unit} ago"
    return f"{seconds}s ago"


def _when(value: object) -> float:
    return float(value) if isinstance(value, int | float) else 0.0


def holder_of(listed: dict[str, list[dict[str, Any]]], riddle_id: str) -> dict[str, Any] | None:
    """The alive agent handling `riddle_id`, with what it says of it; None when none."""
    for agent in listed["alive"]:
        for held in agent["holds"]:
            if held["id"] == riddle_id:
                return {**agent, "held": held}
    return None


def alive_per_stage(spool: Spool) -> dict[str, int]:
    """Agents alive per stage (one running several stages counts in each)."""
    counts: Counter[str] = Counter()
    for record in spool.agents():
        if record.get("alive"):
            counts.update(set(record.get("stages") or []))
    return {stage: counts[stage] for stage in (*STAGES, *sorted(set(counts) - set(STAGES)))}


def _held(held: dict[str, Any]) -> dict[str, Any]:
    return {"id": str(held.get("id")), "stage": held.get("stage"), "since": held.get("since")}
