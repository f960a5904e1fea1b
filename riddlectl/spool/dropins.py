"""Riddles dropped into a queue by another program: which names count, and how one is read.

The rules every spool applies alike, whatever stores the bytes: names other programs use
while writing are never read; a file without an `id` takes its name's stem; a document's
own `id` wins over its name; a new riddle dropped into `incoming/` is held to the limit
for new riddles, as a submission is. What fails to read is set aside with the reason
(`Spool.set_aside`).
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from riddlectl.document import codec as documents
from riddlectl.document.codec import Limits
from riddlectl.document.ids import ID_RE, new_id
from riddlectl.errors import InvalidDocument
from riddlectl.spool.states import Queue

if TYPE_CHECKING:  # the models load when a document is read, not for every command
    from riddlectl.document.model import Riddle


def check_name(name: str) -> None:
    """A drop-in's name is one name: no path, not `.` or `..` (`ValueError`)."""
    if not name or "/" in name or name in (".", ".."):
        raise ValueError(f"not a name for a drop-in: {name!r}")


def ignored(name: str) -> bool:
    """Names other programs use while writing: never read as riddles."""
    return name.startswith(".") or name.endswith(".tmp")


def drop_in_stem(name: str) -> str | None:
    """The id a file's name gives: its name less its last extension, whatever that is
    (`notes.txt` → `notes`, `UPPER.JSON` → `UPPER`); None when that is no valid id."""
    stem, _ = os.path.splitext(name)
    return stem if ID_RE.fullmatch(stem) else None


def read_drop_in(raw: bytes, size: int, queue: Queue, name: str, limits: Limits) -> Riddle:
    """The riddle in the `size` bytes of the entry `name` of `queue` (`raw`: read up to
    `limits.readable` + 1), or `InvalidDocument` saying why it is none."""
    # A stem that is no valid id gives way to a generated id, as `submit` gives one.
    return _read(raw, size, queue, name, limits, drop_in_stem(name) or new_id())


def _read(
    raw: bytes, size: int, queue: Queue, name: str, limits: Limits, default_id: str | None
) -> Riddle:
    where = f"{queue.value}/{name}"
    riddle = documents.parse(raw, where, default_id, limits.readable, size)
    # A drop-in (never stored by a commit, so rev 0) is a new riddle: held to the same
    # share of the limit as a submission, or it could not grow as it moves on.
    if queue is Queue.INCOMING and riddle.rev == 0 and len(raw) > limits.new_riddle:
        reason = limits.too_large(len(raw), limits.new_riddle, " for a new riddle")
        raise InvalidDocument(reason, where=where)
    return riddle


def peek_drop_in(raw: bytes, size: int, queue: Queue, name: str, limits: Limits) -> Riddle | None:
    """The riddle a drop-in not yet taken in by a claim is, for readers (`status`,
    `show`, `find`): under its own id, else its name's stem. None when it is none yet: it
    does not read (it may still be being written; a claim sets it aside once its grace
    is over), or it has neither an id nor a name that gives one (its id is made when an
    agent takes it in)."""
    if ignored(name):
        return None
    try:
        riddle = _read(raw, size, queue, name, limits, drop_in_stem(name))
    except Exception:  # whatever it is, it is no riddle yet: a claim will say why
        return None
    return riddle if riddle.id is not None else None
