"""The spool's schema, made and migrated by numbered steps (`riddlectl init`).

Each migration runs in one transaction, under an advisory lock of the schema's name, so
two `init`s at once apply each step once. A schema newer than this code knows is
refused, not used: an older agent must not write rows a newer layout reads otherwise.

Table settings are chosen for a high-churn queue: `riddles` leaves a third of each page
free (fillfactor 70) so that the update of a claim can stay on its page, and is vacuumed
after 2 % of it changed instead of 20 %; events and extractions are append-mostly.
"""

from __future__ import annotations

import zlib
from typing import TYPE_CHECKING, Any

from riddlectl.errors import SchemaOutdated, SpoolUnusable
from riddlectl.spool.unusable import NO_SPOOL

if TYPE_CHECKING:
    import psycopg

QUEUES = "('incoming','extracted','solved','validated','done','failed','waiting','hold')"


def _commit_moves(priority: str) -> str:
    """`commit_moves` (see `claims.COMMIT`), its priorities of the type `priority`."""
    return f"""
    CREATE FUNCTION commit_moves(
        ids text[], tokens bigint[], queues text[], docs bytea[], revs int[],
        priorities {priority}[], createds float8[], retry_ats float8[], updateds float8[],
        events text[], at float8, channel text, arrived text[]
    ) RETURNS void LANGUAGE plpgsql AS $$
    DECLARE
        lost text;
    BEGIN
        -- This transaction's commit waits for the disk as the server, database or role
        -- says (the session's own setting is off); it lasts past the function's end.
        SET LOCAL synchronous_commit TO DEFAULT;
        WITH moved AS (
            UPDATE riddles r SET
                queue = m.queue, doc = m.doc, rev = m.rev, priority = m.priority,
                created = m.created, retry_at = m.retry_at, updated = m.updated,
                holder = NULL, token = NULL, begun = false, abandoned = 0, dead = NULL
            FROM unnest(ids, tokens, queues, docs, revs, priorities, createds, retry_ats,
                        updateds)
                AS m(id, token, queue, doc, rev, priority, created, retry_at, updated)
            WHERE r.id = m.id AND r.token = m.token
            RETURNING r.id
        )
        SELECT string_agg(w.id, ', ' ORDER BY w.n) INTO lost
        FROM unnest(ids) WITH ORDINALITY AS w(id, n)
        WHERE w.id NOT IN (SELECT id FROM moved);
        IF lost IS NOT NULL THEN
            RAISE EXCEPTION 'claim lost' USING ERRCODE = 'RC001', DETAIL = lost;
        END IF;
        INSERT INTO events (at, body)
        SELECT commit_moves.at, e.body FROM unnest(events) WITH ORDINALITY AS e(body, n)
        ORDER BY e.n;
        PERFORM pg_notify(channel, q.queue) FROM unnest(arrived) WITH ORDINALITY AS q(queue, n)
        ORDER BY q.n;
    END
    $$;
    """


