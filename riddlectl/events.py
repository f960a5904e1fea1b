"""The event log: `events.jsonl` in the spool root, one JSON object per line.

Each event (or group of events) is one `write(2)` on a file opened with `O_APPEND`, so
concurrent writers (agents in several processes) never interleave within a line. When the log passes
`max_bytes` the writer that notices renames it to `events.jsonl.1` (keeping one old
generation), so the log stays bounded without a lock on the hot path.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson

DEFAULT_MAX_BYTES = 64 * 1024 * 1024


class EventLog:
    def __init__(self, path: Path, max_bytes: int = DEFAULT_MAX_BYTES) -> None:
        self.path = Path(path)
        self.max_bytes = max_bytes

    def append(self, event: dict[str, Any]) -> None:
        """Append one event; never raises for a full disk (the log is advisory)."""
        self.append_many([event])

    def append_many(self, events: list[dict[str, Any]]) -> None:
        """Append events in one `write(2)`: whole lines, never interleaved with others'."""
        if not events:
            return
        lines = b"".join(
            orjson.dumps(event, option=orjson.OPT_NON_STR_KEYS) + b"\n" for event in events
        )
        try:
            fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        except OSError:
            return
        try:
            os.write(fd, lines)
            if os.fstat(fd).st_size > self.max_bytes:
                self._rotate()
        except OSError:
            pass
        finally:
            os.close(fd)

    def _rotate(self) -> None:
        # Two writers may both rotate; the second rename then moves a nearly empty log,
        # losing at most the few lines written in between: acceptable for an audit trail.
        os.replace(self.path, self.path.with_name(self.path.name + ".1"))

    def read(self) -> Iterator[dict[str, Any]]:
        """Every event, oldest first, across the rotated generation too."""
        for path in (self.path.with_name(self.path.name + ".1"), self.path):
            try:
                with path.open("rb") as handle:
                    for line in handle:
                        if line.strip():
                            yield _parse(line)
            except FileNotFoundError:
                continue

    def tail(self, max_bytes: int = 256 * 1024) -> list[dict[str, Any]]:
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

    def follow(self, poll: float = 0.2) -> Iterator[dict[str, Any]]:
        """Every event, then new ones as they are written (`events --follow`)."""
        yield from self.read()
        offset = self.path.stat().st_size if self.path.exists() else 0
        inode = self.path.stat().st_ino if self.path.exists() else None
        while True:
            time.sleep(poll)
            try:
                stat = self.path.stat()
            except FileNotFoundError:
                continue
            if stat.st_ino != inode:
                inode, offset = stat.st_ino, 0
            if stat.st_size > offset:
                with self.path.open("rb") as handle:
                    handle.seek(offset)
                    chunk = handle.read()
                complete = chunk[: chunk.rfind(b"\n") + 1]
                offset += len(complete)
                for line in complete.splitlines():
                    if line.strip():
                        yield _parse(line)


def _parse(line: bytes) -> dict[str, Any]:
    try:
        value = orjson.loads(line)
    except orjson.JSONDecodeError:
        return {"outcome": "corrupt", "error": "unreadable event line"}
    return value if isinstance(value, dict) else {"value": value}
