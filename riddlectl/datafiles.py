"""Data files named by riddles: resolved safely inside the data directory, read bounded.

A `file_plain` is a path relative to the data directory. It may not be absolute, may not
contain `..`, and may not resolve (through symbolic links) outside the directory; the file
must exist, be a regular file within the size limit, and for `text` items be UTF-8. Every
check happens before the content is read, so a hostile path never reads its target.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path, PurePosixPath

from riddlectl.errors import InvalidData

TEXT_TYPES = frozenset({"text", "csv", "json"})


def resolve(
    data_dir: Path, file_plain: str, where: str = "data", field: str = "file_plain"
) -> Path:
    """The real path of a data item, or `InvalidData` saying why it cannot be used."""
    if not file_plain or "\x00" in file_plain:
        raise InvalidData("empty or NUL in path", where=where, field=field)
    relative = PurePosixPath(file_plain)
    if relative.is_absolute():
        raise InvalidData(
            f"{file_plain!r} is absolute; paths are relative to the data directory",
            where=where,
            field=field,
        )
    if ".." in relative.parts:
        raise InvalidData(f"{file_plain!r} contains '..'", where=where, field=field)
    # os.path on strings, not pathlib: this runs for every data item in every stage.
    base = os.path.realpath(data_dir)
    target = os.path.realpath(os.path.join(base, file_plain))
    inside = base if base.endswith(os.sep) else base + os.sep
    if target != base and not target.startswith(inside):
        raise InvalidData(
            f"{file_plain!r} resolves outside the data directory", where=where, field=field
        )
    try:
        mode = os.stat(target).st_mode
    except (FileNotFoundError, NotADirectoryError):
        raise InvalidData(
            f"{file_plain!r} does not exist in {data_dir}", where=where, field=field
        ) from None
    if not stat.S_ISREG(mode):
        raise InvalidData(f"{file_plain!r} is not a regular file", where=where, field=field)
    return Path(target)


def read(
    path: Path, item_type: str, max_bytes: int, where: str = "data", field: str = "file_plain"
) -> bytes:
    """The content of a resolved data file, refusing oversize and (for text) non-UTF-8."""
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    with os.fdopen(fd, "rb") as handle:
        content = handle.read(max_bytes + 1)
    if len(content) > max_bytes:
        raise InvalidData(
            f"{path.name} is over the {max_bytes}-byte limit", where=where, field=field
        )
    if item_type in TEXT_TYPES:
        try:
            content.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise InvalidData(
                f"{path.name} is not UTF-8 text (byte {exc.start})", where=where, field=field
            ) from None
    return content


def check(
    data_dir: Path, file_plain: str, item_type: str, max_bytes: int, where: str, field: str
) -> None:
    """Every check `read` makes, for submit-time refusal (the content is read to check UTF-8)."""
    path = resolve(data_dir, file_plain, where, field)
    if path.stat().st_size > max_bytes:
        raise InvalidData(
            f"{file_plain!r} is over the {max_bytes}-byte limit", where=where, field=field
        )
    read(path, item_type, max_bytes, where, field)
