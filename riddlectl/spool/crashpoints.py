"""Named crash points for the crash-safety tests: die exactly at one step of a transition.

Only active when `RIDDLECTL_TEST_CRASH_AT` names a point (tests set it in an agent's
environment); the process then ends with `os._exit(CRASH_EXIT)`, as abruptly as
`kill -9`: no cleanup, no flush, no lock released by Python (the kernel releases them).

Points, in the order a commit passes them: `claimed`, `handled`, `temp-written`,
`flushed`, `renamed`, `source-removed`, `lock-released`, `event-logged`. And `carried`
(`CARRIED`), only in a process running several stages: a riddle it has just committed
is about to go on to the next stage in the same process, its claim kept.
"""

from __future__ import annotations

import os
from functools import cache

ENV = "RIDDLECTL_TEST_CRASH_AT"
CRASH_EXIT = 86
POINTS = (
    "claimed",
    "handled",
    "temp-written",
    "flushed",
    "renamed",
    "source-removed",
    "lock-released",
    "event-logged",
)


CARRIED = "carried"


@cache
def _target() -> str | None:
    return os.environ.get(ENV) or None


def reach(point: str) -> None:
    """Die here if the tests asked for it; otherwise nothing."""
    if _target() == point:
        os._exit(CRASH_EXIT)
