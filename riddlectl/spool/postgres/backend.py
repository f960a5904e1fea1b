"""The PostgreSQL spool as a row of the scheme table (`riddlectl.spool.schemes`).

A location is a libpq URL, with riddlectl's own `schema` parameter; no config file
belongs to it (`--config FILE` or `RIDDLECTL_CONFIG` name one).
"""

from __future__ import annotations

import os

from riddlectl.errors import SpoolUnusable
from riddlectl.spool.postgres import url as urls
from riddlectl.spool.postgres.opening import drop, open_pg
from riddlectl.spool.postgres.pgspool import PgSpool
from riddlectl.spool.schemes import OpenOptions


def open(location: str, options: OpenOptions) -> PgSpool:
    return open_pg(
        location,
        create=options.create,
        actor=options.actor,
        limits=options.limits,
        data_dir=options.data_dir,
        max_data_bytes=options.max_data_bytes,
    )


def settings_file(location: str) -> None:
    return None


def display(location: str) -> str:
    try:
        return urls.parse(location).shown
    except SpoolUnusable:
        return urls.redact(location)


def scratch(location: str, tag: str) -> str:
    """The same server and database, in a schema of this process's own."""
    return urls.with_schema(location, f"riddlectl_{tag}_{os.getpid()}")


def remove(location: str) -> None:
    drop(location)


def server(location: str) -> str:
    """The URL as libpq takes it (without riddlectl's `schema`): for other programs."""
    return urls.parse(location).conninfo
