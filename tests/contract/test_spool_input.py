"""Input from outside, on every spool: drop-ins read by the drop-in rules, and what is no
riddle set aside with the reason."""

from __future__ import annotations

import contextlib

import orjson
import pytest

from riddlectl.document.codec import Limits
from riddlectl.errors import InvalidDocument
from riddlectl.spool.contract import Corrupt, Spool
from riddlectl.spool.states import Queue
from tests.contract.conftest import riddle


def doc(**fields: object) -> bytes:
    return orjson.dumps({"riddle": {"question": "x ="}, **fields})


def test_a_drop_in_that_is_no_riddle_is_set_aside_with_the_reason(spool: Spool) -> None:
    spool.drop_in(Queue.INCOMING, "garbage.json", b"{not json")
    assert spool.claim(Queue.INCOMING) == []
    (corrupt,) = spool.corrupt_files()
    assert corrupt.name == "garbage.json"
    assert corrupt.reason.startswith("incoming/garbage.json:1:2: not valid JSON")
    # The spool logs it itself, whoever read it: `riddlectl events` shows what was set aside.
    told = [(e["from"], e["file"], e["error"]) for e in spool.events.read()]
    assert told == [("incoming", "garbage.json", corrupt.reason)]
    assert spool.ids(Queue.INCOMING) == []


def test_a_drop_in_takes_its_name_for_an_id_but_its_own_id_first(spool: Spool) -> None:
    spool.drop_in(Queue.INCOMING, "stem.json", doc())
    spool.drop_in(Queue.INCOMING, "other.json", doc(id="own"))
    assert sorted(spool.ids(Queue.INCOMING)) == ["other", "stem"]  # not read yet
    claims = {c.riddle.id: c for c in spool.claim(Queue.INCOMING, limit=5)}
    assert sorted(claims) == ["own", "stem"]
    assert claims["own"].riddle.extensions()["dropped_as"] == "other.json"
    assert "dropped_as" not in claims["stem"].riddle.extensions()
    assert sorted(spool.ids(Queue.INCOMING)) == ["own", "stem"]
    stored = spool.commit(claims["own"], claims["own"].riddle, Queue.EXTRACTED)
    assert stored.rev == 1 and spool.find("own")[0] is Queue.EXTRACTED


def test_a_drop_in_is_a_riddle_under_its_id_before_any_claim(spool: Spool) -> None:
    spool.drop_in(Queue.INCOMING, "stem.json", doc())
    spool.drop_in(Queue.INCOMING, "other.json", doc(id="own"))
    spool.drop_in(Queue.INCOMING, "half.json", b'{"riddle": {"quest')  # still being written
    for riddle_id in ("stem", "own"):
        found = spool.find(riddle_id)
        assert found is not None and found[0] is Queue.INCOMING
        assert found[1].id == riddle_id
    assert spool.find("other") is None  # its own id wins over its name
    assert spool.find("half") is None  # no riddle until it reads as one
    listed = [(Queue.INCOMING, entry) for entry in spool.ids(Queue.INCOMING)]
    assert _readable(spool, listed) == ["own", "stem"]
    assert _readable(spool, spool.recent(10)) == ["own", "stem"]
    claim = spool.claim_id("own")
    assert (claim.riddle.id, claim.queue) == ("own", Queue.INCOMING)
    spool.commit(claim, claim.riddle, Queue.HOLD)
    assert spool.find("own")[0] is Queue.HOLD  # type: ignore[index]
    claim = spool.claim_id("stem")
    assert claim.riddle.id == "stem"
    spool.release(claim)


def _readable(spool: Spool, listing: list[tuple[Queue, str]]) -> list[str]:
    """The ids of what a listing's entries read as (what does not read is skipped, as
    `status` skips it)."""
    found = []
    for queue, entry in listing:
        with contextlib.suppress(InvalidDocument):
            riddle = spool.read(queue, entry)
            if riddle is not None:
                found.append(riddle.id or "")
    return sorted(found)


