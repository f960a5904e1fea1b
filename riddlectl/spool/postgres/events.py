"""The PostgreSQL spool's event log: the `events` table, one row per event.

A commit's events are written by the commit's own transaction (`pending`, `taken`):
the document, its queue and its events are stored together or not at all, so no writer
can die between them and there is nothing to recover. Events appended outside a commit
are written by a transaction of their own.

Rows are numbered by a sequence, which transactions take in one order and may commit in
another; `follow` therefore looks back a window of numbers for rows committed late.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import orjson

from riddlectl.document import codec as documents
from riddlectl.errors import SpoolUnavailable, SpoolUnusable
from riddlectl.spool.events import Committed, EventLog, Record
from riddlectl.spool.memlogs import TAIL
from riddlectl.spool.postgres.db import Conn, Database

PAGE = 1000  # events read per query
LATE = 1000  # numbers `follow` looks back for rows committed after later ones
FOLLOW_CAP = 5.0  # seconds, at most, between tries while the server cannot be used


@dataclass
class _Held:
    events: list[bytes]
    taken: bool = False


class PgEventLog(EventLog):
    def __init__(self, db: Database) -> None:
        self.db = db
        self._held = threading.local()  # a stack of `_Held`, per thread

    def append_many(self, events: Sequence[Record]) -> None:
        rows = [_dump(event) for event in events]
        if not rows:
            return
        with contextlib.suppress(SpoolUnusable), self.db.transaction() as conn:
            self.insert(conn, rows)

    def insert(self, conn: Conn, rows: list[bytes]) -> None:
        conn.execute(
            "INSERT INTO events (at, body) SELECT %b, body FROM unnest(%b::text[]) "
            "WITH ORDINALITY AS e(body, n) ORDER BY n",
            (time.time(), [row.decode() for row in rows]),
        )

    @contextlib.contextmanager
    def committing(self, events: Sequence[Record], committed: Committed) -> Iterator[None]:
        held = _Held([_dump(event) for event in events])
        stack = self._stack()
        stack.append(held)
        try:
            yield
        except BaseException:
            stack.remove(held)
            if not held.taken:
                with contextlib.suppress(Exception):
                    self.append_many([event for event in events if committed(event)])
            raise
        stack.remove(held)
        if not held.taken:
            self.append_many(events)

    def pending(self) -> list[bytes]:
        """The events of the commit this thread is making, for its transaction to write."""
        stack = self._stack()
        return [] if not stack or stack[-1].taken else stack[-1].events

    def taken(self) -> None:
        """The transaction that wrote `pending` has committed."""
        stack = self._stack()
        if stack:
            stack[-1].taken = True

    def _stack(self) -> list[_Held]:
        stack: list[_Held] | None = getattr(self._held, "stack", None)
        if stack is None:
            stack = self._held.stack = []
        return stack

    def recover(self, committed: Committed) -> int:
        return 0  # events are written by their commit's transaction: none can be lost

    def read(self) -> Iterator[Record]:
        after = 0
        while True:
            page = self._page("seq > %s ORDER BY seq LIMIT %s", (after, PAGE))
            for seq, record in page:
                after = seq
                yield record
            if len(page) < PAGE:
                return

    def tail(self) -> list[Record]:
        return [record for _, record in self._page("true ORDER BY seq DESC LIMIT %s", (TAIL,))]

    def follow_marked(
        self, poll: float = 0.2, *, from_end: bool = False
    ) -> Iterator[Record | None]:
        seen: set[int] = set()  # numbers within LATE of the last one, already given
        last = 0
        if from_end:  # every row committed so far counts as given
            seen = set(self._numbers("seq > (SELECT coalesce(max(seq), 0) FROM events) - %s", LATE))
            last = max(seen, default=0)
        pause = poll
        while True:
            try:
                late = self._page(
                    "seq > %s AND seq <= %s AND seq <> ALL(%s) ORDER BY seq",
                    (last - LATE, last, sorted(seen)),
                )
                new = self._page("seq > %s ORDER BY seq LIMIT %s", (last, PAGE))
            except SpoolUnavailable:
                # A follower lives long (serve, events --follow): it waits out a server
                # that is restarting or refusing, and reads on from where it was.
                time.sleep(pause)
                pause = min(FOLLOW_CAP, pause * 2)
                continue
            pause = poll
            for seq, record in [*late, *new]:
                seen.add(seq)
                last = max(last, seq)
                yield record
            seen = {seq for seq in seen if seq > last - LATE}
            if len(new) < PAGE and not late:
                yield None
                time.sleep(poll)

    def _numbers(self, where: str, *params: object) -> list[int]:
        with self.db.session() as conn:
            rows = conn.execute(f"SELECT seq FROM events WHERE {where}", params).fetchall()
        return [int(seq) for (seq,) in rows]

    def _page(self, where: str, params: tuple[object, ...]) -> list[tuple[int, Record]]:
        with self.db.session() as conn:
            rows = conn.execute(
                f"SELECT seq, body FROM events WHERE {where}",
                params,
            ).fetchall()
        return [(int(seq), _load(body)) for seq, body in rows]

    def prune(self, before: float) -> int:
        with self.db.transaction() as conn:
            return conn.execute("DELETE FROM events WHERE at < %s", (before,)).rowcount


def _dump(event: Record) -> bytes:
    # Exact: a bulk submit holds one event per riddle until its transaction commits.
    return documents.exact(orjson.dumps(event, option=orjson.OPT_NON_STR_KEYS))


def _load(body: str) -> Record:
    value = orjson.loads(body)
    return value if isinstance(value, dict) else {"value": value}
