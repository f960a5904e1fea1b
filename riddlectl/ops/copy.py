"""`copy`: move a whole spool into another, of either kind (a directory, a database).

Every riddle keeps its id, its queue and its document as stored (`rev`, times, history:
`Spool.restore`), and the event log is copied in its order. The extraction cache is not
copied (an agent makes an extraction it finds missing again), nor is the input set aside
(`corrupt`). It refuses while agents hold claims on either spool, and into a spool that
holds riddles already; the source is left as it was.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from riddlectl.errors import RiddleError
from riddlectl.spool.contract import Spool
from riddlectl.spool.states import Queue

GROUP = 500  # documents stored per transaction or group commit


@dataclass
class Copied:
    riddles: dict[Queue, int]
    events: int


def refusal(source: Spool, target: Spool, names: tuple[str, str]) -> RiddleError | None:
    """Why the copy cannot start, if it cannot."""
    for spool, name in zip((source, target), names, strict=True):
        holders = spool.holders()
        if holders:
            who = ", ".join(
                f"{h.get('agent', '?')} on {h.get('host', '?')} (pid {h.get('pid', '?')})"
                for h in holders[:3]
            )
            return RiddleError(f"agents are running on it: {who}; stop them first", where=name)
    if any(target.counts().values()):
        return RiddleError("not empty: copy into a new spool", where=names[1])
    return None


def copy(
    source: Spool,
    target: Spool,
    names: tuple[str, str],
    on_queue: Callable[[Queue, int], object] | None = None,
) -> Copied:
    why = refusal(source, target, names)
    if why is not None:
        raise why
    counts: dict[Queue, int] = {}
    for queue in Queue:
        group = []
        counts[queue] = 0
        for riddle in source.iter_queue(queue):
            group.append(riddle)
            if len(group) >= GROUP:
                target.restore(group, queue)
                counts[queue] += len(group)
                group = []
        if group:
            target.restore(group, queue)
            counts[queue] += len(group)
        if on_queue is not None:
            on_queue(queue, counts[queue])
    events = 0
    batch = []
    for event in source.events.read():
        batch.append(event)
        if len(batch) >= GROUP:
            target.events.append_many(batch)
            events += len(batch)
            batch = []
    if batch:
        target.events.append_many(batch)
        events += len(batch)
    return Copied(counts, events)
