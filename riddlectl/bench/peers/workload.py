"""What every peer runs: the documents, the four stage functions, and "done" notices.

A document is about 1 KB of JSON: an id, a question (`a * b =` or `a + b =`) and three
small text files embedded in it, the same texts `riddlectl bench` keeps in its data
directory. The stages do the same kind of work as riddlectl's built-in handlers, in a
few lines each: extract reads `name = number` lines, solve computes the answer, validate
computes it again and compares, manage marks the riddle done. Each appends to history.

The manage stage tells the driver a riddle is done through a Unix datagram socket
(`notify_done`); the driver's `DoneChannel` stamps each notice as it arrives.
"""

from __future__ import annotations

import os
import queue
import re
import socket
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

STAGES = ("extract", "solve", "validate", "manage")
NEXT: dict[str, str | None] = {"extract": "solve", "solve": "validate", "validate": "manage"}
NEXT["manage"] = None

_NOTES = "# notes: lorem ipsum dolor sit amet, " * 4
_FACT = re.compile(r"^\s*([A-Za-z_]\w*)\s*=\s*(-?\d+)\s*$", re.MULTILINE)


def make_doc(index: int, files: int = 8) -> dict[str, Any]:
    """Riddle number `index`: its variables cycle through `files` values each, as the
    data files of `riddlectl bench` do."""
    a, b = 12 + 7 * (index % files), 3 + 5 * ((index // files) % files)
    return {
        "id": f"p{index:07d}",
        "question": ("a * b =", "a + b =")[index % 2],
        "files": {
            "a.txt": f"{_NOTES}\na = {a}\n",
            "b.txt": f"{_NOTES}\nb = {b}\nnote: {index % files}\n",
            "c.txt": f"{_NOTES}\n{_NOTES}\n",
        },
        "created": time.time(),
        "history": [],
    }


def _answer(question: str, facts: dict[str, int]) -> int:
    a, b = facts["a"], facts["b"]
    return a * b if "*" in question else a + b


def extract(doc: dict[str, Any]) -> dict[str, Any]:
    doc["facts"] = {
        name: int(value) for text in doc["files"].values() for name, value in _FACT.findall(text)
    }
    return doc


def solve(doc: dict[str, Any]) -> dict[str, Any]:
    doc["solution"] = str(_answer(doc["question"], doc["facts"]))
    return doc


def validate(doc: dict[str, Any]) -> dict[str, Any]:
    doc["accepted"] = doc["solution"] == str(_answer(doc["question"], doc["facts"]))
    return doc


def manage(doc: dict[str, Any]) -> dict[str, Any]:
    doc["status"] = "done" if doc["accepted"] else "failed"
    return doc


_STEPS: dict[str, Callable[[dict[str, Any]], dict[str, Any]]] = {
    "extract": extract,
    "solve": solve,
    "validate": validate,
    "manage": manage,
}


def step(stage: str, doc: dict[str, Any]) -> dict[str, Any]:
    """Run `stage` on `doc` (in place) and record it in the document's history."""
    doc = _STEPS[stage](doc)
    doc["history"].append({"stage": stage, "time": time.time(), "pid": os.getpid()})
    return doc


@dataclass(frozen=True)
class StageRun:
    """What one peer worker runs: `stage` over the queues under `base`, until `stop`."""

    stage: str
    base: str
    stop: threading.Event
    done: Callable[[str], None]  # tells the driver a riddle is done
    fsync: bool
    poll: float  # seconds between looks when idle, for peers that poll

    @property
    def following(self) -> str | None:
        return NEXT[self.stage]

    def advance(
        self, doc: dict[str, Any], forward: Callable[[dict[str, Any]], object] | None
    ) -> None:
        """Run the stage on `doc`, then hand it on with `forward` (onto the next stage's
        queue), or, after the last stage (`forward` None), tell the driver it is done."""
        doc = step(self.stage, doc)
        if forward is None:
            self.done(doc["id"])
        else:
            forward(doc)


class Notifier:
    """The manage stage's side of the done channel."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)

    def __call__(self, riddle_id: str) -> None:
        self.sock.sendto(riddle_id.encode(), self.path)


class DoneChannel:
    """The driver's side: a thread drains the socket and stamps each notice on arrival.

    Draining at once matters: Linux queues only a few datagrams (net.unix.max_dgram_qlen)
    before a sender blocks, and the manage stage must not wait on the driver.
    """

    def __init__(self, path: str) -> None:
        if os.path.exists(path):
            os.unlink(path)
        self.path = path
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
        self.sock.bind(path)
        self.sock.settimeout(0.2)
        self.notices: queue.Queue[tuple[str, float]] = queue.Queue()
        self._stop = threading.Event()
        # A short switch interval, so the draining thread runs soon after a notice.
        self._switch = sys.getswitchinterval()
        sys.setswitchinterval(0.0005)
        self._thread = threading.Thread(target=self._drain, daemon=True)
        self._thread.start()

    def _drain(self) -> None:
        while not self._stop.is_set():
            try:
                data = self.sock.recv(256)
            except TimeoutError:
                continue
            except OSError:
                return
            self.notices.put((data.decode(), time.perf_counter()))

    def next(self, timeout: float) -> tuple[str, float]:
        """The next riddle done and when its notice arrived; `TimeoutError` past `timeout`."""
        try:
            return self.notices.get(timeout=timeout)
        except queue.Empty:
            raise TimeoutError(f"no riddle done within {timeout:g} s") from None

    def close(self) -> None:
        self._stop.set()
        self._thread.join(2)
        self.sock.close()
        sys.setswitchinterval(self._switch)
        if os.path.exists(self.path):
            os.unlink(self.path)