def test_a_drop_in_of_an_id_the_spool_holds_is_set_aside(spool: Spool) -> None:
    spool.add([riddle("a")], queue=Queue.DONE)
    spool.drop_in(Queue.INCOMING, "copy.json", doc(id="a"))
    assert spool.claim(Queue.INCOMING) == []
    assert spool.corrupt_files() == [
        Corrupt("copy.json", "incoming/copy.json: id 'a' is already in the spool")
    ]
    assert spool.find("a")[0] is Queue.DONE


def test_a_new_riddle_dropped_in_over_the_limit_for_new_ones_is_set_aside(spool: Spool) -> None:
    spool.limits = Limits(64 * 1024)  # a new riddle may take 16 KiB
    spool.drop_in(Queue.INCOMING, "big.json", doc(id="big", pad="p" * 20_000))
    assert spool.claim(Queue.INCOMING) == []
    (corrupt,) = spool.corrupt_files()
    assert "over the 16384-byte limit for a new riddle" in corrupt.reason


def test_names_other_programs_write_under_are_never_read(spool: Spool) -> None:
    spool.drop_in(Queue.INCOMING, ".partial.json", b"{")
    spool.drop_in(Queue.INCOMING, "being-written.tmp", b"{")
    assert spool.ids(Queue.INCOMING) == []
    assert spool.claim(Queue.INCOMING) == []
    assert spool.corrupt_files() == []


@pytest.mark.parametrize("name", ["", "a/b.json", "..", "."])
def test_a_drop_in_is_one_name(spool: Spool, name: str) -> None:
    with pytest.raises(ValueError):
        spool.drop_in(Queue.INCOMING, name, doc())


def test_set_aside_takes_an_entry_out_of_its_queue_and_keeps_every_one(spool: Spool) -> None:
    spool.add([riddle("a"), riddle("b")])
    spool.set_aside(Queue.INCOMING, "a.json", "unwanted")
    assert spool.find("a") is None
    assert spool.ids(Queue.INCOMING) == ["b"]
    assert spool.corrupt_files() == [Corrupt("a.json", "unwanted")]
    spool.add([riddle("a")])
    spool.set_aside(Queue.INCOMING, "a.json", "again")  # the same name: both are kept
    first, second = spool.corrupt_files()
    assert first == Corrupt("a.json", "unwanted")
    assert second.name.startswith("a.json.") and second.reason == "again"


def test_a_set_aside_entry_is_told_with_its_size_unread(spool: Spool) -> None:
    spool.drop_in(Queue.INCOMING, "junk.json", b"<html>")
    assert spool.claim(Queue.INCOMING) == []
    (listed,) = spool.corrupt_files()
    assert (listed.name, listed.size, listed.kind) == ("junk.json", 6, None)
    found = spool.corrupt_entry("junk.json")
    assert found is not None and (found.size, found.reason) == (6, listed.reason)
    assert spool.corrupt_entry("nope.json") is None
    assert spool.corrupt_entry("junk.json.reason") is None


def test_a_set_aside_file_can_be_read_back_and_dropped(spool: Spool) -> None:
    spool.drop_in(Queue.INCOMING, "garbage.json", b"{not json")
    spool.drop_in(Queue.INCOMING, "other.json", b"[1, 2")
    assert spool.claim(Queue.INCOMING, limit=5) == []
    assert spool.corrupt_content("garbage.json") == b"{not json"
    assert spool.corrupt_content("other.json") == b"[1, 2"
    spool.drop_corrupt("garbage.json")
    assert [c.name for c in spool.corrupt_files()] == ["other.json"]
    assert spool.corrupt_content("garbage.json") is None
    with pytest.raises(FileNotFoundError):
        spool.drop_corrupt("garbage.json")


@pytest.mark.parametrize("name", ["", "../a.json", "a/b", ".", ".."])
def test_a_set_aside_file_is_named_by_one_name(spool: Spool, name: str) -> None:
    assert spool.corrupt_content(name) is None
    with pytest.raises(FileNotFoundError):
        spool.drop_corrupt(name)


def test_a_riddle_set_aside_is_kept_as_its_document(spool: Spool) -> None:
    spool.add([riddle("a")])
    spool.set_aside(Queue.INCOMING, "a.json", "unwanted")
    kept = orjson.loads(spool.corrupt_content("a.json") or b"null")
    assert kept["id"] == "a" and kept["riddle"]["question"] == "x ="
