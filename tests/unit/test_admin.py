"""Acting on riddles by hand (retry, hold, release, cancel, purge) and doctor's checks of
parents and sub-riddles, on each spool."""

from __future__ import annotations

import pytest

from riddlectl.errors import InvalidDocument, UnknownRiddle
from riddlectl.ops import admin, doctor
from riddlectl.spool.states import Queue
from tests.rig import Rig, accept, answer, crash, history, reject
from tests.unit.test_pipeline import QUESTION, parts


def test_hold_parks_a_riddle_and_release_puts_it_back(rig: Rig) -> None:
    (riddle_id,) = rig.submit(QUESTION)
    assert admin.hold(rig.pipeline, riddle_id) is Queue.EXTRACTED
    assert rig.queue(riddle_id) is Queue.HOLD
    rig.use("solve", answer("1")).drain()  # agents leave it alone
    assert rig.queue(riddle_id) is Queue.HOLD
    assert admin.release(rig.pipeline, riddle_id) is Queue.EXTRACTED
    queue, riddle = rig.where(riddle_id)
    assert queue is Queue.EXTRACTED and "held_from" not in riddle.extensions()
    assert history(riddle, "stage")[-2:] == ["hold", "release"]


def test_commands_by_hand_are_no_hand_offs(rig: Rig) -> None:
    held, cancelled = rig.submit(QUESTION, QUESTION)
    admin.hold(rig.pipeline, held)
    admin.release(rig.pipeline, held)
    admin.cancel(rig.pipeline, cancelled)
    admin.retry(rig.pipeline, cancelled)
    for riddle_id in (held, cancelled):
        _, riddle = rig.where(riddle_id)
        assert riddle.contacts == 0, history(riddle, "stage")
    rig.use("solve", answer("1")).drain(["solve"])
    assert rig.where(held)[1].contacts == 1  # an agent's hand-off counts


def test_refusals_name_every_riddle_a_command_cannot_act_on(rig: Rig) -> None:
    rig.use("solve", answer("1"))
    waiting, done = rig.submit(QUESTION, {**QUESTION, "status": {"validate": {"required": False}}})
    rig.drain(["solve", "manage"])
    assert rig.queue(done) is Queue.DONE
    refused = admin.refusals(rig.spool, "hold", [waiting, done, "ghost"])
    assert [type(e) for e in refused] == [InvalidDocument, UnknownRiddle]
    assert "cannot hold: it is in done/, final" in str(refused[0])
    # Already so is no refusal: a riddle not held is left where it is, one in the
    # pipeline too.
    assert admin.refusals(rig.spool, "release", [waiting]) == []
    assert admin.release(rig.pipeline, waiting) is Queue.SOLVED
    assert admin.refusals(rig.spool, "retry", [done, waiting]) == []
    assert admin.retry(rig.pipeline, waiting) is Queue.SOLVED
    admin.hold(rig.pipeline, waiting)
    assert admin.hold(rig.pipeline, waiting) is Queue.SOLVED  # still held, from solved/
    with pytest.raises(InvalidDocument, match="release it first"):
        admin.retry(rig.pipeline, waiting)


def test_cancel_fails_a_riddle_and_its_sub_riddles(rig: Rig) -> None:
    rig.use("solve", parts)
    (parent_id,) = rig.submit({"riddle": {"question": "a + b"}})
    rig.drain(["solve"])
    assert rig.queue(parent_id) is Queue.WAITING
    assert sorted(admin.cancel(rig.pipeline, parent_id)) == [parent_id, "r1-1", "r1-2"]
    for riddle_id in (parent_id, "r1-1", "r1-2"):
        queue, riddle = rig.where(riddle_id)
        assert (queue, riddle.error) == (Queue.FAILED, "cancelled")
    assert admin.cancel(rig.pipeline, parent_id) == []  # final riddles are left as they are
    with pytest.raises(UnknownRiddle):
        admin.cancel(rig.pipeline, "ghost")


def test_cancelling_sub_riddles_fails_their_waiting_parent(rig: Rig) -> None:
    rig.use("solve", parts)
    (parent_id,) = rig.submit({"riddle": {"question": "a + b"}})
    rig.drain(["solve"])
    admin.cancel(rig.pipeline, "r1-1")
    assert rig.queue(parent_id) is Queue.WAITING  # for its other sub-riddle
    admin.cancel(rig.pipeline, "r1-2")
    queue, parent = rig.where(parent_id)
    assert (queue, parent.error) == (Queue.FAILED, "sub-riddle r1-1 failed: cancelled")


def test_retry_starts_a_failed_riddle_again_where_it_failed(rig: Rig) -> None:
    rig.use("solve", crash)
    (riddle_id,) = rig.submit(QUESTION)
    rig.drain()
    assert rig.queue(riddle_id) is Queue.FAILED
    assert admin.retry(rig.pipeline, riddle_id) is Queue.EXTRACTED
    riddle = rig.where(riddle_id)[1]
    assert riddle.error is None and "attempts" not in riddle.extensions()
    rig.use("solve", answer("2")).use("validate", accept).drain()
    assert rig.where(riddle_id)[1].solution.solution == "2"


