"""`ingest`: take riddle files from a directory into a spool, as drop-ins, judged first.

The way into a spool that is no directory (a PostgreSQL spool has none to drop files
into), and a way into any spool from a directory that is not its `incoming/`. The rules
are the drop-in rules of the filesystem spool (`spool.dropins`): names other programs
write under (`.name`, `name.tmp`) are never taken; riddle files are told by their name
(`*.json`, `*.jsonl`), and other names are left alone, only counted. An entry of such a
name that is no regular file (a FIFO, a link, a directory) is never opened: it is set
aside at once, for what it is. Each file is judged as it is taken,
by the checks `submit` makes (it parses, it is a valid riddle within the size limits,
its data files are present, readable and inside the data directory, its id is not in
the spool yet): a good one goes into `incoming` as it is, with its modification time
(which gives a file whose name is no id the id it was judged under, `drop_in_id`), and
keeps its name; a bad one is set aside in
`DIR/corrupt/` with `NAME.reason` beside it, one line saying why. A file that fails and
was changed within the grace period is left for the next look instead (it, or a data
file it names, may still be being written), and counted (`Look.young`). A file is
removed from the directory only once the spool holds it or it lies in `corrupt/`.

A `*.jsonl` file that holds more than one document (JSON Lines) is a batch: each line is a
riddle, judged as a file would be (a line without an id gets one made from the file's
name, its time, the line's number and its content, the same at every look), and the
file goes in whole or not at all: one bad line sets the whole file aside, its reason
naming the line (`line 3: riddle.question: must not be empty`). Its riddles go in as
documents of their own, `ID.json`, each keeping where it came from in `dropped_as`
(`batch.jsonl:3`).
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import orjson

from riddlectl.document import codec as documents
from riddlectl.document.ids import made_id
from riddlectl.entries import NotRegular, kind_of, shown
from riddlectl.errors import InvalidData, InvalidDocument, RiddleError
from riddlectl.ops.submit import check
from riddlectl.settings import Settings
from riddlectl.spool.contract import DropIn, Spool
from riddlectl.spool.dropins import ignored, read_drop_in, read_new, stamp_of
from riddlectl.spool.states import Queue

CORRUPT = "corrupt"  # where bad files are set aside, inside the directory ingested
# Files moved into the spool together: one transaction (PostgreSQL) or one flush (files)
# for this many, or for this many bytes, whichever comes first.
BATCH_FILES = 500
BATCH_BYTES = 16 << 20

RIDDLE_FILES = (".json", ".jsonl")  # the names taken, whatever their case

#: Told of each file set aside: the file (as named in DIRECTORY) and the reason.
OnSetAside = Callable[[str, str], object]


@dataclass
class Look:
    """What one look at the directory did: files moved in; files left for a later look
    as younger than the grace (`ready`: when the last of them comes of age, by the
    clock of `time.time`); other names left alone (no riddle files by their name)."""

    moved: int = 0
    young: int = 0
    ready: float = 0.0
    other: int = 0


def riddle_file(name: str) -> bool:
    """Whether `name` is one `ingest` takes: a riddle file by its extension."""
    return name.lower().endswith(RIDDLE_FILES)


def ingest_once(
    spool: Spool,
    directory: Path,
    settings: Settings,
    on_moved: Callable[[str], object] | None = None,
    stop: threading.Event | None = None,
    on_set_aside: OnSetAside | None = None,
) -> Look:
    """Move what is ready in `directory` into the spool's `incoming`, or set it aside,
    until `stop` is set; what was moved, left for later and left alone."""
    try:
        entries = sorted(os.scandir(directory), key=lambda entry: entry.name)
    except NotADirectoryError:
        raise RiddleError("not a directory", where=str(directory)) from None
    except FileNotFoundError:
        raise RiddleError("no such directory", where=str(directory)) from None
    batch = _Batch(spool, directory, on_moved)
    look = Look()
    for entry in entries:
        if stop is not None and stop.is_set():
            break
        if ignored(entry.name) or entry.name == CORRUPT:
            continue
        if not riddle_file(entry.name):
            look.other += 1
            continue
        _take(batch, look, entry, settings, on_set_aside)
    batch.flush()
    look.moved = batch.moved
    return look


class _Batch:
    """Files judged good, moved into the spool together (one transaction, or one flush,
    for up to `BATCH_FILES`), then removed from the directory: a file is gone from it
    only once the spool holds it. Should the spool fail meanwhile, the files stay and
    the next look takes them again (a drop-in of the same name replaces its content)."""

    def __init__(
        self, spool: Spool, directory: Path, on_moved: Callable[[str], object] | None
    ) -> None:
        self.spool, self.directory, self.on_moved = spool, directory, on_moved
        self.entries: list[DropIn] = []
        self.size = 0
        self.ids: set[str] = set()  # ids in this batch: in the spool once it is flushed
        self.files: list[str] = []  # the files of DIRECTORY the entries came from
        self.moved = 0

    def add(self, name: str, taken: list[tuple[DropIn, str]]) -> None:
        """The file `name`, whose riddles are `taken` (each entry with its id): all of a
        file's riddles go into one flush, so that the file is never half taken."""
        for entry, riddle_id in taken:
            self.entries.append(entry)
            self.ids.add(riddle_id)
            self.size += len(entry.raw)
        self.files.append(name)
        if len(self.entries) >= BATCH_FILES or self.size >= BATCH_BYTES:
            self.flush()

    def flush(self) -> None:
        if not self.entries:
            return
        # Under a name any spool can hold (a name that is no UTF-8, as printed): the id
        # it gives is the same (`drop_in_id` reads names so).
        entries = [DropIn(shown(e.name), e.raw, e.stamp) for e in self.entries]
        self.spool.restore_drop_ins(Queue.INCOMING, entries)
        for name in self.files:
            with contextlib.suppress(FileNotFoundError):  # another ingest took it too
                os.unlink(self.directory / name)
            self.moved += 1
            if self.on_moved is not None:
                self.on_moved(name)
        self.entries, self.files, self.size = [], [], 0
        self.ids.clear()


