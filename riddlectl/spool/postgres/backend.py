"""The PostgreSQL spool as a row of the scheme table (`riddlectl.spool.schemes`).

A location is a libpq URL, with riddlectl's own `schema` parameter; no config file
belongs to it (`--config FILE` or `RIDDLECTL_CONFIG` name one).
"""

from __future__ import annotations

import os
from dataclasses import replace

from riddlectl.errors import SpoolUnusable
from riddlectl.spool.postgres import url as urls
from riddlectl.spool.postgres.opening import drop, open_pg
from riddlectl.spool.postgres.pgspool import PgSpool
from riddlectl.spool.schemes import OpenOptions
from riddlectl.spool.unusable import NO_SPOOL


def open(location: str, options: OpenOptions) -> PgSpool:
    return open_pg(
        location,
        create=options.create,
        actor=options.actor,
        limits=options.limits,
        data_dir=options.data_dir,
        max_data_bytes=options.max_data_bytes,
    )


def find(location: str, options: OpenOptions) -> PgSpool | None:
    """The spool at `location` when its schema is there; None for one still to be made."""
    try:
        return open(location, replace(options, create=False))
    except SpoolUnusable as exc:
        if exc.message == NO_SPOOL:
            return None
        raise


def make(location: str, options: OpenOptions) -> PgSpool:
    """A new spool at `location`: its schema is made in one transaction, all or nothing."""
    return open(location, replace(options, create=True))


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
