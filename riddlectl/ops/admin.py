"""Acting on riddles by hand: retry, hold, release, cancel, purge (postsuper's verbs).

Each action claims the riddle by id (waiting briefly for an agent that holds it), changes
it, and commits it with one history entry and one event whose `stage` is the command.
A command given several ids asks `refusals` first, and acts on none if any is refused.

One rule for a riddle that is already as the command would leave it (held, not held, in
the pipeline, final): the command leaves it as it is and succeeds, as `mkdir -p` does; it
refuses only what cannot be done where the riddle is (holding a final riddle, retrying a
held one).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable

from riddlectl.document.model import Riddle
from riddlectl.errors import InvalidDocument, RiddleError, UnknownRiddle
from riddlectl.pipeline.jobs import Pipeline
from riddlectl.pipeline.stages import EXTRACT, MANAGE, SOLVE, VALIDATE
from riddlectl.spool.contract import Spool, unknown
from riddlectl.spool.states import FINAL, INBOX, STEPS, Queue, route

RETRY_STEPS = STEPS  # where `retry --from` may start a riddle again: a step of its status


def _why_not_hold(queue: Queue) -> str | None:
    return f"cannot hold: it is in {queue.value}/, final" if queue in FINAL else None


def _why_not_retry(queue: Queue) -> str | None:
    if queue is Queue.HOLD:
        return "cannot retry: it is held (release it first)"
    return None


_WHY_NOT: dict[str, Callable[[Queue], str | None]] = {
    "hold": _why_not_hold,  # a held riddle stays held
    "release": lambda queue: None,  # one not held is left where it is
    "retry": _why_not_retry,  # one still in the pipeline is left where it is
    "cancel": lambda queue: None,  # a final riddle is left as it is
}


def refusals(spool: Spool, command: str, ids: Iterable[str]) -> list[RiddleError]:
    """Why `command` (hold, release, retry, cancel) cannot act on each of `ids` as the
    spool stands now, in the order given; empty when it can act on every one.

    An agent may still move a riddle between this check and the action: the action checks
    again under the riddle's lock.
    """
    out: list[RiddleError] = []
    for riddle_id in ids:
        found = spool.find(riddle_id)
        if found is None:
            out.append(unknown(riddle_id))
            continue
        why = _WHY_NOT[command](found[0])
        if why is not None:
            out.append(InvalidDocument(why, where=riddle_id))
    return out


def hold(pipeline: Pipeline, riddle_id: str) -> Queue:
    """Park a riddle in `hold/`, remembering where it was; returns that queue (for one
    already held, left as it is: the queue it was held from)."""
    claim = pipeline.spool.claim_id(riddle_id)
    why = _why_not_hold(claim.queue)
    if why is not None or claim.queue is Queue.HOLD:
        pipeline.spool.release(claim)
        if why is not None:
            raise InvalidDocument(why, where=riddle_id)
        return _held_from(claim.riddle)
    riddle = claim.riddle.model_copy(deep=True)
    riddle.extensions()["held_from"] = claim.queue.value
    pipeline.move(claim, riddle, Queue.HOLD, "hold", "ok")
    return claim.queue


def release(pipeline: Pipeline, riddle_id: str) -> Queue:
    """Put a held riddle back where it was; returns that queue (for one not held, left as
    it is: the queue it is in)."""
    claim = pipeline.spool.claim_id(riddle_id)
    if claim.queue is not Queue.HOLD:
        pipeline.spool.release(claim)
        return claim.queue
    riddle = claim.riddle.model_copy(deep=True)
    to = _held_from(riddle)
    riddle.extensions().pop("held_from", None)
    pipeline.move(claim, riddle, to, "release", "ok")
    return to


def _held_from(riddle: Riddle) -> Queue:
    held_from = riddle.extensions().get("held_from")
    return Queue(held_from) if held_from in {q.value for q in Queue} else route(riddle)


def cancel(pipeline: Pipeline, riddle_id: str) -> list[str]:
    """Move a riddle and its sub-riddles (recursively) to `failed/` with error `cancelled`.

    Riddles already final are left as they are, and sub-riddles already purged are
    skipped. Returns the ids that were cancelled.
    """
    cancelled: list[str] = []
    pending = [riddle_id]
    while pending:
        current = pending.pop()
        try:
            claim = pipeline.spool.claim_id(current)
        except UnknownRiddle:
            if current == riddle_id:
                raise
            continue
        pending += claim.riddle.sub_ids
        if claim.queue in FINAL:
            pipeline.spool.release(claim)
            continue
        riddle = claim.riddle.model_copy(deep=True)
        pipeline.move(claim, riddle, Queue.FAILED, "cancel", "failed", error="cancelled")
        cancelled.append(current)
    return cancelled


def failed_step(riddle: Riddle) -> str:
    """The step a failed riddle starts again at: the step it failed in; solve after its
    trials ran out; for a cancelled riddle, the step whose inbox it was taken from."""
    for event in reversed(riddle.history):
        if event.get("to") != Queue.FAILED.value:
            continue
        stage = event.get("stage")
        if stage in STEPS:
            return str(stage)
        if stage == MANAGE.name:  # rejected on its last trial
            return SOLVE.name
        return _RESUME_FROM.get(str(event.get("from")), SOLVE.name)
    return SOLVE.name


# A riddle cancelled in a step's inbox starts again at that step; one cancelled while
# waiting for manage (in validated/) is validated again.
_RESUME_FROM = {INBOX[step].value: step for step in STEPS} | {MANAGE.inbox.value: VALIDATE.name}


def retry(
    pipeline: Pipeline, riddle_id: str, from_step: str | None = None, reset_trials: bool = False
) -> Queue:
    """Put a final riddle back into the pipeline; returns the queue it went to (for one
    still in the pipeline, left as it is: the queue it is in)."""
    claim = pipeline.spool.claim_id(riddle_id)
    if claim.queue not in FINAL:
        pipeline.spool.release(claim)
        why = _why_not_retry(claim.queue)
        if why is not None:
            raise InvalidDocument(why, where=riddle_id)
        return claim.queue
    riddle = claim.riddle.model_copy(deep=True)
    step = from_step or failed_step(riddle)
    _reset(riddle, step, reset_trials)
    to = INBOX[step] if riddle.status.step(step).required else route(riddle, _before(step))
    pipeline.move(claim, riddle, to, "retry", "ok")
    return to


def _before(step: str) -> str | None:
    index = STEPS.index(step)
    return STEPS[index - 1] if index else None


def _reset(riddle: Riddle, step: str, reset_trials: bool) -> None:
    extra = riddle.extensions()
    extra.pop("attempts", None)
    extra.pop("retry_at", None)
    riddle.error = None
    riddle.status.solved = False
    for name in STEPS[STEPS.index(step) :]:
        riddle.status.step(name).finished = False
    if step in (EXTRACT.name, SOLVE.name):
        riddle.solution = None
        _retire_children(riddle)
    elif riddle.solution is not None:
        riddle.solution.accepted = None
        riddle.solution.review = None
    if reset_trials:
        riddle.status.trial = 0


def _retire_children(riddle: Riddle) -> None:
    """Solving again starts afresh: the sub-riddles of earlier attempts (cancelled, failed,
    or solved from data that may have changed since) no longer count. Their ids stay
    taken, so they are kept aside in `retired_sub_ids` and new ones number on after them."""
    if riddle.sub_ids:
        retired = list(riddle.extensions().get("retired_sub_ids") or [])
        riddle.extensions()["retired_sub_ids"] = [*retired, *riddle.sub_ids]
        riddle.sub_ids = []
    riddle.sub_results = None


def failed_ids(pipeline: Pipeline) -> list[str]:
    return sorted(pipeline.spool.ids(Queue.FAILED))


def purge(pipeline: Pipeline, queues: Iterable[Queue], older_than: float) -> list[str]:
    """Delete final riddles last changed more than `older_than` seconds ago, and the
    events logged before then where the event log is bounded that way; the ids."""
    cutoff = time.time() - older_than
    pipeline.events.prune(cutoff)
    purged = []
    for queue in queues:
        for riddle in list(pipeline.spool.iter_queue(queue)):
            if (riddle.updated or 0) > cutoff:
                continue
            try:
                claim = pipeline.spool.claim_id(riddle.id or "")
            except UnknownRiddle:  # purged meanwhile by another command
                continue
            if claim.queue is queue:
                pipeline.delete(claim, "purge")
                purged.append(riddle.id or "")
            else:
                pipeline.spool.release(claim)
    return purged


def parse_duration(text: str) -> float:
    """`90`, `90s`, `15m`, `12h`, `7d`, `2w` → seconds; ValueError otherwise."""
    units = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}
    text = text.strip().lower()
    unit = units.get(text[-1:])
    number = text[:-1] if unit else text
    value = float(number)
    if value < 0 or value != value:
        raise ValueError(text)
    return value * (unit or 1)
