"""The event log of a filesystem spool: `events.jsonl` in its root, one JSON object per line.

Each event (or group of events) is one `write(2)` on a file opened with `O_APPEND`, so
concurrent writers (agents in several processes) never interleave within a line. When the
log passes `max_bytes` the writer that notices renames it to `events.jsonl.1` (keeping one
old generation), under a lock, so that two writers noticing at once rotate it once.

No event is lost when its writer is killed mid-commit. The events of a commit are first
held in the writer's journal (`journal/HOST.PID.TID`, one per thread, overwritten by each
commit); then the commit is made; then the events are appended to the log and the journal
is cleared. A journal left by a dead process is settled by `recover` (agents run it when
they start and every few seconds, `riddlectl events` before it prints): an event whose
commit took place — its riddle's stored history holds it — is appended unless the log has
it already; the others described commits that never took place, and are dropped.
"""

from __future__ import annotations

import atexit
import contextlib
import fcntl
import os
import threading
import time
from collections.abc import Callable, Collection, Iterator, Sequence
from pathlib import Path
from typing import Any

import orjson

from riddlectl import identity
from riddlectl.identity import alive, hostname
from riddlectl.spool.events import EventLog
from riddlectl.spool.events import Record as Event

DEFAULT_MAX_BYTES = 64 * 1024 * 1024
JOURNALS = "journal"  # the directory of the journals, beside the log
READ_CHUNK = 1 << 20


