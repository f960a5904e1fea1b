"""Keeping the index current: one watcher per server, whatever the number of open tabs.

A follower thread reads the event log as it grows (`EventLog.follow`) and notes which
riddles moved; an applier thread copies those riddles into the index in batches, and
every few seconds also lines the index up with the queues' listings, for what no event
tells (files dropped into a queue by another program). Each batch that changed something
bumps `version` and tells the listeners (the live streams of the open tabs).

At start the follower reads the log from its beginning: an event whose riddle the index
already holds at that rev is skipped, so a restart costs a read of the log, not of the
documents. An index that is new is filled from the spool first.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from riddlectl.errors import SpoolUnusable
from riddlectl.web import index as indexing
from riddlectl.web import trends
from riddlectl.web.metrics import Tally

if TYPE_CHECKING:
    from riddlectl.spool.contract import Spool
    from riddlectl.web.index import Index

# How long the applier gathers events into one batch, and how often it lines the index up
# with the queues' listings when nothing else wakes it.
BATCH_SECONDS = 0.3
RECONCILE_SECONDS = 10.0


class Keeper:
    def __init__(
        self,
        spool: Spool,
        index: Index,
        tally: Tally | None = None,
        reconcile_every: float = RECONCILE_SECONDS,
    ) -> None:
        self.spool = spool
        self.index = index
        self.tally = tally or Tally()
        self.reconcile_every = reconcile_every
        self.version = 0
        self.folder = trends.Folder()
        self.listeners: list[Callable[[int], None]] = []
        self._dirty: dict[str, tuple[str | None, int]] = {}
        self._lock = threading.Lock()
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []

    def start(self) -> None:
        """Fill or line up the index, then keep it current in the background."""
        self.folder = trends.Folder(since=trends.folded_until(self.index))
        if self.index.fresh:
            indexing.rebuild(self.index, self.spool)
            self.index.fresh = False
        else:
            indexing.reconcile(self.index, self.spool)
        for target in (self._follow, self._apply):
            thread = threading.Thread(target=target, name=f"web-{target.__name__}", daemon=True)
            thread.start()
            self._threads.append(thread)

    def stop(self) -> None:
        self._stop.set()
        self._wake.set()

    def _follow(self) -> None:
        for event in self.spool.events.follow(poll=0.25):
            if self._stop.is_set():
                return
            self.tally.observe(event)
            self.folder.fold(event)
            riddle_id = event.get("id")
            if isinstance(riddle_id, str):
                rev = event.get("rev")
                with self._lock:
                    self._dirty[riddle_id] = (event.get("to"), rev if isinstance(rev, int) else 0)
                self._wake.set()

    def _apply(self) -> None:
        last_reconcile = time.monotonic()
        while not self._stop.is_set():
            self._wake.wait(self.reconcile_every)
            if self._stop.is_set():
                return
            time.sleep(BATCH_SECONDS)  # let a burst of events gather into one batch
            self._wake.clear()
            changed = self._settle()
            changed += self._guarded(self.folder.flush, self.index)
            if time.monotonic() - last_reconcile >= self.reconcile_every:
                changed += self._guarded(indexing.reconcile, self.index, self.spool)
                last_reconcile = time.monotonic()
            if changed:
                self._announce()

    def _settle(self) -> int:
        with self._lock:
            dirty, self._dirty = self._dirty, {}
        if not dirty:
            return 0
        placed = self.index.placed(dirty)
        stale = [i for i, (to, rev) in dirty.items() if _stale(placed.get(i), to, rev)]
        if stale:
            self._guarded(indexing.refresh, self.index, self.spool, stale)
        # Riddles moved, whoever copied them into the index (an action here does at once):
        # the open tabs are told either way.
        return len(dirty)

    def _guarded(self, step: Callable[..., int], *args: Any) -> int:
        # A spool that cannot be read for a moment (a full disk, a queue being repaired,
        # a database restarting) must not end the watcher: the next batch or reconcile
        # catches up.
        with contextlib.suppress(OSError, SpoolUnusable):
            return step(*args)
        return 0

    def _announce(self) -> None:
        self.version += 1
        for listener in list(self.listeners):
            # A tab told nothing now is told at the next change, or by its own reload.
            with contextlib.suppress(OSError, SpoolUnusable):
                listener(self.version)


def _stale(placed: tuple[str, int] | None, to: str | None, rev: int) -> bool:
    """Whether an event about a riddle says more than the index holds."""
    if placed is None:
        return to is not None
    queue, held_rev = placed
    return to != queue or rev > held_rev
