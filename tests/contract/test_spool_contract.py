"""One contract, every spool: the filesystem spool and its in-memory twin behave alike."""

from __future__ import annotations

import threading

import pytest

from riddlectl.document.codec import Limits
from riddlectl.errors import DocumentTooLarge, DuplicateId, UnknownRiddle
from riddlectl.spool.contract import Spool
from riddlectl.spool.states import Queue
from tests.contract.conftest import riddle


def test_add_routes_to_first_required_step(spool: Spool) -> None:
    spool.add([riddle("a"), riddle("b", status={"extract": {"required": False}})])
    assert spool.find("a")[0] is Queue.INCOMING
    assert spool.find("b")[0] is Queue.EXTRACTED
    assert spool.find("a")[1].rev == 1


def test_add_refuses_duplicates_and_stores_none(spool: Spool) -> None:
    spool.add([riddle("a")])
    with pytest.raises(DuplicateId) as refused:
        spool.add([riddle("new"), riddle("a")])
    assert refused.value.where == "a"  # the id taken, for the one error line
    assert spool.find("new") is None


def test_claim_is_exclusive_until_released(spool: Spool) -> None:
    spool.add([riddle("a")])
    first = spool.claim(Queue.INCOMING)
    assert [c.riddle.id for c in first] == ["a"]
    assert spool.claim(Queue.INCOMING) == []
    spool.release(first[0])
    assert [c.riddle.id for c in spool.claim(Queue.INCOMING)] == ["a"]


def test_commit_moves_and_bumps_rev(spool: Spool) -> None:
    spool.add([riddle("a")])
    (claim,) = spool.claim(Queue.INCOMING)
    stored = spool.commit(claim, claim.riddle, Queue.EXTRACTED)
    assert stored.rev == 2
    assert spool.ids(Queue.INCOMING) == []
    queue, doc = spool.find("a")
    assert (queue, doc.rev) == (Queue.EXTRACTED, 2)
    assert [c.riddle.id for c in spool.claim(Queue.EXTRACTED)] == ["a"]


def test_reread_gives_the_document_as_stored_whatever_the_holder_changed(
    spool: Spool,
) -> None:
    spool.add([riddle("a")])
    for claim in (spool.claim(Queue.INCOMING)[0], None):
        claim = claim or spool.claim_id("a")
        claim.riddle.riddle.question = "changed by a handler"
        claim.riddle.history.append({"stage": "extract"})
        again = spool.reread(claim)
        assert (again.riddle.question, again.history, again.rev) == ("x =", [], 1)
        spool.release(claim)


def test_commit_over_the_size_limit_is_refused_and_stores_nothing(spool: Spool) -> None:
    spool.limits = Limits(64 * 1024)  # 48 KiB on the way, 64 KiB into failed/
    spool.add([riddle("small"), riddle("big")])
    claims = {c.riddle.id: c for c in spool.claim(Queue.INCOMING, limit=2)}
    big = claims["big"].riddle
    big.extensions()["pad"] = "p" * 50_000
    moves = [(claims["small"], claims["small"].riddle, Queue.EXTRACTED)]
    with pytest.raises(DocumentTooLarge) as refused:
        spool.commit_many([*moves, (claims["big"], big, Queue.EXTRACTED)])
    assert list(refused.value.sizes) == ["big"] and refused.value.sizes["big"] > 50_000
    assert spool.find("small")[0] is Queue.INCOMING and spool.find("big")[1].rev == 1
    assert spool.commit_many([*moves, (claims["big"], big, Queue.FAILED)])[1].rev == 2
    claim = spool.claim_id("big")
    claim.riddle.extensions()["pad"] = "p" * 70_000
    with pytest.raises(DocumentTooLarge):
        spool.commit(claim, claim.riddle, Queue.FAILED)
    claim.unbounded = True  # the failure of a document stored before the limit was lowered
    assert spool.commit(claim, claim.riddle, Queue.FAILED).rev == 3


def test_claim_order_is_priority_then_oldest(spool: Spool) -> None:
    spool.add(
        [
            riddle("old", created=1.0),
            riddle("new", created=2.0),
            riddle("urgent", created=3.0, priority=5),
            riddle("first", created=4.0, priority=2**63 - 1),
            riddle("last", created=0.5, priority=-(2**63)),
        ]
    )
    claims = spool.claim(Queue.INCOMING, limit=10)
    order = ["first", "urgent", "old", "new", "last"]
    assert [c.riddle.id for c in claims] == order
    # The whole 64 bits a document holds, committed too (PostgreSQL's column held 32).
    spool.commit_many([(c, c.riddle, Queue.EXTRACTED) for c in claims])
    assert [c.riddle.id for c in spool.claim(Queue.EXTRACTED, limit=10)] == order


