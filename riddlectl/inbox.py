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
from dataclasses import dataclass

import orjson

MAX_HEADER_READ = 4 * 1024 * 1024  # the document size limit: larger files are not parsed
RESCAN = 0.25  # seconds a backlog is trusted before the directory is listed again


def ignored(name: str) -> bool:
    """Names other programs use while writing: never read as riddles (SPEC §3)."""
    return name.startswith(".") or name.endswith(".tmp")


def list_files(directory: str) -> list[os.DirEntry[str]]:
    try:
        with os.scandir(directory) as entries:
            return [e for e in entries if not ignored(e.name) and e.is_file()]
    except FileNotFoundError:
        return []


@dataclass(frozen=True)
class Header:
    inode: int
    key: tuple[int, float, str]  # fairness: higher priority, then oldest, then id
    retry_at: float
    name: str

    @classmethod
    def of(
        cls, name: str, inode: int, priority: int, created: float | None, retry_at: float
    ) -> Header:
        stem = name.removesuffix(".json")  # ties broken by id, as every spool does
        return cls(inode, (-priority, created or 0.0, stem), retry_at, name)


def read_header(entry: os.DirEntry[str]) -> Header:
    stem = entry.name.removesuffix(".json")
    try:
        if entry.stat().st_size > MAX_HEADER_READ:
            raise ValueError("too large to be a riddle")  # claimed first, and set aside
        with open(entry.path, "rb") as handle:
            doc = orjson.loads(handle.read())
        doc = doc if isinstance(doc, dict) else {}
        return Header.of(
            entry.name,
            entry.inode(),
            int(doc.get("priority") or 0),
            float(doc.get("created") or 0),
            float(doc.get("retry_at") or 0),
        )
    except (OSError, ValueError, TypeError):
        # Unreadable files sort first, so they are set aside promptly.
        return Header(entry.inode(), (-(2**62), 0.0, stem), 0.0, entry.name)


class Inbox:
    """The claim order of one queue directory, for one spool object (one thread)."""

    def __init__(self, directory: str) -> None:
        self.directory = directory
        self.headers: dict[str, Header] = {}
        self.backlog: deque[str] = deque()
        self.scanned = 0.0
        self.size = 0

    def candidates(self, now: float, limit: int = 1) -> deque[str]:
        """Names to try, best first: the current backlog, or a fresh scan's."""
        if not self.backlog or time.monotonic() - self.scanned > RESCAN:
            self._scan(now, limit)
        return self.backlog

    def note(self, header: Header) -> None:
        """What a claim learnt of a file (e.g. that it is not due yet), for later scans."""
        self.headers[header.name] = header

    def _scan(self, now: float, limit: int) -> None:
        entries = list_files(self.directory)
        headers: dict[str, Header] = {}
        for entry in entries:
            cached = self.headers.get(entry.name)
            if cached is not None and cached.inode == entry.inode():
                headers[entry.name] = cached
            elif len(entries) > limit:
                headers[entry.name] = read_header(entry)
        # No more files than one claim takes: each is read by the claim anyway, which
        # orders what it took; reading headers first would read every file twice.
        self.headers = headers  # forgets files that left: memory stays bounded by the queue
        unknown = [e.name for e in entries if e.name not in headers]
        due = [h for h in headers.values() if h.retry_at <= now]
        due.sort(key=lambda h: h.key)
        self.backlog = deque([*unknown, *(h.name for h in due)])
        self.scanned = time.monotonic()
        self.size = len(entries)
