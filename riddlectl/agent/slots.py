"""The bound `--concurrency N` sets: at most N handler calls in flight per stage of an agent,
spares included.

A worker takes a stage's slot before it claims from that stage's inbox and gives it back
once that batch is handled: a worker handles its batch one riddle at a time, so calls in
flight never outnumber slots taken. A worker that finds no slot free claims nothing from
that stage, leaving its riddles to the agents that have room; a spare added while a call
hangs works on the stages whose slots are free (in `run`, the others), so the bound holds
and the spares keep what they are for where it does not cross it.
"""

from __future__ import annotations

import threading


class Slots:
    """N slots of one stage, taken without waiting."""

    def __init__(self, size: int) -> None:
        self.size = size
        self._taken = 0
        self._lock = threading.Lock()

    def take(self) -> bool:
        """Take a slot if one is free; whether one was."""
        with self._lock:
            if self._taken >= self.size:
                return False
            self._taken += 1
            return True

    def give(self) -> None:
        with self._lock:
            self._taken -= 1

    def free(self) -> bool:
        with self._lock:
            return self._taken < self.size
