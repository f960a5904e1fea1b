"""The dashboard's trends: what the event log says per minute, folded into the index.

Each event the keeper follows is folded into three small tables of the index, keyed by
the minute it happened in: moves in and out of each queue (`moves`: riddles finished are
those moved into `done/`, failed those moved into `failed/`, and a queue's depth at any
past minute is its depth now less the moves since), and handler times per stage as a
histogram of buckets 25 % apart (`durations`; a p50 or p95 read from it is the upper
bound of its bucket, at most a quarter above the true value). A week at one-minute
grain is at most 10,080 rows per queue, whatever the number of events, so a chart is a
small indexed query at 1,000,000 events as at 100.

What was folded is remembered as the time of the newest event (`meta`): a restarted
server reads the log from its start, as the keeper does, and skips what it folded before.
"""

from __future__ import annotations

import math
import sqlite3
import threading
import time
from collections import Counter
from collections.abc import Mapping
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Any, Protocol

from riddlectl.spool.states import Queue


class Index(Protocol):
    """What the trends need of the table's index (`web.index.Index`): its connection,
    and one write transaction at a time."""

    def conn(self) -> sqlite3.Connection: ...

    def writing(self) -> AbstractContextManager[sqlite3.Connection]: ...


SCHEMA = """
CREATE TABLE IF NOT EXISTS moves (
    minute INTEGER NOT NULL, queue TEXT NOT NULL, ins INTEGER NOT NULL, outs INTEGER NOT NULL,
    PRIMARY KEY (minute, queue)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS durations (
    minute INTEGER NOT NULL, stage TEXT NOT NULL, bucket INTEGER NOT NULL, n INTEGER NOT NULL,
    PRIMARY KEY (minute, stage, bucket)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value REAL NOT NULL);
"""
STAGES = ("extract", "solve", "validate", "manage")
# The queues whose depth the dashboard draws: those riddles wait in (final ones only grow).
WAITING = ("incoming", "extracted", "solved", "validated", "waiting", "hold")
_QUEUES = frozenset(q.value for q in Queue)
BASE_MS = 0.1  # the upper bound of bucket 0
GROWTH = 1.25  # each bucket's bound is this much above the one before


@dataclass(frozen=True)
class Window:
    """A range the dashboard shows: its name, length and the width of one bar."""

    name: str
    minutes: int
    step: int  # minutes per bucket

    @property
    def label(self) -> str:
        return {"hour": "last hour", "day": "last day", "week": "last week"}[self.name]


WINDOWS = {
    "hour": Window("hour", 60, 1),
    "day": Window("day", 24 * 60, 15),
    "week": Window("week", 7 * 24 * 60, 60),
}


def bucket_of(seconds: float) -> int:
    ms = seconds * 1000.0
    if ms <= BASE_MS:
        return 0
    return max(0, math.ceil(math.log(ms / BASE_MS) / math.log(GROWTH) - 1e-9))


def bound_ms(bucket: int) -> float:
    return BASE_MS * GROWTH**bucket


