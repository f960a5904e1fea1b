"""Input from outside in the PostgreSQL spool: drop-ins, and what was set aside.

A drop-in is a row of `dropins` (queue, name, bytes), as a file dropped into a queue
directory is: read when that queue is next claimed from, by the rules of `dropins`
(stored under its own id, or set aside into `corrupt` with the reason). `riddlectl
ingest` is what moves files from a directory into these rows.

Drop-ins are rare, so a claim does not look for them each time. A claim looks when it
was told of one: by a wake-up saying so (`drop_in` notifies `drop-in:<queue>`, see
`wakeups`), or by a drop-in through this very spool object. Wake-ups are hints, so a
claim also looks when it has not looked for `LOOK_EVERY` seconds, and the first claim
from a queue always looks: what was dropped in before an agent (or `run --once`) started
is read by its first claim.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import TYPE_CHECKING

from riddlectl.errors import InvalidDocument
from riddlectl.spool.contract import Corrupt, DropIn
from riddlectl.spool.dropins import (
    check_name,
    entry_of,
    ignored,
    names_of,
    peek_drop_in,
    read_drop_in,
    shown_name,
)
from riddlectl.spool.postgres.db import Conn, Database
from riddlectl.spool.states import Queue

if TYPE_CHECKING:
    from riddlectl.document.codec import Limits
    from riddlectl.document.model import Riddle

# Stores new riddles as they are, in the transaction given (`rows.insert`).
Insert = Callable[[Conn, Sequence[tuple[Queue, "Riddle"]]], None]
# Told of every entry set aside, with (queue, name, reason) (`Spool.log_set_aside`).
SetAside = Callable[[Queue, str, str], None]

READ_AT_ONCE = 64  # drop-ins read per claim
LOOK_EVERY = 1.0  # seconds between looks for drop-ins no wake-up told of
WAKE_UP = "drop-in:"  # the payload of a drop-in's wake-up, before the queue's name
# Names other programs write under are never read (see `dropins.ignored`).
NOT_IGNORED = "name NOT LIKE '.%%' AND name NOT LIKE '%%.tmp'"


class Inputs:
    """The drop-ins and the set-aside input of one spool: its database, the limits its
    documents are read to, how a riddle is stored and who is told of a set-aside."""

    def __init__(
        self,
        db: Database,
        limits: Callable[[], Limits],
        insert: Insert,
        on_set_aside: SetAside,
    ) -> None:
        self.db = db
        self.limits = limits
        self.insert = insert
        self.on_set_aside = on_set_aside
        self._mutex = threading.Lock()
        self._told: set[Queue] = set()  # queues a drop-in arrived in, not looked at since
        self._looked: dict[Queue, float] = {}  # when each queue was last looked at

    def told(self, queue: Queue) -> None:
        """A drop-in arrived in `queue` (a wake-up said so): the next claim looks."""
        with self._mutex:
            self._told.add(queue)

    def read_if_due(self, queue: Queue) -> None:
        """Read the drop-ins of `queue` if told of one, or not looked at for a while."""
        now = time.monotonic()
        with self._mutex:
            last = self._looked.get(queue)
            if queue not in self._told and last is not None and now - last < LOOK_EVERY:
                return
            self._told.discard(queue)  # before the look: one told of meanwhile is looked for
            self._looked[queue] = now
        if self.read_drop_ins(queue) >= READ_AT_ONCE:
            self.told(queue)  # there may be more: the next claim reads on

    def drop_in(self, queue: Queue, name: str, raw: bytes) -> None:
        self.drop_ins(queue, [(name, raw)])

    def drop_ins(self, queue: Queue, entries: Sequence[tuple[str, bytes]]) -> None:
        """One transaction, one statement and one wake-up for all of `entries`."""
        stamp = round(time.time() * 1000)
        self.restore(queue, [DropIn(name, raw, stamp) for name, raw in entries])

    def restore(self, queue: Queue, entries: Sequence[DropIn]) -> None:
        """`drop_ins`, each arriving at its own stamp (ms): a name a database cannot hold
        (bytes of a file name that are no UTF-8) is kept as `dropins.shown_name` says."""
        for entry in entries:
            check_name(entry.name)
        if not entries:
            return
        # A name given twice is its last content, as on a disk.
        latest = {
            shown_name(e.name): DropIn(shown_name(e.name), bytes(e.raw), e.stamp) for e in entries
        }
        kept = list(latest.values())
        names, raws = [e.name for e in kept], [e.raw for e in kept]
        ats = [e.stamp / 1000 for e in kept]
        rids = [_rid(queue, entry, self.limits()) for entry in kept]
        with self.db.transaction() as conn:
            conn.execute(
                "INSERT INTO dropins (queue, name, raw, at, rid) "
                "SELECT %s, n, r, a, i FROM unnest(%s::text[], %b::bytea[], "
                "%s::double precision[], %s::text[]) AS d(n, r, a, i) ON CONFLICT (queue, name) "
                "DO UPDATE SET raw = excluded.raw, at = excluded.at, rid = excluded.rid",
                (queue.value, names, raws, ats, rids),
            )
            conn.execute("SELECT pg_notify(%s, %s)", (self.db.url.channel, WAKE_UP + queue.value))
        self.told(queue)

    def contents(self, queue: Queue) -> Iterator[DropIn]:
        """The drop-ins of `queue` no claim has read, as they were dropped in."""
        after = ""
        while True:
            with self.db.session() as conn:
                rows = conn.execute(
                    f"SELECT name, raw, at FROM dropins WHERE queue = %s AND {NOT_IGNORED} "
                    'AND name COLLATE "C" > %s ORDER BY name COLLATE "C" LIMIT 100',
                    (queue.value, after),
                ).fetchall()
            for name, raw, at in rows:
                after = name
                yield DropIn(name, bytes(raw), _stamp(at))
            if len(rows) < 100:
                return

    def read_drop_ins(self, queue: Queue) -> int:
        """Store what was dropped into `queue` under its id, or set it aside; how many
        drop-ins were read."""
        with self.db.session() as conn:
            any_row = conn.execute(
                f"SELECT 1 FROM dropins WHERE queue = %s AND {NOT_IGNORED} LIMIT 1",
                (queue.value,),
            ).fetchone()
        if any_row is None:
            return 0  # the usual case: one indexed look, no transaction
        told: list[tuple[str, str]] = []
        with self.db.transaction() as conn:
            rows = conn.execute(
                f"SELECT name, raw, at FROM dropins WHERE queue = %s AND {NOT_IGNORED} "
                "ORDER BY at, name LIMIT %s FOR UPDATE SKIP LOCKED",
                (queue.value, READ_AT_ONCE),
            ).fetchall()
            for name, raw, at in rows:
                reason = self._adopt(conn, queue, DropIn(name, bytes(raw), _stamp(at)))
                if reason is not None:
                    self._keep(conn, name, bytes(raw), reason)
                    told.append((name, reason))
                conn.execute(
                    "DELETE FROM dropins WHERE queue = %s AND name = %s", (queue.value, name)
                )
        for name, reason in told:
            self.on_set_aside(queue, name, reason)
        return len(rows)

    def _adopt(self, conn: Conn, queue: Queue, entry: DropIn) -> str | None:
        """Store the drop-in as a riddle; the reason it is none, else None."""
        name, raw = entry.name, entry.raw
        try:
            riddle = read_drop_in(raw, len(raw), queue, name, self.limits(), entry.stamp)
        except InvalidDocument as exc:
            return str(exc)
        except Exception as exc:  # whatever it is, it is no riddle
            return f"{queue.value}/{name}: unreadable: {type(exc).__name__}: {exc}"
        riddle_id = riddle.id or ""
        if conn.execute("SELECT 1 FROM riddles WHERE id = %s", (riddle_id,)).fetchone():
            return f"{queue.value}/{name}: id {riddle_id!r} is already in the spool"
        self.insert(conn, [(queue, riddle)])
        return None

    def _keep(self, conn: Conn, name: str, raw: bytes, reason: str) -> str:
        """Keep `raw` as set aside under `name` (made unique); the name it was kept as."""
        if conn.execute("SELECT 1 FROM corrupt WHERE name = %s", (name,)).fetchone():
            name = f"{name}.{time.time_ns()}"
        conn.execute(
            "INSERT INTO corrupt (name, raw, reason, at) VALUES (%s, %s, %s, %s)",
            (name, raw, reason, time.time()),
        )
        return name

    def set_aside(self, queue: Queue, name: str, reason: str) -> None:
        with self.db.transaction() as conn:
            row = conn.execute(
                "DELETE FROM dropins WHERE queue = %s AND name = %s RETURNING raw",
                (queue.value, name),
            ).fetchone()
            if row is None:
                row = conn.execute(
                    "DELETE FROM riddles WHERE queue = %s AND id = %s RETURNING doc",
                    (queue.value, name.removesuffix(".json")),
                ).fetchone()
            if row is None:
                raise FileNotFoundError(f"{queue.value}/{name}: not in the spool")
            self._keep(conn, name, bytes(row[0]), reason)
        self.on_set_aside(queue, name, reason)

    def restore_set_aside(self, entries: Sequence[tuple[Corrupt, bytes]]) -> None:
        with self.db.transaction() as conn:
            for kept, raw in entries:
                conn.execute(
                    "INSERT INTO corrupt (name, raw, reason, at) VALUES (%s, %s, %s, %s)",
                    (shown_name(kept.name), raw, kept.reason, time.time()),
                )

    def corrupt_files(self) -> list[Corrupt]:
        with self.db.session() as conn:
            rows = conn.execute(
                'SELECT name, reason, octet_length(raw) FROM corrupt ORDER BY name COLLATE "C"'
            )
            return [Corrupt(name, reason, size) for name, reason, size in rows.fetchall()]

    def corrupt_entry(self, name: str) -> Corrupt | None:
        with self.db.session() as conn:
            row = conn.execute(
                "SELECT name, reason, octet_length(raw) FROM corrupt WHERE name = %s", (name,)
            ).fetchone()
        return None if row is None else Corrupt(*row)

    def corrupt_content(self, name: str) -> bytes | None:
        with self.db.session() as conn:
            row = conn.execute("SELECT raw FROM corrupt WHERE name = %s", (name,)).fetchone()
        return None if row is None else bytes(row[0])

    def drop_corrupt(self, name: str) -> None:
        with self.db.transaction() as conn:
            row = conn.execute(
                "DELETE FROM corrupt WHERE name = %s RETURNING name", (name,)
            ).fetchone()
        if row is None:
            raise FileNotFoundError(f"corrupt/{name}: no such file set aside")

    def dropped_ids(self, queue: Queue) -> list[str]:
        """The unread drop-ins of `queue`, as a directory listing shows them."""
        with self.db.session() as conn:
            rows = conn.execute(
                f"SELECT name FROM dropins WHERE queue = %s AND {NOT_IGNORED}", (queue.value,)
            ).fetchall()
        return [entry_of(name) for (name,) in rows if not ignored(name)]

    def dropped_counts(self) -> dict[Queue, int]:
        with self.db.session() as conn:
            rows = conn.execute(
                f"SELECT queue, count(*) FROM dropins WHERE {NOT_IGNORED} GROUP BY queue"
            ).fetchall()
        return {Queue(queue): int(n) for queue, n in rows}

    # -- drop-ins as riddles before a claim reads them (see `dropins.peek_drop_in`) ------

    def dropped(self, riddle_id: str) -> tuple[Queue, Riddle] | None:
        """The unread drop-in that is the riddle `riddle_id`, and its queue; None when
        there is none. Each is read (its own id wins over its name), the one named
        `ID.json` first: this is for an id no riddle row has, and drop-ins are few and
        soon read by a claim."""
        with self.db.session() as conn:
            # Only those that may be it are read: those known to be it (`rid`), and of
            # those dropped in before that was known, those named after it or holding it
            # in quotes.
            rows = conn.execute(
                f"SELECT queue, name, raw, at FROM dropins WHERE {NOT_IGNORED} AND (rid = %(id)s "
                "OR rid IS NULL AND (name = %(id)s OR starts_with(name, %(id)s || '.') "
                "OR position(convert_to(%(quoted)s, 'UTF8') in raw) > 0)) "
                "ORDER BY name = %(file)s DESC, at, name",
                {"id": riddle_id, "quoted": f'"{riddle_id}"', "file": f"{riddle_id}.json"},
            ).fetchall()
        for queue_name, name, raw, at in rows:
            queue = Queue(queue_name)
            riddle = _rid_riddle(queue, DropIn(name, bytes(raw), _stamp(at)), self.limits())
            if riddle is not None and riddle.id == riddle_id:
                return queue, riddle
        return None

    def dropped_as(self, queue: Queue, entry: str) -> Riddle | None:
        """The riddle the drop-in listed as `entry` by `dropped_ids` is (under its own id,
        which may differ from `entry`); None when it is gone or is no riddle yet."""
        names = names_of(entry)
        with self.db.session() as conn:
            row = conn.execute(
                "SELECT name, raw, at FROM dropins WHERE queue = %s AND name = ANY(%s) "
                "ORDER BY name = %s DESC LIMIT 1",
                (queue.value, list(names), names[0]),
            ).fetchone()
        if row is None:
            return None
        name, raw, at = row
        return _rid_riddle(queue, DropIn(name, bytes(raw), _stamp(at)), self.limits())

    def dropped_recent(self, limit: int, queues: Iterable[Queue]) -> list[tuple[float, Queue, str]]:
        """The `limit` newest drop-ins of `queues`: (when dropped, queue, entry as
        `dropped_ids` lists it)."""
        with self.db.session() as conn:
            rows = conn.execute(
                f"SELECT at, queue, name FROM dropins WHERE queue = ANY(%s) AND {NOT_IGNORED} "
                "ORDER BY at DESC, name LIMIT %s",
                ([queue.value for queue in queues], limit),
            ).fetchall()
        return [(float(at), Queue(queue), entry_of(name)) for at, queue, name in rows]


def _stamp(at: float) -> int:
    """The stamp (ms) of a drop-in that arrived `at` (s): the one that `restore` stored
    as `stamp / 1000` comes back whole."""
    return round(at * 1000)


def _rid_riddle(queue: Queue, entry: DropIn, limits: Limits) -> Riddle | None:
    """The riddle the drop-in is as readers see it (`peek_drop_in`)."""
    return peek_drop_in(entry.raw, len(entry.raw), queue, entry.name, limits, entry.stamp)


def _rid(queue: Queue, entry: DropIn, limits: Limits) -> str | None:
    """The id the drop-in is as readers see it; None when it is none yet (it is then
    found by its content, as before)."""
    riddle = _rid_riddle(queue, entry, limits)
    return riddle.id if riddle is not None else None
