"""huey with its `FileStorage`: one file-backed huey per stage, each stage a task that
enqueues the next one; the consumer (one worker thread) polls every `poll` seconds.

huey writes each queued task straight into its final file and does not `fsync`; its own
documentation calls the file storage unfit for production. Tasks are pickled, as huey
does.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

from riddlectl.bench.peers.workload import NEXT, STAGES, StageRun, step


def _tasks(base: str, done: Callable[[str], None] | None) -> tuple[dict[str, Any], dict[str, Any]]:
    """One huey per stage, and each stage's task (which calls the next stage's)."""
    from huey import FileHuey

    hueys = {s: FileHuey(s, path=os.path.join(base, s), results=False) for s in STAGES}
    tasks: dict[str, Any] = {}

    def make(stage: str) -> Any:
        def task(doc: dict[str, Any]) -> None:
            doc = step(stage, doc)
            following = NEXT[stage]
            if following:
                tasks[following](doc)
            elif done is not None:
                done(doc["id"])

        return hueys[stage].task(name=f"riddle_{stage}")(task)

    for stage in STAGES:
        tasks[stage] = make(stage)
    return hueys, tasks


class Submitter:
    def __init__(self, base: str, fsync: bool) -> None:
        os.makedirs(base, exist_ok=True)
        _, self.tasks = _tasks(base, None)

    def submit(self, doc: dict[str, Any]) -> None:
        self.tasks["extract"](doc)

    def close(self) -> None:
        pass


def work(run: StageRun) -> None:
    """Run the stage's consumer until SIGTERM (huey's consumer handles the signal itself)."""
    import logging

    logging.basicConfig(level=logging.WARNING)
    hueys, _ = _tasks(run.base, run.done)
    consumer = hueys[run.stage].create_consumer(
        workers=1,
        worker_type="thread",
        periodic=False,
        check_worker_health=False,
        initial_delay=run.poll,
        backoff=1.0,
        max_delay=run.poll,
    )
    consumer.run()
