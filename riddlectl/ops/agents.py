"""`riddlectl agents`, `/app/agents`, `/api/agents`: the agents alive now and those gone.

From the agents' own records in the spool (`Spool.agents`): alive is what the spool's
lock says, not how recently an agent was seen. An agent gone `died` when it was not
stopped; what it was handling then are the claims it abandoned (given back to the queue
by the next agent of that stage, which counts one abandoned attempt). One that `stopped`
finished or gave back what it held.
"""

from __future__ import annotations

from collections import Counter
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