def test_claims_taken_one_at_a_time_keep_the_order(spool: Spool) -> None:
    # A backlog larger than the claim is ordered before claiming, a small one after.
    spool.add([riddle(f"r{n}", created=float(10 - n), priority=n % 2) for n in range(6)])
    order = [spool.claim(Queue.INCOMING, limit=2) for _ in range(3)]
    assert [[c.riddle.id for c in claims] for claims in order] == [
        ["r5", "r3"],
        ["r1", "r4"],
        ["r2", "r0"],
    ]


def test_claim_skips_riddles_not_yet_due(spool: Spool) -> None:
    spool.add([riddle("later", retry_at=2000.0), riddle("now", retry_at=10.0)])
    assert [c.riddle.id for c in spool.claim(Queue.INCOMING, limit=5, now=1000.0)] == ["now"]


def test_claim_id_finds_anywhere_and_unknown_raises(spool: Spool) -> None:
    spool.add([riddle("a", status={"extract": {"required": False}})])
    claim = spool.claim_id("a")
    assert claim.queue is Queue.EXTRACTED
    spool.release(claim)
    with pytest.raises(UnknownRiddle):
        spool.claim_id("nope")


def test_claim_id_waits_for_the_holder(spool: Spool) -> None:
    spool.add([riddle("a")])
    (held,) = spool.claim(Queue.INCOMING)
    with pytest.raises(TimeoutError):
        spool.claim_id("a", wait=0.1)
    threading.Timer(0.2, spool.release, args=[held]).start()
    assert spool.claim_id("a", wait=5).riddle.id == "a"


def test_claim_id_says_once_that_it_waits(spool: Spool) -> None:
    spool.add([riddle("a")])
    told: list[str] = []
    spool.on_wait = told.append
    (held,) = spool.claim(Queue.INCOMING)
    threading.Timer(0.8, spool.release, args=[held]).start()
    assert spool.claim_id("a", wait=5).riddle.id == "a"
    assert told == ["a"]
    with pytest.raises(TimeoutError, match=r"^a: still handled by an agent after 0\.7 s$"):
        spool.claim_id("a", wait=0.7)
    assert told == ["a", "a"]
    with pytest.raises(TimeoutError):
        spool.claim_id("a", wait=0.2)  # given up before the notice is due
    assert told == ["a", "a"]


def test_claim_id_of_an_unknown_or_invalid_id_says_which(spool: Spool) -> None:
    with pytest.raises(UnknownRiddle, match=r"^nope: no such riddle in the spool$"):
        spool.claim_id("nope")
    with pytest.raises(UnknownRiddle, match=r"^'\.\./x': no such riddle .*not a valid riddle id"):
        spool.claim_id("../x")


def test_unknown_fields_round_trip(spool: Spool) -> None:
    spool.add([riddle("a", custom={"keep": [1, 2]}, riddle_extra="x")])
    doc = spool.find("a")[1].to_json()
    assert doc["custom"] == {"keep": [1, 2]}
    assert doc["riddle_extra"] == "x"


def test_delete_removes_for_good(spool: Spool) -> None:
    spool.add([riddle("a")])
    spool.delete(spool.claim_id("a"))
    assert spool.find("a") is None
    assert spool.counts()[Queue.INCOMING] == 0


def test_concurrent_claimers_never_share_a_riddle(spool: Spool) -> None:
    spool.add([riddle(f"r{i}") for i in range(60)])
    seen: list[str] = []
    lock = threading.Lock()

    def worker() -> None:
        while claims := spool.claim(Queue.INCOMING, limit=3):
            for claim in claims:
                with lock:
                    seen.append(claim.riddle.id or "")
                spool.commit(claim, claim.riddle, Queue.DONE)

    threads = [threading.Thread(target=worker) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(seen) == sorted(f"r{i}" for i in range(60))
    assert spool.counts()[Queue.DONE] == 60


def test_claim_and_begin_begins_the_first_claim_alone(spool: Spool) -> None:
    """What an agent claims is handled in `order_key` order: the first is begun as it is
    taken (one step where the spool can), the others when their turn comes."""
    spool.add([riddle("low"), riddle("top", priority=3), riddle("mid", priority=1)])
    claims = spool.claim_and_begin(Queue.INCOMING, limit=3)
    assert [(c.riddle.id, c.begun) for c in claims] == [
        ("top", True), ("mid", False), ("low", False),
    ]  # fmt: skip
    stored = spool.commit_many([(c, c.riddle, Queue.EXTRACTED) for c in claims])
    assert [r.rev for r in stored] == [2, 2, 2]
    assert spool.claim_and_begin(Queue.INCOMING) == []
