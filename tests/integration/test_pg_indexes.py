"""Every query an agent runs on a PostgreSQL spool can be answered from an index.

The statements are not listed here by hand: a real agent workload (submit with data
files, claims, begin, hand-overs, commits, a claim by id, a release, drop-ins,
extractions, the reaper, the wake-ups) runs on a real spool while every statement its
connections execute is recorded; each is then explained with sequential scans priced out
(`enable_seqscan = off`), as the planner would do on a large table. A plan that still
scans one of the spool's tables from end to end is a query without an index.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import psycopg
import pytest

from riddlectl.spool import open_spool
from riddlectl.spool.postgres.pgspool import PgSpool
from riddlectl.spool.states import Queue
from tests import pg
from tests.contract.conftest import riddle
from tests.rig import until

# Small tables every agent must read whole: one row per live agent process.
READ_WHOLE = {"holders"}
TABLES = {"riddles", "dropins", "corrupt", "events", "extractions", "blobs", "riddle_data"}


class Recorder:
    """Records every statement psycopg connections execute (they still run as usual)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.seen: list[tuple[str, Any]] = []
        real = psycopg.Connection.execute

        def execute(conn: Any, query: Any, params: Any = None, **kwargs: Any) -> Any:
            self.seen.append((str(query), params))
            return real(conn, query, params, **kwargs)

        monkeypatch.setattr(psycopg.Connection, "execute", execute)

    def statements(self) -> list[tuple[str, Any]]:
        kept: dict[str, Any] = {}
        for query, params in self.seen:
            head = query.lstrip().split(None, 1)[0].upper() if query.strip() else ""
            if head in {"SELECT", "WITH", "UPDATE", "DELETE"} and "pg_notify" not in query:
                kept.setdefault(query, params)
        return list(kept.items())


def workload(spool: PgSpool, url: str, data_dir: Path) -> None:
    spool.data_dir = data_dir
    spool.add([riddle("a", data=[{"type": "text", "file_plain": "example/x.txt"}])])
    spool.add([riddle(f"r{n}") for n in range(5)])
    spool.drop_in(Queue.INCOMING, "dropped.json", b'{"riddle": {"question": "x ="}}')
    spool.drop_in(Queue.INCOMING, "junk.json", b"{")
    wake = threading.Event()
    watching = spool.watch([Queue.INCOMING], wake)
    claims = spool.claim(Queue.INCOMING, limit=3)
    spool.begin(claims[0])
    spool.handled(claims[0])
    spool.hand_over(claims[0], claims[1])
    spool.commit_and_begin([(claims[0], claims[0].riddle, Queue.EXTRACTED)], claims[1])
    spool.commit_many([(claims[1], claims[1].riddle, Queue.EXTRACTED)])
    spool.release(claims[2])
    with spool.data_files(spool.require("a")[1], data_dir) as place:
        place.path()
    key = spool.extractions.key(b"x", "text", "1")
    spool.extractions.get_or_make(key, lambda: {"extractor": "text"})
    spool.extractions.get_or_make_many([(key, lambda: {"extractor": "text"})])
    spool.extractions.load(spool.extractions.reference(key))
    held = spool.claim_id("r3")
    spool.commit(held, held.riddle, Queue.DONE)
    spool.ids(Queue.INCOMING)
    spool.find("r4")
    # A holder that dies: the reaper's statement, with a claim to give back.
    other = subprocess.Popen([sys.executable, "-c", HOLD, url], stdout=subprocess.PIPE, text=True)
    assert other.stdout is not None
    held = other.stdout.readline().strip()
    assert held
    other.send_signal(signal.SIGKILL)
    other.wait()
    # Given back by this call, or first by the spool's own reaper thread.
    until(lambda: spool.reap() or given_back(spool, url, held), 10)
    spool.recover(lambda event: True)
    spool.events.append({"n": 1})
    list(spool.events.tail())
    watching.stop()


def given_back(spool: PgSpool, url: str, riddle_id: str) -> bool:
    with psycopg.connect(pg.without_schema(url), autocommit=True) as conn:
        row = conn.execute(
            f'SELECT holder IS NULL FROM "{spool.url.schema}".riddles WHERE id = %s', (riddle_id,)
        ).fetchone()
    return bool(row and row[0])


HOLD = """
import sys, time
from riddlectl.spool import open_spool
from riddlectl.spool.states import Queue
spool = open_spool(sys.argv[1], create=False)
claim, = spool.claim(Queue.INCOMING)
spool.begin(claim)
print(claim.riddle.id, flush=True)
time.sleep(60)
"""


def scans(plan: Any) -> list[str]:
    """The tables a plan reads from end to end."""
    found = []
    if isinstance(plan, dict):
        if plan.get("Node Type") == "Seq Scan":
            found.append(plan.get("Relation Name", "?"))
        for value in plan.values():
            found += scans(value)
    elif isinstance(plan, list):
        for value in plan:
            found += scans(value)
    return found


def test_every_query_of_an_agent_uses_an_index(
    pg_url: str, data_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    spool = open_spool(pg_url)
    assert isinstance(spool, PgSpool)
    recorder = Recorder(monkeypatch)
    workload(spool, pg_url, data_dir)
    monkeypatch.undo()
    statements = recorder.statements()
    assert len(statements) >= 15, statements  # the workload reached the agent's queries
    schema = spool.url.schema
    unindexed = []
    with psycopg.connect(pg.without_schema(pg_url), autocommit=True) as conn:
        conn.execute(f'SET search_path TO "{schema}"')
        conn.execute("SET enable_seqscan = off")
        cursor = psycopg.ClientCursor(conn)
        for query, params in statements:
            cursor.execute(f"EXPLAIN (FORMAT JSON) {query}", params)
            row = cursor.fetchone()
            assert row is not None
            whole = {t for t in scans(row[0]) if t in TABLES and t not in READ_WHOLE}
            if whole:
                unindexed.append((sorted(whole), " ".join(query.split())[:200]))
    spool.disconnect()
    assert unindexed == []
