"""The PostgreSQL spool's extraction cache: the `extractions` table, by key.

References are the same `cache/extractions/<key>.json` strings as on the filesystem
spool, so documents move between spools unchanged. Making one extraction is serialised
across hosts by an advisory lock of its key, taken on a connection of its own (the
extractor may run for a while; the spool's shared connection goes on meanwhile), and
within this process by a lock per key. Those connections are kept for the next making
(`MAKERS_KEPT`), since opening one costs more than most extractions: one that fails is
closed, which also ends its lock.

A stage asks first whether a riddle's extractions were dropped, then loads them. The
claim of a riddle in the inbox of solve or validate brings the bodies of its cached
extractions with it (`claims.EXTRACTIONS`), and a body kept from before for a key it
brings none of is forgotten; `dropped` fetches those it was not told of. Either way the
bodies are kept (`_fetched`), so that a riddle's extractions cost no query of their own
in the usual case, one at most otherwise. Extract looks for all of a riddle's keys in one
query (`get_or_make_many`), and makes those it lacks one by one, each under its lock.
Keys name content, so a kept body is never wrong to load; as the answer to `dropped` it
is taken only for a short while (`FETCHED_TRUSTED`): after that, the database, which is
the truth, is asked again.
"""

from __future__ import annotations

import hashlib
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import orjson
import psycopg

from riddlectl.spool.extractions import OWN_PATH, ExtractionCache, object_of
from riddlectl.spool.postgres.db import Database, refusal, still_open

MAKING_WAIT = "120s"  # how long to wait for another agent making the same extraction
FETCHED_KEPT = 64  # bodies kept for the load that follows a claim or `dropped`
# Seconds a kept body answers `dropped` for its key: about a claimed batch's handling. A
# `cache clear` since is seen by the next claim of a riddle naming the key.
FETCHED_TRUSTED = 10.0
MAKERS_KEPT = 1  # idle connections kept for making extractions (see docs: connections per agent)


class PgExtractionCache(ExtractionCache):
    def __init__(self, db: Database) -> None:
        super().__init__()
        self.db = db
        self._mutex = threading.Lock()
        self._making: dict[str, threading.Lock] = {}
        # key -> (body, when fetched): by a claim or `dropped`, for `load`
        self._fetched: OrderedDict[str, tuple[bytes, float]] = OrderedDict()
        self._makers: list[psycopg.Connection[tuple[Any, ...]]] = []  # idle, for `_make`

    def get_or_make(self, key: str, make: Callable[[], dict[str, Any]]) -> str:
        if not self._has(key):
            self._make_once(key, make)
        return self.reference(key)

    def get_or_make_many(
        self, wanted: Iterable[tuple[str, Callable[[], dict[str, Any]]]]
    ) -> list[str]:
        wanted = list(wanted)
        found = self._present([key for key, _ in wanted]) if wanted else set()
        for key, make in wanted:
            if key not in found:
                self._make_once(key, make)
                found.add(key)
        return [self.reference(key) for key, _ in wanted]

    def _make_once(self, key: str, make: Callable[[], dict[str, Any]]) -> None:
        """Make `key`'s extraction, found missing, unless a maker of this process or of
        another made it meanwhile."""
        with self._mutex:
            making = self._making.setdefault(key, threading.Lock())
        with making:
            if not self._has(key):
                self._make(key, make)

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
        return key in self._present([key])

    def _present(self, keys: Sequence[str]) -> set[str]:
        """Those of `keys` the cache holds, in one query."""
        with self.db.session() as conn:
            rows = conn.execute(
                "SELECT key FROM extractions WHERE key = ANY(%b::text[])", (sorted(set(keys)),)
            ).fetchall()
        return {key for (key,) in rows}

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
        now = time.monotonic()
        with self._mutex:
            known = {
                key
                for key in keys
                if key is not None
                and (kept := self._fetched.get(key)) is not None
                and now - kept[1] < FETCHED_TRUSTED
            }
        asked = sorted({key for key in keys if key is not None} - known)
        bodies: dict[str, bytes] = {}
        if asked:
            with self.db.session() as conn:
                rows = conn.execute(
                    "SELECT key, body FROM extractions WHERE key = ANY(%b::text[])", (asked,)
                ).fetchall()
            bodies = {key: bytes(body) for key, body in rows}
            self.keep_fetched(bodies)
        return [key is not None and key not in known and key not in bodies for key in keys]

    def keep_fetched(self, bodies: Mapping[str, bytes], told_of: Sequence[str | None] = ()) -> None:
        """Keep `bodies` (key -> body), just fetched, for `dropped` and `load`. A body
        kept from before for one of the references `told_of` that has none in `bodies`
        (dropped since, or not found by the claim) is forgotten, so that `dropped` asks."""
        now = time.monotonic()
        named = {key for reference in told_of if (key := _key_of(reference)) is not None}
        with self._mutex:
            for key in named - set(bodies):
                self._fetched.pop(key, None)
            for key, raw in bodies.items():
                self._fetched[key] = (raw, now)
                self._fetched.move_to_end(key)
            while len(self._fetched) > FETCHED_KEPT:
                self._fetched.popitem(last=False)

    def _kept(self, key: str) -> bytes | None:
        """The body of `key` fetched lately (by a claim or `dropped`), if kept."""
        with self._mutex:
            kept = self._fetched.get(key)
        return None if kept is None else kept[0]

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
    own = OWN_PATH.fullmatch(reference) if reference else None
    return own[1] if own else None


def _lock_key(schema: str, key: str) -> int:
    """The advisory lock of making extraction `key` in `schema`: advisory locks are the
    server's, not a schema's, so two spools on one server (say, a test's and a bench's)
    making the same file's extraction do not wait for each other."""
    named = f"extraction {schema} {key}".encode()
    return int.from_bytes(hashlib.sha256(named).digest()[:8], signed=True)
