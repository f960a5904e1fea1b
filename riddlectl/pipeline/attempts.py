"""Running a stage on claimed riddles: one attempt each, committed in groups.

An attempt ends in one move (see `Ledger.prepare`): forward on success; back into the
same queue with a growing delay on an error worth trying again (`RetryPolicy`); to
`failed/` when the riddle cannot be handled, its attempts are used up, or its agents
died while handling it `max_abandoned` times in a row (a poison riddle).
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from riddlectl import inflight, trace
from riddlectl.document.codec import size_of
from riddlectl.document.model import Riddle
from riddlectl.errors import HandlerFailed, HandlerRefused, InvalidData, RiddleError
from riddlectl.pipeline.retry import RetryPolicy
from riddlectl.pipeline.stages import Outcome, Stage, StageContext
from riddlectl.spool.contract import Claim
from riddlectl.spool.crashpoints import reach
from riddlectl.spool.states import Queue

if TYPE_CHECKING:  # given the ledger it commits through (see `jobs.Pipeline`)
    from riddlectl.pipeline.ledger import Ledger, Move
    from riddlectl.pipeline.parents import Parents
    from riddlectl.spool.agents import Seat

GROUP_WINDOW = 0.005  # seconds a handled riddle may wait for others to share its commit
MAX_RETRY_AFTER = 3600.0  # seconds of an endpoint's Retry-After honoured at most


@dataclass
class Attempts:
    ledger: Ledger
    parents: Parents
    retry: RetryPolicy
    max_abandoned: int = 5
    # The agent's record in the spool, told what it is handling (`Seat.took`); None
    # when no agent runs this pipeline (a command, a test).
    seat: Seat | None = None

    def run_batch(
        self,
        claims: Sequence[Claim],
        stage: Stage,
        ctx: StageContext,
        stop: threading.Event | None = None,
        on_slow: Callable[[], None] | None = None,
        carried: dict[Queue, list[Claim]] | None = None,
    ) -> list[Riddle]:
        """Run `stage` on claimed riddles one by one, committing their moves in groups;
        the riddles as stored.

        With `carried`, a riddle moved on to one of its queues (the inboxes of the other
        stages this process runs) keeps its claim when the spool can keep it
        (`Claim.keep`): the claim, now on the riddle as stored there, is added to that
        queue's list instead of ending, for the caller to run the next stage on at once.

        A group is committed when `GROUP_WINDOW` has passed since its first riddle was
        handled, so a slow handler does not hold back the riddles before it; when a handler
        call runs `inflight.SLOW` seconds, the group is committed, the claims not started
        yet are given back for others to take, and `on_slow` is called. Every claim ends
        here: committed, or given back unchanged when `stop` is set, when the agent stops
        the handler (`HandlerStopped`), or on an error.
        """
        batch = _Batch(self, list(claims), stage, ctx, carried)
        try:
            with inflight.when_slow(lambda: batch.give_back(on_slow)):
                batch.run(stop)
        finally:
            batch.release()
        return batch.stored

    def move_for(self, claim: Claim, stage: Stage, ctx: StageContext) -> Move:
        """The move a claimed riddle makes after one attempt of `stage`, its sub-riddles
        stored. A parent is measured first: were the spool to refuse it after they were
        stored, they would be left without it."""
        move = self._attempt(claim, stage, ctx)
        if move.children:
            size = size_of(move.riddle)
            if size > self.ledger.spool.limit_for(move.to):
                move = self.ledger.fit(move, size)
            if move.to is not Queue.FAILED:
                self.parents.add(move.children)
        return move

    def _attempt(self, claim: Claim, stage: Stage, ctx: StageContext) -> Move:
        riddle = claim.riddle  # freshly read for this claim: ours to change
        if claim.abandoned >= self.max_abandoned:
            error = (
                f"abandoned {claim.abandoned} times in a row: its agent died while "
                f"handling it (poison riddle)"
            )
            return self.ledger.prepare(
                claim, riddle, Queue.FAILED, stage.name, "abandoned", error=error
            )
        if not claim.begun:
            self.ledger.spool.begin(claim)
        seat = self.seat
        if seat is None:
            return self._handle(claim, riddle, stage, ctx)
        seat.took(riddle.id or "", stage.name)
        try:
            return self._handle(claim, riddle, stage, ctx)
        finally:
            seat.let_go(riddle.id or "")

    def _handle(self, claim: Claim, riddle: Riddle, stage: Stage, ctx: StageContext) -> Move:
        reach("claimed")
        started = time.monotonic()
        trace.started(riddle.id)
        try:
            with self.ledger.spool.data_files(riddle, ctx.data_dir) as place:
                outcome = stage.run(riddle, replace(ctx, place=place))
            trace.ended(riddle.id)
        except (HandlerRefused, InvalidData) as exc:
            return self.ledger.prepare(
                claim,
                riddle,
                Queue.FAILED,
                stage.name,
                "failed",
                error=str(exc),
                duration=time.monotonic() - started,
                declined=getattr(exc, "declined", []),
                usage=getattr(exc, "usage", None),
            )
        except Exception as exc:
            return self._retry_later(claim, riddle, stage, exc, time.monotonic() - started)
        reach("handled")
        return self._forward(claim, stage, outcome, time.monotonic() - started)

    def _forward(self, claim: Claim, stage: Stage, outcome: Outcome, duration: float) -> Move:
        riddle = outcome.riddle
        if "retry_at" in riddle.extensions():
            riddle.extensions()["retry_at"] = None
        refusal = self.parents.refusal(riddle, outcome.children)
        if refusal is not None:
            failed = self.ledger.spool.reread(claim)
            error = f"{stage.name}: {refusal}"
            return self.ledger.prepare(
                claim, failed, Queue.FAILED, stage.name, "failed", error=error, duration=duration
            )
        if outcome.to is not Queue.FAILED:
            riddle.error = None
        move = self.ledger.prepare(
            claim,
            riddle,
            outcome.to,
            stage.name,
            outcome.outcome,
            error=outcome.error,
            declined=outcome.declined,
            duration=duration,
            usage=outcome.usage or None,
        )
        move.children = outcome.children
        return move

    def _retry_later(
        self, claim: Claim, riddle: Riddle, stage: Stage, exc: Exception, duration: float
    ) -> Move:
        """Back into the same queue, due after the policy's delay; to `failed/` once the
        stage's attempts are used up. Attempts are counted per stage in the document."""
        error = _describe(exc)
        attempts = dict(riddle.extensions().get("attempts") or {})
        attempts[stage.name] = int(attempts.get(stage.name, 0)) + 1
        riddle.extensions()["attempts"] = attempts
        delay = self.retry.delay(attempts[stage.name])
        asked = getattr(exc, "retry_after", None)
        if delay is not None and asked is not None:  # the other side's Retry-After
            delay = max(delay, min(float(asked), MAX_RETRY_AFTER))
        outcome = "timeout" if "timed out" in error else "error"
        to = claim.queue
        if delay is None:
            used = attempts[stage.name]
            times = "attempt" if used == 1 else "attempts"
            error = f"{stage.name} failed after {used} {times}: {error}"
            to = Queue.FAILED
        else:
            riddle.extensions()["retry_at"] = time.time() + delay
        return self.ledger.prepare(
            claim,
            riddle,
            to,
            stage.name,
            outcome,
            error=error,
            duration=duration,
            usage=getattr(exc, "usage", None),
        )


