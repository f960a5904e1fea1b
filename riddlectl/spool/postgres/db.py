"""Connections to the spool's database: one per spool object, shared by its threads.

Every statement runs under one mutex, a transition in one transaction (`transaction`).
The shared connection's commits do not wait for the disk unless asked to: a durable
transaction takes the `synchronous_commit` the server, database or role configures
(`SET LOCAL … TO DEFAULT`); what a server crash may lose safely is sent as one statement
of its own (`single`), with no BEGIN and COMMIT round trips.
A connection that fails is dropped and made again on next use; what failed raises
`SpoolUnusable` (the agent loop waits and tries again), never a traceback. One the server
ended while it sat idle (a restart, an administrator) is noticed before it is used, by
reading what has arrived on it, and made again at once.

The holder: a process that claims riddles first takes a session advisory lock on a
random 63-bit key and records itself in `holders` under that key. Its claims carry the
key. The lock lives exactly as long as the connection: when the process dies, its host
is cut off (as soon as the server's TCP keepalive or user timeout notices), or the
server restarts, the lock is free, and a reaper (`claims.reap`) gives the claims back.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import threading
import time
from collections.abc import Iterator
from typing import Any

import psycopg
from psycopg import pq
from psycopg.conninfo import conninfo_to_dict
from psycopg.types.json import Jsonb

from riddlectl.errors import SpoolUnavailable, SpoolUnusable
from riddlectl.identity import Actor
from riddlectl.spool.postgres.url import SpoolUrl

Conn = psycopg.Connection[tuple[Any, ...]]
# The client side's own keepalives and user timeout: a server that vanishes, or a link
# that is cut, is noticed within ~25 s, whether the connection is idle or sending.
KEEPALIVES = {
    "keepalives": 1,
    "keepalives_idle": 10,
    "keepalives_interval": 5,
    "keepalives_count": 3,
    "tcp_user_timeout": 25_000,
}

# The libpq environment variables of the parameters riddlectl has defaults for.
ENVIRONMENT = {"connect_timeout": "PGCONNECT_TIMEOUT", "application_name": "PGAPPNAME"}

# A transaction that waits for the disk as the server, database or role says, whatever
# this session's own setting (`SET … TO DEFAULT` is the value before any `SET`).
DURABLE_BEGIN = "BEGIN; SET LOCAL synchronous_commit TO DEFAULT"


class Database:
    def __init__(self, url: SpoolUrl, actor: Actor) -> None:
        self.url = url
        self.actor = actor
        self._mutex = threading.RLock()
        self._conn: Conn | None = None
        self.holder: int | None = None  # this process's holder key, once it claimed
        self.role: str | None = None  # who the server took us for, once connected

    def connect(self) -> Conn:
        """A new connection of its own, with the spool's schema first on its path."""
        try:
            return psycopg.connect(self.url.conninfo, autocommit=True, **self.defaults())
        except psycopg.Error as exc:
            raise self.unreachable(exc) from None

    def defaults(self) -> dict[str, Any]:
        """riddlectl's connection parameters, less those the URL (or libpq's environment)
        sets: what the user wrote wins. `options` are the user's followed by the spool's
        `search_path`, which must win for the spool to be found."""
        given = conninfo_to_dict(self.url.conninfo)
        ours: dict[str, Any] = {
            "connect_timeout": 10,
            "application_name": f"riddlectl {self.actor.name}",
            **KEEPALIVES,
        }
        chosen = {
            key: value
            for key, value in ours.items()
            if key not in given and not os.environ.get(ENVIRONMENT.get(key, ""))
        }
        theirs = str(given.get("options") or os.environ.get("PGOPTIONS") or "")
        chosen["options"] = f"{theirs} -c search_path={self.url.schema}".strip()
        return chosen

    def unreachable(self, exc: BaseException) -> SpoolUnusable:
        """`exc` as the one line a user sees: the spool cannot be used, and why."""
        return unusable(exc, self.url.shown, self.role)

    def refused(self, exc: psycopg.Error) -> BaseException:
        """What to raise for `exc`: `SpoolUnusable` when the server refuses the spool
        (see `refusal`), else `exc` itself, for its caller to judge (an id taken)."""
        if isinstance(exc, psycopg.OperationalError):
            self._drop()
        return self.unreachable(exc) if refusal(exc) else exc

    @contextlib.contextmanager
    def session(self, hold: bool = False) -> Iterator[Conn]:
        """The shared connection, for statements of their own (autocommit): reads, as a
        write there does not wait for the disk (see `single`); with `hold`, this process
        is a holder first."""
        with self._mutex:
            try:
                conn = self._connection()
                if hold:
                    self._hold(conn)
                yield conn
            except psycopg.Error as exc:
                raise self.refused(exc) from None

    @contextlib.contextmanager
    def transaction(self, hold: bool = False, durable: bool = True) -> Iterator[Conn]:
        """One transaction on the shared connection: all of it or nothing. A connection
        found dead when the transaction begins (the server restarted, or ended it) is
        made again once: nothing was sent yet, so nothing can be done twice.

        Not `durable`: its commit does not wait for the disk (`synchronous_commit`
        off), for what a server crash may lose safely: a claim lost is taken again
        (its holder's later commit is refused by the token), a mark or a release lost
        is undone by the reaper, as the crash ended every holder's session."""
        with self._mutex:
            conn = self._begun(hold, durable)
            try:
                yield conn
            except psycopg.OperationalError as exc:
                self._drop()
                raise self.unreachable(exc) from None
            except psycopg.Error as exc:
                with contextlib.suppress(psycopg.Error):
                    conn.execute("ROLLBACK")
                raise self.refused(exc) from None
            except BaseException:
                with contextlib.suppress(psycopg.Error):
                    conn.execute("ROLLBACK")
                raise
            try:
                conn.execute("COMMIT")
            except psycopg.Error as exc:
                raise self.refused(exc) from None

    def single(self, query: str, params: dict[str, Any], hold: bool = False) -> list[Any]:
        """One statement, a transaction of its own whose commit does not wait for the disk
        (as `transaction(durable=False)`) unless the statement says so (`commit_moves`
        does), in one round trip; the rows it returns. With `hold`, this process is a
        holder first, and the parameter `holder` is its key.

        For the steps of a claim, which may be sent twice: a connection found dead is
        made again once and the statement sent again. Should the first have been done
        after all, its claims are its dead connection's holder's, given back by the
        reaper; marking or giving back a claim twice changes nothing more, and a commit
        sent twice is refused the second time (its claim's token is gone)."""
        with self._mutex:
            for attempt in range(2):
                try:
                    conn = self._connection()
                    if hold:
                        self._hold(conn)
                    cursor = conn.execute(query, {**params, "holder": self.holder})
                    return cursor.fetchall() if cursor.description else []
                except psycopg.OperationalError as exc:
                    self._drop()
                    if attempt:
                        raise self.unreachable(exc) from None
                except psycopg.Error as exc:
                    raise self.refused(exc) from None
        raise AssertionError("unreachable")  # pragma: no cover

    def _begun(self, hold: bool, durable: bool) -> Conn:
        for attempt in range(2):
            try:
                conn = self._connection()
                if hold:
                    self._hold(conn)
                conn.execute(DURABLE_BEGIN if durable else "BEGIN")
                return conn
            except psycopg.OperationalError as exc:
                self._drop()
                if attempt:
                    raise self.unreachable(exc) from None
            except psycopg.Error as exc:
                raise self.refused(exc) from None
        raise AssertionError("unreachable")  # pragma: no cover

    def _connection(self) -> Conn:
        conn = self._conn
        if conn is None or conn.closed or conn.broken or not still_open(conn):
            self._drop()
            conn = self.connect()
            try:  # commits wait for the disk only in a durable transaction
                conn.execute("SET synchronous_commit = off")
            except psycopg.Error:
                conn.close()
                raise
            self._conn = conn
            self.role = conn.info.user
        return conn

    def _hold(self, conn: Conn) -> None:
        if self.holder is not None:
            return
        while True:
            key = secrets.randbits(63)
            row = conn.execute("SELECT pg_try_advisory_lock(%s)", (key,)).fetchone()
            if row and row[0]:
                break
        record = {**self.actor.as_dict(), "time": time.time()}
        conn.execute("INSERT INTO holders (key, record) VALUES (%s, %s)", (key, Jsonb(record)))
        self.holder = key

    def _drop(self) -> None:
        """Forget the connection, and with it the holder key its lock was on."""
        conn, self._conn, self.holder = self._conn, None, None
        if conn is not None:
            with contextlib.suppress(Exception):
                conn.close()

    def close(self) -> None:
        """Leave as a holder (claims still held are reaped) and close the connection."""
        with self._mutex:
            conn = self._conn
            if conn is not None and self.holder is not None and not conn.broken:
                with contextlib.suppress(psycopg.Error):
                    conn.execute(
                        "DELETE FROM holders WHERE key = %(key)s AND NOT EXISTS "
                        "(SELECT 1 FROM riddles WHERE holder = %(key)s)",
                        {"key": self.holder},
                    )
            self._drop()


