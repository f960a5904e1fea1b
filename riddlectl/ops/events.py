"""`events`: the event log narrowed to some riddles, a time, the last few; read or followed.

Every spool's log is read through `EventLog.read` and `EventLog.follow_marked`, so the
narrowing is the same on each. Each event given carries `at`, its `time` (seconds since
the epoch) in ISO 8601, UTC, for people and for tools that read dates.
"""

from __future__ import annotations

import datetime as dt
import time
from collections import deque
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

from riddlectl.ops.admin import parse_duration
from riddlectl.spool.events import EventLog, Record


@dataclass(frozen=True)
class Narrowing:
    """Which events: of these `ids` (none: all), at or after `since` (seconds since the
    epoch), the last `tail` of those (None: all)."""

    ids: frozenset[str] = field(default_factory=frozenset)
    since: float | None = None
    tail: int | None = None

    def keeps(self, event: Record) -> bool:
        if self.ids and event.get("id") not in self.ids:
            return False
        if self.since is not None:
            when = event.get("time")
            return isinstance(when, int | float) and when >= self.since
        return True


def parse_since(text: str, now: float | None = None) -> float:
    """`10m`, `2h`, `7d` (that long ago) or an ISO 8601 time (UTC unless it names its
    offset) → seconds since the epoch; ValueError saying what is expected otherwise."""
    now = time.time() if now is None else now
    try:
        return now - parse_duration(text)
    except ValueError:
        pass
    try:
        when = dt.datetime.fromisoformat(text.strip())
    except ValueError:
        raise ValueError(
            f"{text!r} is neither a duration (10m, 2h, 7d) nor an ISO 8601 time "
            "(2026-01-31T12:00:00Z)"
        ) from None
    if when.tzinfo is None:
        when = when.replace(tzinfo=dt.UTC)
    return when.timestamp()


def stamped(event: Record) -> Record:
    """`event` with `at` beside `time`: the same moment in ISO 8601, UTC, to the
    millisecond."""
    when = event.get("time")
    if not isinstance(when, int | float) or isinstance(when, bool):
        return event
    at = dt.datetime.fromtimestamp(when, dt.UTC).isoformat(timespec="milliseconds")
    out: Record = {}
    for key, value in event.items():
        out[key] = value
        if key == "time":
            out["at"] = at.replace("+00:00", "Z")
    return out


def read(log: EventLog, narrowing: Narrowing) -> Iterator[Record]:
    """The events kept, oldest first, narrowed; each `stamped`."""
    return _stamped(_last(filter(narrowing.keeps, log.read()), narrowing.tail))


def follow(log: EventLog, narrowing: Narrowing, poll: float = 0.2) -> Iterator[Record | None]:
    """The events kept that `narrowing` asks for, then new ones as they come, without
    end (None each time it waits: a moment to flush). With neither `since` nor `tail`,
    it starts at the end, as `tail -f` does; `tail=N`: the last N, as `tail -n N -f`."""
    from_end = narrowing.since is None and narrowing.tail is None
    backlog: deque[Record] = deque(maxlen=narrowing.tail)
    caught_up = from_end
    for event in log.follow_marked(poll, from_end=from_end):
        if event is None:
            if not caught_up:
                caught_up = True
                yield from _stamped(backlog)
                backlog.clear()
            yield None
        elif not narrowing.keeps(event):
            continue
        elif caught_up:
            yield stamped(event)
        else:
            backlog.append(event)


def _last(events: Iterable[Record], count: int | None) -> Iterable[Record]:
    if count is None:
        return events
    return deque(events, maxlen=count) if count else ()


def _stamped(events: Iterable[Record]) -> Iterator[Record]:
    return map(stamped, events)


__all__ = ["Narrowing", "follow", "parse_since", "read", "stamped"]
