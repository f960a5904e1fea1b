"""`copy`: move a whole spool into another, of either kind (a directory, a database).

Every riddle keeps its id, its queue and its document as stored (`rev`, times, history:
`Spool.restore`), and the event log is copied in its order. The extraction cache is not
copied (an agent makes an extraction it finds missing again), nor is the input set aside
(`corrupt`). It refuses while agents hold claims on either spool, and into a spool that
holds riddles already; the source is left as it was, and a refused copy makes no target
(everything is checked before the target is made).
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from riddlectl.errors import RiddleError, SpoolUnusable
from riddlectl.spool import NO_SPOOL, is_url
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
    source: Spool, target: str, names: tuple[str, str], opener: Callable[[str, bool], Spool]
) -> Spool:
    """The spool to copy into, made only once nothing refuses the copy; a target that was
    being made when making failed is removed again (a refused copy changes nothing).

    `opener(target, create)` opens a spool as `runtime.open_spool` does."""
    existing = _existing(target, opener)
    why = refusal(source, existing, names)
    if why is not None:
        raise why
    if existing is not None:
        return existing
    if is_url(target):
        return opener(target, True)  # the schema is made in one transaction: all or nothing
    return _make_directory(Path(target), opener)


def _existing(target: str, opener: Callable[[str, bool], Spool]) -> Spool | None:
    """The target when it is a spool already; None when it is one still to be made."""
    if not is_url(target):
        root = Path(target)
        if not root.exists() or (root.is_dir() and not (root / "incoming").exists()):
            return None
    try:
        return opener(target, False)
    except SpoolUnusable as exc:
        # The PostgreSQL spool says so with the same words for a schema not made yet.
        if is_url(target) and exc.message == NO_SPOOL:
            return None  # a database without the spool's schema yet
        raise


def _make_directory(root: Path, opener: Callable[[str, bool], Spool]) -> Spool:
    """Make a directory spool at `root`; on failure, what was made of it is removed."""
    before = set(os.listdir(root)) if root.is_dir() else None
    try:
        return opener(str(root), True)
    except BaseException:
        if before is None:
            shutil.rmtree(root, ignore_errors=True)
        else:
            for name in set(os.listdir(root)) - before:
                shutil.rmtree(root / name, ignore_errors=True)
        raise


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
