"""Parents and their sub-riddles: storing the children a solver asked for, and resuming
the parent once every child is final.

A parent waits in `waiting/` while its children go through the pipeline as riddles of
their own. Whoever commits a child to a final queue resumes its parent (`Ledger` calls
`resume`), and agents sweep `waiting/` now and then as well (`sweep`), so that two
children finishing at once cannot leave their parent waiting for ever.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from riddlectl.document.codec import size_of
from riddlectl.document.model import Riddle
from riddlectl.errors import RiddleError
from riddlectl.pipeline.stages import SOLVE
from riddlectl.spool.states import FINAL, Queue

if TYPE_CHECKING:  # given the ledger it commits through (see `jobs.Pipeline`)
    from riddlectl.pipeline.ledger import Ledger

CLAIM_WAIT = 0.5  # seconds to wait for a parent another agent holds (it resumes it then)


@dataclass
class Parents:
    ledger: Ledger

    def resume(self, parent_id: str) -> bool:
        """Move a waiting parent back to solving once every child is final, with their
        `sub_results`; to `failed/` when a child did not succeed. Whether it moved."""
        spool = self.ledger.spool
        found = spool.find(parent_id)
        if found is None or found[0] is not Queue.WAITING:
            return False
        results = self.results(found[1])
        if results is None:
            return False
        try:
            claim = spool.claim_id(parent_id, wait=CLAIM_WAIT)
        except (TimeoutError, RiddleError):
            return False
        if claim.queue is not Queue.WAITING:
            spool.release(claim)
            return False
        parent = claim.riddle.model_copy(deep=True)
        parent.sub_results = results
        failed = [r for r in results if not r["solved"]]
        if failed:
            first = failed[0]
            error = f"sub-riddle {first['id']} failed: {first['error'] or 'not solved'}"
            self.ledger.move(claim, parent, Queue.FAILED, SOLVE.name, "failed", error=error)
        else:
            self.ledger.move(claim, parent, SOLVE.inbox, SOLVE.name, "ok")
        return True

    def results(self, parent: Riddle) -> list[dict[str, Any]] | None:
        """What each child of `parent` came to, as `sub_results` holds it; None while
        one of them is not final yet. A child that is gone counts as failed."""
        results = []
        for child_id in parent.sub_ids:
            found = self.ledger.spool.find(child_id)
            if found is None:
                results.append(_result(child_id, error="sub-riddle is missing"))
                continue
            queue, child = found
            if queue not in FINAL:
                return None
            solution = child.solution.solution if child.solution else None
            results.append(
                _result(child_id, child.riddle.question, solution, child.status.solved, child.error)
            )
        return results

    def sweep(self) -> int:
        """Resume every waiting parent whose children are all final; how many moved."""
        return sum(self.resume(pid) for pid in self.ledger.spool.ids(Queue.WAITING))

    def refusal(self, parent: Riddle, children: list[Riddle]) -> str | None:
        """Why the sub-riddles cannot be stored, or None: each is a new riddle, held to the
        limit of one, and its id must not belong to a riddle that is not this parent's."""
        spool = self.ledger.spool
        limit = spool.limits.new_riddle
        for child in children:
            size = size_of(child)
            if size > limit:
                reason = spool.limits.too_large(size, limit, " for a new riddle")
                return f"sub-riddle {child.id}: {reason}"
            found = spool.find(child.id or "")
            if found is not None and found[1].parent_id != parent.id:
                return f"sub-riddle {child.id}: the id is taken by another riddle"
        return None

    def add(self, children: list[Riddle]) -> None:
        """Store the sub-riddles not stored yet. Idempotent: a crash after adding them and
        before moving the parent solves the parent again, which names the same ids; those
        already stored are kept as they are."""
        fresh = [c for c in children if self.ledger.spool.find(c.id or "") is None]
        now = time.time()
        for child in fresh:
            child.created = now
        self.ledger.add(fresh)


def _result(
    child_id: str,
    question: str | None = None,
    solution: str | None = None,
    solved: bool = False,
    error: str | None = None,
) -> dict[str, Any]:
    return {
        "id": child_id,
        "question": question,
        "solution": solution,
        "solved": solved,
        "error": error,
    }
