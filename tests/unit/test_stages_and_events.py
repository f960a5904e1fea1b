"""The names the pipeline is built from: its stages and their inboxes, and the JSON of its
events, which `riddlectl events` prints and scripts read (field names, order, values)."""

from __future__ import annotations

import orjson
import pytest

from riddlectl.document.events import Event
from riddlectl.document.model import Riddle
from riddlectl.identity import Actor
from riddlectl.pipeline.stages import EXTRACT, MANAGE, SOLVE, VALIDATE, stage_named
from riddlectl.spool.states import STAGE_OF_INBOX, STAGES, STEPS, Queue, route

ACTOR = Actor("agent:solve", "host-1", 42)


def test_the_stages_in_order_with_their_inboxes() -> None:
    stages = [stage_named(name) for name in STAGES]
    assert stages == [EXTRACT, SOLVE, VALIDATE, MANAGE]
    assert [s.inbox for s in stages] == [
        Queue.INCOMING,
        Queue.EXTRACTED,
        Queue.SOLVED,
        Queue.VALIDATED,
    ]
    assert [s.name for s in stages if s.takes_handlers] == list(STEPS)
    assert all(STAGE_OF_INBOX[s.inbox] == s.name for s in stages)
    with pytest.raises(KeyError):
        stage_named("submit")


@pytest.mark.parametrize("step", STEPS)
def test_routing_sends_a_riddle_to_the_inbox_of_its_first_required_step(step: str) -> None:
    riddle = Riddle.model_validate(
        {"riddle": {"question": "?"}, "status": {s: {"required": s == step} for s in STEPS}}
    )
    assert route(riddle) is stage_named(step).inbox
    assert route(riddle, after=step) is (Queue.VALIDATED if step == "validate" else Queue.DONE)


def keys_and_line(event: Event) -> tuple[list[str], bytes]:
    made = event.to_json()
    return list(made), orjson.dumps(made)


def test_a_hand_off_event() -> None:
    event = Event.by(ACTOR, "r1", "solve", "extracted", "solved", "ok", rev=3, duration=0.1234567)
    keys, line = keys_and_line(event)
    assert keys == [
        *("time", "id", "stage", "from", "to", "outcome", "agent", "host", "pid"),
        *("rev", "duration"),
    ]
    assert line.endswith(
        b'"id":"r1","stage":"solve","from":"extracted","to":"solved","outcome":"ok",'
        b'"agent":"agent:solve","host":"host-1","pid":42,"rev":3,"duration":0.123457}'
    )


def test_a_declined_attempt_and_a_failure_name_the_handler_and_the_error() -> None:
    declined = Event.by(
        ACTOR, "r1", "solve", "extracted", "extracted", "declined", rev=2, handler="h"
    )
    assert list(declined.to_json())[-2:] == ["handler", "rev"]
    failed = Event.by(ACTOR, "r1", "solve", "extracted", "failed", "failed", rev=2, error="no")
    assert list(failed.to_json())[-2:] == ["rev", "error"]
    # An empty error or handler is no error or handler at all.
    quiet = Event.by(ACTOR, "r1", "hold", "solved", "hold", "ok", rev=2, error="", handler="")
    assert "error" not in quiet.to_json() and "handler" not in quiet.to_json()


def test_a_new_riddle_and_a_purged_one() -> None:
    added = Event.by(ACTOR, "r1", "submit", None, "incoming", "ok", rev=1).to_json()
    purged = Event.by(ACTOR, "r1", "purge", "done", None, "ok", rev=5).to_json()
    assert (added["from"], added["to"], purged["from"], purged["to"]) == (
        None,
        "incoming",
        "done",
        None,
    )


def test_a_corrupt_file_event_names_the_file_not_an_id() -> None:
    made = Event.corrupt(ACTOR, "incoming", "extract", "bad.json", "not valid JSON").to_json()
    assert list(made) == [
        *("time", "id", "file", "stage", "from", "to", "outcome", "agent", "host", "pid"),
        *("rev", "error"),
    ]
    assert {k: v for k, v in made.items() if k != "time"} == {
        "id": None,
        "file": "bad.json",
        "stage": "extract",
        "from": "incoming",
        "to": "corrupt",
        "outcome": "corrupt",
        "agent": "agent:solve",
        "host": "host-1",
        "pid": 42,
        "rev": None,
        "error": "not valid JSON",
    }


def test_an_abandoned_claim_names_its_dead_holder() -> None:
    holder = {"agent": "agent:extract", "host": "h2", "pid": 7, "time": 1.5}
    made = Event.abandoned("r1", "extract", "incoming", 4, holder, 2).to_json()
    assert {k: v for k, v in made.items() if k != "time"} == {
        "id": "r1",
        "stage": "extract",
        "from": "incoming",
        "to": "incoming",
        "outcome": "abandoned",
        "agent": "agent:extract",
        "host": "h2",
        "pid": 7,
        "rev": 4,
        "error": "its agent died while handling it (2 in a row)",
        "claimed": 1.5,
    }
    unreadable = Event.abandoned("r1", "extract", "incoming", 4, {}, 1).to_json()
    assert (unreadable["agent"], unreadable["claimed"]) == (None, None)
