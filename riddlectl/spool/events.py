"""The event log a spool keeps: one JSON object per handling, in the order written.

Advisory: an event that cannot be written never fails the commit it describes. What a
spool promises is that no event is lost when its writer dies mid-commit: the events of a
commit are held while the commit is made (`committing`), and those of a writer that
died before logging them are logged later (`recover`), if their commit took place.

The filesystem spool keeps `events.jsonl` in its root (see `fs/events.py`); the
in-memory twin keeps a list.
"""

from __future__ import annotations

import abc
import contextlib
from collections.abc import Callable, Collection, Iterator, Sequence
from typing import Any

# One event as it is logged; which fields it has is the pipeline's business, not the log's.
Record = dict[str, Any]
# Whether the commit an event describes took place (the pipeline tells: see `recover`).
Committed = Callable[[Record], bool]


class EventLog(abc.ABC):
    def append(self, event: Record) -> None:
        """Append one event; never raises for a full disk (the log is advisory)."""
        self.append_many([event])

    @abc.abstractmethod
    def append_many(self, events: Sequence[Record]) -> None:
        """Append events as one group: never interleaved with another writer's."""

    @abc.abstractmethod
    def committing(
        self, events: Sequence[Record], committed: Committed
    ) -> contextlib.AbstractContextManager[None]:
        """Around a commit that `events` describe: held while it runs, appended once it
        is made. If it raises part way, the events whose commit did take place
        (`committed(event)`) are appended, the others not, and the error goes on."""

    def made(self, ids: Collection[str] | None = None) -> None:  # noqa: B027 - optional hook
        """The commit this thread's `committing` is around has been made, for the riddles
        `ids` (None: all), and they are not let go yet: a log that appends after the
        commit appends their events now, so that whoever takes a riddle up next logs
        after it (a riddle's events in the order they took place)."""

    @abc.abstractmethod
    def recover(self, committed: Committed) -> int:
        """Log the held events of writers that died mid-commit, those whose commit took
        place (`committed`) and that the log does not hold yet; how many were appended.
        Nothing to do (0) when no writer died."""

    def prune(self, before: float) -> int:
        """Drop the events logged before `before` (seconds since the epoch) where the log
        is bounded that way (`purge`); how many went. A log bounded by its size alone
        (the filesystem spool's rotates) keeps them: 0."""
        return 0

    @abc.abstractmethod
    def read(self) -> Iterator[Record]:
        """Every event kept, oldest first."""

    @abc.abstractmethod
    def tail(self) -> list[Record]:
        """The last events, newest first: a bounded number, whatever the log's size."""

    def follow(self, poll: float = 0.2, *, from_end: bool = False) -> Iterator[Record]:
        """Every event (`from_end`: none of those written so far), then new ones as they
        are written, without end (`events --follow`); `poll` is how often to look when
        nothing wakes the reader."""
        return (event for event in self.follow_marked(poll, from_end=from_end) if event)

    @abc.abstractmethod
    def follow_marked(
        self, poll: float = 0.2, *, from_end: bool = False
    ) -> Iterator[Record | None]:
        """`follow`, with None each time the reader has given every event written so far
        (before it waits): where a backlog ends and the new events begin."""
