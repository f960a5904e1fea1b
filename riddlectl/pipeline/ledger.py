"""The ledger: what a stage or a command did to a riddle, made into one commit.

`Ledger.prepare` turns an outcome into a `Move`: the document with one more `history`
entry (an `Event`), its error and counters set; `Ledger.commit` stores moves as one group
and logs their events, so that a riddle's history and the event log always tell the same
story. Every change to a stored riddle goes through here: stage outcomes (`attempts`),
resumed parents (`parents`), commands (`ops.admin`), new riddles (`add`).

A move the spool refuses as too large is fitted to the size limit (`fit`): the oldest
history entries make room first; a step whose outcome still does not fit fails the
riddle with its document as it was before that step, which always fits.

The ledger knows neither of the two jobs that commit through it (`attempts`, `parents`):
`jobs.Pipeline` puts the three together.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from riddlectl import logbook, trace
from riddlectl.document.codec import make_room
from riddlectl.document.events import MAX_HISTORY, Event
from riddlectl.document.model import Riddle
from riddlectl.errors import DocumentTooLarge
from riddlectl.identity import Actor
from riddlectl.spool.contract import Claim, Spool
from riddlectl.spool.crashpoints import reach
from riddlectl.spool.events import EventLog
from riddlectl.spool.states import FINAL, STAGES, Queue, route

log = logbook.logger(__name__)

MAX_ERROR_CHARS = 1000  # of an error kept in a document: a handler's message may be huge
# Moves a person makes (the commands, `doctor`): no agent hand-off, so no `contacts`.
BY_HAND = frozenset({"hold", "release", "cancel", "retry", "doctor"})


@dataclass
class Move:
    """A riddle ready to be committed to `to`, and the events that say so."""

    claim: Claim
    riddle: Riddle
    to: Queue
    events: list[dict[str, Any]]
    stage: str = ""  # the stage or command that made it
    children: list[Riddle] = field(default_factory=list)  # sub-riddles to store first


@dataclass
class Ledger:
    spool: Spool
    events: EventLog
    actor: Actor
    # Called after every commit with (id, destination): how `run` counts what it did.
    on_move: Callable[[str, Queue], None] | None = field(default=None, kw_only=True)
    # Called with a parent's id once one of its sub-riddles is final (see `Parents`).
    on_child_final: Callable[[str], object] | None = field(default=None, kw_only=True)

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
        usage: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        """Append the event of a change to `riddle`'s history (the oldest entries beyond
        `MAX_HISTORY` go) and return it; its `rev` is the one the next commit stores."""
        event = Event.by(
            self.actor,
            riddle.id,
            stage,
            source.value if source else None,
            to.value if to else None,
            outcome,
            rev=riddle.rev + 1 if rev is None else rev,
            handler=handler,
            duration=duration,
            error=error,
            usage=usage,
        ).to_json()
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
        declined: Sequence[tuple[str, float]] = (),
        usage: dict[str, Any] | None = None,
    ) -> Move:
        """`riddle` made ready to go to `to`, with its history entries (one `declined`
        entry per solve handler that declined before the outcome; `usage`, what the
        handlers reported the attempt cost, on the outcome's); `commit` stores it."""
        notes = [
            self.record(
                riddle, stage, claim.queue, claim.queue, "declined", handler=name, duration=took
            )
            for name, took in declined
        ]
        if error is not None and len(error) > MAX_ERROR_CHARS:
            error = error[:MAX_ERROR_CHARS] + "…"
        if stage not in BY_HAND:
            riddle.contacts += 1
        if to is Queue.DONE:
            riddle.status.solved = is_solved(riddle)
        if error is not None or to is Queue.FAILED:
            riddle.error = error
        event = self.record(
            riddle, stage, claim.queue, to, outcome, error=error, duration=duration, usage=usage
        )
        return Move(claim, riddle, to, [*notes, event], stage)

    def commit(self, moves: Sequence[Move], following: Claim | None = None) -> list[Riddle]:
        """Store prepared moves as one group, then log their events and resume parents;
        with `following`, the next claim of the batch is begun in the same step where the
        spool can (`Spool.commit_and_begin`).

        The events are held in the journal while the group is committed (see `events`),
        so that a death before they reach the log loses none of them. Moves the spool
        refuses as too large are fitted (`fit`) and the group committed again."""
        if not moves:
            return []
        moves = list(moves)
        fsyncs = trace.before_commit()
        for attempt in range(3):
            events = [event for move in moves for event in move.events]
            try:
                with self.events.committing(events, self.committed):
                    triples = [(m.claim, m.riddle, m.to) for m in moves]
                    stored = (
                        self.spool.commit_many(triples)
                        if following is None
                        else self.spool.commit_and_begin(triples, following)
                    )
                break
            except DocumentTooLarge as exc:
                # Each pass fits or fails every move refused, so the second one stores them.
                if not exc.sizes or attempt == 2:
                    raise
                moves = [self._refitted(move, exc.sizes) for move in moves]
        reach("event-logged")
        trace.committed([(move.riddle.id, move.stage) for move in moves], fsyncs)
        for move, riddle in zip(moves, stored, strict=True):
            self._tell(move)
            if self.on_move is not None:
                self.on_move(riddle.id or "", move.to)
            if move.to in FINAL and riddle.parent_id and self.on_child_final is not None:
                self.on_child_final(riddle.parent_id)
        return stored

    def _tell(self, move: Move) -> None:
        """The log line of a committed move: a riddle failed (warning), an attempt to be
        tried again (info), any other hand-off (debug)."""
        event = move.events[-1]
        fields = {"id": event["id"], "stage": event["stage"], "agent": self.actor.name}
        if move.to is Queue.FAILED:
            log.warning("riddle-failed", extra={**fields, "error": event.get("error")})
        elif move.to is move.claim.queue and event["outcome"] in ("error", "timeout"):
            attempts = move.riddle.extensions().get("attempts") or {}
            due = move.riddle.extensions().get("retry_at")
            log.info(
                "retry",
                extra={
                    **fields,
                    "attempt": attempts.get(event["stage"]),
                    "delay": round(due - time.time(), 3) if isinstance(due, float) else None,
                    "error": event.get("error"),
                },
            )
        elif log.isEnabledFor(logging.DEBUG):
            log.debug(
                "hand-off",
                extra={
                    **fields,
                    "from": event.get("from"),
                    "to": move.to.value,
                    "outcome": event["outcome"],
                },
            )

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
        """Commit `riddle` to `to` now, alone (see `prepare` and `fit`): commands, resumed
        parents. `DocumentTooLarge` (the claim given back) when a command's change does
        not fit."""
        try:
            return self.commit([self.prepare(claim, riddle, to, stage, outcome, error=error)])[0]
        except DocumentTooLarge:
            self.spool.release(claim)
            raise

    def add(self, riddles: Iterable[Riddle]) -> None:
        """Store new riddles, each in the inbox of its first required step with its
        `submit` entry; all or none (`DuplicateId` when an id is taken)."""
        riddles = list(riddles)
        for riddle in riddles:
            self.record(riddle, "submit", None, route(riddle), "ok", rev=1)
        with self.events.committing([r.history[-1] for r in riddles], self.committed):
            self.spool.add(riddles)

    def delete(self, claim: Claim, command: str = "purge") -> None:
        """Remove a claimed riddle from the spool for good, logging its event. No history
        is left to hold that event: `event_committed` knows a purge by the riddle's
        absence."""
        riddle = claim.riddle
        event = Event.by(
            self.actor, riddle.id, command, claim.queue.value, None, "ok", rev=riddle.rev
        ).to_json()
        with self.events.committing([event], self.committed):
            self.spool.delete(claim)

    # -- sizes ----------------------------------------------------------------------------

    def fit(self, move: Move, size: int) -> Move:
        """`move`, whose document would be `size` bytes, within its limit: made room for
        by dropping the oldest history entries (the event log keeps them). A stage's
        outcome that still does not fit fails the riddle instead; a command's raises
        `DocumentTooLarge`. A move to `failed/` is stored in any case: a riddle must always
        be able to end."""
        limit = self.spool.limit_for(move.to)
        if _make_room(move, limit) <= limit:
            return move
        if move.stage in STAGES:
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
        return move if size is None else self.fit(move, size)

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

    # -- the event log --------------------------------------------------------------------

    def committed(self, event: dict[str, Any]) -> bool:
        """Whether the commit `event` describes took place (see `event_committed`)."""
        return event_committed(self.spool, event)

    def recover_events(self) -> int:
        """Log the events of commits whose writer died before logging them; how many."""
        return self.events.recover(self.committed)


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
