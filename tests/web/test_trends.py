"""The dashboard's queue depths start where the spool's events start: before its first
event a depth is unknown (None, not drawn), never the depth now carried back over time
the spool did not exist. Generated event histories over a real index file."""

from __future__ import annotations

import tempfile
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from riddlectl.web import trends
from riddlectl.web.index import Index

NOW = 1_800_000_000.0  # a minute's start
QUEUES = ["incoming", "extracted", "solved", "done", "failed", "hold"]

moves = st.lists(
    st.tuples(
        st.floats(min_value=1, max_value=7 * 24 * 3600 * 1.2),  # seconds before now
        st.sampled_from(QUEUES),
        st.sampled_from(QUEUES),
    ),
    max_size=30,
)


@settings(max_examples=120, deadline=None)
@given(moves=moves, window=st.sampled_from(list(trends.WINDOWS)), depth_now=st.integers(0, 50))
def test_depths_start_where_the_events_start(
    moves: list[tuple[float, str, str]], window: str, depth_now: int
) -> None:
    with tempfile.TemporaryDirectory() as folder:
        index = Index(Path(folder) / "web-index.sqlite")
        folder_ = trends.Folder()
        for ago, source, target in moves:
            folder_.fold({"time": NOW - ago, "from": source, "to": target})
        folder_.flush(index)
        chosen = trends.WINDOWS[window]
        drawn = trends.series(index, chosen, {"incoming": depth_now}, now=NOW)
        index.close()
    starts, step = drawn["starts"], drawn["step_seconds"]
    times = [NOW - ago for ago, source, target in moves if source != target]
    first_event = min(times, default=None)
    for queue, points in drawn["depth"].items():
        assert points[-1] == (depth_now if queue == "incoming" else 0)  # now is known
        for start, point in zip(starts, points, strict=True):
            ends = start + step
            if first_event is None:
                known = start == starts[-1]
            else:  # the bucket that holds the first event, and every one after it
                known = ends > first_event - first_event % 60
            assert (point is not None) == known, (queue, start, first_event, points)
            assert point is None or point >= 0
