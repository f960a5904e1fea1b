"""The event log, on every spool: order, commits that fail part way, following."""

from __future__ import annotations

import threading

import pytest

from riddlectl.spool.contract import Spool


def numbers(events: object) -> list[object]:
    return [event["n"] for event in events]  # type: ignore[attr-defined]


def test_events_are_read_in_the_order_written_and_the_tail_newest_first(spool: Spool) -> None:
    log = spool.events
    assert list(log.read()) == [] and log.tail() == []
    log.append({"n": 1})
    log.append_many([{"n": 2}, {"n": 3, "nested": {"k": [1, None]}}])
    assert numbers(log.read()) == [1, 2, 3]
    assert numbers(log.tail()) == [3, 2, 1]
    assert list(log.read())[2]["nested"] == {"k": [1, None]}


def test_a_commit_logs_its_events_once_made(spool: Spool) -> None:
    with spool.events.committing([{"n": 1}, {"n": 2}], lambda event: False):
        assert list(spool.events.read()) == []  # held, not logged, while it runs
    assert numbers(spool.events.read()) == [1, 2]


def test_a_commit_that_fails_part_way_logs_only_what_took_place(spool: Spool) -> None:
    with (
        pytest.raises(RuntimeError, match="disk gone"),
        spool.events.committing([{"n": 1}, {"n": 2}], lambda event: event["n"] == 1),
    ):
        raise RuntimeError("disk gone")
    assert numbers(spool.events.read()) == [1]


def test_with_no_writer_dead_there_is_nothing_to_recover(spool: Spool) -> None:
    spool.events.append({"n": 1})
    assert spool.events.recover(lambda event: True) == 0
    assert numbers(spool.events.read()) == [1]


def test_follow_gives_what_is_there_then_what_comes(spool: Spool) -> None:
    spool.events.append({"n": 1})
    stream = spool.events.follow(poll=0.01)
    assert next(stream)["n"] == 1
    threading.Timer(0.1, spool.events.append_many, args=[[{"n": 2}, {"n": 3}]]).start()
    assert [next(stream)["n"], next(stream)["n"]] == [2, 3]


def test_follow_from_the_end_gives_only_what_comes(spool: Spool) -> None:
    spool.events.append_many([{"n": 1}, {"n": 2}])
    stream = spool.events.follow_marked(poll=0.01, from_end=True)
    assert next(stream) is None  # caught up at once: nothing written so far is given
    threading.Timer(0.1, spool.events.append_many, args=[[{"n": 3}, {"n": 4}]]).start()
    given = []
    while len(given) < 2:
        event = next(stream)
        if event is not None:
            given.append(event["n"])
    assert given == [3, 4]


def test_follow_marks_where_what_was_there_ends(spool: Spool) -> None:
    spool.events.append_many([{"n": 1}, {"n": 2}])
    stream = spool.events.follow_marked(poll=0.01)
    assert [next(stream), next(stream), next(stream)] == [{"n": 1}, {"n": 2}, None]
