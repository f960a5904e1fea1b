"""The queue directories are the states of a riddle; routing says which comes next.

Pure functions over a `Riddle`: no I/O, so every spool implementation routes alike.
"""

from __future__ import annotations

from enum import StrEnum
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from riddlectl.document.model import Riddle


class Queue(StrEnum):
    INCOMING = "incoming"  # waiting for extract; where users drop riddle files
    EXTRACTED = "extracted"  # waiting for solve
    SOLVED = "solved"  # waiting for validate
    VALIDATED = "validated"  # waiting for manage: accepted, posed again, or failed
    DONE = "done"  # final: accepted, or finished without validation
    FAILED = "failed"  # final: given up, with the reason in `error`
    WAITING = "waiting"  # parents waiting for their sub-riddles
    HOLD = "hold"  # parked by a user until released


# `corrupt/` and `tmp/` are directories of the layout but never hold a riddle document.
LAYOUT_DIRS = [*(q.value for q in Queue), "corrupt", "tmp"]
FINAL = frozenset({Queue.DONE, Queue.FAILED})
# The stages in pipeline order and the queue each takes its riddles from: the one table
# of inboxes (what each stage does is `pipeline.stages.Stage`).
INBOX = {
    "extract": Queue.INCOMING,
    "solve": Queue.EXTRACTED,
    "validate": Queue.SOLVED,
    "manage": Queue.VALIDATED,
}
STAGES = tuple(INBOX)
STAGE_OF_INBOX = {queue: stage for stage, queue in INBOX.items()}
# The steps of a document's `status`, in order: every stage but manage, which ends a trial.
STEPS = ("extract", "solve", "validate")


def route(riddle: Riddle, after: str | None = None) -> Queue:
    """The inbox of the first required step after step `after` (None: from the start).

    With no required step left the riddle is finished: `validated/` after validation
    (manage decides), else `done/`.
    """
    start = 0 if after is None else STEPS.index(after) + 1 if after in STEPS else len(STEPS)
    for name in STEPS[start:]:
        if riddle.status.step(name).required:
            return INBOX[name]
    return Queue.VALIDATED if after == "validate" else Queue.DONE
