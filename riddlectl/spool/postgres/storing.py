"""Storing new riddles in a PostgreSQL spool: their rows, data files, events and
wake-ups in one statement (`add`, `restore`), or rows alone inside a transaction
(a drop-in read by a claim)."""

from __future__ import annotations

import re
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import psycopg

from riddlectl.document import codec as documents
from riddlectl.spool.contract import already_stored, retry_at
from riddlectl.spool.postgres import datastore as data
from riddlectl.spool.postgres.db import Conn, Database
from riddlectl.spool.states import Queue

if TYPE_CHECKING:
    from riddlectl.document.model import Riddle

# New riddles (`add`, `restore`): their rows, their data files' contents not stored yet
# and which riddle names which, their events and their queues' wake-ups, in one statement.
# Its parameters are sent in binary (`%b`): an array in text is escaped element by element
# in the client, the better part of a bulk submit's CPU.
ADD_COLUMNS = ("ids", "queues", "docs", "revs", "priorities", "createds", "retry_ats", "updateds")
ADD = """
WITH added AS (
    INSERT INTO riddles (id, queue, doc, rev, priority, created, retry_at, updated)
    SELECT * FROM unnest(%(ids)b::text[], %(queues)b::text[], %(docs)b::bytea[],
        %(revs)b::int[], %(priorities)b::bigint[], %(createds)b::float8[],
        %(retry_ats)b::float8[], %(updateds)b::float8[])
), contents AS (
    INSERT INTO blobs (sha256, content)
    SELECT * FROM unnest(%(blob_shas)b::text[], %(blob_contents)b::bytea[])
    ON CONFLICT (sha256) DO NOTHING
), named AS (
    INSERT INTO riddle_data (riddle_id, path, sha256)
    SELECT * FROM unnest(%(data_ids)b::text[], %(data_paths)b::text[], %(data_shas)b::text[])
    ON CONFLICT (riddle_id, path) DO UPDATE SET sha256 = excluded.sha256
), logged AS (
    INSERT INTO events (at, body)
    SELECT %(at)b, e.body FROM unnest(%(events)b::text[]) WITH ORDINALITY AS e(body, n)
    ORDER BY e.n
)
SELECT pg_notify(%(channel)b, q.queue)
FROM unnest(%(arrived)b::text[]) WITH ORDINALITY AS q(queue, n)
ORDER BY q.n
"""


def store(
    db: Database,
    placed: Sequence[tuple[Queue, Riddle]],
    kept: list[data.Kept],
    events: Sequence[bytes],
) -> None:
    """New riddles as they are, with their data files (`kept`), the events pending and
    their queues' wake-ups: one transaction, one statement besides the look for
    contents stored already (`data.unstored`). An id taken raises `DuplicateId`."""
    rows = [row(to, riddle) for to, riddle in placed]
    params: dict[str, Any] = dict(
        zip(ADD_COLUMNS, [list(c) for c in zip(*rows, strict=True)] or [[]] * 8, strict=True)
    )
    params.update(
        events=[event.decode() for event in events],
        at=time.time(),
        channel=db.url.channel,
        arrived=sorted({to.value for to, _ in placed}),
    )
    params.update(zip(("data_ids", "data_paths", "data_shas"), data.named(kept), strict=True))
    with db.transaction() as conn:
        new = data.unstored(conn, kept)
        params.update(blob_shas=list(new), blob_contents=list(new.values()))
        try:
            conn.execute(ADD, params)
        except psycopg.errors.UniqueViolation as exc:
            found = re.search(r"\(id\)=\((.*)\)", exc.diag.message_detail or "")
            where = found.group(1) if found else "id"
            raise already_stored(where) from None


def insert(conn: Conn, placed: Sequence[tuple[Queue, Riddle]]) -> None:
    """Store documents as they are (no stamp), in one statement."""
    rows = [row(to, riddle) for to, riddle in placed]
    conn.execute(
        "INSERT INTO riddles (id, queue, doc, rev, priority, created, retry_at, updated) "
        "SELECT * FROM unnest(%b::text[], %b::text[], %b::bytea[], %b::int[], %b::bigint[], "
        "%b::float8[], %b::float8[], %b::float8[])",
        [list(column) for column in zip(*rows, strict=True)] if rows else [[]] * 8,
    )


def row(queue: Queue, riddle: Riddle) -> tuple[Any, ...]:
    """The columns of a stored document, less the document itself (the caller has it)."""
    return (
        riddle.id or "",
        queue.value,
        documents.exact(documents.dumps(riddle)),
        riddle.rev,
        riddle.priority,
        riddle.created or 0.0,
        retry_at(riddle),
        riddle.updated or 0.0,
    )
