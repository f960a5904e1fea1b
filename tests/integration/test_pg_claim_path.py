"""What the PostgreSQL spool keeps off the path of each riddle, and the guarantees that
still hold: drop-ins are read when a wake-up tells of one, or by a slower look when no
wake-up came; claims of a holder that died are given back by a reaper thread, also while
the agent claims nothing; an extraction is fetched once for the check and the load that
follows it; data files are fetched once per process and linked into each riddle's
local copy. Real server, real processes; the statements are counted as psycopg runs them.
"""

from __future__ import annotations

import hashlib
import signal
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest

from riddlectl.document.model import DataItem
from riddlectl.errors import ClaimLost
from riddlectl.spool import open_spool
from riddlectl.spool.postgres import claims as sql
from riddlectl.spool.postgres.pgspool import PgSpool
from riddlectl.spool.states import Queue
from tests import pg
from tests.contract.conftest import riddle
from tests.integration.test_pg_spool import hold_in_a_process
from tests.rig import until

DOC = b'{"riddle": {"question": "x ="}}'


def opened(url: str) -> PgSpool:
    spool = open_spool(url, create=False)
    assert isinstance(spool, PgSpool)
    return spool


@pytest.fixture
def statements(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """Every statement psycopg connections of this process run from now on (they run)."""
    seen: list[str] = []
    real = psycopg.Connection.execute

    def execute(conn: Any, query: Any, params: Any = None, **kwargs: Any) -> Any:
        seen.append(" ".join(str(query).split()))
        return real(conn, query, params, **kwargs)

    monkeypatch.setattr(psycopg.Connection, "execute", execute)
    yield seen


def about(seen: list[str], table: str) -> list[str]:
    return [s for s in seen if f"FROM {table}" in s or f"INTO {table}" in s]


def test_claims_on_a_quiet_spool_do_not_look_for_drop_ins_each_time(
    pg_spool: PgSpool, statements: list[str]
) -> None:
    for _ in range(20):
        assert pg_spool.claim(Queue.INCOMING) == []
    assert len(about(statements, "dropins")) == 1  # the first claim looks


def test_a_drop_in_from_another_process_is_read_once_its_wake_up_arrives(
    pg_spool: PgSpool, pg_url: str
) -> None:
    wake = threading.Event()
    watching = pg_spool.watch([Queue.INCOMING], wake)
    try:
        assert pg_spool.claim(Queue.INCOMING) == []
        wake.clear()
        other = opened(pg_url)
        other.drop_in(Queue.INCOMING, "late.json", DOC)
        assert wake.wait(5)
        (claim,) = pg_spool.claim(Queue.INCOMING)
        assert claim.riddle.id == "late"
        other.disconnect()
    finally:
        watching.stop()


def test_a_drop_in_no_wake_up_told_of_is_read_by_a_later_look(
    pg_spool: PgSpool, pg_url: str
) -> None:
    assert pg_spool.claim(Queue.INCOMING) == []
    with psycopg.connect(pg.require(), autocommit=True) as conn:  # as if its wake-up was lost
        conn.execute(
            f'INSERT INTO "{pg_spool.url.schema}".dropins (queue, name, raw, at) '
            "VALUES ('incoming', 'quiet.json', %s, 0)",
            (DOC,),
        )
    found: list[str] = []

    def claimed() -> list[str]:
        found.extend(c.riddle.id or "" for c in pg_spool.claim(Queue.INCOMING))
        return found

    until(claimed, 10)
    assert found == ["quiet"]


def test_many_drop_ins_are_all_read_by_claims_in_a_row(pg_spool: PgSpool) -> None:
    for n in range(150):
        pg_spool.drop_in(Queue.INCOMING, f"d{n:03d}.json", DOC)
    taken = []
    for _ in range(6):  # well within the slow look: each claim reads the next ones
        taken += [c.riddle.id for c in pg_spool.claim(Queue.INCOMING, limit=100)]
    assert len(taken) == 150


def test_the_reaper_gives_back_a_dead_holders_claims_while_the_agent_is_idle(
    pg_spool: PgSpool, pg_url: str
) -> None:
    pg_spool.add([riddle("a")])
    assert pg_spool.claim(Queue.DONE) == []  # a claiming process now: its reaper runs
    proc = hold_in_a_process(pg_url, "begin")
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    schema = pg_spool.url.schema

    def given_back() -> bool:
        with psycopg.connect(pg.require(), autocommit=True) as conn:
            row = conn.execute(
                f'SELECT holder IS NULL, abandoned FROM "{schema}".riddles WHERE id = %s', ("a",)
            ).fetchone()
        return row == (True, 1)

    until(given_back, 10)  # no claim, no examine: the reaper's thread did it
    pg_spool.disconnect()


def test_an_extraction_checked_then_loaded_is_fetched_once(
    pg_spool: PgSpool, statements: list[str]
) -> None:
    cache = pg_spool.extractions
    key = cache.key(b"content", "text", "1")
    reference = cache.get_or_make(key, lambda: {"extractor": "text", "found": 1})
    statements.clear()
    assert not cache.dropped(reference)
    assert cache.load(reference) == {"extractor": "text", "found": 1}
    assert len(about(statements, "extractions")) == 1
    cache.clear()
    assert cache.dropped(reference) and cache.load(reference) is None


def test_a_claim_its_marks_and_its_release_are_one_statement_each(
    pg_spool: PgSpool, statements: list[str]
) -> None:
    assert pg_spool.claim(Queue.INCOMING) == []  # the first: a holder, a look at drop-ins
    pg_spool.add([riddle("a")])
    statements.clear()
    (claim,) = pg_spool.claim(Queue.INCOMING)
    pg_spool.begin(claim)
    pg_spool.handled(claim)
    pg_spool.release(claim)
    assert len(statements) == 4, statements
    (again,) = pg_spool.claim(Queue.INCOMING)  # given back indeed
    assert again.riddle.id == "a"


def test_transitions_wait_for_the_disk_and_claims_do_not(pg_spool: PgSpool) -> None:
    def setting(durable: bool) -> str:
        with pg_spool.db.transaction(durable=durable) as conn:
            row = conn.execute("SHOW synchronous_commit").fetchone()
        assert row is not None
        return str(row[0])

    with psycopg.connect(pg.require(), autocommit=True) as conn:  # as the server says
        row = conn.execute("SHOW synchronous_commit").fetchone()
        assert row is not None and row[0] != "off"  # the test means nothing otherwise
    assert setting(durable=True) == row[0]
    assert setting(durable=False) == "off"
    assert pg_spool.db.single("SHOW synchronous_commit", {}) == [("off",)]
    # A commit is one statement: what it sets lasts to the end of its transaction.
    with pg_spool.db.transaction(durable=False) as conn:
        empty: dict[str, Any] = {name: [] for name in ("ids", "tokens", "events", "arrived")}
        empty.update({name: [] for name in sql.COMMIT_COLUMNS}, at=0.0, channel="none")
        conn.execute(sql.COMMIT, empty)
        assert conn.execute("SHOW synchronous_commit").fetchone() == row


def test_a_commit_of_several_claims_one_of_them_lost_keeps_none(pg_spool: PgSpool) -> None:
    pg_spool.add([riddle("a"), riddle("b"), riddle("c")])
    claims = pg_spool.claim(Queue.INCOMING, limit=3)
    pg_spool.release(claims[1])
    claims[1].open = True  # as a claim reaped behind its holder's back
    with (
        pytest.raises(ClaimLost, match="the commit is refused") as refused,
        pg_spool.events.committing([{"id": "a"}], lambda event: False),
    ):
        pg_spool.commit_many([(c, c.riddle, Queue.EXTRACTED) for c in claims])
    assert refused.value.where == "b"
    assert sorted(pg_spool.ids(Queue.INCOMING)) == ["a", "b", "c"]
    assert list(pg_spool.events.read()) == []


def test_riddles_mixing_the_same_files_share_their_contents_and_a_claim_lists_them(
    pg_spool: PgSpool, statements: list[str], tmp_path: Path
) -> None:
    data = tmp_path / "data"
    data.mkdir()
    for name, text in {"a1.txt": "a = 1\n", "b1.txt": "b = 2\n", "b2.txt": "b = 3\n"}.items():
        (data / name).write_text(text)
    pg_spool.data_dir = data
    pg_spool.add([_with_files("r1", "a1.txt", "b1.txt"), _with_files("r2", "a1.txt", "b2.txt")])
    seen: dict[str, Path] = {}
    statements.clear()
    for riddle_id in ("r1", "r2"):
        claim = pg_spool.claim_id(riddle_id)
        with pg_spool.data_files(claim.riddle, tmp_path / "elsewhere") as place:
            local = place.path()
            assert local != tmp_path / "elsewhere"  # the stored files, not the agent's own
            texts = {p.name: p.read_text() for p in local.iterdir()}
            seen[riddle_id] = local
        pg_spool.release(claim)
    assert texts == {"a1.txt": "a = 1\n", "b2.txt": "b = 3\n"}
    assert (seen["r1"] / "b1.txt").read_text() == "b = 2\n"
    # a1.txt was fetched once for both riddles, and is one file on disk, linked twice.
    assert (seen["r1"] / "a1.txt").stat().st_ino == (seen["r2"] / "a1.txt").stat().st_ino
    fetched = [s for s in statements if "FROM blobs" in s]
    assert len(fetched) == 2, fetched  # r1's two contents, then r2's new one
    asked = [s for s in statements if s.startswith("SELECT path, sha256 FROM riddle_data")]
    assert not asked  # the claims said which files


def _with_files(riddle_id: str, *names: str) -> Any:
    made = riddle(riddle_id)
    made.data = [DataItem(type="text", file_plain=name) for name in names]
    return made


def test_a_riddles_extractions_are_checked_in_one_query(
    pg_spool: PgSpool, statements: list[str]
) -> None:
    cache = pg_spool.extractions
    made = [
        cache.get_or_make(cache.key(text, "text", "1"), lambda: {"extractor": "text"})
        for text in (b"one", b"two")
    ]
    statements.clear()
    assert cache.dropped_of([*made, None, "elsewhere/x.json"]) == [False] * 4
    assert len(about(statements, "extractions")) == 1
    assert [cache.load(reference) for reference in made] == [{"extractor": "text"}] * 2
    assert len(about(statements, "extractions")) == 1  # loaded from what the check fetched
    cache.clear()
    assert cache.dropped_of([*made, None]) == [True, True, False]


def test_a_local_copy_is_made_only_when_a_handler_asks_for_the_directory(
    pg_spool: PgSpool, statements: list[str], tmp_path: Path
) -> None:
    data = tmp_path / "data"
    data.mkdir()
    (data / "a1.txt").write_text("a = 1\n")
    pg_spool.data_dir = data
    pg_spool.add([_with_files("r1", "a1.txt")])
    claim = pg_spool.claim_id("r1")
    statements.clear()
    with pg_spool.data_files(claim.riddle, tmp_path / "elsewhere") as place:
        assert not about(statements, "blobs")  # solve's calculator never opens a file
        digest = place.digest("a1.txt")
        assert digest == hashlib.sha256(b"a = 1\n").hexdigest()
        local = place.path()
        assert (local / "a1.txt").read_text() == "a = 1\n"
        assert place.path() == local
    assert len(about(statements, "blobs")) == 1
    pg_spool.release(claim)
