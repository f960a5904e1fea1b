"""`bench`'s "where the time goes": from traces whose marks come in any order (an agent
already awake, a claim made while the previous commit was still being flushed), no
figure goes below zero and each stage's marks keep their order."""

from __future__ import annotations

import random

from hypothesis import given
from hypothesis import strategies as st

from riddlectl.bench.breakdown import MARKS, breakdown, render

STAGES = ("extract", "solve", "validate", "manage")


@given(st.integers(0, 2**32), st.integers(1, 8))
def test_no_figure_below_zero_and_marks_in_order(seed: int, count: int) -> None:
    """Marks up to 10 ms either side of the previous commit, drawn from `seed`."""
    draw = random.Random(seed)
    trips = [[[draw.uniform(-0.01, 0.01) for _ in MARKS] for _ in STAGES] for _ in range(count)]
    traces, submitted, sent, early = [], {}, {}, dict.fromkeys(STAGES, 0)
    for n, stages in enumerate(trips):
        riddle_id = f"r{n}"
        sent[riddle_id] = (100.0 * n, 100.0 * n + 50)
        submitted[riddle_id] = 100.0 * n + 0.001
        previous = sent[riddle_id][0]
        for index, (stage, jitter) in enumerate(zip(STAGES, stages, strict=True)):
            base = previous + 0.005  # each mark near the previous stage's commit, either side
            marks = {mark: base + j for mark, j in zip(MARKS, jitter, strict=True)}
            # Commits in order, as in a trip: a stage commits after the one before it (the
            # marks alone may all fall before that, and breakdown orders steps by commit).
            marks["commit"] = max(*marks.values(), previous) + 0.001 * (index + 1)
            early[stage] += marks["wake"] < previous
            traces.append({"id": riddle_id, "stage": stage, "fsyncs": 1, **marks})
            previous = marks["commit"]
    figures = breakdown(traces, submitted, [], sent)
    assert figures is not None
    for stage, f in figures["stages"].items():
        row = [f[f"{mark}_ms"] for mark in MARKS]
        assert row[0] >= 0 and row == sorted(row), (stage, f)
        assert f["early"] == early[stage]
    assert figures["submit_ms"] >= 0 and figures["seen_ms"] >= 0
    assert not any(" -" in line for line in render(figures))