class FsEventLog(EventLog):
    def __init__(self, path: Path, max_bytes: int = DEFAULT_MAX_BYTES) -> None:
        self.path = Path(path)
        self.max_bytes = max_bytes
        self.rotated = self.path.with_name(self.path.name + ".1")
        self.journals = self.path.with_name(JOURNALS)
        self._held = threading.local()  # the events of this thread's commit, until appended

    def append_many(self, events: Sequence[Event]) -> None:
        """Append events in one `write(2)`: whole lines, never interleaved with others'."""
        if events:
            self._write(_lines(events))

    def _write(self, lines: bytes) -> None:
        try:
            fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o644)
        except OSError:
            return
        try:
            os.write(fd, lines)
            if os.fstat(fd).st_size > self.max_bytes:
                self._rotate(fd)
        except OSError:
            pass
        finally:
            os.close(fd)

    def _rotate(self, fd: int) -> None:
        # Under a lock on the full log, and only if the path still names it: a second
        # writer that noticed the same full log would otherwise move the fresh log over
        # the generation just kept, and lose it.
        fcntl.flock(fd, fcntl.LOCK_EX)
        if os.fstat(fd).st_ino == os.stat(self.path).st_ino:
            os.replace(self.path, self.rotated)

    # -- commits ----------------------------------------------------------------------

    @contextlib.contextmanager
    def committing(
        self, events: Sequence[Event], committed: Callable[[Event], bool]
    ) -> Iterator[None]:
        """Around a commit that `events` describe: held in this thread's journal while it
        runs, appended to the log once it is made. If it raises part way, the events whose
        commit did take place (`committed(event)`) are appended, the others not."""
        if not events:
            yield
            return
        lines = _lines(events)
        journal = _journal(self.journals)
        journal.hold(lines)
        self._held.events = list(events)
        try:
            yield
        except BaseException:
            left, self._held.events = self._held.events, []  # those `made` did not append
            with contextlib.suppress(Exception):
                self.append_many([event for event in left if committed(event)])
            journal.clear()
            raise
        self.made()
        journal.clear()

    def made(self, ids: Collection[str] | None = None) -> None:
        """Append the events of this thread's commit about `ids` (None: all) now, once:
        the spool calls this when their documents are in place, before it lets the
        riddles go."""
        held: list[Event] = getattr(self._held, "events", None) or []
        now = [event for event in held if ids is None or event.get("id") in ids]
        if now:
            self._held.events = [
                event for event in held if not (ids is None or event.get("id") in ids)
            ]
            self.append_many(now)

    def recover(self, committed: Callable[[Event], bool]) -> int:
        """Settle the journals of dead writers on this host (see the module's docstring);
        how many events were appended. A journal that cannot be settled now (another
        process is at it, the spool cannot be read) is left for the next time."""
        try:
            names = os.listdir(self.journals)
        except OSError:
            return 0
        me = _host()
        appended = 0
        for name in names:
            owner = _journal_owner(name)
            if owner is None or owner[0] != me or alive(owner[1]):
                continue
            with contextlib.suppress(OSError):
                appended += self._settle(str(self.journals / name), committed)
        return appended

    def _settle(self, path: str, committed: Callable[[Event], bool]) -> int:
        fd = os.open(path, os.O_RDWR | os.O_CLOEXEC)
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                return 0
            if os.fstat(fd).st_ino != os.stat(path).st_ino:
                return 0  # settled and removed by another process meanwhile
            held = _read_all(fd).split(b"\0", 1)[0]
            lines = [line + b"\n" for line in held.split(b"\n") if line.strip()]
            due = [line for line in lines if _took_place(line, committed)]
            fresh = self._not_logged(due)
            if fresh:
                self._write(b"".join(fresh))
            os.unlink(path)
            return len(fresh)
        finally:
            os.close(fd)

    def _not_logged(self, lines: list[bytes]) -> list[bytes]:
        """Those of `lines` the log (either generation) does not hold yet: a writer may
        have died after appending its events and before clearing its journal."""
        wanted = set(lines)
        for path in (self.rotated, self.path):
            if not wanted:
                break
            with contextlib.suppress(FileNotFoundError), path.open("rb") as handle:
                for line in handle:
                    wanted.discard(line)
        return [line for line in dict.fromkeys(lines) if line in wanted]

    # -- reading ----------------------------------------------------------------------

    def read(self) -> Iterator[Event]:
        """Every event, oldest first, across the rotated generation too."""
        for path in (self.rotated, self.path):
            try:
                with path.open("rb") as handle:
                    for line in handle:
                        if line.strip():
                            yield _parse(line)
            except FileNotFoundError:
                continue

    def tail(self, max_bytes: int = 256 * 1024) -> list[Event]:
        """The last events (those in the last `max_bytes` of the log), newest first."""
        try:
            with self.path.open("rb") as handle:
                size = handle.seek(0, 2)
                handle.seek(max(0, size - max_bytes))
                chunk = handle.read()
        except FileNotFoundError:
            return []
        lines = chunk.split(b"\n")
        if len(chunk) >= max_bytes:
            lines = lines[1:]  # the first line may be cut
        return [_parse(line) for line in reversed(lines) if line.strip()]

    def follow_marked(self, poll: float = 0.2, *, from_end: bool = False) -> Iterator[Event | None]:
        """Every event (`from_end`: from the end of the log as it is now), then new ones
        as they are written (`events --follow`); None each time it caught up.

        Reads open files by offset, so nothing written meanwhile falls between two reads.
        When the log is rotated, what is left of the old one is read before the new one,
        and the old one is still read afterwards for lines written late by a writer that
        opened it just before the rotation.
        """
        current = _Tail.open(self.path)
        if from_end and current is not None:
            current.skip_to_end()
        older = None if from_end else _Tail.open(self.rotated)
        if older is not None and (current is None or older.inode != current.inode):
            yield from older.events()
        if older is not None:
            older.close()
        previous: _Tail | None = None
        while True:
            for tail in (previous, current):
                if tail is not None:
                    yield from tail.events()
            newer = self._newer_than(current)
            if newer is None:
                yield None
                time.sleep(poll)
                continue
            if current is not None:
                # Rotated more than once since the last look: the generation between.
                between = _Tail.open(self.rotated)
                if between is not None and between.inode not in (current.inode, newer.inode):
                    yield from between.events()
                if between is not None:
                    between.close()
            if previous is not None:
                previous.close()
            previous, current = current, newer

    def _newer_than(self, current: _Tail | None) -> _Tail | None:
        """The log, opened, if the path names another file than `current` now."""
        try:
            inode = os.stat(self.path).st_ino
        except FileNotFoundError:
            return None
        if current is not None and inode == current.inode:
            return None
        return _Tail.open(self.path)


