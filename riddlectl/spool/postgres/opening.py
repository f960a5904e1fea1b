"""Opening a PostgreSQL spool: the URL parsed, the schema made or checked."""

from __future__ import annotations

from pathlib import Path

from riddlectl.document.codec import Limits
from riddlectl.identity import Actor
from riddlectl.spool.postgres import url as urls
from riddlectl.spool.postgres.pgspool import PgSpool


def open_pg(
    text: str,
    *,
    create: bool,
    actor: Actor | None,
    limits: Limits | None,
    data_dir: Path | None = None,
    max_data_bytes: int | None = None,
) -> PgSpool:
    """The spool the URL `text` names (see `riddlectl.spool.open_spool`): with `create`,
    its schema is made or migrated (`riddlectl init`); otherwise it must be a spool of
    the schema version this code knows."""
    spool = PgSpool(urls.parse(text), actor=actor, limits=limits, data_dir=data_dir)
    if max_data_bytes is not None:
        spool.max_data_bytes = max_data_bytes
    if create:
        spool.init()
    else:
        spool.check()
    return spool


def drop(text: str) -> None:
    """Drop the schema the URL `text` names, with everything in it."""
    url = urls.parse(text)
    spool = PgSpool(url)
    with spool.db.transaction() as conn:
        conn.execute(f'DROP SCHEMA IF EXISTS "{url.schema}" CASCADE')
    spool.disconnect()