def test_retry_after_the_trials_ran_out_solves_again_keeping_what_was_rejected(
    rig: Rig,
) -> None:
    rig.max_trials = 2
    rig.use("solve", answer("9")).use("validate", reject)
    (riddle_id,) = rig.submit(QUESTION)
    rig.drain()
    assert rig.where(riddle_id)[1].status.trial == 2
    assert admin.retry(rig.pipeline, riddle_id) is Queue.EXTRACTED
    riddle = rig.where(riddle_id)[1]
    assert (riddle.status.trial, len(riddle.riddle.solutions_before)) == (2, 2)
    admin.cancel(rig.pipeline, riddle_id)
    admin.retry(rig.pipeline, riddle_id, reset_trials=True)
    assert rig.where(riddle_id)[1].status.trial == 0


def test_retry_from_validate_keeps_the_solution_and_asks_again(rig: Rig) -> None:
    rig.use("solve", answer("4")).use("validate", accept)
    (riddle_id,) = rig.submit(QUESTION)
    rig.drain()
    assert admin.retry(rig.pipeline, riddle_id, from_step="validate") is Queue.SOLVED
    solution = rig.where(riddle_id)[1].solution
    assert (solution.solution, solution.accepted, solution.review) == ("4", None, None)


def test_a_riddle_cancelled_waiting_for_manage_is_validated_again(rig: Rig) -> None:
    rig.use("solve", answer("4")).use("validate", accept)
    (riddle_id,) = rig.submit(QUESTION)
    rig.drain(["solve", "validate"])
    assert rig.queue(riddle_id) is Queue.VALIDATED
    admin.cancel(rig.pipeline, riddle_id)
    assert admin.retry(rig.pipeline, riddle_id) is Queue.SOLVED


def test_solving_again_retires_the_old_sub_riddles(rig: Rig) -> None:
    rig.use("solve", parts)
    (parent_id,) = rig.submit({"riddle": {"question": "a + b"}})
    rig.drain(["solve"])
    admin.cancel(rig.pipeline, parent_id)
    admin.retry(rig.pipeline, parent_id, from_step="solve")
    rig.use("validate", accept).drain()
    queue, parent = rig.where(parent_id)
    assert (queue, parent.sub_ids) == (Queue.DONE, ["r1-3", "r1-4"])
    assert parent.extensions()["retired_sub_ids"] == ["r1-1", "r1-2"]


def test_purge_deletes_old_final_riddles_and_logs_it(rig: Rig) -> None:
    rig.use("solve", answer("1"))
    done, waiting = rig.submit({**QUESTION, "status": {"validate": {"required": False}}}, QUESTION)
    rig.drain(["solve", "manage"])
    assert admin.purge(rig.pipeline, [Queue.DONE], older_than=3600) == []
    assert admin.purge(rig.pipeline, [Queue.DONE, Queue.FAILED], older_than=0) == [done]
    assert rig.spool.find(done) is None and rig.queue(waiting) is Queue.SOLVED
    (event,) = [e for e in rig.logged() if e["stage"] == "purge"]
    assert (event["id"], event["from"], event["to"], event["rev"]) == (done, "done", None, 2)


# -- doctor ---------------------------------------------------------------------------------


def test_doctor_finds_and_detaches_a_sub_riddle_whose_parent_is_gone(rig: Rig) -> None:
    rig.use("solve", parts)
    (parent_id,) = rig.submit({"riddle": {"question": "a"}})
    rig.drain(["solve"])
    admin.purge(rig.pipeline, [Queue.WAITING], older_than=0)
    (finding,) = doctor.family(rig.pipeline)
    assert (finding.kind, finding.subject) == ("orphan", "r1-1")
    assert not finding.fixed and rig.where("r1-1")[1].parent_id == parent_id
    assert doctor.family(rig.pipeline, fix=True)[0].fixed
    assert rig.where("r1-1")[1].parent_id is None
    assert doctor.family(rig.pipeline) == []


def test_doctor_resumes_a_parent_left_waiting(rig: Rig) -> None:
    rig.use("solve", parts)
    (parent_id,) = rig.submit({"riddle": {"question": "a"}})
    rig.pipeline.on_child_final = None  # as if its child's agent died after its commit
    rig.drain(sweep=False)
    (finding,) = doctor.family(rig.pipeline)
    assert (finding.kind, finding.subject) == ("waiting", parent_id)
    assert doctor.family(rig.pipeline, fix=True)[0].fixed
    assert rig.queue(parent_id) is Queue.EXTRACTED
    assert doctor.family(rig.pipeline) == []