def _take(
    batch: _Batch,
    look: Look,
    entry: os.DirEntry[str],
    settings: Settings,
    on_set_aside: OnSetAside | None,
) -> None:
    """Add the file `entry` to `batch` when it is a riddle; else set it aside, or leave
    it for the next look while it may still be being written (counted in `look`)."""
    name, path = entry.name, batch.directory / entry.name
    try:
        kind = None if entry.is_file(follow_symlinks=False) else _kind(entry)
        if kind is not None:
            raise NotRegular(str(path), kind)
        limits = batch.spool.limits
        # A JSON Lines file may be a batch: as large as a submission of many riddles.
        cap = limits.submission if _lines_named(name) else limits.readable
        raw, info = documents.read_raw(str(path), cap + 1)
        if raw is None:  # swapped for something else since the listing
            raise NotRegular(str(path), kind_of(info.st_mode) or "a special file")
    except FileNotFoundError:
        return  # taken by another ingest meanwhile
    except NotRegular as exc:  # never opened: set aside at once, for what it is
        _tell(batch.directory, name, f"not a regular file ({exc.kind})", on_set_aside)
        return
    except OSError as exc:  # a file that cannot be read (its mode): no riddle either
        _tell(batch.directory, name, f"cannot be read: {exc.strerror or exc}", on_set_aside)
        return
    dropped = DropIn(name, raw, stamp_of(info.st_mtime_ns))
    lines = _json_lines(name, raw)
    if lines is not None and info.st_size > limits.submission:
        why: str | None = (
            f"the file is {info.st_size} bytes, over the {limits.submission}-byte limit of "
            f"a batch (16 x max_document_bytes, {limits.document})"
        )
        taken: list[tuple[DropIn, str]] = []
    elif lines is None:
        riddle_id, why = _judge(batch, dropped, info.st_size, settings)
        taken = [(dropped, riddle_id)]
    else:
        taken, why = _judge_lines(batch, dropped, lines, settings)
    if why is None:
        batch.add(name, taken)
        return
    ready = info.st_mtime + settings.drop_in_grace
    if time.time() < ready:  # may still be being written: looked at again next time
        look.young += 1
        look.ready = max(look.ready, ready)
        return
    _tell(batch.directory, name, why, on_set_aside)


def _kind(entry: os.DirEntry[str]) -> str:
    return kind_of(entry.stat(follow_symlinks=False).st_mode) or "a regular file"


def _tell(directory: Path, name: str, why: str, on_set_aside: OnSetAside | None) -> None:
    """Set `directory/name` aside, and say so unless it went meanwhile."""
    if _set_aside(directory, name, why) and on_set_aside is not None:
        on_set_aside(str(directory / name), why)


def _judge(batch: _Batch, entry: DropIn, size: int, settings: Settings) -> tuple[str, str | None]:
    """The file's riddle id, and why it is no riddle the spool can take (field first,
    one line), or None if it is one."""
    try:
        limits = batch.spool.limits
        riddle = read_drop_in(entry.raw, size, Queue.INCOMING, entry.name, limits, entry.stamp)
        check(riddle, entry.name, settings)
    except (InvalidDocument, InvalidData) as exc:
        return "", _one_line(exc)
    riddle_id = riddle.id or ""
    if riddle_id in batch.ids or batch.spool.find(riddle_id) is not None:
        return riddle_id, f"id: {riddle_id} is already in the spool"
    return riddle_id, None


