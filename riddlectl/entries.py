"""What a directory entry is, told without opening it; and opening only regular files.

Whatever lies in a place riddlectl reads (a spool's queues, `corrupt/`, `cache/`, `tmp/`,
a directory `ingest` takes from, the data directory) may be anything another program
put there. A FIFO waits on a read for a writer that never comes; a symbolic link leads
anywhere, out of the spool too; a directory or a socket is no file at all. So an entry
is looked at with `lstat` before anything else, and opened only with O_NOFOLLOW and
O_NONBLOCK, its kind checked again on the open descriptor: an entry swapped for another
kind in between is refused, never waited on nor followed.
"""

from __future__ import annotations

import errno
import os
import stat

_KINDS = {
    stat.S_IFIFO: "a FIFO",
    stat.S_IFDIR: "a directory",
    stat.S_IFSOCK: "a socket",
    stat.S_IFLNK: "a symbolic link",
    stat.S_IFCHR: "a device",
    stat.S_IFBLK: "a device",
}

READ_FLAGS = os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_CLOEXEC


class NotRegular(OSError):
    """The entry is no regular file: `kind` says what it is (`a FIFO`, …)."""

    def __init__(self, path: str, kind: str) -> None:
        super().__init__(errno.EINVAL, f"not a regular file ({kind})", path)
        self.kind = kind


def shown(name: str) -> str:
    """An entry's name as printed: a name that is no UTF-8 (its odd bytes decoded as
    surrogates, as Python reads them) with those bytes as `\\xNN`, which any text output
    and JSON can carry."""
    return name.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")


def present(path: str) -> bool:
    """Whether `path` names an entry, following links as `os.path.exists` does, but
    without the exception each miss costs it (two thirds of its time): a claim asks this
    of every other queue."""
    try:
        return os.access(path, os.F_OK)
    except ValueError:  # a NUL in the path: nothing can be there
        return False


def kind_of(mode: int) -> str | None:
    """What an entry of `mode` is, said for a person; None for a regular file."""
    if stat.S_ISREG(mode):
        return None
    return _KINDS.get(stat.S_IFMT(mode), "a special file")


def kind(path: str | os.PathLike[str]) -> str | None:
    """What the entry at `path` is, by `lstat` (a link is a link, wherever it leads);
    None for a regular file. `FileNotFoundError` when there is none."""
    return kind_of(os.lstat(path).st_mode)


def open_regular(path: str | os.PathLike[str]) -> tuple[int, os.stat_result]:
    """A descriptor open for reading on the regular file at `path`, with its `fstat`;
    `NotRegular` for anything else (`FileNotFoundError`, `PermissionError` as `open`)."""
    try:
        fd = os.open(path, READ_FLAGS)
    except OSError as exc:
        # A link (ELOOP), a socket (ENXIO): told apart by what the entry is.
        if exc.errno in (errno.ELOOP, errno.ENXIO, errno.EOPNOTSUPP):
            found = kind(path)
            if found is not None:
                raise NotRegular(os.fspath(path), found) from None
        raise
    info = os.fstat(fd)
    found = kind_of(info.st_mode)
    if found is not None:
        os.close(fd)
        raise NotRegular(os.fspath(path), found)
    return fd, info


def read_regular(path: str | os.PathLike[str], limit: int) -> bytes:
    """At most `limit` bytes of the regular file at `path` (see `open_regular`)."""
    fd, info = open_regular(path)
    try:
        chunks, total = [], 0
        while total < limit:
            chunk = os.read(fd, min(limit - total, max(info.st_size + 1 - total, 4096)))
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)
