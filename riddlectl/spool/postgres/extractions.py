"""The PostgreSQL spool's extraction cache: the `extractions` table, by key.

References are the same `cache/extractions/<key>.json` strings as on the filesystem
spool, so documents move between spools unchanged. Making one extraction is serialised
across hosts by an advisory lock of its key, taken on a connection of its own (the
extractor may run for a while; the spool's shared connection goes on meanwhile), and
within this process by a lock per key. Those connections are kept for the next making
(`MAKERS_KEPT`), since opening one costs more than most extractions: one that fails is
closed, which also ends its lock.

A stage asks first whether a riddle's extractions were dropped, then loads them: the
body fetched by the first question is kept for the load that follows (`_fetched`), so
each extraction costs one query. Keys name content, so a kept body is never wrong; it
is used once, and `dropped` always asks the database, which is the truth.
"""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from typing import Any

import orjson
import psycopg

from riddlectl.spool.extractions import OWN_PATH, ExtractionCache, object_of
from riddlectl.spool.postgres.db import Database, refusal, still_open

MAKING_WAIT = "120s"  # how long to wait for another agent making the same extraction
FETCHED_KEPT = 64  # bodies kept for the load that follows `dropped`
MAKERS_KEPT = 1  # idle connections kept for making extractions (see docs: connections per agent)


class PgExtractionCache(ExtractionCache):
    def __init__(self, db: Database) -> None:
        super().__init__()
        self.db = db
        self._mutex = threading.Lock()
        self._making: dict[str, threading.Lock] = {}
        self._fetched: OrderedDict[str, bytes] = OrderedDict()  # by `dropped`, for `load`
        self._makers: list[psycopg.Connection[tuple[Any, ...]]] = []  # idle, for `_make`

    def get_or_make(self, key: str, make: Callable[[], dict[str, Any]]) -> str:
        reference = self.reference(key)
        if self._has(key):
            return reference
        with self._mutex:
            making = self._making.setdefault(key, threading.Lock())
        with making:
            if not self._has(key):
                self._make(key, make)
        return reference

    def _make(self, key: str, make: Callable[[], dict[str, Any]]) -> None:
        conn = self._lock(key)
        try:
            found = conn.execute("SELECT 1 FROM extractions WHERE key = %s", (key,)).fetchone()
            if found is None:
                made = make()
                extractor = str(made.get("extractor", ""))
                conn.execute(
                    "INSERT INTO extractions (key, extractor, body) VALUES (%s, %s, %s) "
                    "ON CONFLICT (key) DO UPDATE SET extractor = excluded.extractor, "
                    "body = excluded.body",
                    (key, extractor, orjson.dumps(made)),
                )
            conn.execute("SELECT pg_advisory_unlock(%s)", (_lock_key(self.db.url.schema, key),))
        except psycopg.Error as exc:
            conn.close()  # which ends the lock, whatever state the session is in
            if refusal(exc):  # no right to store it, a full disk, …: said as for any
                raise self.db.unreachable(exc) from None
            raise
        except BaseException:
            conn.close()
            raise
        self._give_back(conn)

    def _lock(self, key: str) -> psycopg.Connection[tuple[Any, ...]]:
        """A maker connection holding `key`'s advisory lock: the one kept, unless the
        server ended it meanwhile (a restart), else a new one."""
        with self._mutex:
            conn = self._makers.pop() if self._makers else None
        if conn is not None and not still_open(conn):
            conn.close()
            conn = None
        fresh = conn is None
        conn = conn or self.db.connect()
        try:
            if fresh:
                conn.execute(f"SET lock_timeout = '{MAKING_WAIT}'")
            conn.execute("SELECT pg_advisory_lock(%s)", (_lock_key(self.db.url.schema, key),))
        except psycopg.errors.LockNotAvailable:
            conn.close()
            raise TimeoutError(f"extraction {key}: another agent is still making it") from None
        except psycopg.OperationalError as exc:
            conn.close()
            raise self.db.unreachable(exc) from None
        return conn

    def _give_back(self, conn: psycopg.Connection[tuple[Any, ...]]) -> None:
        with self._mutex:
            if len(self._makers) < MAKERS_KEPT:
                self._makers.append(conn)
                return
        conn.close()

    def disconnect(self) -> None:
        """Close the connections kept for making extractions."""
        with self._mutex:
            makers, self._makers = self._makers, []
        for conn in makers:
            conn.close()

    def _has(self, key: str) -> bool:
        with self.db.session() as conn:
            found = conn.execute("SELECT 1 FROM extractions WHERE key = %s", (key,)).fetchone()
        return found is not None

    def _body(self, key: str) -> bytes | None:
        with self.db.session() as conn:
            row = conn.execute("SELECT body FROM extractions WHERE key = %s", (key,)).fetchone()
        return None if row is None else bytes(row[0])

    def load(self, reference: str | None) -> dict[str, Any] | None:
        key = _key_of(reference)
        raw = None if key is None else (self._kept(key) or self._body(key))
        if raw is None:
            return None
        return object_of(raw)

    def dropped(self, reference: str | None) -> bool:
        return self.dropped_of([reference])[0]

    def dropped_of(self, references: Sequence[str | None]) -> list[bool]:
        keys = [_key_of(reference) for reference in references]
        asked = sorted({key for key in keys if key is not None})
        bodies: dict[str, bytes] = {}
        if asked:
            with self.db.session() as conn:
                rows = conn.execute(
                    "SELECT key, body FROM extractions WHERE key = ANY(%b::text[])", (asked,)
                ).fetchall()
            bodies = {key: bytes(body) for key, body in rows}
        with self._mutex:
            for key, raw in bodies.items():
                self._fetched[key] = raw
                self._fetched.move_to_end(key)
            while len(self._fetched) > FETCHED_KEPT:
                self._fetched.popitem(last=False)
        return [key is not None and key not in bodies for key in keys]

    def _kept(self, key: str) -> bytes | None:
        """The body `dropped` just fetched for `key`, once."""
        with self._mutex:
            return self._fetched.pop(key, None)

    def clear(self, extractor: str | None = None) -> int:
        with self._mutex:
            self._fetched.clear()
        with self.db.transaction() as conn:
            if extractor is None:
                return conn.execute("DELETE FROM extractions").rowcount
            return conn.execute(
                "DELETE FROM extractions WHERE extractor = %s", (extractor,)
            ).rowcount


def _key_of(reference: str | None) -> str | None:
    if not reference or not OWN_PATH.fullmatch(reference):
        return None
    return reference.removeprefix("cache/extractions/").removesuffix(".json")


def _lock_key(schema: str, key: str) -> int:
    """The advisory lock of making extraction `key` in `schema`: advisory locks are the
    server's, not a schema's, so two spools on one server (say, a test's and a bench's)
    making the same file's extraction do not wait for each other."""
    named = f"extraction {schema} {key}".encode()
    return int.from_bytes(hashlib.sha256(named).digest()[:8], signed=True)
