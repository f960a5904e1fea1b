"""A pipeline on any spool, driven in-process by small Python handlers.

`Rig` wires what `runtime` wires for a command or an agent (a `Pipeline` with the spool's
event log, one `StageContext` per stage) around a spool it is given, so that one test runs on the
in-memory spool in milliseconds and on the filesystem spool alike (the `spool` fixture
of `tests/conftest.py` gives each). Handlers are plain functions of a `Job`.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from riddlectl.agent.worker import Worker
from riddlectl.document import codec
from riddlectl.document.model import Riddle
from riddlectl.handlers.base import HandlerFn, Job, NamedHandler
from riddlectl.identity import Actor
from riddlectl.pipeline.jobs import Pipeline
from riddlectl.pipeline.retry import RetryPolicy
from riddlectl.pipeline.stages import StageContext, stage_named
from riddlectl.spool.contract import Spool
from riddlectl.spool.states import STAGES, Queue

# No delay between attempts (tests of the delays ask for them), so that a riddle retried
# is due again at once.
NO_DELAY = RetryPolicy(max_attempts=3, base=0.0, cap=0.0)


@dataclass
class Rig:
    spool: Spool
    root: Path  # where the data files of a test are kept
    retry: RetryPolicy = NO_DELAY
    max_abandoned: int = 5
    max_trials: int = 3
    handlers: dict[str, list[NamedHandler]] = field(default_factory=dict)
    pipeline: Pipeline = field(init=False)

    def __post_init__(self) -> None:
        self.root.mkdir(parents=True, exist_ok=True)
        self.data = self.root / "data"
        self.data.mkdir(exist_ok=True)
        self.log = self.spool.events
        self.pipeline = Pipeline(
            self.spool, self.log, Actor("test"), self.retry, self.max_abandoned
        )

    def use(self, stage: str, *fns: HandlerFn) -> Rig:
        """Run these functions as `stage`'s handlers, in order, named after themselves."""
        self.handlers[stage] = [NamedHandler(fn.__name__, fn) for fn in fns]
        return self

    def context(self, stage: str) -> StageContext:
        return StageContext(
            data_dir=self.data,
            spool_root=self.root,
            store=self.spool.extractions,
            handlers=self.handlers.get(stage, []) if stage_named(stage).takes_handlers else [],
            max_trials=self.max_trials,
        )

    def submit(self, *docs: dict[str, Any]) -> list[str]:
        """Store riddles as `submit` does; each doc gets an id (`r1`, `r2`, …) if it has
        none, and skips extract unless its status says otherwise."""
        riddles = []
        for number, doc in enumerate(docs, start=1):
            status = {"extract": {"required": False}, **doc.get("status", {})}
            body = {"id": f"r{number}", **doc, "status": status}
            riddles.append(codec.to_riddle(body, body["id"]))
        self.pipeline.add(riddles)
        return [r.id or "" for r in riddles]

    def worker(self, stages: Sequence[str] = STAGES) -> Worker:
        return Worker(self.pipeline, {stage: self.context(stage) for stage in stages})

    def drain(self, stages: Sequence[str] = STAGES, ticks: int = 100, sweep: bool = True) -> int:
        """Tick one worker until it finds nothing to do; how many ticks did work.

        `sweep=False`: the worker's own sweep of waiting parents is not due meanwhile (a
        worker carrying sub-riddles to done within one pass would resume their parent in
        that pass's sweep)."""
        worker = self.worker(stages)
        if not sweep:
            worker._last_sweep = time.monotonic()
        for done in range(ticks):
            if not worker.tick():
                return done
        raise AssertionError(f"still busy after {ticks} ticks")

    def where(self, riddle_id: str) -> tuple[Queue, Riddle]:
        return self.spool.require(riddle_id)

    def queue(self, riddle_id: str) -> Queue:
        return self.where(riddle_id)[0]

    def logged(self) -> list[dict[str, Any]]:
        return list(self.log.read())


def history(riddle: Riddle, key: str = "outcome", stage: str | None = None) -> list[Any]:
    """One field of each history entry (of one stage, or all)."""
    return [e.get(key) for e in riddle.history if stage is None or e.get("stage") == stage]


def until(condition: Callable[[], object], seconds: float = 10.0) -> None:
    """Wait for `condition` to hold, polling, failing the test after `seconds`."""
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, f"still not so after {seconds} s"
        time.sleep(0.005)


# -- handlers ---------------------------------------------------------------------------------


def answer(value: str) -> HandlerFn:
    """A solver answering `value` to every riddle."""

    def answers(job: Job) -> dict[str, Any]:
        return {"solution": value, "explanation": f"always {value}"}

    answers.__name__ = f"answer-{value}"
    return answers


def decline(job: Job) -> dict[str, Any]:
    return {}


def accept(job: Job) -> dict[str, Any]:
    return {"accept": True, "review": "fine"}


def reject(job: Job) -> dict[str, Any]:
    solution = job.riddle.solution.solution if job.riddle.solution else None
    return {"accept": False, "review": f"{solution} is wrong"}


def refuse(job: Job) -> dict[str, Any]:
    from riddlectl.errors import HandlerRefused

    raise HandlerRefused("cannot read this riddle")


def crash(job: Job) -> dict[str, Any]:
    raise RuntimeError("boom")
