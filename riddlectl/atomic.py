"""Atomic, durable file writes: temp file, flush, fsync, rename, fsync the directory.

A reader sees the old file or the new one, never a part of either; after `write` returns
(with `durable=True`) the new file survives a power cut.
"""

from __future__ import annotations

import itertools
import os
from pathlib import Path

_counter = itertools.count()


def fsync_dir(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write(dest: Path, data: bytes, tmp_dir: Path, *, durable: bool = True) -> None:
    """Write `data` to `dest` atomically, staging it in `tmp_dir` (same filesystem)."""
    tmp = tmp_dir / f"{dest.name}.{os.getpid()}.{next(_counter)}.tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
        if durable:
            os.fsync(fd)
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
