"""Prometheus text for a spool: riddles per queue, transitions and failures per stage, and
handler durations as a histogram, all taken from the queues and the event log.

`riddlectl metrics` tallies the whole log once; the server tallies it as it follows the
log (`keeper`), so a scrape costs a count of the queues, not a read of the log. Written
by hand: the text format is a few lines, not worth a dependency.
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Iterable, Mapping
from typing import Any

# Upper bounds (seconds) of the duration histogram's buckets.
BUCKETS = (0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1.0, 5.0, 10.0, 30.0, 60.0)
FAILURES = frozenset({"error", "timeout", "failed", "abandoned", "corrupt"})


class Tally:
    """What the event log says so far, added up; safe to feed from one thread while
    another renders."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.transitions: Counter[tuple[str, str]] = Counter()
        self.failures: Counter[str] = Counter()
        self.buckets: dict[str, list[int]] = {}
        self.sums: dict[str, float] = {}
        self.counts: Counter[str] = Counter()

    def observe(self, event: Mapping[str, Any]) -> None:
        stage, outcome = str(event.get("stage") or "none"), str(event.get("outcome") or "none")
        duration = event.get("duration")
        with self._lock:
            self.transitions[(stage, outcome)] += 1
            if outcome in FAILURES:
                self.failures[stage] += 1
            if isinstance(duration, int | float) and duration >= 0:
                self._time(stage, float(duration))

    def observe_all(self, events: Iterable[Mapping[str, Any]]) -> None:
        for event in events:
            self.observe(event)

    def _time(self, stage: str, seconds: float) -> None:
        counts = self.buckets.setdefault(stage, [0] * len(BUCKETS))
        for i, bound in enumerate(BUCKETS):
            if seconds <= bound:
                counts[i] += 1
        self.sums[stage] = self.sums.get(stage, 0.0) + seconds
        self.counts[stage] += 1

    def render(
        self,
        queues: Mapping[str, int],
        oldest: Mapping[str, float] | None = None,
        agents: Mapping[str, int] | None = None,
        database: Mapping[str, Any] | None = None,
    ) -> str:
        """The exposition text, with `queues` (riddles per queue, corrupt included),
        `oldest` (the age in seconds of the oldest riddle of each queue; 0 when empty),
        `agents` (agents alive per stage) and the figures of the database under the
        spool (`Spool.health`), if it has one."""
        lines = [
            "# HELP riddlectl_riddles Riddles in each queue of the spool.",
            "# TYPE riddlectl_riddles gauge",
            *(f'riddlectl_riddles{{queue="{_label(q)}"}} {n}' for q, n in queues.items()),
        ]
        if oldest is not None:
            lines += [
                "# HELP riddlectl_oldest_age_seconds Age of the oldest riddle in each queue "
                "(since it was created; 0 when the queue is empty).",
                "# TYPE riddlectl_oldest_age_seconds gauge",
                *(
                    f'riddlectl_oldest_age_seconds{{queue="{_label(q)}"}} {age:.3f}'
                    for q, age in oldest.items()
                ),
            ]
        if agents is not None:
            lines += [
                "# HELP riddlectl_agents Agents alive, by the stage they run.",
                "# TYPE riddlectl_agents gauge",
                *(f'riddlectl_agents{{stage="{_label(s)}"}} {n}' for s, n in agents.items()),
            ]
        if database is not None:
            lines += _database(database)
        with self._lock:
            lines += self._counters() + self._histogram()
        return "\n".join(lines) + "\n"

    def _counters(self) -> list[str]:
        lines = [
            "# HELP riddlectl_transitions_total Events in the log, by stage and outcome.",
            "# TYPE riddlectl_transitions_total counter",
        ]
        for (stage, outcome), n in sorted(self.transitions.items()):
            lines.append(
                f'riddlectl_transitions_total{{stage="{_label(stage)}",'
                f'outcome="{_label(outcome)}"}} {n}'
            )
        lines += [
            "# HELP riddlectl_failures_total Failed attempts and failures, by stage.",
            "# TYPE riddlectl_failures_total counter",
            *(
                f'riddlectl_failures_total{{stage="{_label(s)}"}} {n}'
                for s, n in sorted(self.failures.items())
            ),
        ]
        return lines

    def _histogram(self) -> list[str]:
        name = "riddlectl_handler_duration_seconds"
        lines = [
            f"# HELP {name} How long each stage's handlers took per attempt.",
            f"# TYPE {name} histogram",
        ]
        for stage in sorted(self.buckets):
            label = _label(stage)
            for bound, n in zip(BUCKETS, self.buckets[stage], strict=True):
                lines.append(f'{name}_bucket{{stage="{label}",le="{bound:g}"}} {n}')
            lines.append(f'{name}_bucket{{stage="{label}",le="+Inf"}} {self.counts[stage]}')
            lines.append(f'{name}_sum{{stage="{label}"}} {self.sums[stage]:.6f}')
            lines.append(f'{name}_count{{stage="{label}"}} {self.counts[stage]}')
        return lines


def ages(oldest_created: Mapping[str, float | None], now: float) -> dict[str, float]:
    """Seconds since each queue's oldest riddle was created (0 for an empty queue)."""
    return {q: max(0.0, now - c) if c else 0.0 for q, c in oldest_created.items()}


def _database(found: Mapping[str, Any]) -> list[str]:
    """Dead rows per table of the spool, and the age of the oldest open transaction in
    its database (0 when none is open): what shows vacuum falling behind."""
    oldest = found.get("oldest_transaction")
    return [
        "# HELP riddlectl_dead_rows Dead rows in each table of the spool, not vacuumed yet.",
        "# TYPE riddlectl_dead_rows gauge",
        *(
            f'riddlectl_dead_rows{{table="{_label(name)}"}} {table["dead_rows"]}'
            for name, table in sorted(found.get("tables", {}).items())
        ),
        "# HELP riddlectl_oldest_transaction_seconds Age of the oldest transaction open in "
        "the spool's database (another session's), 0 when none is.",
        "# TYPE riddlectl_oldest_transaction_seconds gauge",
        f"riddlectl_oldest_transaction_seconds {float(oldest['age']) if oldest else 0.0:.3f}",
    ]


def _label(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
