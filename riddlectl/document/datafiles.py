"""Data files named by riddles: resolved safely inside the data directory, read bounded.

A `file_plain` is a path relative to the data directory. It may not be absolute, may not
contain `..`, and may not resolve (through symbolic links) outside the directory; the file
must exist, be a regular file within the size limit, and for the text types (`text`, `csv`,
`json`: `datatypes.text_types()`) be UTF-8; other types (`image`, `audio`, one's own) are
bytes, never required to be UTF-8. Every check happens before the content is read, so a
hostile path never reads its target.
"""

from __future__ import annotations

import functools
import os
import stat
from pathlib import Path

from riddlectl.document.codec import read_at_most
from riddlectl.document.datatypes import text_types
from riddlectl.entries import NotRegular, open_regular, shown
from riddlectl.errors import InvalidData

__all__ = ["check", "read", "real_dir", "resolve", "resolve_stat", "text_types"]


def resolve(
    data_dir: Path, file_plain: str, where: str = "data", field: str | None = "file_plain"
) -> Path:
    """The real path of a data item, or `InvalidData` saying why it cannot be used."""
    return Path(resolve_stat(data_dir, file_plain, where, field)[0])


def resolve_stat(
    data_dir: Path | str,
    file_plain: str,
    where: str = "data",
    field: str | None = "file_plain",
) -> tuple[str, os.stat_result]:
    """`resolve`, as a string, with the file's `stat` (for caches keyed by it)."""
    if not file_plain or "\x00" in file_plain:
        raise InvalidData("empty or NUL in path", where=where, field=field)
    if shown(file_plain) != file_plain:  # odd bytes, as Python reads a name that is no UTF-8
        raise InvalidData(f"{shown(file_plain)!r} is no UTF-8 name", where=where, field=field)
    if file_plain.startswith("/"):
        raise InvalidData(
            f"{file_plain!r} is absolute; paths are relative to the data directory",
            where=where,
            field=field,
        )
    parts = [p for p in file_plain.split("/") if p not in ("", ".")]
    if ".." in parts:
        raise InvalidData(f"{file_plain!r} contains '..'", where=where, field=field)
    base = real_dir(str(data_dir))
    # Named by the absolute path looked for: a relative data directory means nothing to a
    # user who ran the command from elsewhere, or to a reader of a failed riddle's error.
    looked_for = os.path.join(os.path.abspath(data_dir), *parts)
    missing = InvalidData(f"{looked_for} does not exist", where=where, field=field)
    try:
        target, info = _walk(base, parts)
    except (FileNotFoundError, NotADirectoryError):
        raise missing from None
    if target != base and not target.startswith(base.rstrip(os.sep) + os.sep):
        raise InvalidData(
            f"{looked_for} resolves outside the data directory {os.path.abspath(data_dir)}",
            where=where,
            field=field,
        )
    try:
        info = info or os.stat(target)
    except (FileNotFoundError, NotADirectoryError):
        raise missing from None
    if not stat.S_ISREG(info.st_mode):
        raise InvalidData(f"{looked_for} is not a regular file", where=where, field=field)
    return target, info


@functools.lru_cache(maxsize=16)
def real_dir(data_dir: str) -> str:
    """The data directory's real path, looked up once per process: the data items it
    holds are resolved for every riddle in every stage."""
    return os.path.realpath(data_dir)


def _walk(base: str, parts: list[str]) -> tuple[str, os.stat_result | None]:
    """(real path, stat) of `base/parts...`: one `lstat` per part below the (already real)
    base, rather than `realpath`'s one per part of the whole path. A symbolic link on the
    way hands over to `realpath`, which follows it wherever it leads; the stat is then
    the caller's to take, once the target is known to be inside."""
    if not parts:
        return base, None
    path = base.rstrip(os.sep)
    for part in parts:
        path = f"{path}/{part}"
        info = os.lstat(path)
        if stat.S_ISLNK(info.st_mode):
            return os.path.realpath(os.path.join(base, *parts)), None
    return path, info


def read(
    path: Path | str,
    item_type: str,
    max_bytes: int,
    where: str = "data",
    field: str | None = "file_plain",
) -> bytes:
    """The content of a resolved data file, refusing oversize and (for the text types)
    non-UTF-8."""
    try:  # resolved and checked already: a FIFO put in its place since is not waited on
        fd, info = open_regular(path)
    except NotRegular as exc:
        raise InvalidData(
            f"{os.path.basename(path)} is not a regular file ({exc.kind})", where=where, field=field
        ) from None
    try:
        content = read_at_most(fd, max_bytes + 1, info.st_size)
    finally:
        os.close(fd)
    if len(content) > max_bytes:
        raise InvalidData(
            f"{os.path.abspath(path)} is over the {max_bytes}-byte limit", where=where, field=field
        )
    if item_type in text_types():
        try:
            content.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise InvalidData(
                f"{os.path.abspath(path)} is not UTF-8 text (byte {exc.start})",
                where=where,
                field=field,
            ) from None
    return content


def check(
    data_dir: Path,
    file_plain: str,
    item_type: str,
    max_bytes: int,
    where: str,
    field: str | None,
) -> None:
    """Every check `read` makes, for submit-time refusal: the content of a text type is
    read to check that it is UTF-8; a binary one's is not read at all."""
    path = resolve(data_dir, file_plain, where, field)
    if path.stat().st_size > max_bytes:
        raise InvalidData(f"{path} is over the {max_bytes}-byte limit", where=where, field=field)
    if item_type in text_types():
        read(path, item_type, max_bytes, where, field)
