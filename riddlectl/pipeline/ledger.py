"""The pipeline: a claimed riddle through one stage, with retries, poison and parents.

`Pipeline.handle` is the one place that turns a stage's outcome (or its exception) into a
commit: forward on success, back into the same queue with a delay on a retryable error,
to `failed/` when the riddle cannot be handled or its attempts are used up. Every handling
appends one `history` entry to the document and one line to the event log.

A move the spool refuses as too large is fitted to the size limit (`_fit`): the oldest
history entries make room first; a step whose outcome still does not fit fails the
riddle with its document as it was before that step, which always fits.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from riddlectl import inflight
from riddlectl.document.codec import make_room, size_of
from riddlectl.document.model import Riddle
from riddlectl.errors import (
    DocumentTooLarge,
    HandlerFailed,
    HandlerRefused,
    InvalidData,
    RiddleError,
)
from riddlectl.identity import Actor
from riddlectl.pipeline.retry import RetryPolicy
from riddlectl.pipeline.stages import STAGE_FUNCTIONS, Outcome, StageContext
from riddlectl.spool.contract import Claim, Spool
from riddlectl.spool.crashpoints import reach
from riddlectl.spool.events import EventLog
from riddlectl.spool.states import FINAL, INBOX, Queue, route

MAX_HISTORY = 200  # entries kept per document, so a riddle retried forever stays small
GROUP_WINDOW = 0.005  # seconds a handled riddle may wait for others to share its commit
MAX_ERROR_CHARS = 1000  # of an error kept in a document: a handler's message may be huge


@dataclass
class Move:
    """A handled riddle ready to be committed to `to`, and the events that say so."""

    claim: Claim
    riddle: Riddle
    to: Queue
    events: list[dict[str, Any]]
    stage: str = ""  # the stage or command that made it
    children: list[Riddle] = field(default_factory=list)  # sub-riddles to store first


@dataclass
class Pipeline:
    spool: Spool
    events: EventLog
    actor: Actor
    retry: RetryPolicy
    max_abandoned: int = 5
    # Called after every commit with (id, destination): how `run` counts what it did.
    on_move: Callable[[str, Queue], None] | None = None

    # -- recording ------------------------------------------------------------------------

    def record(
        self,
        riddle: Riddle,
        stage: str,
        source: Queue | None,
        to: Queue | None,
        outcome: str,
        *,
        error: str | None = None,
        duration: float | None = None,
        rev: int | None = None,
        handler: str | None = None,
    ) -> dict[str, Any]:
        event: dict[str, Any] = {
            "time": time.time(),
            "id": riddle.id,
            "stage": stage,
            "from": source.value if source else None,
            "to": to.value if to else None,
            "outcome": outcome,
            **self.actor.as_dict(),
            **({"handler": handler} if handler else {}),
            "rev": riddle.rev + 1 if rev is None else rev,
        }
        if duration is not None:
            event["duration"] = round(duration, 6)
        if error:
            event["error"] = error
        riddle.history = [*riddle.history, event][-MAX_HISTORY:]
        return event

    def prepare(
        self,
        claim: Claim,
        riddle: Riddle,
        to: Queue,
        stage: str,
        outcome: str,
        *,
        error: str | None = None,
        duration: float | None = None,
        declined: Sequence[str] = (),
    ) -> Move:
        """`riddle` made ready to go to `to`, with its history entries (one `declined`
        entry per solve handler that declined before the outcome); `commit` stores it."""
        notes = [
            self.record(riddle, stage, claim.queue, claim.queue, "declined", handler=name)
            for name in declined
        ]
        if error is not None and len(error) > MAX_ERROR_CHARS:
            error = error[:MAX_ERROR_CHARS] + "…"
        riddle.contacts += 1
        if to is Queue.DONE:
            riddle.status.solved = is_solved(riddle)
        if error is not None or to is Queue.FAILED:
            riddle.error = error
        event = self.record(riddle, stage, claim.queue, to, outcome, error=error, duration=duration)
        return Move(claim, riddle, to, [*notes, event], stage)

    # -- sizes ----------------------------------------------------------------------------

    def _fit(self, move: Move, size: int) -> Move:
        """`move`, whose document would be `size` bytes, within its limit: made room for
        by dropping the oldest history entries (the event log keeps them). A stage's
        outcome that still does not fit fails the riddle instead; a command's raises
        `DocumentTooLarge`. A move to `failed/` is stored in any case: a riddle must always
        be able to end."""
        limit = self.spool.limit_for(move.to)
        if _make_room(move, limit) <= limit:
            return move
        if move.stage in STAGE_FUNCTIONS:
            return self._too_large(move, size, limit)
        if move.to is Queue.FAILED:
            move.claim.unbounded = True
            return move
        raise DocumentTooLarge(
            f"cannot {move.stage}: {self.spool.limits.grown(size, limit)}",
            where=move.riddle.id,
        )

    def _refitted(self, move: Move, sizes: dict[str, int]) -> Move:
        size = sizes.get(move.riddle.id or "")
        return move if size is None else self._fit(move, size)

    def _too_large(self, move: Move, size: int, limit: int) -> Move:
        """The riddle of `move` failed, as it was before the step that made `move`."""
        error = f"{move.stage}: {self.spool.limits.grown(size, limit)}"
        riddle = self.spool.reread(move.claim)
        failed = self.prepare(move.claim, riddle, Queue.FAILED, move.stage, "failed", error=error)
        # It fits, since the document before the step left room for a failure; one stored
        # before the limit was lowered may not, and is stored all the same.
        if _make_room(failed, self.spool.limits.document) > self.spool.limits.document:
            move.claim.unbounded = True
        return failed

    def commit(self, moves: Sequence[Move]) -> list[Riddle]:
        """Store prepared moves as one group, then log their events and resume parents.

        The events are held in the journal while the group is committed (see `events`),
        so that a death before they reach the log loses none of them. Moves the spool
        refuses as too large are fitted (`_fit`) and the group committed again."""
        if not moves:
            return []
        moves = list(moves)
        for attempt in range(3):
            events = [event for move in moves for event in move.events]
            try:
                with self.events.committing(events, self.committed):
                    stored = self.spool.commit_many([(m.claim, m.riddle, m.to) for m in moves])
                break
            except DocumentTooLarge as exc:
                # Each pass fits or fails every move refused, so the second one stores them.
                if not exc.sizes or attempt == 2:
                    raise
                moves = [self._refitted(move, exc.sizes) for move in moves]
        reach("event-logged")
        for move, riddle in zip(moves, stored, strict=True):
            if self.on_move is not None:
                self.on_move(riddle.id or "", move.to)
            if move.to in FINAL and riddle.parent_id:
                self.resume_parent(riddle.parent_id)
        return stored

    def move(
        self,
        claim: Claim,
        riddle: Riddle,
        to: Queue,
        stage: str,
        outcome: str,
        *,
        error: str | None = None,
    ) -> Riddle:
        """Commit `riddle` to `to` now, alone (see `prepare` and `_fit`): commands, resumed
        parents. `DocumentTooLarge` (the claim given back) when a command's change does
        not fit."""
        try:
            return self.commit([self.prepare(claim, riddle, to, stage, outcome, error=error)])[0]
        except DocumentTooLarge:
            self.spool.release(claim)
            raise

    # -- handling -------------------------------------------------------------------------

    def handle(self, claim: Claim, stage: str, ctx: StageContext) -> Riddle:
        """Run `stage` on a claimed riddle and commit the result; the claim ends here."""
        return self.handle_many([claim], stage, ctx)[0]

    def handle_many(
        self,
        claims: Sequence[Claim],
        stage: str,
        ctx: StageContext,
        stop: threading.Event | None = None,
        on_slow: Callable[[], None] | None = None,
    ) -> list[Riddle]:
        """Run `stage` on claimed riddles one by one, committing their results in groups.

        A group is committed when `GROUP_WINDOW` has passed since its first riddle was
        handled, so a slow handler does not hold back the riddles before it; when a handler
        call runs `inflight.SLOW` seconds, the group is committed, the claims not started
        yet are given back for others to take, and `on_slow` is called. Every claim ends
        here: committed, or given back unchanged when `stop` is set, when the agent stops
        the handler (`HandlerStopped`), or on an error.
        """
        batch = _Batch(self, list(claims), stage, ctx)
        try:
            with inflight.when_slow(lambda: batch.give_back(on_slow)):
                batch.run(stop)
        finally:
            batch.release()
        return batch.stored

    def _ready(self, claim: Claim, stage: str, ctx: StageContext) -> Move:
        """The move a claimed riddle makes after `stage`, its sub-riddles stored. A parent
        is measured first: were the spool to refuse it after they were stored, they would
        be left without it."""
        move = self._handled(claim, stage, ctx)
        if move.children:
            size = size_of(move.riddle)
            if size > self.spool.limit_for(move.to):
                move = self._fit(move, size)
            if move.to is not Queue.FAILED:
                self._add_children(move.riddle, move.children)
        return move

    def _handled(self, claim: Claim, stage: str, ctx: StageContext) -> Move:
        riddle = claim.riddle  # freshly read for this claim: ours to change
        if claim.abandoned >= self.max_abandoned:
            error = (
                f"abandoned {claim.abandoned} times in a row: its agent died while "
                f"handling it (poison riddle)"
            )
            return self.prepare(claim, riddle, Queue.FAILED, stage, "abandoned", error=error)
        self.spool.begin(claim)
        reach("claimed")
        started = time.monotonic()
        try:
            outcome = STAGE_FUNCTIONS[stage](riddle, ctx)
        except (HandlerRefused, InvalidData) as exc:
            return self.prepare(
                claim,
                riddle,
                Queue.FAILED,
                stage,
                "failed",
                error=str(exc),
                duration=time.monotonic() - started,
                declined=getattr(exc, "declined", []),
            )
        except Exception as exc:
            return self._retry_later(claim, riddle, stage, exc, time.monotonic() - started)
        reach("handled")
        return self._forward(claim, stage, outcome, time.monotonic() - started)

    def _forward(self, claim: Claim, stage: str, outcome: Outcome, duration: float) -> Move:
        riddle = outcome.riddle
        if "retry_at" in riddle.extensions():
            riddle.extensions()["retry_at"] = None
        refusal = self._refuse_children(riddle, outcome.children)
        if refusal is not None:
            failed = self.spool.reread(claim)
            error = f"{stage}: {refusal}"
            return self.prepare(
                claim, failed, Queue.FAILED, stage, "failed", error=error, duration=duration
            )
        if outcome.to is not Queue.FAILED:
            riddle.error = None
        move = self.prepare(
            claim,
            riddle,
            outcome.to,
            stage,
            outcome.outcome,
            error=outcome.error,
            declined=outcome.declined,
            duration=duration,
        )
        move.children = outcome.children
        return move

    def _refuse_children(self, parent: Riddle, children: list[Riddle]) -> str | None:
        """Why the sub-riddles cannot be stored, or None: each is a new riddle, held to the
        limit of one, and its id must not belong to a riddle that is not this parent's."""
        limit = self.spool.limits.new_riddle
        for child in children:
            size = size_of(child)
            if size > limit:
                reason = self.spool.limits.too_large(size, limit, " for a new riddle")
                return f"sub-riddle {child.id}: {reason}"
            found = self.spool.find(child.id or "")
            if found is not None and found[1].parent_id != parent.id:
                return f"sub-riddle {child.id}: the id is taken by another riddle"
        return None

    def _add_children(self, parent: Riddle, children: list[Riddle]) -> None:
        # Idempotent: a crash after adding them and before moving the parent re-solves the
        # parent, which names the same ids; those already stored are kept as they are.
        fresh = [c for c in children if self.spool.find(c.id or "") is None]
        now = time.time()
        for child in fresh:
            child.created = now
            self.record(child, "submit", None, route(child), "ok", rev=1)
        with self.events.committing([c.history[-1] for c in fresh], self.committed):
            self.spool.add(fresh)

    # -- the event log --------------------------------------------------------------------

    def committed(self, event: dict[str, Any]) -> bool:
        """Whether the commit `event` describes took place (see `event_committed`)."""
        return event_committed(self.spool, event)

    def recover_events(self) -> int:
        """Log the events of commits whose writer died before logging them; how many."""
        return self.events.recover(self.committed)

    def _retry_later(
        self, claim: Claim, riddle: Riddle, stage: str, exc: Exception, duration: float
    ) -> Move:
        error = _describe(exc)
        attempts = dict(riddle.extensions().get("attempts") or {})
        attempts[stage] = int(attempts.get(stage, 0)) + 1
        riddle.extensions()["attempts"] = attempts
        delay = self.retry.delay(attempts[stage])
        outcome = "timeout" if "timed out" in error else "error"
        if delay is None:
            error = f"{stage} failed after {attempts[stage]} attempts: {error}"
            return self.prepare(
                claim, riddle, Queue.FAILED, stage, outcome, error=error, duration=duration
            )
        riddle.extensions()["retry_at"] = time.time() + delay
        return self.prepare(
            claim, riddle, claim.queue, stage, outcome, error=error, duration=duration
        )

    # -- parents --------------------------------------------------------------------------

    def resume_parent(self, parent_id: str) -> bool:
        """Move a waiting parent back to solving once every child is final.

        Any agent finishing a child calls this; the waiting sweep calls it too, so a race
        between two children finishing at once cannot leave the parent waiting.
        """
        found = self.spool.find(parent_id)
        if found is None or found[0] is not Queue.WAITING:
            return False
        results = self.sub_results_of(found[1])
        if results is None:
            return False
        try:
            claim = self.spool.claim_id(parent_id, wait=0.5)
        except (TimeoutError, RiddleError):
            return False
        if claim.queue is not Queue.WAITING:
            self.spool.release(claim)
            return False
        parent = claim.riddle.model_copy(deep=True)
        parent.sub_results = results
        failed = [r for r in results if not r["solved"]]
        if failed:
            first = failed[0]
            error = f"sub-riddle {first['id']} failed: {first['error'] or 'not solved'}"
            self.move(claim, parent, Queue.FAILED, "solve", "failed", error=error)
        else:
            self.move(claim, parent, INBOX["solve"], "solve", "ok")
        return True

    def sub_results_of(self, parent: Riddle) -> list[dict[str, Any]] | None:
        results = []
        for child_id in parent.sub_ids:
            found = self.spool.find(child_id)
            if found is None:
                results.append(
                    {
                        "id": child_id,
                        "question": None,
                        "solution": None,
                        "solved": False,
                        "error": "sub-riddle is missing",
                    }
                )
                continue
            queue, child = found
            if queue not in FINAL:
                return None
            results.append(
                {
                    "id": child_id,
                    "question": child.riddle.question,
                    "solution": child.solution.solution if child.solution else None,
                    "solved": child.status.solved,
                    "error": child.error,
                }
            )
        return results

    def sweep_waiting(self) -> int:
        """Resume every waiting parent whose children are all final; how many moved."""
        return sum(self.resume_parent(pid) for pid in self.spool.ids(Queue.WAITING))


