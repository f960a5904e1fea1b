"""The directory spool as a row of the scheme table (`riddlectl.spool.schemes`).

A location is a path, or `file://` and a path; its settings file is `config.toml` in it.
"""

from __future__ import annotations

import re
import shutil
import tempfile
from pathlib import Path

from riddlectl.spool.fs.fsspool import FsSpool
from riddlectl.spool.fs.opening import open_fs
from riddlectl.spool.schemes import OpenOptions

SETTINGS_FILE = "config.toml"


def root_of(location: str) -> Path:
    """The directory `location` names (`file:///x` and `file:/x` are `/x`)."""
    return Path(re.sub(r"^file:(//)?", "", location, flags=re.IGNORECASE) or ".")


def open(location: str, options: OpenOptions) -> FsSpool:
    return open_fs(
        root_of(location),
        create=options.create,
        writable=options.writable,
        actor=options.actor,
        durable=options.durable,
        drop_in_grace=options.drop_in_grace,
        limits=options.limits,
        events_max_bytes=options.events_max_bytes,
    )


def settings_file(location: str) -> Path:
    return root_of(location) / SETTINGS_FILE


def display(location: str) -> str:
    return str(root_of(location))


def scratch(location: str, tag: str) -> str:
    """A new temporary directory: a directory spool under test is never the user's."""
    return str(Path(tempfile.mkdtemp(prefix=f"riddlectl-{tag}-")) / "spool")


def remove(location: str) -> None:
    shutil.rmtree(root_of(location).parent, ignore_errors=True)
