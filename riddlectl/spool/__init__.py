"""Storage of riddles in queues: the spool contract, its states and routing, the in-memory
twin, and one subpackage per back end (`fs/`, `postgres/`), chosen from the location by
the scheme table (`schemes`) and by nothing else.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

from riddlectl.spool import schemes
from riddlectl.spool.unusable import NO_SPOOL, spool_error

if TYPE_CHECKING:
    from riddlectl.document.codec import Limits
    from riddlectl.identity import Actor
    from riddlectl.spool.contract import Spool

__all__ = [
    "NO_SPOOL",
    "display_name",
    "find_spool",
    "make_spool",
    "open_spool",
    "remove_spool",
    "scratch_spool",
    "server_url",
    "settings_file",
    "spool_error",
]


def open_spool(
    location: str | os.PathLike[str],
    *,
    create: bool = True,
    writable: bool = False,
    actor: Actor | None = None,
    durable: bool = True,
    drop_in_grace: float | None = None,
    limits: Limits | None = None,
    events_max_bytes: int | None = None,
    data_dir: Path | None = None,
    max_data_bytes: int | None = None,
) -> Spool:
    """The spool at `location`: a directory (`file://` or a path), or a `postgresql://`
    URL (see docs/postgresql.md); the scheme table (`schemes.SCHEMES`) decides.

    `create`: made (idempotently) if need be; otherwise it must already be a spool
    (`SpoolUnusable` saying why not). `writable`: it must be writable too, and what a
    writer needs is made. Nothing is created in a place that is refused. Each back end
    takes the other options that apply to it (see `schemes.OpenOptions`).
    """
    options = schemes.OpenOptions(
        create=create,
        writable=writable,
        actor=actor,
        durable=durable,
        drop_in_grace=drop_in_grace,
        limits=limits,
        events_max_bytes=events_max_bytes,
        data_dir=data_dir,
        max_data_bytes=max_data_bytes,
    )
    return schemes.open_location(location, options)


def find_spool(location: str | os.PathLike[str], options: schemes.OpenOptions) -> Spool | None:
    """The spool at `location` when there is one; None when there is none yet (a
    directory without the layout, a database without the schema). Nothing is made."""
    found: Spool | None = schemes.call(location, "find", options)
    return found


def make_spool(location: str | os.PathLike[str], options: schemes.OpenOptions) -> Spool:
    """A new spool at `location`, made all or nothing: a failure leaves no part of it."""
    made: Spool = schemes.call(location, "make", options)
    return made


def display_name(location: str | os.PathLike[str]) -> str:
    """The spool at `location` as output names it: a directory as given, a URL without
    its password."""
    name: str = schemes.call(location, "display")
    return name


def settings_file(location: str | os.PathLike[str]) -> Path | None:
    """The config file that belongs to the spool at `location` (a directory's
    `config.toml`), or None for a kind of spool that keeps none."""
    found: Path | None = schemes.call(location, "settings_file")
    return found


def scratch_spool(location: str | os.PathLike[str], tag: str) -> str:
    """The location of a new, empty spool of the same kind as `location`'s, for a run
    that must not touch the user's (`bench`): a temporary directory, or a schema of its
    own on the same database server. `remove_spool` drops it."""
    made: str = schemes.call(location, "scratch", tag)
    return made


def remove_spool(location: str | os.PathLike[str]) -> None:
    """Drop a spool made by `scratch_spool`, with everything it holds."""
    schemes.call(location, "remove")


def server_url(location: str | os.PathLike[str]) -> str | None:
    """For a spool on a database server, the server's URL as its client library takes it
    (for other programs on the same server, e.g. the bench's peers); else None."""
    module = schemes.backend_of(location).load()
    server = getattr(module, "server", None)
    return None if server is None else str(server(os.fspath(location)))