def still_open(conn: Conn) -> bool:
    """False when the server has ended `conn` since its last statement. libpq learns so
    only by reading: read what has arrived, without waiting (a few microseconds), parse
    it (the server's last words, an error, come while the connection is idle), and read
    on to the end of the stream if it is there."""
    pgconn = conn.pgconn
    try:
        pgconn.consume_input()
        pgconn.is_busy()
        pgconn.consume_input()
    except psycopg.OperationalError:
        return False
    return pgconn.status == pq.ConnStatus.OK


# What the server says when the spool cannot be used as it stands, whatever the statement:
# SQLSTATE classes (connection trouble; insufficient resources such as a full disk;
# operator intervention: a shutdown, a server starting up, a statement or lock timeout;
# system errors), then single states (no privilege; a read-only server or transaction;
# a lock not had in time; the database or role that is not there).
REFUSED_CLASSES = ("08", "53", "57", "58")
REFUSED_STATES = {"42501", "25006", "55P03", "3D000", "28000", "28P01"}
READ_ONLY = "25006"


def refusal(exc: BaseException) -> bool:
    """True when `exc` says the spool cannot be used now (rights, a read-only or starting
    server, a full disk, a timeout, a shutdown, a lost connection), not that the statement
    itself was wrong."""
    if isinstance(exc, psycopg.OperationalError):
        return True  # a connection lost says no SQLSTATE at all
    state = getattr(exc, "sqlstate", None) or ""
    return state[:2] in REFUSED_CLASSES or state in REFUSED_STATES


def unusable(exc: BaseException, shown: str, role: str | None) -> SpoolUnusable:
    """The one line for `exc`: the server's own first line, and whom it refused."""
    diag = getattr(exc, "diag", None)
    primary = getattr(diag, "message_primary", None)
    lines = str(exc).strip().splitlines()
    text = primary or (lines[0] if lines else type(exc).__name__)
    state = getattr(exc, "sqlstate", None)
    if state == "42501" and role:
        text = f"{text} (role {role})"
    elif state == READ_ONLY:
        text = f"{text} (the server is read-only: a hot standby, or default_transaction_read_only)"
    return SpoolUnavailable(f"the spool cannot be used: {text}", where=shown)
