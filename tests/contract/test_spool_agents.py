"""The agents' own records: who is alive on a spool, what each holds, who went.

A process that dies (`kill -9`) is shown gone by the CLI and browser tests
(tests/cli/test_agents.py, tests/web/test_browser.py); here one spool object's seat is
opened, changed and closed as an agent does it.
"""

from __future__ import annotations

import os
import time

from riddlectl.identity import hostname
from riddlectl.spool.contract import Spool

RECORD = {
    "agent": "agent:solve",
    "stages": ["solve"],
    "handlers": {"solve": ["cmd:./slow"]},
    "concurrency": 2,
}


def _shown(spool: Spool, seat_id: str) -> dict[str, object]:
    (found,) = [a for a in spool.agents() if a["id"] == seat_id]
    return found


def _until(check: object, seconds: float = 10.0) -> None:
    deadline = time.monotonic() + seconds
    while not check():  # type: ignore[operator]
        assert time.monotonic() < deadline, "not seen in time"
        time.sleep(0.05)


def test_an_agent_registered_is_shown_alive_with_what_it_said(spool: Spool) -> None:
    assert spool.agents() == []
    seat = spool.register_agent(RECORD)
    try:
        shown = _shown(spool, seat.id)
        assert shown["alive"] is True
        assert shown["agent"] == "agent:solve"
        assert (shown["host"], shown["pid"]) == (hostname(), os.getpid())
        assert shown["stages"] == ["solve"]
        assert shown["handlers"] == {"solve": ["cmd:./slow"]}
        assert shown["concurrency"] == 2
        assert shown["holds"] == [] and shown["handled"] == 0 and shown["failed"] == 0
        assert abs(float(shown["started"]) - time.time()) < 60  # type: ignore[arg-type]
        assert float(shown["seen"]) >= float(shown["started"])  # type: ignore[arg-type]
    finally:
        seat.close()


def test_what_an_agent_holds_and_has_done_is_shown_soon(spool: Spool) -> None:
    seat = spool.register_agent(RECORD)
    try:
        seat.took("r1", "solve")
        seat.tally(handled=3, failed=1)
        _until(lambda: [h["id"] for h in _shown(spool, seat.id)["holds"]] == ["r1"])  # type: ignore[attr-defined]
        shown = _shown(spool, seat.id)
        (held,) = shown["holds"]  # type: ignore[misc]
        assert held["stage"] == "solve" and abs(held["since"] - time.time()) < 60
        assert (shown["handled"], shown["failed"]) == (3, 1)
        seat.let_go("r1")
        _until(lambda: _shown(spool, seat.id)["holds"] == [])
    finally:
        seat.close()


def test_an_agent_that_stopped_is_shown_gone_holding_nothing(spool: Spool) -> None:
    seat = spool.register_agent(RECORD)
    seat.took("r1", "solve")
    seat.close()
    shown = _shown(spool, seat.id)
    assert shown["alive"] is False
    assert shown["stopped"] is not None
    assert shown["holds"] == []


def test_two_agents_are_told_apart(spool: Spool) -> None:
    first = spool.register_agent(RECORD)
    second = spool.register_agent({**RECORD, "agent": "agent:extract", "stages": ["extract"]})
    try:
        assert first.id != second.id
        shown = {a["id"]: a["agent"] for a in spool.agents()}
        assert shown == {first.id: "agent:solve", second.id: "agent:extract"}
    finally:
        first.close()
        second.close()