class _Batch:
    """Claims handled one by one in one thread, their moves committed in groups."""

    def __init__(
        self,
        attempts: Attempts,
        claims: list[Claim],
        stage: Stage,
        ctx: StageContext,
        carried: dict[Queue, list[Claim]] | None = None,
    ) -> None:
        self.carried = carried
        self.attempts = attempts
        self.spool = attempts.ledger.spool
        self.claims = claims
        self.stage = stage
        self.ctx = ctx
        self.group: list[Move] = []
        self.opened = 0.0  # when the group's first riddle was handled
        self.current = -1  # the claim being handled
        self.stored: list[Riddle] = []

    def run(self, stop: threading.Event | None) -> None:
        for index, claim in enumerate(self.claims):
            if stop is not None and stop.is_set():
                break
            if not claim.open:  # given back while a handler was slow
                continue
            if not self.group:
                self.opened = time.monotonic()
            self.current = index
            try:
                move = self.attempts.move_for(claim, self.stage, self.ctx)
            except inflight.HandlerStopped:
                break  # the agent is stopping: this riddle and the rest are given back
            self.group.append(move)  # after: a slow handler's `give_back` made a new group
            if index + 1 < len(self.claims):
                # Dying on the next one is not this one's fault: marked handled, and, when
                # nothing comes between, the next one begun in the same step. When the
                # group's window has passed, its commit ends the claim instead (and begins
                # the next one), as at the end of a batch: dying before that commit is
                # charged to the riddle being committed, as there.
                following = self.claims[index + 1]
                going_on = following.open and not (stop is not None and stop.is_set())
                if time.monotonic() - self.opened > GROUP_WINDOW:
                    self.flush(following if going_on else None)
                elif going_on:
                    self.spool.hand_over(claim, following)
                else:
                    self.spool.handled(claim)
        self.flush()

    def flush(self, following: Claim | None = None) -> None:
        group, self.group = self.group, []
        wanted: list[Move] = []
        if self.carried is not None:
            for move in group:  # onward to a stage this process runs: keep the claim
                if move.to in self.carried and move.to is not move.claim.queue:
                    move.claim.keep = True
                    wanted.append(move)
        try:
            self.stored += self.attempts.ledger.commit(group, following)
        except BaseException:
            self._unkeep(wanted)
            self.group = [m for m in group if m.claim.open] + self.group
            raise
        for move in wanted:
            # The spool took the request (reset `keep`) and kept the claim open on `to`.
            if move.claim.open and not move.claim.keep and self.carried is not None:
                self.carried[move.to].append(move.claim)
            move.claim.keep = False

    def _unkeep(self, wanted: list[Move]) -> None:
        """A commit failed part way: claims the spool kept are given up (their riddles
        are committed: the next claim finds them where they went), the rest not kept."""
        for move in wanted:
            if move.claim.open and not move.claim.keep:
                with contextlib.suppress(OSError):
                    self.spool.release(move.claim)
            move.claim.keep = False

    def _carried(self, claim: Claim) -> bool:
        return self.carried is not None and any(
            claim is kept for kept in self.carried.get(claim.queue, ())
        )

    def give_back(self, then: Callable[[], None] | None) -> None:
        """A handler call turned slow: commit what is handled, give back what is not
        started and what was to be carried on to the next stage, so that other workers
        move them on meanwhile; the rest of this batch carries nothing."""
        with contextlib.suppress(OSError):  # on a full disk: committed later, or given back
            self.flush()
        carried, self.carried = self.carried, None
        onward = [claim for kept in (carried or {}).values() for claim in kept]
        for kept in (carried or {}).values():
            kept.clear()
        for claim in [*self.claims[self.current + 1 :], *onward]:
            if claim.open:
                with contextlib.suppress(OSError):
                    self.spool.release(claim)
        if then is not None:
            then()

    def release(self) -> None:
        for claim in self.claims:
            if claim.open and not self._carried(claim):
                with contextlib.suppress(OSError):
                    self.spool.release(claim)


def _describe(exc: BaseException) -> str:
    if isinstance(exc, HandlerFailed | RiddleError):
        return str(exc)
    return f"{type(exc).__name__}: {exc}"
