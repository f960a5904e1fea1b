"""`copy`: move a whole spool into another, of either kind (a directory, a database).

Every riddle keeps its id, its queue and its document as stored (`rev`, times, history:
`Spool.restore`), and the event log is copied in its order. The extraction cache is not
copied (an agent makes an extraction it finds missing again), nor is the input set aside
(`corrupt`). It refuses while agents hold claims on either spool, and into a spool that
holds riddles already; the source is left as it was, and a refused copy makes no target
(everything is checked before the target is made).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from riddlectl.errors import RiddleError
from riddlectl.spool.contract import Spool
from riddlectl.spool.states import Queue

GROUP = 500  # documents stored per transaction or group commit


@dataclass
class Copied:
    riddles: dict[Queue, int]
    events: int


def refusal(source: Spool, target: Spool | None, names: tuple[str, str]) -> RiddleError | None:
    """Why the copy cannot start, if it cannot; `target` None when it is still to be made
    (then only the source is looked at, and nothing needs making to refuse)."""
    for spool, name in zip((source, target), names, strict=True):
        if spool is None:
            continue
        holders = spool.holders()
        if holders:
            return RiddleError(
                f"agents are running on it: {_who(holders)}; stop them first", where=name
            )
    if target is not None and any(target.counts().values()):
        return RiddleError("not empty: copy into a new spool", where=names[1])
    return None


def _who(holders: list[dict[str, Any]]) -> str:
    """Each agent once (a claim is listed per riddle it holds), the first three of them."""
    agents = dict.fromkeys(
        f"{h.get('agent', '?')} on {h.get('host', '?')} (pid {h.get('pid', '?')})" for h in holders
    )
    named = list(agents)
    more = f" and {len(named) - 3} more" if len(named) > 3 else ""
    return ", ".join(named[:3]) + more


def target_spool(
    source: Spool,
    names: tuple[str, str],
    find: Callable[[], Spool | None],
    make: Callable[[], Spool],
) -> Spool:
    """The spool to copy into, made (`make`: all or nothing) only once nothing refuses the
    copy (a refused copy changes nothing); `find` opens it when it is a spool already."""
    existing = find()
    why = refusal(source, existing, names)
    if why is not None:
        raise why
    return existing if existing is not None else make()


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
