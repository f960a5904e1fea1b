"""The worker loop above the spool: `Worker.tick`, and `run_workers` until stopped or, with
`once`, until nothing can move any more. On each spool."""

from __future__ import annotations

import logging
import threading
from pathlib import Path
from typing import Any

import pytest

from riddlectl.agent import worker as worker_mod
from riddlectl.agent.worker import DiskTrouble, run_workers
from riddlectl.document import codec
from riddlectl.handlers.base import Job
from riddlectl.pipeline.retry import RetryPolicy
from riddlectl.spool import open_spool
from riddlectl.spool.contract import Claim, Spool
from riddlectl.spool.states import Queue
from tests.rig import Rig, accept, answer, until
from tests.unit.test_pipeline import QUESTION, parts


def test_a_tick_moves_what_it_finds_downstream_first(rig: Rig) -> None:
    rig.use("solve", answer("1")).use("validate", accept)
    extract_first = {**QUESTION, "status": {"extract": {"required": True}}}
    unextracted, extracted = rig.submit(extract_first, QUESTION)
    worker = rig.worker()
    assert worker.pending() == 2
    assert worker.tick() == 2
    # The riddle further along was solved before the other one was extracted (a spool
    # that keeps claims carries each further on in the same pass).
    moves = [(e["id"], e["stage"]) for e in rig.logged()]
    assert moves.index((extracted, "solve")) < moves.index((unextracted, "extract"))
    while worker.tick():
        pass
    assert rig.queue(unextracted) is rig.queue(extracted) is Queue.DONE
    assert (worker.pending(), worker.tick()) == (0, 0)


def test_a_worker_runs_only_its_own_stages(rig: Rig) -> None:
    rig.use("solve", answer("1"))
    (riddle_id,) = rig.submit(QUESTION)
    validator = rig.worker(["validate", "manage"])
    assert (validator.pending(), validator.tick()) == (0, 0)
    assert rig.queue(riddle_id) is Queue.EXTRACTED


def test_run_once_stops_when_nothing_can_move(rig: Rig) -> None:
    rig.use("solve", parts).use("validate", accept)
    ids = rig.submit({"riddle": {"question": "a + bc"}}, {"riddle": {"question": "d"}})
    run_workers([rig.worker(), rig.worker()], once=True, stop=threading.Event())
    # Sub-riddles, and their parents resumed, included.
    assert [rig.where(i)[1].solution.solution for i in ids] == ["3", "1"]
    assert {rig.queue(i) for i in [*ids, "r1-1", "r1-2", "r2-1"]} == {Queue.DONE}


def test_run_once_waits_for_delayed_retries(spool: Spool, tmp_path: Path) -> None:
    rig = Rig(spool, tmp_path / "rig", retry=RetryPolicy(max_attempts=3, base=0.05, cap=0.1))
    failures = iter([OSError("once"), OSError("twice")])

    def flaky(job: Job) -> dict[str, Any]:
        failure = next(failures, None)
        if failure is not None:
            raise failure
        return {"solution": "3"}

    rig.use("solve", flaky).use("validate", accept)
    (riddle_id,) = rig.submit(QUESTION)
    run_workers([rig.worker()], once=True, stop=threading.Event())
    queue, riddle = rig.where(riddle_id)
    assert (queue, riddle.solution.solution) == (Queue.DONE, "3")
    solves = [e["time"] for e in riddle.history if e["stage"] == "solve"]
    assert solves[1] - solves[0] >= 0.05 and solves[2] - solves[1] >= 0.1


def test_run_until_stopped(rig: Rig, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(worker_mod, "IDLE_POLL", 0.01)
    rig.use("solve", answer("1")).use("validate", accept)
    stop = threading.Event()
    thread = threading.Thread(
        target=run_workers, args=([rig.worker()],), kwargs={"once": False, "stop": stop}
    )
    thread.start()
    try:
        (riddle_id,) = rig.submit(QUESTION)  # arrives while the worker idles
        until(lambda: rig.queue(riddle_id) is Queue.DONE)
    finally:
        stop.set()
        thread.join(10)
    assert not thread.is_alive()


def test_disk_trouble_backs_off_doubling_and_says_so_once(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger="riddlectl")
    trouble = DiskTrouble("agent:solve")
    full = OSError(28, "No space left on device")
    assert [trouble.back_off(full) for _ in range(8)] == [0.5, 1, 2, 4, 8, 16, 30, 30]
    (said,) = caplog.records
    assert (said.levelname, said.getMessage()) == ("WARNING", "spool-waiting")
    assert "No space left on device" in said.error  # type: ignore[attr-defined]
    caplog.clear()
    trouble.clear()
    (back,) = caplog.records
    assert back.getMessage() == "spool-back" and back.agent == "agent:solve"  # type: ignore[attr-defined]
    assert back.spool == "is writable again"  # type: ignore[attr-defined]
    assert trouble.back_off(full) == 0.5


def test_an_agent_on_postgresql_asks_once_per_riddle_and_hears_what_arrives_meanwhile(
    pg_spool: Spool, pg_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # No look but the wake-ups within the test's time: a riddle is brought on by the
    # notification of its arrival or not at all.
    monkeypatch.setattr(worker_mod, "IDLE_POLL", 60.0)
    submitter = open_spool(pg_url, create=False)  # another client, as `submit` would be
    rig = Rig(pg_spool, tmp_path / "rig")

    def solve_and_pose_another(job: Job) -> dict[str, Any]:
        if job.riddle.id == "first":  # arrives while the agent handles this one
            skips_extract = {"extract": {"required": False}}
            doc = {**QUESTION, "id": "second", "status": skips_extract}
            submitter.add([codec.to_riddle(doc, "second")])
        return {"solution": "1"}

    rig.use("solve", solve_and_pose_another)
    claims = []
    claim_and_begin = pg_spool.claim_and_begin

    def counted(queue: Queue, limit: int = 1, now: float | None = None) -> list[Claim]:
        claimed = claim_and_begin(queue, limit, now)
        claims.append(len(claimed))
        return claimed

    monkeypatch.setattr(pg_spool, "claim_and_begin", counted)
    stop = threading.Event()
    solver = threading.Thread(
        target=run_workers,
        args=([rig.worker(["solve"])],),
        kwargs={"once": False, "stop": stop, "inboxes": [Queue.EXTRACTED]},
    )
    solver.start()
    try:
        until(lambda: claims == [0])  # started, found nothing, waits
        rig.submit({**QUESTION, "id": "first"})
        until(lambda: "second" in pg_spool.ids(Queue.SOLVED), 20)
    finally:
        stop.set()
        solver.join(10)
        submitter.disconnect()  # type: ignore[attr-defined]
    assert rig.queue("first") is Queue.SOLVED
    # One query per riddle: none asked again at once after a riddle, to find nothing.
    assert claims == [0, 1, 1]