class _Tail:
    """An open generation of the log and how far it has been read."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self.inode = os.fstat(fd).st_ino
        self.offset = 0
        self.partial = b""  # a line still being written

    @classmethod
    def open(cls, path: Path) -> _Tail | None:
        try:
            return cls(os.open(path, os.O_RDONLY | os.O_CLOEXEC))
        except FileNotFoundError:
            return None

    def skip_to_end(self) -> None:
        """Read on from the end of the last complete line written so far."""
        size = os.fstat(self.fd).st_size
        start = max(0, size - READ_CHUNK)
        cut = os.pread(self.fd, size - start, start).rfind(b"\n")
        # A line still being written is new; with no line end at all, what is there is too.
        self.offset = start + cut + 1 if cut >= 0 else start

    def events(self) -> Iterator[Event]:
        """The events of the complete lines written since the last call."""
        while chunk := os.pread(self.fd, READ_CHUNK, self.offset):
            self.offset += len(chunk)
            data = self.partial + chunk
            cut = data.rfind(b"\n") + 1
            self.partial = data[cut:]
            for line in data[:cut].splitlines():
                if line.strip():
                    yield _parse(line)

    def close(self) -> None:
        os.close(self.fd)


# -- journals -------------------------------------------------------------------------------


class _Journal:
    """One thread's journal: the lines of the commit under way, ended by a NUL byte.

    Overwritten in place by each commit and cleared by writing the NUL alone, so that a
    commit costs an open, two small writes and a close, not a file created. It is open
    only during a commit: an idle agent holds no file of the spool open for writing
    (which would keep its filesystem from being remounted read-only)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.fd: int | None = None
        self.made = False

    def hold(self, lines: bytes) -> None:
        # Advisory like the log: a commit does not fail for want of its journal.
        try:
            if not self.made:
                self.path.parent.mkdir(exist_ok=True)
            self.fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
            self.made = True
            os.pwrite(self.fd, lines + b"\0", 0)
        except OSError:
            self.clear()

    def clear(self) -> None:
        if self.fd is not None:
            fd, self.fd = self.fd, None
            with contextlib.suppress(OSError):
                os.pwrite(fd, b"\0", 0)
            os.close(fd)

    def discard(self) -> None:
        """Remove the journal if it holds nothing (it is left for `recover` otherwise)."""
        if not self.made or self.fd is not None:
            return
        with contextlib.suppress(OSError), open(self.path, "rb") as handle:
            if handle.read(1) in (b"", b"\0"):
                os.unlink(self.path)


_journals: dict[tuple[int, int, Path], _Journal] = {}
_journals_lock = threading.Lock()


def _journal(directory: Path) -> _Journal:
    """This thread's journal in `directory` (a forked child gets its own)."""
    key = (identity.pid(), threading.get_native_id(), directory)
    journal = _journals.get(key)
    if journal is None:
        with _journals_lock:
            if not _journals:
                atexit.register(discard_journals)
            journal = _journals[key] = _Journal(directory / f"{_host()}.{key[0]}.{key[1]}")
    return journal


def discard_journals() -> None:
    """Remove this process's journals that hold nothing (at exit)."""
    with _journals_lock:
        for (pid, _, _), journal in list(_journals.items()):
            if pid == identity.pid():
                journal.discard()


def _host() -> str:
    return hostname().replace(".", "_")


def _journal_owner(name: str) -> tuple[str, int] | None:
    parts = name.rsplit(".", 2)
    if len(parts) != 3 or not parts[1].isdigit():
        return None
    return parts[0], int(parts[1])


def _took_place(line: bytes, committed: Callable[[Event], bool]) -> bool:
    try:
        event = orjson.loads(line)
    except orjson.JSONDecodeError:
        return False  # torn by the death of its writer, before its commit began
    return isinstance(event, dict) and committed(event)


def _read_all(fd: int) -> bytes:
    chunks: list[bytes] = []
    read = 0
    while chunk := os.pread(fd, READ_CHUNK, read):
        chunks.append(chunk)
        read += len(chunk)
    return b"".join(chunks)


def _lines(events: Sequence[Event]) -> bytes:
    return b"".join(orjson.dumps(event, option=orjson.OPT_NON_STR_KEYS) + b"\n" for event in events)


def _parse(line: bytes) -> dict[str, Any]:
    try:
        value = orjson.loads(line)
    except orjson.JSONDecodeError:
        return {"outcome": "corrupt", "error": "unreadable event line"}
    return value if isinstance(value, dict) else {"value": value}
