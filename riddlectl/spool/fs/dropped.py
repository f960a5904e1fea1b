"""The drop-ins of a filesystem spool's `incoming/` by the id each is: how a riddle
dropped in under a name of its own (`b.json` holding `"id": "own"`) is found by its id
before an agent takes it in."""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import TYPE_CHECKING

from riddlectl.document import codec as documents
from riddlectl.document.codec import Limits
from riddlectl.spool.dropins import ignored, peek_drop_in, stamp_of
from riddlectl.spool.fs.inbox import iter_files
from riddlectl.spool.states import Queue

if TYPE_CHECKING:
    from riddlectl.document.model import Riddle


class DropInIndex:
    """The entries of the directory `incoming`, read to the spool's `limits`."""

    def __init__(self, incoming: str, limits: Callable[[], Limits]) -> None:
        self.incoming = incoming
        self.limits = limits
        self._known: tuple[int, dict[str, str]] | None = None  # when made, and the index

    def index(self) -> dict[str, str]:
        """The entries of `incoming/` by the id each is (`peek_drop_in`), made again only
        when the directory changed: a process that looks up many ids no queue holds
        (`events` checking what killed commands left) reads each drop-in once."""
        incoming = self.incoming
        try:
            changed = os.stat(incoming).st_mtime_ns  # before the look: a change meanwhile shows
        except FileNotFoundError:
            return {}
        known = self._known
        if known is not None and known[0] == changed:
            return known[1]
        index: dict[str, str] = {}
        for entry in iter_files(incoming):
            riddle = None if ignored(entry.name) else self.peek(entry.name)
            if riddle is not None and riddle.id is not None:
                index.setdefault(riddle.id, entry.name)
        self._known = (changed, index)
        return index

    def peek(self, name: str) -> Riddle | None:
        """The riddle the drop-in `name` of `incoming/` is (see `peek_drop_in`)."""
        try:
            raw, info = documents.read_raw(f"{self.incoming}/{name}", self.limits().readable + 1)
        except OSError:
            return None
        if raw is None:
            return None
        stamp = stamp_of(info.st_mtime_ns)
        return peek_drop_in(raw, info.st_size, Queue.INCOMING, name, self.limits(), stamp)
