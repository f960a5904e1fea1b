"""A claim at low load tries the names its wake-up carried before it lists the inbox: the
listing waits while the agent that renamed the riddle in is still flushing the directory."""

from __future__ import annotations

from pathlib import Path

from riddlectl.spool.fs import inbox
from riddlectl.spool.fs.fsspool import FsSpool
from riddlectl.spool.states import Queue
from tests.contract.test_spool_properties import riddle


def test_a_claim_takes_the_riddle_a_wake_up_named_without_listing_the_inbox(
    tmp_path: Path,
) -> None:
    spool = FsSpool(tmp_path / "spool", durable=False)
    spool.init()
    spool.add([riddle("a")])
    inbox.arrived(str(spool.dir(Queue.INCOMING)), "a.json")
    (claim,) = spool.claim(Queue.INCOMING)
    assert claim.riddle.id == "a"
    assert spool._inboxes[Queue.INCOMING].scanned == 0.0  # never listed


def test_more_arrivals_than_a_claim_takes_are_claimed_in_order_from_a_listing(
    tmp_path: Path,
) -> None:
    spool = FsSpool(tmp_path / "spool", durable=False)
    spool.init()
    spool.add([riddle("a"), riddle("b")])
    for name in ("b.json", "a.json"):
        inbox.arrived(str(spool.dir(Queue.INCOMING)), name)
    (claim,) = spool.claim(Queue.INCOMING, limit=1)
    assert claim.riddle.id == "a"  # the oldest first, as the listing orders them
    assert spool._inboxes[Queue.INCOMING].scanned > 0.0
