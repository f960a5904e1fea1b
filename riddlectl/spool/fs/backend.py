"""The directory spool as a row of the scheme table (`riddlectl.spool.schemes`).

A location is a path, or `file://` and a path; its settings file is `config.toml` in it.
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
from dataclasses import replace
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


def find(location: str, options: OpenOptions) -> FsSpool | None:
    """The spool at `location` when there is one; None for a directory still to be made
    (missing, or without the spool's layout)."""
    root = root_of(location)
    if not root.exists() or (root.is_dir() and not (root / "incoming").exists()):
        return None
    return open(location, replace(options, create=False))


def make(location: str, options: OpenOptions) -> FsSpool:
    """A new spool at `location`, all or nothing: on failure, what was made is removed
    (a directory that was there keeps what it held before)."""
    root = root_of(location)
    before = set(os.listdir(root)) if root.is_dir() else None
    try:
        return open(location, replace(options, create=True))
    except BaseException:
        if before is None:
            shutil.rmtree(root, ignore_errors=True)
        else:
            for name in set(os.listdir(root)) - before:
                shutil.rmtree(root / name, ignore_errors=True)
        raise


def settings_file(location: str) -> Path:
    return root_of(location) / SETTINGS_FILE


def display(location: str) -> str:
    return str(root_of(location))


def scratch(location: str, tag: str) -> str:
    """A new temporary directory: a directory spool under test is never the user's."""
    return str(Path(tempfile.mkdtemp(prefix=f"riddlectl-{tag}-")) / "spool")


def remove(location: str) -> None:
    shutil.rmtree(root_of(location).parent, ignore_errors=True)