MIGRATIONS: list[str] = [
    # 1: the queues, claims, input set aside, events, extractions.
    f"""
    CREATE TABLE riddles (
        id text PRIMARY KEY,
        queue text NOT NULL CHECK (queue IN {QUEUES}),
        doc bytea NOT NULL,
        rev integer NOT NULL,
        priority integer NOT NULL DEFAULT 0,
        created double precision NOT NULL DEFAULT 0,
        retry_at double precision NOT NULL DEFAULT 0,
        updated double precision NOT NULL DEFAULT 0,
        holder bigint,
        token bigint,
        begun boolean NOT NULL DEFAULT false,
        abandoned integer NOT NULL DEFAULT 0,
        dead jsonb
    ) WITH (fillfactor = 70, autovacuum_vacuum_scale_factor = 0.02,
            autovacuum_vacuum_threshold = 100, autovacuum_analyze_scale_factor = 0.02);
    CREATE INDEX riddles_queue ON riddles (queue, priority DESC, created, id);
    CREATE INDEX riddles_held ON riddles (holder) WHERE holder IS NOT NULL;
    CREATE INDEX riddles_updated ON riddles (updated);
    CREATE SEQUENCE claim_tokens;
    CREATE TABLE holders (
        key bigint PRIMARY KEY,
        record jsonb NOT NULL,
        since timestamptz NOT NULL DEFAULT now()
    ) WITH (fillfactor = 70);
    CREATE TABLE dropins (
        queue text NOT NULL CHECK (queue IN {QUEUES}),
        name text NOT NULL,
        raw bytea NOT NULL,
        at double precision NOT NULL,
        PRIMARY KEY (queue, name)
    );
    CREATE TABLE corrupt (
        name text PRIMARY KEY,
        raw bytea NOT NULL,
        reason text NOT NULL,
        at double precision NOT NULL
    );
    CREATE TABLE events (
        seq bigserial PRIMARY KEY,
        at double precision NOT NULL,
        body text NOT NULL
    ) WITH (autovacuum_vacuum_insert_scale_factor = 0.05);
    CREATE INDEX events_at ON events (at);
    CREATE TABLE extractions (
        key text PRIMARY KEY,
        extractor text NOT NULL,
        body bytea NOT NULL
    );
    """,
    # 2: data files, by content, and the riddles that name them.
    """
    CREATE TABLE blobs (
        sha256 text PRIMARY KEY,
        content bytea NOT NULL
    );
    CREATE TABLE riddle_data (
        riddle_id text NOT NULL,
        path text NOT NULL,
        sha256 text NOT NULL,
        PRIMARY KEY (riddle_id, path)
    );
    CREATE INDEX riddle_data_sha256 ON riddle_data (sha256);
    """,
    # 3: a commit in one statement (see `claims.COMMIT`).
    _commit_moves("int"),
    # 4: the agents' own records, each tied to its agent's session advisory lock on `key`.
    """
    CREATE TABLE agents (
        key bigint PRIMARY KEY,
        record jsonb NOT NULL,
        seen double precision NOT NULL
    );
    """,
    # 5: the id each drop-in is (its own, else its name's), found by an index: a lookup
    # by id read every drop-in's content before, so that ingesting n files cost n².
    # Rows of before (rid NULL) are found as they were.
    """
    ALTER TABLE dropins ADD COLUMN rid text;
    CREATE INDEX dropins_rid ON dropins (rid) WHERE rid IS NOT NULL;
    CREATE INDEX dropins_unread ON dropins (at) WHERE rid IS NULL;
    """,
    # 6: priorities of 64 bits, as documents hold them (`submit --priority`): one above
    # 2^31 was refused by the server as an internal error.
    """
    ALTER TABLE riddles ALTER COLUMN priority TYPE bigint;
    DROP FUNCTION commit_moves(
        text[], bigint[], text[], bytea[], int[], int[], float8[], float8[], float8[],
        text[], float8, text, text[]
    );
    """
    + _commit_moves("bigint"),
]
LATEST = len(MIGRATIONS)


def lock_key(schema: str) -> int:
    """The advisory lock key of `schema`'s migrations (a signed 64-bit number)."""
    return zlib.crc32(f"riddlectl migrate {schema}".encode()) - 2**31


def version(conn: psycopg.Connection[tuple[Any, ...]], schema: str) -> int:
    """The schema's version: 0 when it has no spool yet."""
    row = conn.execute(
        "SELECT to_regclass(%s) IS NOT NULL", (f"{_quote(schema)}.schema_version",)
    ).fetchone()
    if not row or not row[0]:
        return 0
    found = conn.execute(f"SELECT max(version) FROM {_quote(schema)}.schema_version").fetchone()
    return int(found[0] or 0) if found else 0


def migrate(conn: psycopg.Connection[tuple[Any, ...]], schema: str, shown: str) -> int:
    """Bring `schema` up to `LATEST`; how many steps were applied."""
    with conn.transaction():
        conn.execute("SET LOCAL synchronous_commit TO DEFAULT")  # as configured: durable
        conn.execute("SELECT pg_advisory_xact_lock(%s)", (lock_key(schema),))
        conn.execute(f"CREATE SCHEMA IF NOT EXISTS {_quote(schema)}")
        conn.execute(
            f"CREATE TABLE IF NOT EXISTS {_quote(schema)}.schema_version ("
            "version integer PRIMARY KEY, applied timestamptz NOT NULL DEFAULT now())"
        )
        have = version(conn, schema)
        refuse_newer(have, shown)
        conn.execute(f"SET LOCAL search_path TO {_quote(schema)}")
        for number in range(have + 1, LATEST + 1):
            conn.execute(MIGRATIONS[number - 1])
            conn.execute("INSERT INTO schema_version (version) VALUES (%s)", (number,))
    return LATEST - have


def check(conn: psycopg.Connection[tuple[Any, ...]], schema: str, shown: str) -> None:
    """`SpoolUnusable` unless `schema` holds a spool of the version this code knows."""
    have = version(conn, schema)
    if have == 0:
        raise SpoolUnusable(NO_SPOOL, where=shown)
    refuse_newer(have, shown)
    if have < LATEST:
        raise SchemaOutdated(
            f"the spool's schema is version {have}, this riddlectl needs {LATEST}: "
            "run riddlectl init to migrate it",
            where=shown,
        )


def refuse_newer(have: int, shown: str) -> None:
    if have > LATEST:
        raise SpoolUnusable(
            f"the spool's schema is version {have}, newer than this riddlectl knows "
            f"({LATEST}): upgrade riddlectl",
            where=shown,
        )


def _quote(name: str) -> str:
    return f'"{name}"'  # names are checked against url.SCHEMA_RE first
