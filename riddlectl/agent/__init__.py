"""Agents: the worker loop that claims, handles and commits, and the supervision behind `run`
and `agent`.
"""

from __future__ import annotations

import threading


class Stop(threading.Event):
    """Set to stop an agent, with what asked it to (`why`, said in its `stopped` log line):
    a signal's name; unset when the agent stopped of itself (`--once`, nothing left)."""

    def __init__(self) -> None:
        super().__init__()
        self.why = ""

    def request(self, why: str) -> None:
        if not self.is_set():
            self.why = why
        self.set()
