"""What agents need of every spool besides claims: wake-ups, recovery, self-examination."""

from __future__ import annotations

import threading
import time

import orjson
import pytest

from riddlectl.errors import DuplicateId
from riddlectl.spool.contract import Spool
from riddlectl.spool.states import Queue
from tests.contract.conftest import riddle

NO_EXTRACT = {"extract": {"required": False}}  # routed to extracted/


def test_a_watch_wakes_on_every_arrival_in_its_queues_until_stopped(spool: Spool) -> None:
    wake = threading.Event()
    watching = spool.watch([Queue.EXTRACTED], wake)
    if watching is None:
        pytest.skip("no watch can be made here (inotify limits): polling alone works")
    try:
        spool.add([riddle("a", status=NO_EXTRACT)])
        assert wake.wait(5), "stored"
        wake.clear()
        (claim,) = spool.claim(Queue.EXTRACTED)
        spool.commit(claim, claim.riddle, Queue.EXTRACTED)  # put back, as a retry is
        assert wake.wait(5), "committed"
        wake.clear()
        spool.drop_in(Queue.EXTRACTED, "b.json", orjson.dumps({"riddle": {"question": "x ="}}))
        assert wake.wait(5), "dropped in"
    finally:
        watching.stop()
    time.sleep(0.1)  # what was on its way before the stop
    wake.clear()
    spool.add([riddle("c", status=NO_EXTRACT)])
    assert not wake.wait(0.3)


def test_recover_leaves_a_healthy_spool_and_live_claims_as_they_are(spool: Spool) -> None:
    spool.add([riddle("a"), riddle("b"), riddle("c", status=NO_EXTRACT)])
    claims = spool.claim(Queue.INCOMING, limit=2)
    spool.begin(claims[0])
    assert spool.recover(lambda event: True) == 0
    assert sorted(spool.ids(Queue.INCOMING)) == ["a", "b"]
    stored = spool.commit(claims[0], claims[0].riddle, Queue.EXTRACTED)
    assert stored.rev == 2 and claims[1].open
    spool.release(claims[1])
    assert sorted(c.riddle.id for c in spool.claim(Queue.EXTRACTED, limit=5)) == ["a", "c"]


def test_a_healthy_spool_finds_nothing_wrong_with_itself(spool: Spool) -> None:
    spool.add([riddle("a"), riddle("b", status=NO_EXTRACT), riddle("c")])
    (claim,) = spool.claim(Queue.EXTRACTED)
    spool.commit(claim, claim.riddle, Queue.DONE)
    (held,) = spool.claim(Queue.INCOMING)
    spool.begin(held)
    assert spool.examine() == []
    assert spool.examine(fix=True) == []
    assert held.open and spool.find("b")[0] is Queue.DONE


def test_close_leaves_the_spool_usable(spool: Spool) -> None:
    spool.add([riddle("a")])
    (claim,) = spool.claim(Queue.INCOMING)
    spool.commit(claim, claim.riddle, Queue.EXTRACTED)  # an fs spool keeps a spare file
    spool.close()
    spool.close()
    (claim,) = spool.claim(Queue.EXTRACTED)
    assert spool.commit(claim, claim.riddle, Queue.DONE).rev == 3


def test_restore_stores_documents_as_they_are_and_refuses_taken_ids(spool: Spool) -> None:
    kept = riddle("a", rev=7, created=5.0, updated=6.0, history=[{"stage": "x"}])
    spool.restore([kept], Queue.DONE)
    queue, stored = spool.find("a")
    assert (queue, stored) == (Queue.DONE, kept)
    with pytest.raises(DuplicateId):
        spool.restore([riddle("b"), riddle("a")], Queue.INCOMING)
    assert spool.find("b") is None


def test_nobody_holds_a_claim_once_every_claim_is_given_back(spool: Spool) -> None:
    spool.add([riddle("a")])
    assert spool.holders() == []
    (claim,) = spool.claim(Queue.INCOMING)
    spool.release(claim)
    assert spool.holders() == []
