"""The reaper's thread: claims of holders that are gone given back now and then.

It holds the spool only weakly, through a callable that reaps, so that a spool nobody
uses any more is dropped and its thread ends.
"""

from __future__ import annotations

import contextlib
import threading
import weakref
from typing import Protocol

REAP_EVERY = 1.0  # seconds between looks for claims of dead holders, per spool object


class Reaps(Protocol):
    def reap(self, every: float = 0.0) -> object: ...


def reap_now_and_then(spool: weakref.ref[Reaps], stopping: threading.Event) -> None:
    """The reaper's thread: `reap` every `REAP_EVERY` s while the spool is in use. A
    spool that cannot be reached now is tried again at the next turn."""
    while not stopping.wait(REAP_EVERY):
        held = spool()
        if held is None:
            return
        with contextlib.suppress(Exception):
            held.reap(every=REAP_EVERY)
        del held