class _Batch:
    """Claims handled one by one in one thread, their moves committed in groups."""

    def __init__(self, pipeline: Pipeline, claims: list[Claim], stage: str, ctx: StageContext):
        self.pipeline = pipeline
        self.claims = claims
        self.stage = stage
        self.ctx = ctx
        self.group: list[Move] = []
        self.opened = 0.0  # when the group's first riddle was handled
        self.current = -1  # the claim being handled
        self.stored: list[Riddle] = []

    def run(self, stop: threading.Event | None) -> None:
        spool = self.pipeline.spool
        for index, claim in enumerate(self.claims):
            if stop is not None and stop.is_set():
                break
            if not claim.open:  # given back while a handler was slow
                continue
            if not self.group:
                self.opened = time.monotonic()
            self.current = index
            try:
                move = self.pipeline._ready(claim, self.stage, self.ctx)
            except inflight.HandlerStopped:
                break  # the agent is stopping: this riddle and the rest are given back
            self.group.append(move)  # after: a slow handler's `give_back` made a new group
            if index + 1 < len(self.claims):
                spool.handled(claim)  # dying on the next one is not this one's fault
                if time.monotonic() - self.opened > GROUP_WINDOW:
                    self.flush()
        self.flush()

    def flush(self) -> None:
        group, self.group = self.group, []
        try:
            self.stored += self.pipeline.commit(group)
        except BaseException:
            self.group = [m for m in group if m.claim.open] + self.group
            raise

    def give_back(self, then: Callable[[], None] | None) -> None:
        """A handler call turned slow: commit what is handled, give back what is not
        started, so that other workers move them on meanwhile."""
        with contextlib.suppress(OSError):  # on a full disk: committed later, or given back
            self.flush()
        for claim in self.claims[self.current + 1 :]:
            if claim.open:
                with contextlib.suppress(OSError):
                    self.pipeline.spool.release(claim)
        if then is not None:
            then()

    def release(self) -> None:
        for claim in self.claims:
            if claim.open:
                with contextlib.suppress(OSError):
                    self.pipeline.spool.release(claim)


def event_committed(spool: Spool, event: dict[str, Any]) -> bool:
    """Whether the commit an event describes took place: its riddle's stored history
    holds the event (entries are the events themselves), or, for a purge, the riddle is
    gone. One trimmed from the history since cannot be told, and counts as not taken
    place."""
    riddle_id = event.get("id")
    found = spool.find(riddle_id) if isinstance(riddle_id, str) else None
    if event.get("stage") == "purge":
        return isinstance(riddle_id, str) and found is None
    return found is not None and event in found[1].history


def is_solved(riddle: Riddle) -> bool:
    """`status.solved`: a solution that was accepted or needed no validation."""
    solution = riddle.solution
    if solution is None:
        return False
    return solution.accepted is True or not riddle.status.validate_.required


def _make_room(move: Move, limit: int) -> int:
    """`make_room` for `move`'s riddle, never dropping the entries of `move` itself."""
    return make_room(move.riddle, limit, keep=len(move.events))


def _describe(exc: BaseException) -> str:
    if isinstance(exc, HandlerFailed | RiddleError):
        return str(exc)
    return f"{type(exc).__name__}: {exc}"
