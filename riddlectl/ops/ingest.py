"""`ingest`: move riddle files from a directory into a spool, as drop-ins.

The way into a spool that is no directory (a PostgreSQL spool has none to drop files
into), and a way into any spool from a directory that is not its `incoming/`. The rules
are the drop-in rules of the filesystem spool (`spool.dropins`): names other programs
write under (`.name`, `name.tmp`) are never taken; a file that does not read as a riddle
yet and was changed within the grace period is left for the next look (it may still be
being written); everything else goes into `incoming` as it is, and is judged there when
an agent claims it (set aside with the reason when it is no riddle). A file is removed
from the directory only once the spool holds it.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from pathlib import Path

from riddlectl.document import codec as documents
from riddlectl.errors import InvalidDocument, RiddleError
from riddlectl.spool.contract import Spool
from riddlectl.spool.dropins import ignored, read_drop_in
from riddlectl.spool.states import Queue


def ingest_once(
    spool: Spool,
    directory: Path,
    grace: float,
    on_moved: Callable[[str], object] | None = None,
    stop: threading.Event | None = None,
) -> int:
    """Move what is ready in `directory` into the spool's `incoming`, until `stop` is set;
    how many files."""
    moved = 0
    try:
        entries = sorted(os.scandir(directory), key=lambda entry: entry.name)
    except NotADirectoryError:
        raise RiddleError("not a directory", where=str(directory)) from None
    except FileNotFoundError:
        raise RiddleError("no such directory", where=str(directory)) from None
    for entry in entries:
        if stop is not None and stop.is_set():
            break
        if ignored(entry.name) or not entry.is_file(follow_symlinks=False):
            continue
        if _take(spool, entry.path, entry.name, grace):
            moved += 1
            if on_moved is not None:
                on_moved(entry.name)
    return moved


def _take(spool: Spool, path: str, name: str, grace: float) -> bool:
    limits = spool.limits
    try:
        raw, info = documents.read_raw(path, limits.readable + 1)
    except FileNotFoundError:
        return False  # taken by another ingest meanwhile
    if raw is None:
        return False
    try:
        read_drop_in(raw, info.st_size, Queue.INCOMING, name, limits)
    except InvalidDocument:
        if time.time() - info.st_mtime < grace:
            return False  # may still be being written: looked at again next time
    spool.drop_in(Queue.INCOMING, name, raw)
    os.unlink(path)
    return True


def ingest(
    spool: Spool,
    directory: Path,
    *,
    grace: float,
    watch: bool = False,
    poll: float = 1.0,
    stop: threading.Event | None = None,
    on_moved: Callable[[str], object] | None = None,
) -> int:
    """`ingest_once`; with `watch`, again every `poll` s until `stop` is set."""
    stop = stop or threading.Event()
    moved = ingest_once(spool, directory, grace, on_moved, stop)
    while watch and not stop.wait(poll):
        moved += ingest_once(spool, directory, grace, on_moved, stop)
    return moved
