"""What `doctor` and `/metrics` read of the database under a PostgreSQL spool.

A queue table is updated on every claim and commit: each update leaves a dead row for
vacuum to take. With autovacuum off (for the server or a table), or a transaction held
open that vacuum must keep rows visible to, dead rows pile up and every claim reads
through them: throughput falls as the spool grows and nothing else says why. These are
the figures that show it, and the warnings `doctor` prints from them, each saying what
to do.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from riddlectl.spool.contract import Finding
from riddlectl.spool.postgres import schema as schemas
from riddlectl.spool.postgres.db import Conn

# Dead rows warned of: more than DEAD_RATIO times the live ones, and at least DEAD_FLOOR
# (a small table's few dead rows are no trouble and soon gone).
DEAD_RATIO = 3
DEAD_FLOOR = 10_000
# A transaction warned of: idle in transaction this long (an application that forgot to
# commit), or open this long whatever it does (s).
IDLE_IN_TRANSACTION = 10.0
OPEN_TRANSACTION = 300.0
CONNECTIONS_NEAR = 0.8  # of those `max_connections` leaves to ordinary roles

TABLES = """
SELECT c.relname, coalesce(s.n_live_tup, 0), coalesce(s.n_dead_tup, 0),
       coalesce(c.reloptions, '{}'::text[])
FROM pg_class c
JOIN pg_namespace n ON n.oid = c.relnamespace
LEFT JOIN pg_stat_user_tables s ON s.relid = c.oid
WHERE n.nspname = %s AND c.relkind = 'r'
ORDER BY c.relname
"""

# The oldest transaction of another session in this database: those are what keep
# vacuum from taking rows here (autovacuum's own workers are not counted).
OLDEST = """
SELECT pid, coalesce(nullif(application_name, ''), '?'), state,
       extract(epoch FROM now() - xact_start)::float8,
       extract(epoch FROM now() - state_change)::float8
FROM pg_stat_activity
WHERE xact_start IS NOT NULL AND pid <> pg_backend_pid() AND datname = current_database()
  AND backend_type = 'client backend'
ORDER BY xact_start
LIMIT 1
"""

CONNECTIONS = """
SELECT (SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'client backend'),
       current_setting('max_connections')::int
         - current_setting('superuser_reserved_connections')::int
"""


@dataclass
class Transaction:
    pid: int
    application: str
    state: str
    age: float  # seconds since it began
    idle: float  # seconds in its present state

    def holds_back(self) -> bool:
        return (
            self.state.startswith("idle in transaction") and self.idle >= IDLE_IN_TRANSACTION
        ) or (self.age >= OPEN_TRANSACTION)


def figures(conn: Conn, schema: str) -> dict[str, Any]:
    """The database's figures, as `doctor --json` shows them under `database`."""
    server = _setting(conn, "autovacuum") == "on" and _setting(conn, "track_counts") == "on"
    tables = {}
    for name, live, dead, options in conn.execute(TABLES, (schema,)).fetchall():
        off = any(
            o.lower() in ("autovacuum_enabled=false", "autovacuum_enabled=off") for o in options
        )
        tables[name] = {"live_rows": int(live), "dead_rows": int(dead), "autovacuum": not off}
    row = conn.execute(OLDEST).fetchone()
    oldest = (
        Transaction(int(row[0]), row[1], row[2] or "", float(row[3]), float(row[4] or 0))
        if row
        else None
    )
    counted = conn.execute(CONNECTIONS).fetchone()
    used, allowed = (int(counted[0]), int(counted[1])) if counted else (0, 0)
    return {
        "autovacuum": server,
        "tables": tables,
        "dead_rows": sum(t["dead_rows"] for t in tables.values()),
        "live_rows": sum(t["live_rows"] for t in tables.values()),
        "oldest_transaction": None if oldest is None else oldest.__dict__,
        "schema_version": schemas.version(conn, schema),
        "schema_version_known": schemas.LATEST,
        "connections": used,
        "max_connections": allowed,
    }


def findings(found: dict[str, Any], schema: str) -> list[Finding]:
    """What `doctor` warns of in `found` (from `figures`), one finding each: warnings
    about the server and its settings (the spool is sound; a person with rights over the
    server acts), but for a schema older than the code, a problem of the spool."""
    warned: list[Finding] = []
    if not found["autovacuum"]:
        warned.append(
            Finding(
                "autovacuum",
                "server",
                "autovacuum is off for the server: dead rows pile up and claims slow down; "
                "set autovacuum = on and track_counts = on in postgresql.conf and reload",
                warning=True,
            )
        )
    for name, table in found["tables"].items():
        if not table["autovacuum"]:
            warned.append(
                Finding(
                    "autovacuum",
                    f"{schema}.{name}",
                    f'autovacuum is off for the table: run ALTER TABLE "{schema}".{name} '
                    "RESET (autovacuum_enabled)",
                    warning=True,
                )
            )
        dead, live = table["dead_rows"], table["live_rows"]
        if dead >= DEAD_FLOOR and dead > DEAD_RATIO * live:
            warned.append(
                Finding(
                    "dead-rows",
                    f"{schema}.{name}",
                    f"{dead} dead rows beside {live} live ones: run VACUUM "
                    f'"{schema}".{name}, and see why autovacuum did not',
                    warning=True,
                )
            )
    oldest = found["oldest_transaction"]
    if oldest is not None and Transaction(**oldest).holds_back():
        warned.append(
            Finding(
                "old-transaction",
                f"pid {oldest['pid']}",
                f"{oldest['application']} has held a transaction open for "
                f"{oldest['age']:.0f} s ({oldest['state']}), keeping vacuum from dead rows: "
                f"end it in that application, or SELECT pg_terminate_backend({oldest['pid']})",
                warning=True,
            )
        )
    if found["schema_version"] < found["schema_version_known"]:
        warned.append(
            Finding(
                "old-schema",
                schema,
                f"the spool's schema is version {found['schema_version']}, this riddlectl "
                f"knows {found['schema_version_known']}: run riddlectl init to migrate it",
            )
        )
    used, allowed = found["connections"], found["max_connections"]
    if allowed and used >= CONNECTIONS_NEAR * allowed:
        warned.append(
            Finding(
                "connections",
                "server",
                f"{used} of {allowed} connections in use: raise max_connections, or put a "
                "connection pooler before the server",
                warning=True,
            )
        )
    return warned


def _setting(conn: Conn, name: str) -> str:
    row = conn.execute("SELECT current_setting(%s)", (name,)).fetchone()
    return str(row[0]) if row else ""
