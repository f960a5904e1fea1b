"""Riddles dropped into a queue by another program: which names count, and how one is read.

The rules every spool applies alike, whatever stores the bytes: names other programs use
while writing are never read; a file without an `id` takes its name's stem, or, when that
is no valid id, an id made for it (`drop_in_id`); a document's own `id` wins over its
name; a riddle dropped in under a name other than `ID.json` keeps that name in
`dropped_as`; a new riddle dropped into `incoming/` is held to the limit for new riddles,
as a submission is. What fails to read is set aside with the reason (`Spool.set_aside`).
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from riddlectl.document import codec as documents
from riddlectl.document.codec import Limits
from riddlectl.document.ids import ID_RE, made_id
from riddlectl.entries import shown
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


shown_name = shown  # a name as a document and a database can hold it


def entry_of(name: str) -> str:
    """The entry a queue's listing (`Spool.ids`) gives the file `name`: `ID` for
    `ID.json`, else the whole name. Never two entries for two names: `weird name` and
    `weird name.json` are two drop-ins, listed as themselves."""
    stem = name[:-5] if name.endswith(".json") else None
    return stem if stem is not None and ID_RE.fullmatch(stem) else name


def names_of(entry: str) -> tuple[str, ...]:
    """The file names an entry of a listing may stand for, the stored `ID.json` first
    (the inverse of `entry_of`)."""
    return (f"{entry}.json", entry) if ID_RE.fullmatch(entry) else (entry,)


def drop_in_id(name: str, raw: bytes, stamp: int) -> str:
    """The id of a drop-in that has no `id` of its own: its name's stem when that is a
    valid id; else one made for it, of the same form as a generated id, from when it was
    dropped in (`stamp`, ms: a file's modification time, a row's time of arrival) and a
    hash of its name and content.

    Made, not drawn: every reader on every host makes the same id of the same drop-in, so
    the id `status` shows at the first look is the one `show` finds, an agent stores the
    riddle under, and `ingest` and `copy` carry over (with the stamp). A drop-in written
    again is another drop-in, with another id."""
    stem = drop_in_stem(name)
    if stem is not None:
        return stem
    return made_id(stamp, shown_name(name).encode() + b"\0" + raw)


def stamp_of(mtime_ns: int) -> int:
    """A file's modification time (ns) as the stamp of `drop_in_id` (ms)."""
    return mtime_ns // 1_000_000


def read_drop_in(
    raw: bytes, size: int, queue: Queue, name: str, limits: Limits, stamp: int
) -> Riddle:
    """The riddle in the `size` bytes of the entry `name` of `queue` (`raw`: read up to
    `limits.readable` + 1; `stamp`: when it was dropped in, see `drop_in_id`), or
    `InvalidDocument` saying why it is none: the reason a file set aside keeps."""
    try:
        return read_new(raw, size, queue, name, limits, drop_in_id(name, raw, stamp))
    except InvalidDocument as exc:
        where = f"{queue.value}/{shown_name(name)}"
        several = _riddles_in(raw, where, limits)
        if several < 2:
            raise
        # What a person means by a file of JSON Lines (or an array) is several riddles:
        # said so, with the command that takes them, rather than where the parse stopped.
        reason = (
            f"{several} riddles in one file (JSON Lines or an array), where a drop-in holds "
            "one: `riddlectl submit FILE` takes each of them, as does `riddlectl corrupt "
            "resubmit NAME` of a spool's set-aside file"
        )
        raise InvalidDocument(reason, where=where) from exc


def read_entry(raw: bytes, size: int, where: str, name: str, limits: Limits, stamp: int) -> Riddle:
    """The document of an entry `name` of a queue, stored or dropped in (`where`: how an
    error names it), under the id `drop_in_id` gives when it has none of its own."""
    riddle = documents.parse(raw, where, drop_in_id(name, raw, stamp), limits.readable, size)
    return named(riddle, name)


def named(riddle: Riddle, name: str) -> Riddle:
    """`riddle`, read from the entry `name`, with that name kept in `dropped_as` when it
    is not `ID.json`: how a person finds the riddle a file they dropped in became."""
    if name != f"{riddle.id}.json" and "dropped_as" not in riddle.extensions():
        riddle.extensions()["dropped_as"] = shown_name(name)
    return riddle


def read_new(
    raw: bytes, size: int, queue: Queue, name: str, limits: Limits, default_id: str
) -> Riddle:
    """A new riddle read from `raw`, which came as `name` (kept in `dropped_as` when it is
    not `ID.json`), under `default_id` when it names none: held to a new riddle's share
    of the document size limit."""
    where = f"{queue.value}/{shown_name(name)}"
    riddle = named(documents.parse(raw, where, default_id, limits.readable, size), name)
    # A drop-in (never stored by a commit, so rev 0) is a new riddle: held to the same
    # share of the limit as a submission, or it could not grow as it moves on.
    if queue is Queue.INCOMING and riddle.rev == 0 and len(raw) > limits.new_riddle:
        reason = limits.too_large(len(raw), limits.new_riddle, " for a new riddle")
        raise InvalidDocument(reason, where=where)
    return riddle


def _riddles_in(raw: bytes, where: str, limits: Limits) -> int:
    """How many riddle objects `raw` holds read as a submission (one object, an array, or
    JSON Lines); 0 when it is not one, or holds anything but objects."""
    try:
        docs = documents.split_submission(raw, where, limits.readable)
    except InvalidDocument:
        return 0
    return len(docs) if all(isinstance(doc, dict) for _, doc in docs) else 0


def peek_drop_in(
    raw: bytes, size: int, queue: Queue, name: str, limits: Limits, stamp: int
) -> Riddle | None:
    """The riddle a drop-in not yet taken in by a claim is, for readers (`status`,
    `show`, `find`): under the id it will be stored under (`read_drop_in`). None when it
    is none yet: it does not read (it may still be being written; a claim sets it aside
    once its grace is over)."""
    if ignored(name):
        return None
    try:  # `read_new`: a reader drops the reason, so it need not be made clearer
        return read_new(raw, size, queue, name, limits, drop_in_id(name, raw, stamp))
    except Exception:  # whatever it is, it is no riddle yet: a claim will say why
        return None
