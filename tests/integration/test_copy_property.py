"""`copy` as a property: a generated spool (riddles in any queue, drop-ins with and
without ids and with names that are no id, drop-ins that are no riddle, set-aside files
with their reasons, events) copied directory → directory, directory → PostgreSQL,
PostgreSQL → directory, PostgreSQL → PostgreSQL, and there and back, reads the same
afterwards: the same riddles under the same ids in the same queues with the same
documents, the same counts, the same set-aside files and the same events."""

from __future__ import annotations

import contextlib
import itertools
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from riddlectl.document import codec
from riddlectl.errors import InvalidDocument
from riddlectl.ops.copy import copy
from riddlectl.spool import open_spool
from riddlectl.spool.contract import Corrupt, DropIn, Spool
from riddlectl.spool.states import Queue
from tests import pg
from tests.contract.conftest import riddle
from tests.contract.test_spool_names import NAMES, TEXT, usable

QUEUES = st.sampled_from(list(Queue))
STAMPS = st.integers(1_600_000_000_000, 1_900_000_000_000)  # ms
RIDDLES = st.lists(
    st.tuples(
        QUEUES,
        st.integers(1, 9),  # rev: stored by a commit or a submission
        st.integers(-2, 2),  # priority
        st.lists(st.integers(0, 99), max_size=3),  # a field of their own, kept
    ),
    max_size=12,
)
# A drop-in: its queue, its name (no id, or an id's stem), what it holds (a riddle with
# no id, one with its own id, or what is no riddle) and when it came.
DROP_INS = st.lists(
    st.tuples(
        st.one_of(st.just(Queue.INCOMING), QUEUES),
        st.one_of(NAMES, st.integers(0, 999).map(lambda n: f"d{n}.json")),
        st.sampled_from(["nameless", "own id", "garbage"]),
        STAMPS,
    ),
    max_size=8,
    unique_by=lambda d: (d[0], d[1].lower()),
)
SET_ASIDE = st.lists(
    st.tuples(
        # (`\\` is no part of a name a set-aside entry is asked for by: `one_name`)
        TEXT.filter(lambda n: usable(n) and "\\" not in n and not n.endswith(".reason")),
        st.binary(max_size=64),
        st.text(st.characters(codec="utf-8", exclude_categories=["Cc", "Zl", "Zp"]), max_size=40),
    ),
    max_size=4,
    unique_by=lambda c: c[0],
)
EVENTS = st.lists(st.integers(0, 10**6), max_size=20)
SPOOLS = st.fixed_dictionaries(
    {"riddles": RIDDLES, "drop_ins": DROP_INS, "set_aside": SET_ASIDE, "events": EVENTS}
)

_made = itertools.count()


def fill(spool: Spool, made: dict[str, Any]) -> None:
    serial = next(_made)
    for n, (queue, rev, priority, kept) in enumerate(made["riddles"]):
        doc = riddle(f"r{serial}-{n}", rev=rev, priority=priority, custom={"kept": kept})
        spool.restore([doc], queue)
    for n, (queue, name, holds, stamp) in enumerate(made["drop_ins"]):
        body: dict[str, Any] = {"riddle": {"question": f"x = ({serial}-{n})"}}
        if holds == "own id":
            body["id"] = f"own{serial}-{n}"
        raw = b"{ no riddle" if holds == "garbage" else orjson.dumps(body)
        spool.restore_drop_ins(queue, [DropIn(name, raw, stamp)])
    if made["set_aside"]:
        spool.restore_set_aside(
            [
                (Corrupt(name, " ".join(reason.split())), raw)
                for name, raw, reason in made["set_aside"]
            ]
        )
    spool.events.append_many([{"id": f"r{serial}-{n}", "n": n} for n in made["events"]])


def reading(spool: Spool) -> dict[str, Any]:
    """What a reader of the spool sees: the riddles each queue lists (id, document), the
    counts, the set-aside files (name, reason, bytes) and the events."""
    riddles = {}
    for queue in Queue:
        listed = []
        for entry in spool.ids(queue):
            with contextlib.suppress(InvalidDocument):
                found = spool.read(queue, entry)
                if found is not None:
                    listed.append((found.id, codec.dumps(found)))
        riddles[queue.value] = sorted(listed)
    return {
        "riddles": riddles,
        "counts": spool.counts(),
        "set_aside": [
            (c.name, c.reason, spool.corrupt_content(c.name)) for c in spool.corrupt_files()
        ],
        "events": list(spool.events.read()),
    }


@contextlib.contextmanager
def spools(kinds: tuple[str, ...], where: Path) -> Iterator[list[Spool]]:
    """A new spool of each kind, for one example."""
    with contextlib.ExitStack() as stack:
        made: list[Spool] = []
        for kind in kinds:
            if kind == "fs":
                made.append(open_spool(Path(tempfile.mkdtemp(dir=where)) / "spool", durable=False))
            else:
                url = stack.enter_context(pg.fresh_schema())
                spool = open_spool(url)
                stack.callback(spool.disconnect)  # type: ignore[attr-defined]
                made.append(spool)
        yield made


ROUTES = [
    pytest.param(("fs", "fs"), id="dir-dir"),
    pytest.param(("fs", "pg"), id="dir-pg", marks=pytest.mark.postgres),
    pytest.param(("pg", "fs"), id="pg-dir", marks=pytest.mark.postgres),
    pytest.param(("pg", "pg"), id="pg-pg", marks=pytest.mark.postgres),
    pytest.param(("fs", "pg", "fs"), id="dir-pg-dir", marks=pytest.mark.postgres),
]


@pytest.mark.timeout(600)
@pytest.mark.parametrize("route", ROUTES)
@settings(
    max_examples=25,
    deadline=None,
    phases=[Phase.explicit, Phase.reuse, Phase.generate, Phase.shrink],
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(made=SPOOLS)
def test_a_copied_spool_reads_as_the_one_it_was_copied_from(
    route: tuple[str, ...], made: dict[str, Any], tmp_path: Path
) -> None:
    with spools(route, tmp_path) as chain:
        fill(chain[0], made)
        before = reading(chain[0])
        for source, target in itertools.pairwise(chain):
            copied = copy(source, target, (source.name, target.name))
            assert copied.missed == []
        assert reading(chain[-1]) == before
        expected = sum(len(made[kind]) for kind in ("riddles", "drop_ins"))
        assert sum(copied.riddles.values()) + sum(copied.drop_ins.values()) == expected
        assert copied.set_aside == len(made["set_aside"])
        assert copied.events == len(made["events"])
