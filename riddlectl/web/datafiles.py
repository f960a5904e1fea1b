"""The data directory as the form sees it: names to complete, and uploads into it.

Completion lists regular files below the data directory only (links leading out of it
are not followed). An upload is stored under `uploads/` with a sanitised name, no larger
than the data size limit, written to a temporary file and renamed into place, so that
no half-written file is ever seen by an agent; a name already taken by other content
gets a numbered suffix.
"""

from __future__ import annotations

import contextlib
import os
import re
import secrets
from collections.abc import Iterator
from pathlib import Path

from riddlectl.errors import InvalidData

UPLOADS = "uploads"
MAX_LISTED = 50
MAX_WALKED = 20000  # entries looked at per completion, so a huge tree stays quick
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


def complete(data_dir: Path, prefix: str) -> list[str]:
    """Up to 50 data file names (relative, `/`-separated) starting with `prefix`."""
    prefix = prefix.removeprefix("./")
    found = [name for name in _files(Path(data_dir)) if name.startswith(prefix)]
    return sorted(found)[:MAX_LISTED]


def _files(base: Path) -> Iterator[str]:
    if not base.is_dir():
        return
    real = os.path.realpath(base)
    walked = 0
    for top, dirs, files in os.walk(base):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        for name in sorted(files):
            walked += 1
            if walked > MAX_WALKED:
                return
            path = os.path.join(top, name)
            inside = os.path.realpath(path).startswith(real + os.sep)
            if name.startswith(".") or not inside or not os.path.isfile(path):
                continue
            yield os.path.relpath(path, base).replace(os.sep, "/")


def safe_name(name: str) -> str:
    """A file name that stays one name in the data directory: no path, no leading dot,
    only letters, digits, `.`, `_` and `-`."""
    base = name.replace("\\", "/").rsplit("/", 1)[-1]
    cleaned = _UNSAFE.sub("_", base).lstrip(".-")[:100]
    return cleaned or "upload"


def store(data_dir: Path, name: str, chunks: Iterator[bytes], limit: int) -> str:
    """Store an upload; its path relative to the data directory (as `file_plain` takes
    it). `InvalidData` when it is over `limit` bytes (nothing is kept then)."""
    folder = Path(data_dir) / UPLOADS
    folder.mkdir(parents=True, exist_ok=True)
    fd, temp = _temporary(folder)
    try:
        size = 0
        with os.fdopen(fd, "wb") as out:
            for chunk in chunks:
                size += len(chunk)
                if size > limit:
                    raise InvalidData(f"over the size limit of {limit} bytes", where=name)
                out.write(chunk)
        return f"{UPLOADS}/{_place(folder, safe_name(name), temp)}"
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temp)


def _temporary(folder: Path) -> tuple[int, str]:
    """A new hidden file in `folder` for an upload, with the mode any file made there
    gets (0666 less the umask), not `mkstemp`'s 0600: agents running as another user of
    the group read the data directory."""
    for _ in range(100):
        path = os.path.join(folder, f".upload-{secrets.token_hex(8)}")
        try:
            flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
            return os.open(path, flags, 0o666), path
        except FileExistsError:
            continue
    raise FileExistsError(f"{folder}: no free temporary name")


def _place(folder: Path, name: str, temp: str) -> str:
    """Rename `temp` to `name` in `folder`, or `stem-N.ext` when `name` holds something
    else; the name used. The same content again reuses its name."""
    stem, dot, ext = name.rpartition(".") if "." in name else (name, "", "")
    content = Path(temp).read_bytes()
    for n in range(1000):
        candidate = name if n == 0 else f"{stem}-{n}{dot}{ext}"
        target = folder / candidate
        try:
            os.link(temp, target)  # never replaces what is there
            return candidate
        except FileExistsError:
            if target.is_file() and target.read_bytes() == content:
                return candidate
    raise InvalidData("too many uploads of that name", where=name)
