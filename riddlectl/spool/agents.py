"""The agents' own records: what each agent says of itself, kept where the spool can tell
whether it is still alive.

An agent registers once (`Spool.register_agent`) and gets a `Seat`: its record (agent,
host, pid, stages, handlers, concurrency, whether it is a one-shot run, started), what
it holds now and how many riddles it handed on and failed. The seat writes the record
again whenever that changes (at most every `MIN_GAP` s) and every `HEARTBEAT` s
(`seen`). Whether the agent lives is not judged by `seen`: each back end ties the record
to a lock the agent's process holds for its life (an `flock` on the directory spool, a
session advisory lock on PostgreSQL), which the kernel or the server lets go when the
process dies, however it dies. A record whose lock is free is an agent gone: `stopped`
says it stopped, and what it held then (none, when it stopped) are the claims it
abandoned. Records of agents gone are listed for `GONE_KEPT` s after they were last
seen, then removed by the next agent to register.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any

from riddlectl.identity import Actor

HEARTBEAT = 1.0  # seconds between writes of an unchanged record (`seen`)
MIN_GAP = 0.1  # seconds at least between two writes of a record that keeps changing
GONE_KEPT = 3600.0  # seconds an agent gone is still listed after it was last seen


def new_record(record: Mapping[str, Any], actor: Actor | None) -> dict[str, Any]:
    """The record of an agent registering now: what it said, who it is, and a new id."""
    actor = actor or Actor("riddlectl")
    now = time.time()
    return {
        "id": secrets.token_hex(8),
        "agent": str(record.get("agent") or actor.name),
        "host": actor.host,
        "pid": os.getpid(),
        "stages": list(record.get("stages") or []),
        "handlers": {k: list(v) for k, v in dict(record.get("handlers") or {}).items()},
        "concurrency": int(record.get("concurrency") or 1),
        "once": bool(record.get("once")),  # a one-shot run (`run --once`, `agent --once`)
        "started": now,
        "seen": now,
        "handled": 0,
        "failed": 0,
        "holds": [],
        "stopped": None,
    }


def shown(record: Mapping[str, Any], alive: bool) -> dict[str, Any]:
    """A record as `Spool.agents` lists it: with `alive`, and the fields it must have."""
    found = new_record({}, None) | {"id": "?", "agent": "?", "host": "?", "pid": 0}
    found.update({k: v for k, v in record.items() if k in found})
    found["alive"] = alive
    return found


def listed(found: list[dict[str, Any]], now: float | None = None) -> list[dict[str, Any]]:
    """Records to list: the alive, and the gone last seen within `GONE_KEPT` s; the alive
    first, each group by when it started."""
    now = time.time() if now is None else now
    kept = [a for a in found if a["alive"] or now - float(a["seen"] or 0) < GONE_KEPT]
    kept.sort(key=lambda a: (not a["alive"], float(a["started"] or 0), str(a["id"])))
    return kept


class Seat:
    """One agent's place in the spool, for as long as it runs.

    `write(record)` stores the record where the back end keeps it (called from the
    seat's own thread, and once more by `close`); `leave()` lets go of what ties the
    record to the agent's life. Errors writing are not the agent's concern: the next
    turn writes again.
    """

    def __init__(
        self,
        record: dict[str, Any],
        write: Callable[[dict[str, Any]], None],
        leave: Callable[[], None],
    ) -> None:
        self.record = record
        self._write = write
        self._leave = leave
        self._lock = threading.Lock()
        self._holds: dict[str, dict[str, Any]] = {}
        self._changed = threading.Event()
        self._closing = threading.Event()
        self._thread = threading.Thread(target=self._beat, name="riddlectl-seat", daemon=True)
        self._thread.start()

    @property
    def id(self) -> str:
        return str(self.record["id"])

    def took(self, riddle_id: str, stage: str) -> None:
        """The agent began handling `riddle_id` at `stage`."""
        with self._lock:
            self._holds[riddle_id] = {"id": riddle_id, "stage": stage, "since": time.time()}
        self._tell()

    def let_go(self, riddle_id: str) -> None:
        with self._lock:
            self._holds.pop(riddle_id, None)
        self._tell()

    def tally(self, handled: int = 0, failed: int = 0) -> None:
        """Riddles the agent handed on (`handled`) and moved to failed/ (`failed`)."""
        with self._lock:
            self.record["handled"] += handled
            self.record["failed"] += failed
        self._tell()

    def _tell(self) -> None:
        # Set once per write, not per change: `Event.set` takes a lock and notifies even
        # when it is set already, and a busy agent changes its record three times a riddle.
        if not self._changed.is_set():
            self._changed.set()

    def snapshot(self) -> dict[str, Any]:
        with self._lock:
            holds = sorted(self._holds.values(), key=lambda h: (h["since"], h["id"]))
            return {**self.record, "holds": holds, "seen": time.time()}

    def _beat(self) -> None:
        while not self._closing.is_set():
            self._changed.wait(HEARTBEAT)
            if self._closing.is_set():
                return
            self._changed.clear()
            with contextlib.suppress(Exception):  # tried again at the next turn
                self._write(self.snapshot())
            self._closing.wait(MIN_GAP)

    def close(self) -> None:
        """The agent stops: its record says so, holding nothing, and is let go."""
        if self._closing.is_set():
            return
        self._closing.set()
        self._changed.set()
        self._thread.join(5.0)
        with self._lock:
            self._holds.clear()
            self.record["stopped"] = time.time()
        try:
            with contextlib.suppress(Exception):
                self._write(self.snapshot())
        finally:
            self._leave()
