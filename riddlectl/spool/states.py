"""The queue directories are the states of a riddle; routing says which comes next.

Pure functions over a `Riddle`: no I/O, so every spool implementation routes alike.
"""

from __future__ import annotations

from enum import StrEnum

from riddlectl.document.model import Riddle


class Queue(StrEnum):
    INCOMING = "incoming"
    EXTRACTED = "extracted"
    SOLVED = "solved"
    VALIDATED = "validated"
    DONE = "done"
    FAILED = "failed"
    WAITING = "waiting"
    HOLD = "hold"


# `corrupt/` and `tmp/` are directories of the layout but never hold a riddle document.
LAYOUT_DIRS = [*(q.value for q in Queue), "corrupt", "tmp"]
FINAL = frozenset({Queue.DONE, Queue.FAILED})
STAGES = ("extract", "solve", "validate", "manage")
INBOX = {
    "extract": Queue.INCOMING,
    "solve": Queue.EXTRACTED,
    "validate": Queue.SOLVED,
    "manage": Queue.VALIDATED,
}
STAGE_OF_INBOX = {queue: stage for stage, queue in INBOX.items()}
# Queues a riddle visits in order; `validated/` is only reached through validation.
_PIPELINE = (("extract", Queue.INCOMING), ("solve", Queue.EXTRACTED), ("validate", Queue.SOLVED))


def route(riddle: Riddle, after: str | None = None) -> Queue:
    """The inbox of the first required step after step `after` (None: from the start).

    With no required step left the riddle is finished: `validated/` after validation
    (manage decides), else `done/`.
    """
    names = [name for name, _ in _PIPELINE]
    start = 0 if after is None else names.index(after) + 1 if after in names else len(names)
    for name, queue in _PIPELINE[start:]:
        if riddle.status.step(name).required:
            return queue
    return Queue.VALIDATED if after == "validate" else Queue.DONE
