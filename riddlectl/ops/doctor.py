"""`doctor`: find what a crash or a person left behind in a spool, and mend it.

Findings: what the spool finds wrong with its own storage (`Spool.examine`: for the
filesystem, duplicates, stale locks, leftovers in `tmp/`, stale claim records, strays),
what the database under a spool shows (`Spool.health`: autovacuum off, dead rows
piling up, a transaction held open, an old schema, connections near the limit),
orphaned sub-riddles (a parent that is gone), parents waiting on children that are gone
or final, and input set aside as corrupt. `fix` repairs what is safe: orphans are
detached, waiting parents are resumed, and the spool mends its own. Corrupt input is
only reported: a person decides what it was.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from riddlectl.entries import shown
from riddlectl.errors import InvalidDocument
from riddlectl.pipeline.jobs import Pipeline
from riddlectl.spool.contract import Finding, Spool
from riddlectl.spool.states import FINAL, Queue

if TYPE_CHECKING:
    from riddlectl.document.model import Riddle

# The order findings are reported in, by kind; a kind not named here comes last.
ORDER = (
    "duplicate",
    "stale-lock",
    "tmp-leftover",
    "stale-claim",
    "orphan",
    "waiting",
    "corrupt",
    "stray",
    "old-schema",
    "autovacuum",
    "dead-rows",
    "old-transaction",
    "connections",
)

__all__ = ["Finding", "examine"]


def examine(
    pipeline: Pipeline, fix: bool = False, figures: dict[str, Any] | None = None
) -> list[Finding]:
    """Every finding; `figures`: the database's (`Spool.health`), warned of as well."""
    spool = pipeline.spool
    findings = spool.examine(fix)  # first: the family checks read what it mends
    if figures is not None:
        findings += spool.health_findings(figures)
    findings += family(pipeline, fix)
    findings += [Finding("corrupt", shown(c.name), c.reason) for c in spool.corrupt_files()]
    rank = {kind: index for index, kind in enumerate(ORDER)}
    return sorted(findings, key=lambda f: rank.get(f.kind, len(ORDER)))


def family(pipeline: Pipeline, fix: bool = False) -> list[Finding]:
    """Sub-riddles whose parent is gone (`fix` detaches them) and parents waiting on
    children that are all final or gone (`fix` resumes them): checks of any spool."""
    spool = pipeline.spool
    findings = []
    for queue in Queue:
        for riddle in _readable(spool, queue) if queue not in FINAL else ():
            if riddle.parent_id and spool.find(riddle.parent_id) is None:
                finding = Finding("orphan", riddle.id or "", f"parent {riddle.parent_id} is gone")
                if fix:
                    finding.fixed = _detach(pipeline, riddle.id or "")
                findings.append(finding)
    for parent_id in spool.ids(Queue.WAITING):
        parent = spool.read(Queue.WAITING, parent_id)
        if parent is not None and pipeline.parents.results(parent) is not None:
            finding = Finding("waiting", parent_id, "every sub-riddle is final or gone")
            if fix:
                finding.fixed = pipeline.parents.resume(parent_id)
            findings.append(finding)
    return findings


def _readable(spool: Spool, queue: Queue) -> Iterator[Riddle]:
    """The riddles of `queue` that read: a drop-in that does not (too large, no JSON) is
    no riddle yet, and its agent sets it aside; doctor reports what is set aside."""
    for riddle_id in spool.ids(queue):
        with contextlib.suppress(InvalidDocument):
            riddle = spool.read(queue, riddle_id)
            if riddle is not None:
                yield riddle


def _detach(pipeline: Pipeline, riddle_id: str) -> bool:
    try:
        claim = pipeline.spool.claim_id(riddle_id, wait=1.0)
    except TimeoutError:
        return False
    riddle = claim.riddle.model_copy(deep=True)
    riddle.parent_id = None
    pipeline.move(claim, riddle, claim.queue, "doctor", "ok")
    return True
