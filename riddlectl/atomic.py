"""Atomic, durable file writes: temp file, flush, fsync, rename, fsync the directory.

A reader sees the old file or the new one, never a part of either; after `write` returns
(with `durable=True`) the new file survives a power cut.
"""

from __future__ import annotations

import itertools
import os
from pathlib import Path

from riddlectl.crashpoints import reach
from riddlectl.identity import hostname

_counter = itertools.count()


def tmp_name(dest_name: str) -> str:
    """`NAME.HOST.PID.N.tmp`: whose it is, so a dead writer's leftovers can be swept."""
    host = hostname().replace(".", "_")
    return f"{dest_name}.{host}.{os.getpid()}.{next(_counter)}.tmp"


def tmp_owner(name: str) -> tuple[str, int] | None:
    """(host, pid) of a temp file named by `tmp_name`; None for other names."""
    parts = name.removesuffix(".tmp").rsplit(".", 3)
    if not name.endswith(".tmp") or len(parts) != 4 or not parts[2].isdigit():
        return None
    return parts[1].replace("_", "."), int(parts[2])


def _nothing(point: str) -> None:
    pass


def fsync_dir(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write(
    dest: Path, data: bytes, tmp_dir: Path, *, durable: bool = True, checkpoints: bool = False
) -> None:
    """Write `data` to `dest` atomically, staging it in `tmp_dir` (same filesystem).

    `checkpoints` marks the writes the crash tests stop at (riddle commits).
    """
    check = reach if checkpoints else _nothing
    tmp = tmp_dir / tmp_name(dest.name)
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
        check("temp-written")
        if durable:
            os.fsync(fd)
        check("flushed")
    except BaseException:
        os.close(fd)
        tmp.unlink(missing_ok=True)
        raise
    os.close(fd)
    try:
        os.rename(tmp, dest)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    if durable:
        fsync_dir(dest.parent)
    check("renamed")
