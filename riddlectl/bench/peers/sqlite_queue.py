"""persist-queue's `SQLiteQueue`: one SQLite database per stage, polled.

Each `put` and each `get` is a transaction (auto-commit) in WAL mode with SQLite's default
synchronous setting, so a finished step survives a crash. Documents are stored as JSON
(persist-queue's json serializer). Its blocking `get` waits on an in-process event, which
a `put` from another process does not set, so an idle worker polls instead.
"""

from __future__ import annotations

import os
import time
from typing import Any

from riddlectl.bench.peers.workload import StageRun


def _queue(base: str, stage: str) -> Any:
    from persistqueue import SQLiteQueue
    from persistqueue.serializers import json as json_serializer

    path = os.path.join(base, stage)
    # persist-queue makes its directory when it finds none, without `exist_ok`: two
    # workers opening the same queue at once (one's inbox, the other's outbox) would race.
    os.makedirs(path, exist_ok=True)
    return SQLiteQueue(
        path,
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


def work(run: StageRun) -> None:
    """Run the stage until `stop` is set, looking every `poll` seconds when idle."""
    from persistqueue import Empty

    inbox = _queue(run.base, run.stage)
    outbox = _queue(run.base, run.following) if run.following else None
    while not run.stop.is_set():
        try:
            doc = inbox.get(block=False)
        except Empty:
            time.sleep(run.poll)
            continue
        run.advance(doc, None if outbox is None else outbox.put)