class Folder:
    """Events folded so far and not yet written; fed by the keeper's follower thread,
    written by its applier (`flush`)."""

    def __init__(self, since: float = 0.0) -> None:
        self._lock = threading.Lock()
        self.since = since  # events at or before this time were folded by an earlier run
        self.newest = since
        self.moves: Counter[tuple[int, str, int]] = Counter()  # (minute, queue, 0 in|1 out)
        self.durations: Counter[tuple[int, str, int]] = Counter()

    def fold(self, event: Mapping[str, Any]) -> None:
        stamp = event.get("time")
        if not isinstance(stamp, int | float) or stamp <= self.since:
            return
        minute = int(stamp // 60)
        source, target = event.get("from"), event.get("to")
        duration, stage = event.get("duration"), event.get("stage")
        with self._lock:
            self.newest = max(self.newest, float(stamp))
            if source != target:
                if target in _QUEUES:
                    self.moves[(minute, str(target), 0)] += 1
                if source in _QUEUES:
                    self.moves[(minute, str(source), 1)] += 1
            if stage in STAGES and isinstance(duration, int | float) and duration >= 0:
                self.durations[(minute, str(stage), bucket_of(float(duration)))] += 1

    def flush(self, index: Index) -> int:
        """Add what was folded to the index; how many rows it touched."""
        with self._lock:
            moves, self.moves = self.moves, Counter()
            durations, self.durations = self.durations, Counter()
            newest = self.newest
        if not moves and not durations:
            return 0
        rows: dict[tuple[int, str], list[int]] = {}
        for (minute, queue, way), n in moves.items():
            rows.setdefault((minute, queue), [0, 0])[way] += n
        with index.writing() as conn:
            conn.executemany(
                "INSERT INTO moves VALUES (?, ?, ?, ?) ON CONFLICT (minute, queue) DO UPDATE "
                "SET ins = ins + excluded.ins, outs = outs + excluded.outs",
                [(m, q, i, o) for (m, q), (i, o) in rows.items()],
            )
            conn.executemany(
                "INSERT INTO durations VALUES (?, ?, ?, ?) ON CONFLICT (minute, stage, bucket) "
                "DO UPDATE SET n = n + excluded.n",
                [(m, s, b, n) for (m, s, b), n in durations.items()],
            )
            conn.execute("INSERT OR REPLACE INTO meta VALUES ('folded_until', ?)", (newest,))
        return len(rows) + len(durations)


def folded_until(index: Index) -> float:
    row = index.conn().execute("SELECT value FROM meta WHERE key = 'folded_until'").fetchone()
    return float(row[0]) if row else 0.0


def series(
    index: Index, window: Window, depths: Mapping[str, int], now: float | None = None
) -> dict[str, Any]:
    """The trend series of `window` ending now: one point per bucket (its start, in
    seconds since the epoch) for finished and failed riddles per minute, the depth of each
    waiting queue at the bucket's end (None before the first event folded), and handler
    time p50/p95 per stage in ms."""
    now = time.time() if now is None else now
    last = int(now // 60)
    first = (last - window.minutes + 1) // window.step * window.step
    count = (last - first) // window.step + 1
    starts = [(first + i * window.step) * 60 for i in range(count)]
    conn = index.conn()
    ins = {q: [0] * count for q in ("done", "failed")}
    net_after = {q: [0] * count for q in WAITING}
    for minute, queue, n_in, n_out in conn.execute(
        "SELECT minute, queue, ins, outs FROM moves WHERE minute >= ?", (first,)
    ):
        slot = min((minute - first) // window.step, count - 1)
        if queue in ins:
            ins[queue][slot] += n_in
        if queue in net_after:
            net_after[queue][slot] += n_in - n_out
    per_minute = {
        name: [round(n / window.step, 3) for n in ins[queue]]
        for name, queue in (("finished", "done"), ("failed", "failed"))
    }
    # Before the spool's first event nothing is known of a queue's depth: those points
    # are None (not drawn), never the depth now carried back over time it did not exist.
    known_from = _first_minute(conn)
    known = count - 1 if known_from is None else max(0, (known_from - first) // window.step)
    depth: dict[str, list[int | None]] = {}
    for queue in WAITING:
        level = int(depths.get(queue, 0))
        points: list[int | None] = [None] * count
        for slot in range(count - 1, known - 1, -1):  # a bucket's end: now, less what came after
            points[slot] = max(0, level)
            level -= net_after[queue][slot]
        depth[queue] = points
    return {
        "window": window.name,
        "step_seconds": window.step * 60,
        "starts": starts,
        "per_minute": per_minute,
        "depth": depth,
        "handler_ms": _percentiles(index, window, first, count),
    }


def _first_minute(conn: sqlite3.Connection) -> int | None:
    """The minute of the first event folded (one step down the primary key)."""
    row = conn.execute("SELECT min(minute) FROM moves").fetchone()
    return None if row is None or row[0] is None else int(row[0])


def _percentiles(index: Index, window: Window, first: int, count: int) -> dict[str, Any]:
    hist: dict[str, list[Counter[int]]] = {}
    for minute, stage, bucket, n in index.conn().execute(
        "SELECT minute, stage, bucket, n FROM durations WHERE minute >= ?", (first,)
    ):
        slot = min((minute - first) // window.step, count - 1)
        hist.setdefault(stage, [Counter() for _ in range(count)])[slot][bucket] += n
    out = {}
    for stage in STAGES:
        slots = hist.get(stage)
        if slots is None:
            continue
        out[stage] = {
            "p50": [_quantile(c, 0.5) for c in slots],
            "p95": [_quantile(c, 0.95) for c in slots],
        }
    return out


def _quantile(counts: Counter[int], q: float) -> float | None:
    total = sum(counts.values())
    if not total:
        return None
    need, seen = q * total, 0
    for bucket in sorted(counts):
        seen += counts[bucket]
        if seen >= need:
            return round(bound_ms(bucket), 3)
    return None
