"""Live updates: one stream of server-sent events per open tab, all fed by the one keeper.

A tab's stream waits for the keeper's next batch (it never polls the spool) and sends
the counts per queue with the index's version; the page then fetches its rows again.
Sends to one tab are spaced at least `MIN_GAP` apart, so a busy spool costs each tab at
most one refresh a second. Streams end at once when the server stops.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator

import orjson

MIN_GAP = 1.0
KEEPALIVE = 15.0


class Hub:
    """Tells the streams of every open tab that the index changed."""

    def __init__(self) -> None:
        self.version = 0
        self.counts: dict[str, int] = {}
        self.closed = False
        self._changed: asyncio.Event | None = None
        self._closing: asyncio.Event | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    def bind(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        self._changed = asyncio.Event()
        self._closing = asyncio.Event()

    def notify(self, version: int, counts: dict[str, int]) -> None:
        """From the keeper's thread: a new version of the index is in, with its counts
        (counted once for every tab)."""
        self.counts = counts
        if self._loop is not None and not self._loop.is_closed():
            self._loop.call_soon_threadsafe(self._bump, version)

    def close(self) -> None:
        """End every stream (the server is stopping)."""
        self.closed = True
        if self._loop is not None and not self._loop.is_closed():
            self._loop.call_soon_threadsafe(self._bump, self.version)

    def _bump(self, version: int) -> None:
        self.version = version
        if self.closed and self._closing is not None:
            self._closing.set()
        if self._changed is not None:
            self._changed.set()
            self._changed = asyncio.Event()  # the waiters hold the old one, now set

    async def changes(self, seen: int = -1) -> AsyncIterator[dict[str, str]]:
        """The server-sent events of one tab: the state now, then one per change."""
        while not self.closed:
            if self.version != seen:
                seen = self.version
                data = {"version": seen, "counts": self.counts}
                yield {"event": "change", "data": orjson.dumps(data).decode()}
                await self._pause(MIN_GAP)
                continue
            changed = self._changed
            if changed is None:
                return
            try:
                await asyncio.wait_for(changed.wait(), KEEPALIVE)
            except TimeoutError:
                yield {"comment": "keep-alive"}

    async def _pause(self, seconds: float) -> None:
        """Wait `seconds`, or less if the server stops meanwhile."""
        if self._closing is None:
            return
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._closing.wait(), seconds)
