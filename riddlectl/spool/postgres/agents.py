"""The agents' records on the PostgreSQL spool: rows of `agents`, each tied to a session
advisory lock on its `key` that its agent holds for its life (see
`riddlectl.spool.agents`).

The seat has a connection of its own, so that the lock lives exactly as long as the
agent, not as long as a connection the spool object makes again after a failure: when
the process dies, or its host is cut off (as soon as TCP keepalives or the user timeout
notice), the server ends the session and the lock is free. A reader tries the lock for
the length of its statement (`pg_try_advisory_xact_lock`): taken, the agent is gone.
Should the seat's own connection fail, it connects again and takes the same key back.
"""

from __future__ import annotations

import contextlib
import secrets
import threading
import time
from collections.abc import Mapping
from typing import Any

import psycopg
from psycopg.types.json import Jsonb

from riddlectl.spool import agents as seats
from riddlectl.spool.postgres.db import Conn, Database

LIST = """
SELECT record, NOT pg_try_advisory_xact_lock(key) AS alive FROM agents
WHERE seen > %(since)s OR NOT pg_try_advisory_xact_lock(key)
"""
PRUNE = "DELETE FROM agents WHERE seen <= %(since)s AND pg_try_advisory_xact_lock(key)"
UPSERT = """
INSERT INTO agents (key, record, seen) VALUES (%(key)s, %(record)s, %(seen)s)
ON CONFLICT (key) DO UPDATE SET record = excluded.record, seen = excluded.seen
"""


class PgSeatStore:
    """The connection, the lock and the row of one agent's seat."""

    def __init__(self, db: Database) -> None:
        self.db = db
        self.key: int | None = None
        self._conn: Conn | None = None
        self._mutex = threading.Lock()

    def _connection(self) -> Conn:
        conn = self._conn
        if conn is not None and not conn.closed and not conn.broken:
            return conn
        conn = self.db.connect()
        try:
            while True:
                key = self.key if self.key is not None else secrets.randbits(63)
                row = conn.execute("SELECT pg_try_advisory_lock(%s)", (key,)).fetchone()
                if row and row[0]:
                    break
                if self.key is not None:  # our old session is not ended yet
                    time.sleep(0.1)
        except BaseException:
            conn.close()
            raise
        self.key, self._conn = key, conn
        return conn

    def write(self, record: dict[str, Any]) -> None:
        with self._mutex:
            try:
                conn = self._connection()
                conn.execute(
                    UPSERT, {"key": self.key, "record": Jsonb(record), "seen": record["seen"]}
                )
            except psycopg.Error as exc:
                self.leave_now()
                raise self.db.unreachable(exc) from None

    def leave_now(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            with contextlib.suppress(Exception):
                conn.close()

    def leave(self) -> None:
        """Let go of the lock first: the server ends a closed session a moment later."""
        with self._mutex:
            if self._conn is not None and not self._conn.broken:
                with contextlib.suppress(psycopg.Error):
                    self._conn.execute("SELECT pg_advisory_unlock(%s)", (self.key,))
            self.leave_now()


def register(db: Database, record: Mapping[str, Any]) -> seats.Seat:
    """A row for this agent, alive while its seat's connection holds the key's lock;
    the rows of agents gone for longer than `GONE_KEPT` are removed first."""
    store = PgSeatStore(db)
    made = seats.new_record(record, db.actor)
    store.write(made)  # the first write says at once whether the spool can be used
    with contextlib.suppress(Exception), db.session() as conn:
        conn.execute(PRUNE, {"since": time.time() - seats.GONE_KEPT})
    return seats.Seat(made, store.write, store.leave)


def listing(db: Database) -> list[dict[str, Any]]:
    with db.session() as conn:
        rows = conn.execute(LIST, {"since": time.time() - seats.GONE_KEPT}).fetchall()
    return [seats.shown(dict(record), bool(alive)) for record, alive in rows]
