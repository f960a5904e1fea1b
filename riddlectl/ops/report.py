"""Inspecting the spool: counts, per-riddle summaries, results (status, show, result)."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from riddlectl.entries import shown
from riddlectl.errors import InvalidDocument, UnknownRiddle, UnknownRiddles, WaitTimeout
from riddlectl.spool.contract import Spool, unknown
from riddlectl.spool.states import FINAL, INBOX, Queue

if TYPE_CHECKING:
    from riddlectl.document.model import Riddle

CORRUPT = "corrupt"  # not a queue of riddles, but listed by `status --stage corrupt`


def queue_named(name: str) -> Queue:
    """A queue by its own name or by the stage whose inbox it is (`--stage solve`)."""
    if name in INBOX:
        return INBOX[name]
    try:
        return Queue(name)
    except ValueError:
        names = ", ".join([*INBOX, *(q.value for q in Queue if q not in INBOX.values()), CORRUPT])
        raise InvalidDocument(
            f"unknown stage or queue {name!r} (one of: {names})", where="--stage"
        ) from None


def summarize(queue: Queue, riddle: Riddle) -> dict[str, Any]:
    """The per-riddle line of `status`: where it is and how it stands."""
    return {
        "id": riddle.id,
        "queue": queue.value,
        "trial": riddle.status.trial,
        "solved": riddle.status.solved,
        "solution": riddle.solution.solution if riddle.solution else None,
        "accepted": riddle.solution.accepted if riddle.solution else None,
        "error": riddle.error,
        "priority": riddle.priority,
        "question": riddle.riddle.question,
        "parent_id": riddle.parent_id,
        "sub_ids": riddle.sub_ids,
        "updated": riddle.updated,
    }


def recent(spool: Spool, limit: int) -> list[tuple[Queue, str]]:
    """The `limit` most recently moved riddles, newest first.

    Read from the tail of the event log, so the cost does not grow with the spool; each
    is checked against the queue it was moved to. When the log says too little (a new
    spool, a purged or hand-edited one), every queue is listed instead.
    """
    found: dict[str, Queue] = {}
    for event in spool.events.tail():
        riddle_id, to = event.get("id"), event.get("to")
        if not isinstance(riddle_id, str) or riddle_id in found or to not in _QUEUE_NAMES:
            continue
        found[riddle_id] = Queue(to)
        if len(found) >= limit * 4:
            break
    listing = [(q, i) for i, q in found.items() if spool.holds(q, i)][:limit]
    if len(listing) < limit and sum(spool.counts().values()) > len(listing):
        return spool.recent(limit)
    return listing


_QUEUE_NAMES = frozenset(q.value for q in Queue)

SHOWN = 20  # riddles a person is shown without `--limit`; machine output lists all


def listing(spool: Spool, stage: str | None, limit: int) -> tuple[list[tuple[Queue, str]], int]:
    """The riddles `status` lists without ids, newest first: every riddle, or those of
    `stage`'s queue; at most `limit` of them (0: all). And how many more there are, which
    a listing that was cut says."""
    queues = [queue_named(stage)] if stage else list(Queue)
    counts = spool.counts()
    total = sum(counts[queue] for queue in queues)
    if limit and not stage:
        found = recent(spool, limit)
    else:
        found = spool.recent(limit or total, queues) if total else []
    return found, max(0, total - len(found))


def counts(spool: Spool) -> dict[str, int]:
    out = {queue.value: n for queue, n in spool.counts().items()}
    out[CORRUPT] = len(corrupt_files(spool))
    return out


def corrupt_files(spool: Spool) -> list[dict[str, str]]:
    """The files set aside in `corrupt/`, by name, each with the reason beside it; none
    when the directory is missing (a spool made by hand with only incoming/)."""
    try:
        found = spool.corrupt_files()
    except FileNotFoundError:
        return []
    return [{"file": shown(c.name), "queue": CORRUPT, "reason": c.reason} for c in found]


def summaries(spool: Spool, listing: list[tuple[Queue, str]]) -> list[dict[str, Any]]:
    out = []
    for queue, riddle_id in listing:
        try:
            riddle = spool.read(queue, riddle_id)
        except InvalidDocument:
            continue
        if riddle is not None:
            out.append(summarize(queue, riddle))
    return out


def by_ids(spool: Spool, ids: list[str]) -> list[dict[str, Any]]:
    """Summaries of the given riddles; `UnknownRiddles` naming every unknown id."""
    return [summarize(queue, riddle) for _, queue, riddle in find_all(spool, ids)]


def find_all(spool: Spool, ids: list[str]) -> list[tuple[str, Queue, Riddle]]:
    """(id, queue, riddle) of each of `ids`, in order; `UnknownRiddles` naming every id the
    spool does not have (all are looked for first, so that a user learns of each at once)."""
    found, missing = [], []
    for riddle_id in ids:
        where = spool.find(riddle_id)
        if where is None:
            missing.append(unknown(riddle_id))
        else:
            found.append((riddle_id, *where))
    if missing:
        raise UnknownRiddles(missing)
    return found


@dataclass
class Result:
    riddle_id: str
    queue: Queue
    riddle: Riddle

    @property
    def final(self) -> bool:
        return self.queue in FINAL

    @property
    def solution(self) -> str | None:
        return self.riddle.solution.solution if self.riddle.solution else None


def results(
    spool: Spool,
    ids: list[str],
    wait: bool = False,
    timeout: float | None = None,
    poll: float = 0.1,
) -> list[Result]:
    """Where each riddle stands; with `wait`, once all are final (`WaitTimeout` past `timeout`).

    `UnknownRiddle` for an id the spool does not have.
    """
    deadline = None if timeout is None else time.monotonic() + timeout
    while True:
        found = [Result(*each) for each in find_all(spool, ids)]
        if not wait or all(r.final for r in found):
            return found
        if deadline is not None and time.monotonic() >= deadline:
            late = ", ".join(r.riddle_id for r in found if not r.final)
            raise WaitTimeout(f"not final after {timeout:g} s", where=late)
        time.sleep(poll)


__all__ = [
    "CORRUPT",
    "Result",
    "UnknownRiddle",
    "by_ids",
    "corrupt_files",
    "counts",
    "listing",
    "queue_named",
    "results",
    "summaries",
]
