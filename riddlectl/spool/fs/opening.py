"""Opening a filesystem spool: the checks that make a directory a usable spool."""

from __future__ import annotations

import os
from pathlib import Path
from stat import S_ISDIR

from riddlectl.document.codec import Limits
from riddlectl.errors import SpoolUnusable
from riddlectl.identity import Actor
from riddlectl.spool.fs.events import DEFAULT_MAX_BYTES
from riddlectl.spool.fs.fsspool import DROP_IN_GRACE, FsSpool
from riddlectl.spool.unusable import NO_SPOOL, spool_error


def open_fs(
    root: Path,
    *,
    create: bool = True,
    writable: bool = False,
    actor: Actor | None = None,
    durable: bool = True,
    drop_in_grace: float | None = None,
    limits: Limits | None = None,
    events_max_bytes: int | None = None,
) -> FsSpool:
    """The spool in the directory `root` (see `riddlectl.spool.open_spool`)."""
    spool = FsSpool(
        root,
        durable=durable,
        actor=actor,
        drop_in_grace=DROP_IN_GRACE if drop_in_grace is None else drop_in_grace,
        limits=limits,
        events_max_bytes=DEFAULT_MAX_BYTES if events_max_bytes is None else events_max_bytes,
    )
    try:
        if not create:
            check_spool(root)
        if create or writable:
            if writable and root.is_dir():
                check_writable(root)
            spool.init()
            if writable:
                check_writable(root)
    except OSError as exc:
        raise spool_error(exc, root) from None
    return spool


def check_spool(root: Path) -> None:
    """`SpoolUnusable` unless `root` is a readable directory with the spool's layout."""
    try:
        info = os.stat(root)
    except FileNotFoundError:
        raise SpoolUnusable(NO_SPOOL, where=str(root)) from None
    if not S_ISDIR(info.st_mode):
        raise SpoolUnusable("not a directory, so not a spool", where=str(root))
    os.listdir(root)  # PermissionError for a spool this user may not read
    # incoming/ is where users drop riddles: the one directory every spool has. Writers
    # make the rest of the layout if it is missing (see FsSpool.init).
    if not (root / "incoming").is_dir():
        raise SpoolUnusable(
            "not a spool (it has no incoming/); create one with riddlectl init",
            where=str(root),
        )


def check_writable(root: Path) -> None:
    if os.statvfs(root).f_flag & os.ST_RDONLY:
        raise SpoolUnusable("cannot write: the file system is read-only", where=str(root))
    if not os.access(root, os.W_OK | os.X_OK):
        raise SpoolUnusable("cannot write: Permission denied", where=str(root))
