"""Which back end a spool location names: one table of schemes, and nothing else asks.

A location is a string: a directory (`spool`, `/var/spool/riddles`, `file:///var/…`) or a
URL whose scheme is a row of `SCHEMES` (`postgresql://user@host/db`). A back end is a
module of its own subpackage offering the functions of `Backend` (see `fs/backend.py`);
it is imported only when a spool of its kind is used, so `riddlectl status` on a
directory never loads psycopg, and a missing dependency is named by its extra.
"""

from __future__ import annotations

import importlib
import os
import re
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any

from riddlectl.errors import SpoolUnusable

if TYPE_CHECKING:
    from riddlectl.document.codec import Limits
    from riddlectl.identity import Actor
    from riddlectl.spool.contract import Spool


@dataclass(frozen=True)
class OpenOptions:
    """How to open a spool; each back end takes what applies to it (None: its default)."""

    create: bool = True  # made (idempotently) if need be; else it must be a spool already
    writable: bool = False  # it must be writable too, and what a writer needs is made
    actor: Actor | None = None
    durable: bool = True  # flushed to disk at every commit (a directory spool may skip it)
    drop_in_grace: float | None = None
    limits: Limits | None = None
    events_max_bytes: int | None = None
    data_dir: Path | None = None  # where new riddles' data files are read from
    max_data_bytes: int | None = None


@dataclass(frozen=True)
class Backend:
    """A kind of spool: the module that implements it and the extra it needs.

    The module offers `open(location, options) -> Spool`, `find(location, options)` (the
    spool there, or None when there is none yet), `make(location, options)` (a new spool
    there, all or nothing), `settings_file(location)` (the
    config file that belongs to a spool there, or None), `display(location)` (the
    location as output names it, without secrets), `scratch(location, tag)` (a new empty
    spool of this kind near `location`, for `bench`) and `remove(location)` (drop such a
    spool and all it holds).
    """

    kind: str  # as users call it: "directory", "postgresql"
    module: str
    extra: str | None = None  # `pip install 'riddlectl[EXTRA]'` brings what it needs
    needs: tuple[str, ...] = ()  # top-level modules the extra installs

    def load(self) -> ModuleType:
        try:
            return importlib.import_module(self.module)
        except ImportError as exc:
            if self.extra is None or exc.name not in self.needs:
                raise
            raise SpoolUnusable(
                f"{self.kind} spools need {exc.name}: pip install 'riddlectl[{self.extra}]'"
            ) from None


DIRECTORY = Backend("directory", "riddlectl.spool.fs.backend")
POSTGRESQL = Backend(
    "postgresql", "riddlectl.spool.postgres.backend", "postgres", ("psycopg", "psycopg_binary")
)

# The one door: scheme (lower case, before any `+driver`) → back end. A location without
# a scheme is a directory.
SCHEMES: dict[str, Backend] = {
    "file": DIRECTORY,
    "postgresql": POSTGRESQL,
    "postgres": POSTGRESQL,
}

# `scheme://…`; `scheme:/…` too, for a URL that went through `pathlib.Path` (which keeps
# one slash of two). A scheme has two letters at least, so no drive letter looks like one.
_SCHEME = re.compile(r"([A-Za-z][A-Za-z0-9.-]+)(?:\+[A-Za-z0-9]+)?:/(/?)")


def backend_of(location: str | os.PathLike[str]) -> Backend:
    """The back end `location` names; `SpoolUnusable` for a scheme no row knows."""
    text = os.fspath(location)
    found = _SCHEME.match(text)
    if found is None:
        return DIRECTORY
    scheme = found.group(1).lower()
    if scheme in SCHEMES:
        return SCHEMES[scheme]
    if found.group(2):  # `name://`: meant as a URL, of a kind we do not know
        known = ", ".join(sorted({*SCHEMES, "a directory"}))
        raise SpoolUnusable(f"unknown kind of spool {scheme}:// (known: {known})", where=text)
    return DIRECTORY  # `weird:/name`: a directory whose name has a colon


def call(location: str | os.PathLike[str], function: str, *args: Any) -> Any:
    """`function` of the back end `location` names, called with the location as text."""
    module = backend_of(location).load()
    return getattr(module, function)(os.fspath(location), *args)


def open_location(location: str | os.PathLike[str], options: OpenOptions) -> Spool:
    spool: Spool = call(location, "open", options)
    return spool
