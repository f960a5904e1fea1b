"""The table's index: one row per riddle, in a disposable SQLite file.

What the table shows and filters on (queue, priority, times, trial, solved, parent, the
texts searched) is copied out of each document, so that a page of the table costs an
indexed query, not a read of every document. The file can be deleted at any time: it is
rebuilt from the spool (`rebuild`), and `keeper` keeps it current from the event log.
Text search uses an FTS5 trigram index (substrings of 3 characters or more); shorter
terms fall back to a scan.
"""

from __future__ import annotations

import contextlib
import sqlite3
import threading
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from riddlectl.errors import InvalidDocument
from riddlectl.spool.states import Queue
from riddlectl.web import trends

if TYPE_CHECKING:
    from riddlectl.document.model import Riddle
    from riddlectl.spool.contract import Spool

SCHEMA_VERSION = 3  # 3: the dashboard's tables (`trends`)
COLUMNS = (
    "id", "queue", "priority", "created", "updated", "trial", "solved", "parent_id",
    "question", "context", "error", "solution", "rev", "rank",
)  # fmt: skip
_SCHEMA = f"""
CREATE TABLE IF NOT EXISTS riddles (
    id TEXT PRIMARY KEY, queue TEXT NOT NULL, priority INTEGER NOT NULL, created REAL NOT NULL,
    updated REAL NOT NULL, trial INTEGER NOT NULL, solved INTEGER NOT NULL, parent_id TEXT,
    question TEXT NOT NULL, context TEXT NOT NULL, error TEXT, solution TEXT,
    rev INTEGER NOT NULL, rank INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS by_rank ON riddles (rank, created, id);
CREATE INDEX IF NOT EXISTS by_queue_rank ON riddles (queue, rank, created, id);
CREATE INDEX IF NOT EXISTS by_created ON riddles (created, id);
CREATE INDEX IF NOT EXISTS by_queue_created ON riddles (queue, created, id);
CREATE INDEX IF NOT EXISTS by_parent ON riddles (parent_id);
CREATE VIRTUAL TABLE IF NOT EXISTS texts USING fts5(
    id, question, context, error, content='riddles', content_rowid='rowid',
    tokenize='trigram'
);
CREATE TRIGGER IF NOT EXISTS riddles_ai AFTER INSERT ON riddles BEGIN
  INSERT INTO texts(rowid, id, question, context, error)
  VALUES (new.rowid, new.id, new.question, new.context, coalesce(new.error, ''));
END;
CREATE TRIGGER IF NOT EXISTS riddles_ad AFTER DELETE ON riddles BEGIN
  INSERT INTO texts(texts, rowid, id, question, context, error)
  VALUES ('delete', old.rowid, old.id, old.question, old.context, coalesce(old.error, ''));
END;
CREATE TRIGGER IF NOT EXISTS riddles_au AFTER UPDATE ON riddles BEGIN
  INSERT INTO texts(texts, rowid, id, question, context, error)
  VALUES ('delete', old.rowid, old.id, old.question, old.context, coalesce(old.error, ''));
  INSERT INTO texts(rowid, id, question, context, error)
  VALUES (new.rowid, new.id, new.question, new.context, coalesce(new.error, ''));
END;
PRAGMA user_version = {SCHEMA_VERSION};
"""
_UPSERT = (
    f"INSERT OR REPLACE INTO riddles ({', '.join(COLUMNS)}) "
    f"VALUES ({', '.join('?' for _ in COLUMNS)})"
)


def row_of(queue: Queue, riddle: Riddle) -> tuple[Any, ...]:
    """The index row of one document."""
    solution = riddle.solution.solution if riddle.solution else None
    return (
        riddle.id,
        queue.value,
        riddle.priority,
        riddle.created or riddle.updated or 0.0,
        riddle.updated or riddle.created or 0.0,
        riddle.status.trial,
        int(riddle.status.solved),
        riddle.parent_id,
        riddle.riddle.question[:2000],
        riddle.riddle.context[:2000],
        (riddle.error or "")[:2000] or None,
        None if solution is None else str(solution)[:500],
        riddle.rev,
        -riddle.priority,  # rank: so that every sort key ascends, and row values compare
    )


