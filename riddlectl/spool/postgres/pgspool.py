"""The PostgreSQL spool: one row per riddle in `riddles`, its queue a column.

The primary key makes "one id, one queue" structural: there are no copies to resolve.
Every transition is one transaction: the document, its queue, `rev`, its events (see
`events`) and the wake-up (`NOTIFY`, delivered at commit) together. Claims are rows
marked with their holder and a token (see `claims`, `db`); a claim's holder dying gives
it back through the reaper, which every claiming process runs: at its first claim, then
every `REAP_EVERY` s in a thread of its own (`reaper`), off the claim path. New riddles
are stored by `storing`, input from outside is `inputs`', reading is `reading`'s.
"""

from __future__ import annotations

import contextlib
import threading
import time
import weakref
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import psycopg

from riddlectl.document.codec import Limits
from riddlectl.document.ids import ID_RE
from riddlectl.errors import ClaimLost, SpoolUnusable
from riddlectl.identity import Actor
from riddlectl.spool import agents as seats
from riddlectl.spool.contract import (
    WAIT_NOTICE,
    Claim,
    Corrupt,
    DataPlace,
    DropIn,
    Finding,
    Spool,
    Unreadable,
    busy,
    order_key,
    refuse_repeats,
    stamp,
    unknown,
)
from riddlectl.spool.events import Committed
from riddlectl.spool.postgres import agents as records
from riddlectl.spool.postgres import claims as sql
from riddlectl.spool.postgres import datastore as data
from riddlectl.spool.postgres import health, schema, storing
from riddlectl.spool.postgres.db import Conn, Database
from riddlectl.spool.postgres.events import PgEventLog
from riddlectl.spool.postgres.extractions import PgExtractionCache
from riddlectl.spool.postgres.inputs import Inputs
from riddlectl.spool.postgres.reading import Reading
from riddlectl.spool.postgres.reaper import REAP_EVERY, reap_now_and_then
from riddlectl.spool.postgres.url import SpoolUrl
from riddlectl.spool.states import Queue, route

if TYPE_CHECKING:
    from riddlectl.document.model import Riddle
    from riddlectl.spool.postgres.wakeups import PgWatch

CLAIM_ID_POLL = 0.05  # seconds between tries of `claim_id` while the riddle is held


