"""The in-memory spool's event log and extraction cache: lists and dicts, thread-safe.

Events and extractions go through JSON on their way in, as they do on disk, so that what
a test reads back is what a filesystem spool would have given.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import orjson

from riddlectl.spool.events import Committed, EventLog, Record
from riddlectl.spool.extractions import OWN_PATH, ExtractionCache

TAIL = 1000  # events `tail` gives


class MemoryEventLog(EventLog):
    def __init__(self) -> None:
        self._events: list[Record] = []
        self._written = threading.Condition()

    def append_many(self, events: Sequence[Record]) -> None:
        copies = [_through_json(event) for event in events]
        with self._written:
            self._events.extend(copies)
            self._written.notify_all()

    @contextlib.contextmanager
    def committing(self, events: Sequence[Record], committed: Committed) -> Iterator[None]:
        # Held by the caller meanwhile: a process that dies loses the spool with them.
        try:
            yield
        except BaseException:
            with contextlib.suppress(Exception):
                self.append_many([event for event in events if committed(event)])
            raise
        self.append_many(events)

    def recover(self, committed: Committed) -> int:
        return 0  # no writer outlives the process that holds the log

    def read(self) -> Iterator[Record]:
        with self._written:
            return iter(list(self._events))

    def tail(self) -> list[Record]:
        with self._written:
            return self._events[-TAIL:][::-1]

    def follow_marked(
        self, poll: float = 0.2, *, from_end: bool = False
    ) -> Iterator[Record | None]:
        with self._written:
            seen = len(self._events) if from_end else 0
        while True:
            with self._written:
                caught_up = seen == len(self._events)
            if caught_up:
                yield None
            with self._written:
                if seen == len(self._events):
                    self._written.wait(poll)
                fresh = self._events[seen:]
            seen += len(fresh)
            yield from fresh


class MemoryExtractionCache(ExtractionCache):
    def __init__(self) -> None:
        super().__init__()
        self._made: dict[str, bytes] = {}  # by reference
        self._mutex = threading.Lock()
        self._making: dict[str, threading.Lock] = {}  # one per key being made

    def get_or_make(self, key: str, make: Callable[[], dict[str, Any]]) -> str:
        reference = self.reference(key)
        with self._mutex:
            if reference in self._made:
                return reference
            making = self._making.setdefault(key, threading.Lock())
        with making:
            with self._mutex:
                if reference in self._made:
                    return reference
            made = orjson.dumps(make())
            with self._mutex:
                self._made[reference] = made
                self._making.pop(key, None)
        return reference

    def load(self, reference: str | None) -> dict[str, Any] | None:
        with self._mutex:
            raw = self._made.get(reference or "")
        value = None if raw is None else orjson.loads(raw)
        return value if isinstance(value, dict) else None

    def dropped(self, reference: str | None) -> bool:
        if not reference or not OWN_PATH.fullmatch(reference):
            return False
        with self._mutex:
            return reference not in self._made

    def clear(self, extractor: str | None = None) -> int:
        with self._mutex:
            gone = [
                reference
                for reference, raw in self._made.items()
                if extractor is None or orjson.loads(raw).get("extractor") == extractor
            ]
            for reference in gone:
                del self._made[reference]
        return len(gone)


def _through_json(event: Record) -> Record:
    value = orjson.loads(orjson.dumps(event, option=orjson.OPT_NON_STR_KEYS))
    return value if isinstance(value, dict) else {"value": value}
