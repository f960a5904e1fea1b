"""The pipeline above the spool: hand-offs, declines, retries and their back-off, poison
riddles, re-posing after a rejection, sub-riddles and their parents. Every test runs on
each spool (the `rig` fixture), with handlers that are small Python functions."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from riddlectl.handlers.base import Job
from riddlectl.pipeline.retry import RetryPolicy
from riddlectl.pipeline.stages import SOLVE
from riddlectl.spool.contract import Spool
from riddlectl.spool.states import Queue
from tests.rig import Rig, accept, answer, crash, decline, history, refuse, reject

QUESTION = {"riddle": {"question": "x * y ="}}
EXTRACTED_TOO = {"status": {"extract": {"required": True}}}


def test_a_riddle_goes_through_every_stage_to_done(rig: Rig) -> None:
    rig.use("solve", answer("150")).use("validate", accept)
    (riddle_id,) = rig.submit({**QUESTION, **EXTRACTED_TOO})
    rig.drain()
    queue, riddle = rig.where(riddle_id)
    assert queue is Queue.DONE and riddle.status.solved
    assert (riddle.solution.solution, riddle.solution.accepted) == ("150", True)
    assert history(riddle, "stage") == ["submit", "extract", "solve", "validate", "manage"]
    assert history(riddle, "to") == ["incoming", "extracted", "solved", "validated", "done"]
    assert (riddle.rev, riddle.contacts) == (5, 4)
    assert [e["rev"] for e in riddle.history] == [1, 2, 3, 4, 5]


def test_the_event_log_tells_what_the_histories_tell(rig: Rig) -> None:
    rig.use("solve", decline, answer("1")).use("validate", accept)
    ids = rig.submit(QUESTION, QUESTION)
    rig.drain()
    logged = rig.logged()
    for riddle_id in ids:
        assert [e for e in logged if e["id"] == riddle_id] == rig.where(riddle_id)[1].history


def test_steps_not_required_are_skipped(rig: Rig) -> None:
    rig.use("solve", answer("7"))
    unvalidated, nothing_to_do = rig.submit(
        {**QUESTION, "status": {"extract": {"required": False}, "validate": {"required": False}}},
        {
            **QUESTION,
            "status": {k: {"required": False} for k in ("extract", "solve", "validate")},
        },
    )
    assert rig.queue(nothing_to_do) is Queue.DONE
    rig.drain()
    queue, riddle = rig.where(unvalidated)
    assert queue is Queue.DONE and riddle.status.solved and riddle.solution.accepted is None
    assert history(riddle, "stage") == ["submit", "solve"]
    assert rig.where(nothing_to_do)[1].status.solved is False


# -- declines and refusals --------------------------------------------------------------------


def test_a_declining_handler_leaves_the_riddle_to_the_next(rig: Rig) -> None:
    rig.use("solve", decline, answer("3")).use("validate", accept)
    (riddle_id,) = rig.submit(QUESTION)
    rig.drain()
    queue, riddle = rig.where(riddle_id)
    assert (queue, riddle.solution.solution) == (Queue.DONE, "3")
    assert history(riddle, stage="solve") == ["declined", "ok"]
    assert history(riddle, "handler", stage="solve") == ["decline", None]


def test_declined_attempts_say_how_long_they_took(rig: Rig) -> None:
    rig.use("solve", decline, decline, answer("3")).use("validate", accept)
    (riddle_id,) = rig.submit(QUESTION)
    rig.drain()
    _, riddle = rig.where(riddle_id)
    tried = [e for e in riddle.history if e["stage"] == "solve"]
    assert [e["outcome"] for e in tried] == ["declined", "declined", "ok"]
    assert all(isinstance(e.get("duration"), float) and e["duration"] >= 0 for e in tried)


def test_a_riddle_no_handler_answers_fails_at_once(rig: Rig) -> None:
    rig.use("solve", decline, decline)
    (riddle_id,) = rig.submit(QUESTION)
    rig.drain()
    queue, riddle = rig.where(riddle_id)
    assert (queue, riddle.error) == (Queue.FAILED, "no solve handler answered")
    assert history(riddle, stage="solve") == ["declined", "declined", "failed"]


def test_a_handler_refusing_a_riddle_fails_it_without_retrying(rig: Rig) -> None:
    rig.use("solve", refuse)
    (riddle_id,) = rig.submit(QUESTION)
    rig.drain()
    queue, riddle = rig.where(riddle_id)
    assert (queue, riddle.error) == (Queue.FAILED, "cannot read this riddle")
    assert history(riddle, stage="solve") == ["failed"]


# -- errors, retries and their back-off ------------------------------------------------------


def test_errors_are_retried_until_the_attempts_are_used_up(rig: Rig) -> None:
    rig.use("solve", crash)
    (riddle_id,) = rig.submit(QUESTION)
    rig.drain()
    queue, riddle = rig.where(riddle_id)
    assert queue is Queue.FAILED
    assert riddle.error == "solve failed after 3 attempts: RuntimeError: boom"
    assert history(riddle, stage="solve") == ["error", "error", "error"]
    assert riddle.extensions()["attempts"] == {"solve": 3}


def test_a_riddle_that_fails_once_then_succeeds_is_done(rig: Rig) -> None:
    calls: list[str] = []

    def flaky(job: Job) -> dict[str, Any]:
        calls.append(job.riddle.id or "")
        if len(calls) == 1:
            raise OSError("the network is down")
        return {"solution": "5"}

    rig.use("solve", flaky).use("validate", accept)
    (riddle_id,) = rig.submit(QUESTION)
    rig.drain()
    queue, riddle = rig.where(riddle_id)
    assert (queue, riddle.solution.solution, riddle.error) == (Queue.DONE, "5", None)
    assert history(riddle, stage="solve") == ["error", "ok"]
    assert riddle.extensions()["retry_at"] is None


def test_retries_wait_longer_each_time(spool: Spool, tmp_path: Path) -> None:
    rig = Rig(spool, tmp_path / "rig", retry=RetryPolicy(max_attempts=3, base=0.5, cap=30))
    rig.use("solve", crash)
    (riddle_id,) = rig.submit(QUESTION)
    now = time.time()
    waits = []
    for _ in range(3):
        # Claimed as late as need be: the test does not wait for the delays it checks.
        claims = spool.claim(Queue.EXTRACTED, now=now + 100)
        rig.pipeline.attempts.run_batch(claims, SOLVE, rig.context("solve"))
        queue, riddle = rig.where(riddle_id)
        if queue is not Queue.EXTRACTED:
            break
        due = riddle.extensions()["retry_at"]
        waits.append(due - history(riddle, "time")[-1])
        assert spool.claim(Queue.EXTRACTED, now=due - 0.05) == []  # not due yet
    assert [round(w, 1) for w in waits] == [0.5, 1.0]
    assert queue is Queue.FAILED
    assert riddle.error == "solve failed after 3 attempts: RuntimeError: boom"


def test_the_delay_doubles_up_to_its_cap() -> None:
    policy = RetryPolicy(max_attempts=10, base=0.5, cap=3)
    assert [policy.delay(n) for n in range(1, 11)] == [0.5, 1, 2, 3, 3, 3, 3, 3, 3, None]


# -- poison riddles ---------------------------------------------------------------------------


def test_a_riddle_whose_agents_died_handling_it_too_often_fails(rig: Rig) -> None:
    called: list[Job] = []

    def counted(job: Job) -> dict[str, Any]:
        called.append(job)
        return {"solution": "1"}

    rig.use("solve", counted)
    (riddle_id,) = rig.submit(QUESTION)
    (claim,) = rig.spool.claim(Queue.EXTRACTED)
    claim.abandoned = 5  # as the spool counts claims whose holder died
    rig.pipeline.attempts.run_batch([claim], SOLVE, rig.context("solve"))
    queue, riddle = rig.where(riddle_id)
    assert queue is Queue.FAILED and called == []
    assert riddle.error == (
        "abandoned 5 times in a row: its agent died while handling it (poison riddle)"
    )
    assert history(riddle)[-1] == "abandoned"


def test_fewer_abandoned_claims_than_the_limit_are_handled(rig: Rig) -> None:
    rig.use("solve", answer("1"))
    (riddle_id,) = rig.submit(QUESTION)
    (claim,) = rig.spool.claim(Queue.EXTRACTED)
    claim.abandoned = 4
    rig.pipeline.attempts.run_batch([claim], SOLVE, rig.context("solve"))
    assert rig.queue(riddle_id) is Queue.SOLVED


# -- rejections and trials --------------------------------------------------------------------


def test_a_rejected_solution_is_posed_again_until_max_trials(rig: Rig) -> None:
    answers = iter(["1000", "1001", "1002"])
    rig.use("solve", lambda job: {"solution": next(answers)}).use("validate", reject)
    (riddle_id,) = rig.submit(QUESTION)
    rig.drain()
    queue, riddle = rig.where(riddle_id)
    assert queue is Queue.FAILED and riddle.status.trial == 3
    before = riddle.riddle.solutions_before
    assert [(s.solution, s.review) for s in before] == [
        (n, f"{n} is wrong") for n in ("1000", "1001", "1002")
    ]
    assert riddle.solution is None
    assert riddle.error == "rejected 3 times (max_trials 3); last review: 1002 is wrong"
    assert history(riddle, stage="manage") == ["rejected", "rejected", "failed"]


def test_a_solution_accepted_on_a_later_trial_is_done(rig: Rig) -> None:
    rig.use("solve", lambda job: {"solution": str(job.riddle.status.trial)})
    rig.use("validate", lambda job: {"accept": job.riddle.solution.solution == "1"})
    (riddle_id,) = rig.submit(QUESTION)
    rig.drain()
    queue, riddle = rig.where(riddle_id)
    assert (queue, riddle.solution.solution, riddle.status.trial) == (Queue.DONE, "1", 1)
    assert [s.solution for s in riddle.riddle.solutions_before] == ["0"]


def test_max_trials_of_one_fails_on_the_first_rejection(rig: Rig) -> None:
    rig.max_trials = 1
    rig.use("solve", answer("9")).use("validate", reject)
    (riddle_id,) = rig.submit(QUESTION)
    rig.drain()
    queue, riddle = rig.where(riddle_id)
    assert (queue, riddle.status.trial, len(riddle.riddle.solutions_before)) == (
        Queue.FAILED,
        1,
        1,
    )


# -- sub-riddles and their parents -------------------------------------------------------------


def parts(job: Job) -> dict[str, Any]:
    """Splits `a + b` into one sub-riddle per term, then adds up what they answered."""
    riddle = job.riddle
    if riddle.parent_id:
        return {"solution": str(len(riddle.riddle.question))}
    if riddle.sub_results is None:
        terms = riddle.riddle.question.split(" + ")
        return {"sub_riddles": [{"riddle": {"question": term}} for term in terms]}
    if not all(r["solved"] for r in riddle.sub_results):
        return {}
    return {"solution": str(sum(int(r["solution"]) for r in riddle.sub_results))}


def test_a_parent_waits_for_its_sub_riddles_then_solves_from_their_results(rig: Rig) -> None:
    rig.use("solve", parts).use("validate", accept)
    (parent_id,) = rig.submit({"riddle": {"question": "ab + cde"}})
    rig.drain()
    queue, parent = rig.where(parent_id)
    assert (queue, parent.solution.solution) == (Queue.DONE, "5")
    assert parent.sub_ids == ["r1-1", "r1-2"]
    assert parent.sub_results == [
        {"id": "r1-1", "question": "ab", "solution": "2", "solved": True, "error": None},
        {"id": "r1-2", "question": "cde", "solution": "3", "solved": True, "error": None},
    ]
    assert history(parent, "to", stage="solve") == ["waiting", "extracted", "solved"]
    for child_id in parent.sub_ids:
        queue, child = rig.where(child_id)
        assert (queue, child.parent_id, child.status.solved) == (Queue.DONE, parent_id, True)


def test_a_parent_fails_when_one_of_its_sub_riddles_fails(rig: Rig) -> None:
    def parts_or_refuse(job: Job) -> dict[str, Any]:
        if job.riddle.riddle.question == "bad":
            return refuse(job)
        return parts(job)

    rig.use("solve", parts_or_refuse)
    (parent_id,) = rig.submit({"riddle": {"question": "ok + bad"}})
    rig.drain()
    queue, parent = rig.where(parent_id)
    assert queue is Queue.FAILED
    assert parent.error == "sub-riddle r1-2 failed: cannot read this riddle"
    assert rig.queue("r1-1") is Queue.DONE


def test_a_sub_riddle_id_taken_by_another_riddle_fails_the_parent(rig: Rig) -> None:
    rig.use("solve", parts)
    parent_id, _ = rig.submit({"riddle": {"question": "a + b"}}, {"id": "r1-1", **QUESTION})
    rig.drain(["solve"])
    queue, parent = rig.where(parent_id)
    assert queue is Queue.FAILED
    assert parent.error == "solve: sub-riddle r1-1: the id is taken by another riddle"
    assert parent.sub_ids == []  # as it was before the step


def test_a_parent_is_resumed_by_the_sweep_too(rig: Rig) -> None:
    rig.use("solve", parts)
    (parent_id,) = rig.submit({"riddle": {"question": "a"}})
    rig.pipeline.on_child_final = None  # as if its child's agent died after its commit
    rig.drain(sweep=False)
    assert rig.queue(parent_id) is Queue.WAITING
    assert rig.pipeline.parents.results(rig.where(parent_id)[1]) is not None
    assert rig.pipeline.parents.sweep() == 1
    assert rig.queue(parent_id) is Queue.EXTRACTED
    assert rig.pipeline.parents.sweep() == 0


def test_a_parent_is_not_resumed_while_a_child_is_on_its_way(rig: Rig) -> None:
    rig.use("solve", parts)
    (parent_id,) = rig.submit({"riddle": {"question": "a + b"}})
    rig.drain(["solve"])  # the children wait in incoming/ for extract
    queue, parent = rig.where(parent_id)
    assert queue is Queue.WAITING
    assert rig.pipeline.parents.results(parent) is None
    assert rig.pipeline.parents.resume(parent_id) is False


@pytest.mark.parametrize("stage", ["extract", "solve", "validate", "manage"])
def test_each_stage_takes_from_its_inbox_only(rig: Rig, stage: str) -> None:
    rig.use("solve", answer("1")).use("validate", accept)
    rig.submit({**QUESTION, **EXTRACTED_TOO})
    worker = rig.worker([stage])
    assert worker.tick() == (1 if stage == "extract" else 0)


def test_one_attempt_is_said_in_the_singular(spool: Spool, tmp_path: Path) -> None:
    rig = Rig(spool, tmp_path / "rig", retry=RetryPolicy(max_attempts=1, base=0.5, cap=30))
    rig.use("solve", crash)
    (riddle_id,) = rig.submit(QUESTION)
    rig.drain()
    queue, riddle = rig.where(riddle_id)
    assert (queue, riddle.error) == (
        Queue.FAILED,
        "solve failed after 1 attempt: RuntimeError: boom",
    )
