"""Narrowing the event log (`riddlectl events`): times read as people write them, and the
last N of what is kept, before and after following begins; on the in-memory spool."""

from __future__ import annotations

import datetime as dt
import threading

import pytest
from hypothesis import given
from hypothesis import strategies as st

from riddlectl.ops import events as view
from riddlectl.spool.memlogs import MemoryEventLog

NOW = 1_800_000_000.0


@pytest.mark.parametrize(
    ("text", "ago"),
    [("90", 90), ("90s", 90), ("10m", 600), ("2h", 7200), ("7d", 604800), ("1.5h", 5400)],
)
def test_a_duration_reaches_back_from_now(text: str, ago: float) -> None:
    assert view.parse_since(text, now=NOW) == NOW - ago


@pytest.mark.parametrize(
    "text",
    ["2027-01-15T08:00:00Z", "2027-01-15T08:00:00+00:00", "2027-01-15T09:00:00+01:00",
     "2027-01-15T08:00:00", "2027-01-15 08:00:00"],
)  # fmt: skip
def test_an_iso_time_is_utc_unless_it_names_its_offset(text: str) -> None:
    assert view.parse_since(text, now=NOW) == dt.datetime(2027, 1, 15, 8, tzinfo=dt.UTC).timestamp()


@pytest.mark.parametrize("text", ["", "yesterday", "-5m", "5x", "nan", "2027-02-30", "10 mins"])
def test_anything_else_is_refused_saying_what_is_expected(text: str) -> None:
    with pytest.raises(ValueError, match="neither a duration"):
        view.parse_since(text, now=NOW)


@given(st.floats(min_value=0, max_value=4e9, allow_nan=False))
def test_at_is_time_in_iso_8601_utc(when: float) -> None:
    stamped = view.stamped({"time": when, "id": "x"})
    assert list(stamped) == ["time", "at", "id"]
    at = dt.datetime.fromisoformat(str(stamped["at"]).replace("Z", "+00:00"))
    assert abs(at.timestamp() - when) < 0.001 and str(stamped["at"]).endswith("Z")


events = st.lists(
    st.fixed_dictionaries({"id": st.sampled_from("abc"), "time": st.integers(0, 9)}), max_size=30
)


@given(events, st.frozensets(st.sampled_from("abcd")), st.none() | st.integers(0, 9),
       st.none() | st.integers(0, 12))  # fmt: skip
def test_read_and_follow_give_the_same_backlog(
    logged: list[dict[str, object]], ids: frozenset[str], since: int | None, tail: int | None
) -> None:
    """What `read` gives is what `follow` gives before the new events, for any narrowing
    but the bare one (which follows from the end); then only new events that are kept."""
    log = MemoryEventLog()
    log.append_many(logged)
    narrowing = view.Narrowing(ids, since, tail)
    kept = [
        e for e in logged if (not ids or e["id"] in ids) and (since is None or e["time"] >= since)
    ]  # type: ignore[operator]
    expected = kept[max(0, len(kept) - tail) :] if tail is not None else kept
    if tail == 0:
        expected = []
    read = [{k: v for k, v in e.items() if k != "at"} for e in view.read(log, narrowing)]
    assert read == expected
    stream = view.follow(log, narrowing, poll=0.001)
    backlog = [] if since is None and tail is None else expected
    given_first = []
    for event in stream:
        if event is None:
            break
        given_first.append({k: v for k, v in event.items() if k != "at"})
    assert given_first == backlog
    fresh = {"id": "a", "time": 9}
    threading.Timer(0.01, log.append, args=[fresh]).start()
    wanted = narrowing.keeps(fresh)
    for event in stream:
        if event is not None:
            assert wanted and event["id"] == "a"
            break
        if not wanted:
            break
