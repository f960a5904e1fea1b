"""dirq's `QueueSimple`: one directory queue per stage, polled.

An element is written to a temporary file and linked into place; a worker locks it (a
hard link), reads it, adds the result to the next stage's queue and removes it. dirq
does not `fsync`: it is not durable across a power cut, whatever `fsync` says.
"""

from __future__ import annotations

import os
import time
from typing import Any

import orjson

from riddlectl.bench.peers.workload import StageRun


def _queue(base: str, stage: str) -> Any:
    from dirq.QueueSimple import QueueSimple

    return QueueSimple(os.path.join(base, stage))


class Submitter:
    def __init__(self, base: str, fsync: bool) -> None:
        self.queue = _queue(base, "extract")

    def submit(self, doc: dict[str, Any]) -> None:
        self.queue.add(orjson.dumps(doc))

    def close(self) -> None:
        pass


def work(run: StageRun) -> None:
    """Run the stage until `stop` is set, looking every `poll` seconds when idle."""
    inbox = _queue(run.base, run.stage)
    outbox = _queue(run.base, run.following) if run.following else None
    forward = None if outbox is None else lambda doc: outbox.add(orjson.dumps(doc))
    while not run.stop.is_set():
        moved = 0
        name = inbox.first()
        while name and not run.stop.is_set():
            if inbox.lock(name):
                run.advance(orjson.loads(inbox.get(name)), forward)
                inbox.remove(name)
                moved += 1
            name = inbox.next()
        if not moved:
            time.sleep(run.poll)
