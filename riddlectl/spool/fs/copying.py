"""What `copy` reads out of a directory spool and writes into one: each queue's entries
as riddles stored or as drop-ins (with their modification times, which give an entry
whose name is no id its id), and the input set aside with its reasons."""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING

from riddlectl.document import codec as documents
from riddlectl.document.codec import Limits
from riddlectl.entries import kind_of
from riddlectl.spool.contract import Corrupt, DropIn, Unreadable
from riddlectl.spool.dropins import check_name, shown_name, stamp_of
from riddlectl.spool.fs import atomic
from riddlectl.spool.fs.inbox import iter_entries

if TYPE_CHECKING:
    from riddlectl.document.model import Riddle


def contents(directory: str, queue: str, limits: Limits) -> Iterator[Riddle | DropIn | Unreadable]:
    """The entries of a queue directory: a riddle a commit or a submission stored (`ID.json`
    holding the riddle `ID` at `rev` 1 or more) as its document, anything else as the
    drop-in it is; what cannot be read, with the reason."""
    for entry in iter_entries(directory):
        path = f"{directory}/{entry.name}"
        where = f"{queue}/{shown_name(entry.name)}"
        try:
            raw, info = documents.read_raw(path, limits.readable + 1)
            if raw is not None and len(raw) < info.st_size:  # a drop-in over the limit: whole
                raw, info = documents.read_raw(path, info.st_size + 1)
        except FileNotFoundError:
            continue  # gone meanwhile
        except OSError as exc:
            yield Unreadable(where, _why(path, exc))
            continue
        if raw is None:
            yield Unreadable(where, f"not a regular file ({kind_of(info.st_mode)})")
            continue
        stored = _stored(raw, entry.name, where, limits)
        yield stored if stored is not None else DropIn(entry.name, raw, stamp_of(info.st_mtime_ns))


def _stored(raw: bytes, name: str, where: str, limits: Limits) -> Riddle | None:
    """The riddle `raw` is when it was stored by the spool as `name`; None for a drop-in."""
    try:
        riddle = documents.parse(raw, where, None, limits.readable, len(raw))
    except Exception:  # whatever it is, it is no stored riddle
        return None
    return riddle if riddle.rev >= 1 and name == f"{riddle.id}.json" else None


def _why(path: str, exc: OSError) -> str:
    try:
        kind = kind_of(os.lstat(path).st_mode)
    except OSError:
        kind = None
    return f"not a regular file ({kind})" if kind else exc.strerror or str(exc)


def restore_drop_ins(
    directory: str, entries: Sequence[DropIn], tmp_dir: str, durable: bool
) -> None:
    """Write each drop-in into `directory` under its name, with its stamp as its
    modification time."""
    for entry in entries:
        check_name(entry.name)
    files = [(f"{directory}/{entry.name}", entry.raw) for entry in entries]
    mtimes = [entry.stamp * 1_000_000 for entry in entries]
    atomic.write_many(files, tmp_dir, durable=durable, mtimes=mtimes)


def restore_set_aside(
    directory: str, entries: Sequence[tuple[Corrupt, bytes]], tmp_dir: str, durable: bool
) -> None:
    """Write each set-aside entry into `directory` (`corrupt/`), its reason beside it."""
    files: list[tuple[str, bytes]] = []
    for kept, raw in entries:
        check_name(kept.name)
        files.append((f"{directory}/{kept.name}.reason", f"{kept.reason}\n".encode()))
        files.append((f"{directory}/{kept.name}", raw))
    atomic.write_many(files, tmp_dir, durable=durable)
