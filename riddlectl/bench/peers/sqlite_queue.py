"""persist-queue's `SQLiteQueue`: one SQLite database per stage, polled.

Each `put` and each `get` is a transaction (auto-commit) in WAL mode with SQLite's default
synchronous setting, so a finished step survives a crash. Documents are stored as JSON
(persist-queue's json serializer). Its blocking `get` waits on an in-process event, which
a `put` from another process does not set, so an idle worker polls instead.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from typing import Any

from riddlectl.bench.peers.workload import NEXT, step


def _queue(base: str, stage: str) -> Any:
    from persistqueue import SQLiteQueue
    from persistqueue.serializers import json as json_serializer

    return SQLiteQueue(
        os.path.join(base, stage),
        auto_commit=True,
        multithreading=True,
        serializer=json_serializer,
    )


class Submitter:
    def __init__(self, base: str, fsync: bool) -> None:
        self.queue = _queue(base, "extract")

    def submit(self, doc: dict[str, Any]) -> None:
        self.queue.put(doc)

    def close(self) -> None:
        self.queue.close()


def work(
    stage: str,
    base: str,
    stop: threading.Event,
    done: Callable[[str], None],
    fsync: bool,
    poll: float,
) -> None:
    """Run `stage` until `stop` is set, looking every `poll` seconds when idle."""
    from persistqueue import Empty

    inbox = _queue(base, stage)
    following = NEXT[stage]
    outbox = _queue(base, following) if following else None
    while not stop.is_set():
        try:
            doc = inbox.get(block=False)
        except Empty:
            time.sleep(poll)
            continue
        doc = step(stage, doc)
        if outbox is not None:
            outbox.put(doc)
        else:
            done(doc["id"])