def _lines_named(name: str) -> bool:
    return name.lower().endswith(".jsonl")


def _json_lines(name: str, raw: bytes) -> list[tuple[int, bytes]] | None:
    """The non-blank lines of a `*.jsonl` file, each with its number (from 1), when it
    holds more than one document: a batch of riddles. None for any other file, and for
    one document written over several lines (it reads as a whole: a file like any other)."""
    if not _lines_named(name):
        return None
    text = raw.removeprefix(documents.BOM)
    lines = documents.numbered_lines(text)
    if len(lines) < 2:
        return None
    try:
        orjson.loads(text)
    except orjson.JSONDecodeError:
        return lines
    return None


def _judge_lines(
    batch: _Batch, entry: DropIn, lines: list[tuple[int, bytes]], settings: Settings
) -> tuple[list[tuple[DropIn, str]], str | None]:
    """The riddles of a JSON Lines file, each as the entry `ID.json` it goes in as, with
    its id; or why the file is none the spool can take (the first bad line, named)."""
    limits = batch.spool.limits
    taken: list[tuple[DropIn, str]] = []
    ids: set[str] = set()
    checked: set[tuple[str, str]] = set()  # data files found good, by (path, type)
    origin = shown(entry.name)
    for number, line in lines:
        place = f"line {number}"
        made = made_id(entry.stamp, b"%s\0%d\0%s" % (origin.encode(), number, line))
        try:
            # Read as the entry `batch.jsonl:3`: that name, no id, is what `dropped_as` keeps.
            riddle = read_new(line, len(line), Queue.INCOMING, f"{origin}:{number}", limits, made)
            check(riddle, place, settings, checked)
        except (InvalidDocument, InvalidData) as exc:
            return [], f"{place}: {_one_line(exc)}"
        riddle_id = riddle.id or made
        if riddle_id in ids:
            return [], f"{place}: id: {riddle_id} is given twice in the file"
        if riddle_id in batch.ids or batch.spool.find(riddle_id) is not None:
            return [], f"{place}: id: {riddle_id} is already in the spool"
        ids.add(riddle_id)
        taken.append((DropIn(f"{riddle_id}.json", documents.dumps(riddle), entry.stamp), riddle_id))
    return taken, None


def _one_line(exc: RiddleError) -> str:
    """The reason without the place (the file is named beside it), as one line."""
    text = f"{exc.field}: {exc.message}" if exc.field else exc.message
    return " ".join(text.splitlines())


def _set_aside(directory: Path, name: str, reason: str) -> bool:
    """Move `directory/name` to `directory/corrupt/` with `NAME.reason` beside it (under a
    name of its own when one of that name lies there already); False when the file went
    meanwhile (another ingest took it)."""
    corrupt = directory / CORRUPT
    try:
        corrupt.mkdir(exist_ok=True)
        target = corrupt / name
        if os.path.lexists(target) or os.path.lexists(corrupt / f"{name}.reason"):
            target = corrupt / f"{name}.{time.time_ns()}"
        reason_path = corrupt / f"{target.name}.reason"
        staged = corrupt / f".{target.name}.reason.tmp"  # a name no look takes
        staged.write_text(f"{reason}\n")
        os.rename(staged, reason_path)
    except OSError as exc:
        raise RiddleError(
            f"cannot set a file aside here: {exc.strerror or exc}", where=str(corrupt)
        ) from None
    try:
        os.rename(directory / name, target)
    except FileNotFoundError:
        with contextlib.suppress(OSError):
            os.unlink(reason_path)
        return False
    return True


def ingest(
    spool: Spool,
    directory: Path,
    settings: Settings,
    *,
    watch: bool = False,
    wait: bool = False,
    poll: float = 1.0,
    stop: threading.Event | None = None,
    on_moved: Callable[[str], object] | None = None,
    on_set_aside: OnSetAside | None = None,
) -> Look:
    """`ingest_once`; with `watch`, again every `poll` s until `stop` is set; with `wait`,
    again once the files left as young come of age, until none is left. What the last
    look left, with every file moved counted."""
    stop = stop or threading.Event()
    look = ingest_once(spool, directory, settings, on_moved, stop, on_set_aside)
    moved = look.moved
    while not stop.is_set():
        if watch:
            pause = poll
        elif wait and look.young:
            pause = min(max(look.ready - time.time(), 0.0) + 0.05, settings.drop_in_grace)
        else:
            break
        if stop.wait(pause):
            break
        look = ingest_once(spool, directory, settings, on_moved, stop, on_set_aside)
        moved += look.moved
    look.moved = moved
    return look
