"""Reading a PostgreSQL spool: documents by id and by queue, counts, the recent ones.

A mixin of `PgSpool`: each is one indexed query on the shared connection.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING

from riddlectl.document import codec as documents
from riddlectl.spool.contract import Claim, unknown
from riddlectl.spool.states import Queue

if TYPE_CHECKING:
    from riddlectl.document.codec import Limits
    from riddlectl.document.model import Riddle
    from riddlectl.spool.postgres.db import Database
    from riddlectl.spool.postgres.inputs import Inputs
    from riddlectl.spool.postgres.url import SpoolUrl


class Reading:
    db: Database
    url: SpoolUrl
    limits: Limits
    inputs: Inputs

    def _parse(self, queue: Queue, riddle_id: str, doc: bytes) -> Riddle:
        raw = bytes(doc)
        where = f"{self.url.shown}#{queue.value}/{riddle_id}.json"
        return documents.parse(raw, where, None, self.limits.readable, len(raw))

    def reread(self, claim: Claim) -> Riddle:
        found = self.find(claim.riddle.id or "")
        if found is None:
            raise unknown(claim.riddle.id or "")
        return found[1]

    def find(self, riddle_id: str) -> tuple[Queue, Riddle] | None:
        with self.db.session() as conn:
            row = conn.execute(
                "SELECT queue, doc FROM riddles WHERE id = %s", (riddle_id,)
            ).fetchone()
        if row is None:  # a drop-in no claim has read yet is a riddle all the same
            return self.inputs.dropped(riddle_id)
        queue = Queue(row[0])
        return queue, self._parse(queue, riddle_id, row[1])

    def ids(self, queue: Queue) -> list[str]:
        with self.db.session() as conn:
            rows = conn.execute("SELECT id FROM riddles WHERE queue = %s", (queue.value,))
            stored = [row[0] for row in rows.fetchall()]
        return [*stored, *self.inputs.dropped_ids(queue)]

    def holds(self, queue: Queue, riddle_id: str) -> bool:
        with self.db.session() as conn:
            row = conn.execute(
                "SELECT 1 FROM riddles WHERE id = %s AND queue = %s", (riddle_id, queue.value)
            ).fetchone()
        return row is not None

    def read(self, queue: Queue, riddle_id: str) -> Riddle | None:
        found = self.find(riddle_id)
        if found is not None:
            return found[1] if found[0] is queue else None
        # An entry of `ids` that is a drop-in's name, whatever id its document gives.
        return self.inputs.dropped_as(queue, riddle_id)

    def iter_queue(self, queue: Queue) -> Iterator[Riddle]:
        after = ""
        while True:
            with self.db.session() as conn:
                rows = conn.execute(
                    "SELECT id, doc FROM riddles WHERE queue = %s AND id > %s "
                    "ORDER BY id LIMIT 500",
                    (queue.value, after),
                ).fetchall()
            for riddle_id, doc in rows:
                after = riddle_id
                yield self._parse(queue, riddle_id, doc)
            if len(rows) < 500:
                return

    def counts(self) -> dict[Queue, int]:
        with self.db.session() as conn:
            rows = conn.execute("SELECT queue, count(*) FROM riddles GROUP BY queue").fetchall()
        found = {Queue(queue): int(n) for queue, n in rows}
        dropped = self.inputs.dropped_counts()
        return {queue: found.get(queue, 0) + dropped.get(queue, 0) for queue in Queue}

    def recent(self, limit: int, queues: Iterable[Queue] = tuple(Queue)) -> list[tuple[Queue, str]]:
        queues = list(queues)
        with self.db.session() as conn:
            rows = conn.execute(
                "SELECT updated, queue, id FROM riddles WHERE queue = ANY(%s) "
                "ORDER BY updated DESC, id LIMIT %s",
                ([queue.value for queue in queues], limit),
            ).fetchall()
        found = [(float(updated), Queue(queue), riddle_id) for updated, queue, riddle_id in rows]
        # Unread drop-ins too, by when they were dropped in: they are riddles already.
        found += self.inputs.dropped_recent(limit, queues)
        found.sort(key=lambda one: one[0], reverse=True)
        return [(queue, riddle_id) for _, queue, riddle_id in found[:limit]]