class Index:
    """The SQLite file and its connections: one per thread (WAL lets readers run while
    the keeper writes)."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self._local = threading.local()
        self._write_lock = threading.Lock()
        self.generation = 0  # bumped by every write: what a cache of counts is keyed on
        self.fresh = self._open_schema()

    def _open_schema(self) -> bool:
        """Create the schema; True when the file was (re)made empty and needs a rebuild."""
        conn = self.conn()
        version = conn.execute("PRAGMA user_version").fetchone()[0]
        if version not in (0, SCHEMA_VERSION):
            self.close()
            self.path.unlink(missing_ok=True)
            conn = self.conn()
            version = 0
        conn.executescript(_SCHEMA + trends.SCHEMA)
        return version == 0 or not conn.execute("SELECT 1 FROM riddles LIMIT 1").fetchone()

    def conn(self) -> sqlite3.Connection:
        conn: sqlite3.Connection | None = getattr(self._local, "conn", None)
        if conn is None:
            conn = sqlite3.connect(self.path, timeout=30, isolation_level=None)
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=OFF")  # disposable: rebuilt if ever damaged
            self._local.conn = conn
        return conn

    def close(self) -> None:
        conn = getattr(self._local, "conn", None)
        if conn is not None:
            conn.close()
            self._local.conn = None

    @contextlib.contextmanager
    def writing(self) -> Iterator[sqlite3.Connection]:
        """One write transaction at a time."""
        with self._write_lock:
            conn = self.conn()
            conn.execute("BEGIN IMMEDIATE")
            try:
                yield conn
            except BaseException:
                conn.execute("ROLLBACK")
                raise
            conn.execute("COMMIT")
            self.generation += 1

    def put(self, rows: Iterable[tuple[Any, ...]]) -> None:
        with self.writing() as conn:
            conn.executemany(_UPSERT, rows)

    def drop(self, ids: Iterable[str]) -> None:
        with self.writing() as conn:
            conn.executemany("DELETE FROM riddles WHERE id = ?", [(i,) for i in ids])

    def placed(self, ids: Iterable[str]) -> dict[str, tuple[str, int]]:
        """(queue, rev) of each of `ids` the index holds."""
        conn, out = self.conn(), {}
        for riddle_id in ids:
            found = conn.execute("SELECT queue, rev FROM riddles WHERE id = ?", (riddle_id,))
            row = found.fetchone()
            if row is not None:
                out[riddle_id] = (row[0], row[1])
        return out

    def ids_in(self, queue: Queue) -> set[str]:
        found = self.conn().execute("SELECT id FROM riddles WHERE queue = ?", (queue.value,))
        return {row[0] for row in found}

    def counts(self) -> dict[str, int]:
        found = self.conn().execute("SELECT queue, count(*) FROM riddles GROUP BY queue")
        counted = dict(found.fetchall())
        return {queue.value: int(counted.get(queue.value, 0)) for queue in Queue}

    def oldest(self) -> dict[str, float | None]:
        """When the oldest riddle of each queue was created (None for an empty queue): one
        step down the (queue, created) index per queue."""
        conn = self.conn()
        sql = "SELECT min(created) FROM riddles WHERE queue = ?"
        return {q.value: conn.execute(sql, (q.value,)).fetchone()[0] for q in Queue}

    def query(self, sql: str, params: Iterable[Any]) -> list[sqlite3.Row]:
        conn = self.conn()
        conn.row_factory = sqlite3.Row
        return list(conn.execute(sql, tuple(params)))


def rebuild(index: Index, spool: Spool, batch: int = 2000) -> int:
    """Fill the index from the spool, queue by queue; how many riddles it holds after."""
    with index.writing() as conn:
        conn.execute("DELETE FROM riddles")
    total = 0
    for queue in Queue:
        rows = []
        for riddle_id in spool.ids(queue):
            riddle = _read(spool, queue, riddle_id)
            if riddle is not None:
                rows.append(row_of(queue, riddle))
            if len(rows) >= batch:
                index.put(rows)
                total, rows = total + len(rows), []
        index.put(rows)
        total += len(rows)
    return total


def refresh(index: Index, spool: Spool, ids: Iterable[str]) -> int:
    """Copy the riddles `ids` from the spool as they are now (dropping those gone); how
    many rows changed."""
    rows, gone = [], []
    for riddle_id in ids:
        try:
            found = spool.find(riddle_id)
        except InvalidDocument:
            found = None
        if found is None:
            gone.append(riddle_id)
        else:
            rows.append(row_of(*found))
    index.put(rows)
    index.drop(gone)
    return len(rows) + len(gone)


def reconcile(index: Index, spool: Spool) -> int:
    """Bring the index's membership in line with the spool's queues (riddles dropped in,
    moved or removed while nobody watched); how many rows changed. Costs a listing of
    each queue, never a read of the riddles already in place."""
    stale: set[str] = set()
    for queue in Queue:
        there, held = set(spool.ids(queue)), index.ids_in(queue)
        stale |= there ^ held
    return refresh(index, spool, sorted(stale)) if stale else 0


def _read(spool: Spool, queue: Queue, riddle_id: str) -> Riddle | None:
    try:
        return spool.read(queue, riddle_id)
    except InvalidDocument:
        return None