class PgSpool(Reading, Spool):
    def __init__(
        self,
        url: SpoolUrl,
        *,
        actor: Actor | None = None,
        limits: Limits | None = None,
        data_dir: Path | None = None,
        max_data_bytes: int = 10 * 1024 * 1024,
    ):
        self.url = url
        self.data_dir = data_dir  # where `add` reads data files from; None: not kept
        self.max_data_bytes = max_data_bytes
        self.limits = limits or Limits()
        self.actor: Actor = actor or Actor("riddlectl")
        self.db = Database(url, self.actor)
        self._events = PgEventLog(self.db)
        self._extractions = PgExtractionCache(self.db)
        self.inputs = Inputs(
            self.db, lambda: self.limits, storing.insert, on_set_aside=self.log_set_aside
        )
        self._copies = data.LocalCopies()
        self._reaped = 0.0
        self._reaper: threading.Thread | None = None
        self._reaper_mutex = threading.Lock()
        self._stopping = threading.Event()  # ends the reaper's thread
        self.contended = 0  # SKIP LOCKED passes over rows being claimed: never waited on
        self._owed: list[dict[str, Any]] = []  # releases the server refused, to tell again
        self._owed_lock = threading.Lock()

    @property
    def name(self) -> str:
        return self.url.shown

    @property
    def events(self) -> PgEventLog:
        return self._events

    @property
    def extractions(self) -> PgExtractionCache:
        return self._extractions

    def init(self) -> None:
        with self.db.session() as conn:
            schema.migrate(conn, self.url.schema, self.url.shown)

    def check(self) -> None:
        with self.db.session() as conn:
            schema.check(conn, self.url.schema, self.url.shown)

    # -- writing ------------------------------------------------------------------------

    def add(self, riddles: Iterable[Riddle], queue: Queue | None = None) -> None:
        riddles = list(riddles)
        refuse_repeats(riddles)  # the stored: by the INSERT
        self._store([(queue or route(riddle), stamp(riddle)) for riddle in riddles])
        self._events.taken()

    def restore(self, riddles: Sequence[Riddle], queue: Queue) -> None:
        refuse_repeats(riddles)
        self._store([(queue, riddle) for riddle in riddles])

    def _store(self, placed: Sequence[tuple[Queue, Riddle]]) -> None:
        kept = (
            []
            if self.data_dir is None
            else data.gather([riddle for _, riddle in placed], self.data_dir, self.max_data_bytes)
        )
        storing.store(self.db, placed, kept, self._events.pending())

    def holders(self) -> list[dict[str, Any]]:
        with self.db.session() as conn:
            rows = conn.execute(sql.LIVE_HOLDERS, self._me()).fetchall()
        return [dict(record) for (record,) in rows]

    def register_agent(self, record: Mapping[str, Any]) -> seats.Seat:
        return records.register(self.db, record)

    def agents(self) -> list[dict[str, Any]]:
        return seats.listed(records.listing(self.db))

    def _finish(self, conn: Conn, arrived: Iterable[Queue]) -> None:
        """The end of a transition's transaction: its events, and its wake-ups."""
        pending = self._events.pending()
        if pending:
            self._events.insert(conn, pending)
        for queue in sorted(set(arrived)):
            conn.execute("SELECT pg_notify(%s, %s)", (self.url.channel, queue.value))

    def commit(self, claim: Claim, riddle: Riddle, to: Queue) -> Riddle:
        return self.commit_many([(claim, riddle, to)])[0]

    def commit_many(self, moves: Sequence[tuple[Claim, Riddle, Queue]]) -> list[Riddle]:
        return self._commit(moves, None)

    def commit_and_begin(
        self, moves: Sequence[tuple[Claim, Riddle, Queue]], following: Claim
    ) -> list[Riddle]:
        stored = self._commit(moves, following)
        following.begun = True
        return stored

    def _commit(
        self, moves: Sequence[tuple[Claim, Riddle, Queue]], following: Claim | None
    ) -> list[Riddle]:
        stamped = [(claim, stamp(riddle), to) for claim, riddle, to in moves]
        rows = [storing.row(to, riddle) for _, riddle, to in stamped]
        self.refuse_oversize(
            (claim, r, to, len(row[2])) for (claim, r, to), row in zip(stamped, rows, strict=True)
        )
        params: dict[str, Any] = {
            name: list(column)
            for name, column in zip(sql.COMMIT_COLUMNS, zip(*rows, strict=True), strict=True)
        }
        params["tokens"] = [claim.token for claim, _, _ in stamped]
        params["events"] = [row.decode() for row in self._events.pending()]
        params["at"] = time.time()
        params["channel"] = self.url.channel
        params["arrived"] = sorted({to.value for _, _, to in stamped})
        query = sql.COMMIT
        if following is not None:
            query = sql.COMMIT_AND_BEGIN
            params.update(following=following.riddle.id, following_token=following.token)
        try:
            self.db.single(query, params)
        except psycopg.Error as exc:
            if exc.sqlstate != sql.CLAIM_LOST:
                raise
            raise ClaimLost(
                "the claim was given back (its agent was taken for dead); the commit is refused",
                where=exc.diag.message_detail or "",
            ) from None
        self._events.taken()
        for claim, _, _ in stamped:
            claim.open = False
        return [riddle for _, riddle, _ in stamped]

    def release(self, claim: Claim) -> None:
        self.keep_found(claim)
        if not claim.open:
            return
        claim.open = False
        with self._owed_lock:
            self._owed.append({"id": claim.riddle.id, "token": claim.token})
        self.settle()

    def settle(self) -> None:
        """Give back the claims whose release the server refused (read-only, full, a
        statement timed out): kept here until it takes them, as nothing else would give
        them back while this process and its holder lock live. A release is one
        statement naming the claim's token, so telling it late, or twice, changes nothing
        that another holder did meanwhile."""
        with self._owed_lock:
            owed, self._owed = self._owed, []
        for index, release in enumerate(owed):
            try:
                self.db.single(sql.RELEASE, release)
            except (SpoolUnusable, psycopg.Error):
                with self._owed_lock:
                    self._owed[:0] = owed[index:]
                return

    def delete(self, claim: Claim) -> None:
        with self.db.transaction() as conn:
            gone = conn.execute(
                "DELETE FROM riddles WHERE id = %s AND token = %s", (claim.riddle.id, claim.token)
            ).rowcount
            if not gone and self.holds(claim.queue, claim.riddle.id or ""):
                raise ClaimLost("the claim was given back; not deleted", where=claim.riddle.id)
            data.forget(conn, claim.riddle.id or "")
            self._finish(conn, [])
        self._events.taken()
        claim.open = False

    def begin(self, claim: Claim) -> None:
        self._mark(claim, True)

    def handled(self, claim: Claim) -> None:
        self._mark(claim, False)

    def hand_over(self, done: Claim, following: Claim) -> None:
        params = {
            "done": done.riddle.id,
            "done_token": done.token,
            "following": following.riddle.id,
            "following_token": following.token,
        }
        self.db.single(sql.HAND_OVER, params)
        following.begun = True

    def _mark(self, claim: Claim, begun: bool) -> None:
        self.db.single(sql.MARK, {"begun": begun, "id": claim.riddle.id, "token": claim.token})

    # -- claiming -------------------------------------------------------------------------

    def claim(self, queue: Queue, limit: int = 1, now: float | None = None) -> list[Claim]:
        return self._claim(queue, limit, now, begin_first=False)

    def claim_and_begin(
        self, queue: Queue, limit: int = 1, now: float | None = None
    ) -> list[Claim]:
        return self._claim(queue, limit, now, begin_first=True)

    def _claim(
        self, queue: Queue, limit: int, now: float | None, *, begin_first: bool
    ) -> list[Claim]:
        now = time.time() if now is None else now
        if self._reaper is None:
            self._start_reaper()
        if self._owed:
            self.settle()
        self.inputs.read_if_due(queue)
        params = {"queue": queue.value, "now": now, "limit": limit, "begin_first": begin_first}
        rows = self.db.single(sql.CLAIM, params, hold=True)
        # One query over the whole queue: what it left was locked by other claimers, who
        # take it, or is not due yet, which a second query would leave too.
        self.drained = len(rows) < limit
        claims = [self._claim_of(row) for row in rows]
        claims.sort(key=lambda claim: order_key(claim.riddle))
        return claims

    def claim_id(self, riddle_id: str, wait: float = 5.0) -> Claim:
        if not ID_RE.fullmatch(riddle_id):
            raise unknown(riddle_id)
        started = time.monotonic()
        told = False
        while True:
            with self.db.transaction(hold=True, durable=False) as conn:
                row = conn.execute(
                    sql.CLAIM_ID, {"id": riddle_id, "holder": self.db.holder}
                ).fetchone()
                known = (
                    row is not None
                    or conn.execute("SELECT 1 FROM riddles WHERE id = %s", (riddle_id,)).fetchone()
                )
            if row is not None:
                return self._claim_of(row)
            if not known and not self._take_in(riddle_id):
                raise unknown(riddle_id)
            waited = time.monotonic() - started
            if waited >= wait:
                raise busy(riddle_id, wait)
            if waited >= WAIT_NOTICE and not told and self.on_wait is not None:
                told = True
                self.on_wait(riddle_id)
            self.reap(every=REAP_EVERY)
            due = wait if told or wait <= WAIT_NOTICE else WAIT_NOTICE
            time.sleep(max(0.0, min(CLAIM_ID_POLL, due - waited)))

    def _take_in(self, riddle_id: str) -> bool:
        """Read the drop-ins of the queue where an unread one is `riddle_id`, as a claim
        from that queue would, so that it can be claimed; False when none is."""
        dropped = self.inputs.dropped(riddle_id)
        if dropped is None:
            return False
        while self.inputs.read_drop_ins(dropped[0]) and self.inputs.dropped(riddle_id):
            pass  # more than one batch of drop-ins came before it
        return True

    def _claim_of(self, row: tuple[Any, ...]) -> Claim:
        riddle_id, queue_name, doc, abandoned, dead, token = row[:6]
        queue = Queue(queue_name)
        riddle = self._parse(queue, riddle_id, doc)
        if riddle.data:  # its local copy of them comes next (`data_files`)
            self._copies.note_files(riddle_id, row[8] or {})
        if queue_name in sql.READS_EXTRACTIONS:  # its cached extractions (`sql.EXTRACTIONS`)
            bodies = {key: body.encode() for key, body in (row[10] or {}).items()}
            named = [item.file_extracted for item in riddle.data]
            self._extractions.keep_fetched(bodies, told_of=named)
        found = (
            [self.log_abandoned(queue, riddle, dict(dead or {}), abandoned)] if abandoned else []
        )
        return Claim(riddle, queue, abandoned, token, begun=bool(row[9]), found=found)

    def reap(self, every: float = 0.0) -> list[tuple[str, Queue]]:
        """Give back the claims of holders that are gone (at most once per `every` s);
        the riddles given back, and a wake-up for their queues."""
        if time.monotonic() - self._reaped < every:
            return []
        self._reaped = time.monotonic()
        if self._owed:
            self.settle()
        with self.db.transaction(durable=False) as conn:
            freed = [(i, Queue(q)) for i, q in conn.execute(sql.REAP, self._me()).fetchall()]
            self._finish(conn, [queue for _, queue in freed])
        return freed

    def _start_reaper(self) -> None:
        """Reap now (what died before this process came claims first), then now and
        then in a thread, which ends with `disconnect` or when the spool is dropped."""
        with self._reaper_mutex:
            if self._reaper is not None:
                return
            self.reap()
            self._reaper = threading.Thread(
                target=reap_now_and_then,
                args=(weakref.ref(self), self._stopping),
                name="riddlectl-reaper",
                daemon=True,
            )
            self._reaper.start()

    def _me(self) -> dict[str, int]:
        return {"me": self.db.holder if self.db.holder is not None else 0}

    # -- input from outside ---------------------------------------------------------------

    def drop_in(self, queue: Queue, name: str, raw: bytes) -> None:
        self.inputs.drop_in(queue, name, raw)

    def drop_ins(self, queue: Queue, entries: Sequence[tuple[str, bytes]]) -> None:
        self.inputs.drop_ins(queue, entries)

    def set_aside(self, queue: Queue, name: str, reason: str) -> None:
        self.inputs.set_aside(queue, name, reason)

    def corrupt_files(self) -> list[Corrupt]:
        return self.inputs.corrupt_files()

    def corrupt_entry(self, name: str) -> Corrupt | None:
        return self.inputs.corrupt_entry(name)

    def corrupt_content(self, name: str) -> bytes | None:
        return self.inputs.corrupt_content(name)

    def drop_corrupt(self, name: str) -> None:
        self.inputs.drop_corrupt(name)

    def contents(self, queue: Queue) -> Iterator[Riddle | DropIn | Unreadable]:
        yield from self.iter_queue(queue)
        yield from self.inputs.contents(queue)

    def restore_drop_ins(self, queue: Queue, entries: Sequence[DropIn]) -> None:
        self.inputs.restore(queue, entries)

    def restore_set_aside(self, entries: Sequence[tuple[Corrupt, bytes]]) -> None:
        self.inputs.restore_set_aside(entries)

    # -- agents and repair ----------------------------------------------------------------

    def watch(self, queues: Iterable[Queue], wake: Any) -> PgWatch | None:
        from riddlectl.spool.postgres.wakeups import PgWatch

        # It listens once it can, polling meanwhile; a drop-in's wake-up has it read.
        return PgWatch(self.db, queues, wake, told=self.inputs.told)

    def recover(self, committed: Committed) -> int:
        self.reap()
        return self._events.recover(committed)

    def health(self) -> dict[str, Any]:
        with self.db.session() as conn:
            return health.figures(conn, self.url.schema)

    def examine(self, fix: bool = False) -> list[Finding]:
        with self.db.session() as conn:
            rows = conn.execute(sql.DEAD_CLAIMS, self._me()).fetchall()
        findings = [
            Finding(
                "dead-claim",
                riddle_id,
                f"claimed in {queue} by {_holder(record)}, which is gone",
            )
            for riddle_id, queue, record in rows
        ]
        if fix and findings:
            freed = {riddle_id for riddle_id, _ in self.reap()}
            for finding in findings:
                finding.fixed = finding.subject in freed
        return findings

    def health_findings(self, figures: dict[str, Any]) -> list[Finding]:
        return health.findings(figures, self.url.schema)

    def data_files(
        self, riddle: Riddle, data_dir: Path
    ) -> contextlib.AbstractContextManager[DataPlace]:
        if not riddle.data:
            return contextlib.nullcontext(DataPlace(data_dir))
        return self._copies.local_copy(self.db, riddle, data_dir)

    def close(self) -> None:
        pass  # the connection is kept: claims may still be open; it ends with the process

    def disconnect(self) -> None:
        """Close the connection (claims still held are given back by the reaper)."""
        self._stopping.set()
        if self._owed:
            self.settle()
        self._extractions.disconnect()
        self.db.close()


def _holder(record: dict[str, Any] | None) -> str:
    record = record or {}
    return f"{record.get('agent', '?')} on {record.get('host', '?')} (pid {record.get('pid', '?')})"
