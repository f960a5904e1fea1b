"""Which files of a queue directory to try claiming next, without rescanning every time.

A scan lists the directory and reads, once per file version, what ordering needs
(priority, created, retry_at): every commit writes a new inode, so (name, inode) keys a
cache that never goes stale. The ordered backlog of one scan then serves several claims;
the directory is listed again when the backlog runs out or is older than `RESCAN`, so a
queue of 20,000 costs one listing every quarter second, not one per claim. A newly
arrived riddle of higher priority therefore waits at most `RESCAN` to jump the line.
When a queue holds no more files than one claim takes, no header is read at all: the
claim reads every file anyway and orders what it took (the common case at low load).
"""

from __future__ import annotations

import os
import time
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass

import orjson

from riddlectl.document.codec import MAX_DOCUMENT_BYTES, read_raw
from riddlectl.spool.dropins import ignored

RESCAN = 0.25  # seconds a backlog is trusted before the directory is listed again
ARRIVALS_KEPT = 16  # names of arrivals remembered per directory, for the next claim
UNREADABLE = 2**62  # the priority of a file whose header cannot be read: it goes first


def list_files(directory: str) -> list[os.DirEntry[str]]:
    return list(iter_files(directory))


def iter_files(directory: str) -> Iterator[os.DirEntry[str]]:
    """The regular files of a directory, less ignored names: the riddles. Told by the
    entry's type, without a stat; a symbolic link is not followed, and no riddle."""
    return (e for e in iter_entries(directory) if e.is_file(follow_symlinks=False))


def iter_entries(directory: str) -> Iterator[os.DirEntry[str]]:
    """Every entry of a directory but ignored names, whatever its type: what a claim must
    look at, if only to set aside what is not a riddle."""
    try:
        with os.scandir(directory) as entries:
            yield from (e for e in entries if not ignored(e.name))
    except FileNotFoundError:
        return


# The names a wake-up reported as arriving, per directory (`wakeups` fills it, from the
# inotify events, which carry the name): a claim at low load tries them without listing
# the directory, whose listing waits while the agent that renamed the file into it is
# still flushing that directory (the flush holds the directory's lock).
_arrivals: dict[str, deque[str]] = {}


def arrived(directory: str, name: str) -> None:
    """A file named `name` arrived in `directory` (a hint: it may be gone already)."""
    names = _arrivals.get(directory)
    if names is None:
        names = _arrivals.setdefault(directory, deque(maxlen=ARRIVALS_KEPT))
    names.append(name)


def _take_arrivals(directory: str, limit: int) -> list[str]:
    """The names that arrived since the last look, when they are no more than `limit`
    (more means the queue is busy: then its listing, in claim order, is worth it)."""
    names = _arrivals.get(directory)
    if not names:
        return []
    taken: list[str] = []
    while names:
        try:
            taken.append(names.popleft())
        except IndexError:  # taken by another thread meanwhile
            break
    taken = list(dict.fromkeys(taken))
    return taken if len(taken) <= limit else []


@dataclass(frozen=True, slots=True)
class Header:
    """What ordering needs of one file version. Kept for every file of a queue between
    scans, so it is small: about 220 bytes, where a DirEntry with its stat is over 1 KB."""

    name: str
    inode: int
    priority: int
    created: float
    retry_at: float

    def key(self) -> tuple[int, float, str]:
        """Fairness: higher priority, then oldest, then id (as every spool breaks ties)."""
        return (-self.priority, self.created, self.name.removesuffix(".json"))


def read_header(directory: str, name: str, inode: int, limit: int = MAX_DOCUMENT_BYTES) -> Header:
    try:
        raw, _ = read_raw(f"{directory}/{name}", limit + 1)
        if raw is None or len(raw) > limit:
            raise ValueError("not a regular file, or too large to be a riddle")
        doc = orjson.loads(raw)
        doc = doc if isinstance(doc, dict) else {}
        return Header(
            name,
            inode,
            int(doc.get("priority") or 0),
            float(doc.get("created") or 0.0),
            float(doc.get("retry_at") or 0.0),
        )
    except (OSError, ValueError, TypeError):
        # Unreadable files sort first, so they are set aside promptly.
        return Header(name, inode, UNREADABLE, 0.0, 0.0)


class Inbox:
    """The claim order of one queue directory, for one spool object (one thread)."""

    def __init__(self, directory: str, read_limit: int = MAX_DOCUMENT_BYTES) -> None:
        self.directory = directory
        self.read_limit = read_limit  # the largest document worth reading a header of
        self.headers: dict[str, Header] = {}
        self.backlog: deque[str] = deque()
        self.scanned = 0.0
        self.size = 0

    def candidates(self, now: float, limit: int = 1) -> deque[str]:
        """Names to try, best first: the current backlog, the few that just arrived (see
        `arrived`), or a fresh scan's."""
        hinted = _take_arrivals(self.directory, limit)
        if hinted and not self.backlog:
            self.backlog = deque(hinted)  # the claim orders what it took
            return self.backlog
        if not self.backlog or time.monotonic() - self.scanned > RESCAN:
            self._scan(now, limit)
        return self.backlog

    def note(self, header: Header) -> None:
        """What a claim learnt of a file (e.g. that it is not due yet), for later scans."""
        self.headers[header.name] = header

    def _scan(self, now: float, limit: int) -> None:
        headers: dict[str, Header] = {}
        unread: list[tuple[str, int]] = []
        size = 0
        # Streamed: no list of 20,000 DirEntries. Every entry, not only regular files: a
        # claim sets aside what is no riddle (a FIFO, a directory, a link).
        for entry in iter_entries(self.directory):
            size += 1
            cached = self.headers.get(entry.name)
            if cached is not None and cached.inode == entry.inode():
                headers[cached.name] = cached  # the cached name: one string per file kept
            else:
                unread.append((entry.name, entry.inode()))
            # No more files than one claim takes: each is read by the claim anyway, which
            # orders what it took; reading headers first would read every file twice.
            if size > limit:
                for name, inode in unread:
                    headers[name] = read_header(self.directory, name, inode, self.read_limit)
                unread.clear()
        self.headers = headers  # forgets files that left: memory stays bounded by the queue
        due = [h for h in headers.values() if h.retry_at <= now]
        due.sort(key=Header.key)
        self.backlog = deque([*(name for name, _ in unread), *(h.name for h in due)])
        self.scanned = time.monotonic()
        self.size = size
