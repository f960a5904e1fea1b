"""Where a riddle's time goes, stage by stage, from the agents' traces (`riddlectl.trace`).

For each riddle of the latency phase (one in flight at a time) and each stage, the times
from the commit of the previous stage (for the first stage: when the bench called submit)
to the moment its agent woke up, claimed it, started and ended the handlers, and made its
commit durable; the medians per stage, in milliseconds. Also the fsyncs a riddle's whole
trip made, and the events the log holds per riddle.

Every mark is read on the one system-wide monotonic clock, yet a mark can come before the
one it is measured from: an agent already in a pass over its inbox when the riddle came
(woken by something else) began that pass before the previous commit; the next agent can
claim a riddle as soon as it is renamed into its inbox, while the previous agent is still
flushing and logging that commit. Such a mark counts at the one before it (no wait for it
in this trip), so that no figure goes below zero; `early` says in how many trips a stage's
agent began its pass before the previous commit's mark (already awake, or woken by the
rename before that commit was flushed).
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import orjson

MARKS = ("wake", "claim", "start", "end", "commit")


def read_traces(directory: Path) -> list[dict[str, Any]]:
    lines: list[dict[str, Any]] = []
    for path in sorted(directory.glob("trace.*.jsonl")):
        for line in path.read_bytes().splitlines():
            try:
                lines.append(orjson.loads(line))
            except orjson.JSONDecodeError:
                continue  # torn by an agent stopped mid-write
    return lines


def breakdown(
    traces: list[dict[str, Any]],
    submitted: dict[str, float],
    events: Iterable[dict[str, Any]],
    sent: dict[str, tuple[float, float]] | None = None,
) -> dict[str, Any] | None:
    """The medians per stage (see the module's docstring); None when nothing was traced."""
    trips: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for line in traces:
        if line.get("id") in submitted:
            trips[line["id"]].append(line)
    if not trips:
        return None
    per_stage: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    fsyncs: list[float] = []
    for riddle_id, steps in trips.items():
        previous = sent[riddle_id][0] if sent and riddle_id in sent else submitted[riddle_id]
        steps.sort(key=lambda step: step["commit"])
        for step in steps:
            figures = per_stage[step["stage"]]
            floor = previous
            figures["early"].append(float(step["wake"] < previous))
            for mark in MARKS:
                floor = max(floor, step[mark])  # see the module's docstring
                figures[mark].append((floor - previous) * 1000)
            figures["fsyncs"].append(step["fsyncs"])
            previous = floor
        fsyncs.append(sum(step["fsyncs"] for step in steps))
    stages = {
        stage: {
            "riddles": len(figures["commit"]),
            **{f"{mark}_ms": round(statistics.median(figures[mark]), 3) for mark in MARKS},
            "fsyncs": round(statistics.median(figures["fsyncs"]), 2),
            "early": int(sum(figures["early"])),
        }
        for stage, figures in per_stage.items()
    }
    logged = sum(1 for event in events if event.get("id") in trips)
    ends: dict[str, float | None] = {"submit_ms": None, "seen_ms": None}
    if sent:  # the submit call itself, and from the last commit to the bench seeing it
        known = [i for i in trips if i in sent]
        if known:
            ends["submit_ms"] = _median_ms([submitted[i] - sent[i][0] for i in known])
            # The bench may see the riddle final before the last agent marks its commit
            # (flushed and logged after the rename the bench sees): 0 then.
            ends["seen_ms"] = _median_ms(
                [max(0.0, sent[i][1] - trips[i][-1]["commit"]) for i in known]
            )
    return {
        "riddles": len(trips),
        **ends,
        "stages": stages,
        "fsyncs_per_riddle": round(statistics.median(fsyncs), 2),
        "events_per_riddle": round(logged / len(trips), 2),
    }


def _median_ms(seconds: list[float]) -> float:
    return round(statistics.median(seconds) * 1000, 3)


def render(figures: dict[str, Any] | None) -> list[str]:
    if not figures:
        return []
    lines = [
        f"where the time goes (median ms from the previous stage's commit, for extract from "
        f"the submit call; {figures['fsyncs_per_riddle']:g} fsyncs and "
        f"{figures['events_per_riddle']:g} events per riddle):",
        f"  {'stage':9} {'wake-up':>8} {'claim':>8} {'start':>8} {'end':>8} {'commit':>8}",
    ]
    for stage, f in figures["stages"].items():
        lines.append(
            f"  {stage:9} {f['wake_ms']:8.3f} {f['claim_ms']:8.3f} {f['start_ms']:8.3f} "
            f"{f['end_ms']:8.3f} {f['commit_ms']:8.3f}"
        )
    early = [f"{stage} {f['early']}/{f['riddles']}" for stage, f in figures["stages"].items()]
    if any(f.get("early") for f in figures["stages"].values()):
        lines.append(
            "  (trips whose agent began its pass before the previous commit was flushed and "
            f"logged, no wake-up wait: {', '.join(early)})"
        )
    if figures.get("submit_ms") is not None:
        lines.append(
            f"  (the submit call itself {figures['submit_ms']:.3f} ms; from the last commit "
            f"to the bench seeing the riddle done {figures['seen_ms']:.3f} ms)"
        )
    return lines
