"""Drop-ins whose names are no id (`weird name.json`, `ünïcödé.json`, 200 characters,
bytes that are no UTF-8): each is one riddle under one id from the first look on, the
same for every reader and for the claim that takes it in, on every spool, and keeps its
name in `dropped_as`. The names are generated."""

from __future__ import annotations

import itertools
import os

import orjson
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from riddlectl.document.ids import ID_RE
from riddlectl.spool.contract import Spool
from riddlectl.spool.dropins import check_name, drop_in_stem, ignored, shown_name
from riddlectl.spool.states import Queue


def usable(name: str) -> bool:
    """A name a program can drop a file under (one name, at most 255 bytes, not one of
    the names riddles are never read from) that gives no id."""
    try:
        check_name(name)
    except ValueError:
        return False
    return (
        "\0" not in name
        and len(os.fsencode(name)) <= 255
        and not ignored(name)
        and drop_in_stem(name) is None
    )


# Text of every script, and raw bytes a file name may hold (decoded as Python decodes a
# directory's names), with and without `.json`.
TEXT = st.text(st.characters(codec="utf-8", exclude_characters="/\0"), min_size=1, max_size=80)
LONG = st.integers(130, 250).map(lambda n: "x" * n + " y")
BYTES = st.binary(min_size=1, max_size=40).map(os.fsdecode)
NAMES = (
    st.tuples(st.one_of(TEXT, LONG, BYTES), st.sampled_from(["", ".json", ".JSON", ".txt"]))
    .map("".join)
    .filter(usable)
)
# Twins: `weird name` and `weird name.json` are two drop-ins, never one entry of a listing.
TWINS = NAMES.map(lambda name: [name, f"{name}.json"]).filter(lambda pair: usable(pair[1]))
DROPS = st.one_of(
    st.lists(NAMES, min_size=1, max_size=6, unique_by=lambda n: shown_name(n).lower()),
    TWINS,
)

_made = itertools.count()


def _document() -> bytes:
    return orjson.dumps({"riddle": {"question": f"x * y = ({next(_made)})"}})


@settings(
    max_examples=30,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(names=DROPS)
def test_a_drop_in_named_no_id_is_one_riddle_under_one_id_from_the_first_look(
    spool: Spool, names: list[str]
) -> None:
    # One spool serves every example: whatever an example leaves, failing or not, is
    # taken out of `incoming/`, or the next example (and Hypothesis's shrinking of a
    # failure) would judge it instead of its own names.
    try:
        _one_look_one_id(spool, names)
    finally:
        for claim in spool.claim(Queue.INCOMING, limit=1_000):
            spool.commit(claim, claim.riddle, Queue.DONE)


def _one_look_one_id(spool: Spool, names: list[str]) -> None:
    assert spool.ids(Queue.INCOMING) == []
    for name in names:
        spool.drop_in(Queue.INCOMING, name, _document())
    listed = {}
    for entry in spool.ids(Queue.INCOMING):
        riddle = spool.read(Queue.INCOMING, entry)
        assert riddle is not None and riddle.id is not None and ID_RE.fullmatch(riddle.id)
        listed[riddle.id] = riddle.extensions()["dropped_as"]
    assert sorted(listed.values()) == sorted(shown_name(name) for name in names)
    for riddle_id, name in listed.items():
        found = spool.find(riddle_id)
        assert found is not None and found[0] is Queue.INCOMING
        assert found[1].id == riddle_id and found[1].extensions()["dropped_as"] == name
    claims = spool.claim(Queue.INCOMING, limit=len(names) + 1)
    assert {c.riddle.id: c.riddle.extensions()["dropped_as"] for c in claims} == listed
    for claim in claims:
        spool.commit(claim, claim.riddle, Queue.DONE)
    assert spool.ids(Queue.INCOMING) == []
    assert set(listed) <= set(spool.ids(Queue.DONE))
