"""The table's index over a real filesystem spool: built from the spool, kept current
from the event log and the queues' listings, and queried page by page."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from riddlectl.errors import InvalidDocument
from riddlectl.settings import Settings
from riddlectl.spool import open_spool
from riddlectl.spool.states import Queue
from riddlectl.web import index as indexing
from riddlectl.web import query as tables
from riddlectl.web.service import Service, index_path
from tests.conftest import Cli
from tests.web.conftest import example


@pytest.fixture
def web(settings: Settings) -> Service:
    open_spool(settings.spool, create=True)
    service = Service.open(settings)
    service.submit(
        [example(id=f"r{n:02d}", priority=n % 3) for n in range(30)]
        + [example(id="needle", riddle={"question": "what is a haystack?", "context": "hay"})]
    )
    service.act("hold", ["r00", "r01"])
    service.act("cancel", ["r02"])
    return service


def ids(rows: list[dict[str, object]]) -> list[object]:
    return [row["id"] for row in rows]


def test_rebuild_matches_the_spool(web: Service) -> None:
    assert indexing.rebuild(web.index, web.spool) == 31
    counts = web.index.counts()
    assert counts == {q.value: n for q, n in web.spool.counts().items()}
    assert counts["hold"] == 2 and counts["failed"] == 1 and counts["incoming"] == 28


@pytest.mark.parametrize("sort", tables.SORTS)
def test_keyset_pages_cover_every_row_once(web: Service, sort: str) -> None:
    # All 31 were submitted in one batch: they share one creation time, so the pages
    # rest on the tie-breaks (priority, then id).
    seen: list[object] = []
    after = None
    while True:
        rows, after = tables.page(web.index, tables.Filter(sort=sort, limit=4, after=after))
        seen += ids(rows)
        if after is None:
            break
    assert len(seen) == len(set(seen)) == 31
    whole, _ = tables.page(web.index, tables.Filter(sort=sort, limit=100))
    assert seen == ids(whole)
    if sort == "priority":
        priorities = [row["priority"] for row in whole]
        assert priorities == sorted(priorities, reverse=True)


def test_filters(web: Service) -> None:
    def find(**values: str) -> list[object]:
        return ids(tables.page(web.index, tables.parse(values))[0])

    assert sorted(find(queue="hold")) == ["r00", "r01"]
    assert find(queue="failed", q="r02") == ["r02"]
    assert find(q="haystack") == ["needle"]  # the question
    assert find(q="HAY") == ["needle"]  # the context, any case
    assert find(q="cancel") == ["r02"]  # the error
    assert find(q="r1") and set(find(q="r1")) == {f"r{n}" for n in range(10, 20)}  # short: a scan
    assert find(trial="0", solved="false", limit="500").__len__() == 31
    assert find(solved="true") == []
    assert find(parent="needle") == []
    assert find(min_age="1h") == []
    assert len(find(max_age="1h", limit="100")) == 31
    assert tables.count(web.index, tables.parse({"queue": "incoming"})) == 28


@pytest.mark.parametrize(
    ("values", "where"),
    [
        ({"queue": "nowhere"}, "queue"),
        ({"sort": "random"}, "sort"),
        ({"trial": "x"}, "trial"),
        ({"limit": "0"}, "limit"),
        ({"min_age": "yesterday"}, "min_age"),
        ({"after": "garbage"}, "after"),
        ({"solved": "maybe"}, "solved"),
    ],
)
def test_bad_filters_name_the_parameter(values: dict[str, str], where: str) -> None:
    with pytest.raises(InvalidDocument) as caught:
        tables.parse(values)
    assert caught.value.where == where


def test_the_keeper_follows_what_other_processes_do(web: Service, cli: Cli) -> None:
    web.keeper.start()
    try:
        assert cli("hold", "r05").code == 0
        assert cli("cancel", "r06").code == 0
        _until(lambda: _queues(web, "r05", "r06") == ["hold", "failed"])
        assert web.keeper.tally.transitions[("hold", "ok")] >= 3
    finally:
        web.keeper.stop()


def test_reconcile_finds_what_no_event_tells(web: Service, settings: Settings) -> None:
    # A file dropped into a queue by another program, and one removed by hand.
    dropped = example(id="dropped")
    web.spool.drop_in(Queue.INCOMING, "dropped.json", __import__("orjson").dumps(dropped))
    (Path(settings.spool) / "incoming" / "r10.json").unlink()
    assert indexing.reconcile(web.index, web.spool) >= 1
    placed = web.index.placed(["dropped", "r10"])
    assert "r10" not in placed
    assert placed.get("dropped", ("", 0))[0] == "incoming"


def test_deleting_the_index_rebuilds_it(web: Service, settings: Settings) -> None:
    web.index.close()
    for path in Path(settings.spool).glob("web-index.sqlite*"):
        path.unlink()
    again = Service.open(settings)
    assert index_path(again.spool).exists() and again.index.fresh
    again.keeper.start()
    again.keeper.stop()
    assert again.index.counts()["incoming"] == 28


def _until(check: object, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():  # type: ignore[operator]
        assert time.monotonic() < deadline, "the index did not catch up"
        time.sleep(0.05)


def _queues(web: Service, *riddle_ids: str) -> list[str]:
    placed = web.index.placed(riddle_ids)
    return [placed.get(i, ("", 0))[0] for i in riddle_ids]
