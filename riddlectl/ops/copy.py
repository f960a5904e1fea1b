"""`copy`: move a whole spool into another, of either kind (a directory, a database).

Everything a spool holds is copied: every riddle of every queue with its id, queue and
document as stored (`rev`, times, history: `Spool.restore`); the drop-ins no agent has
taken in yet, as they were dropped in (their names, bytes and arrival times, so that each
is the riddle of the same id in the copy, whatever its name: `dropins.drop_in_id`); the
input set aside, with its reasons; and the event log, in its order. The extraction cache
is not copied (an agent makes an extraction it finds missing again).

What cannot be copied (a FIFO where a riddle should be, a second copy of one riddle that
a crash left, a name the target cannot hold) is counted and named, and the rest is
copied all the same. It refuses while agents hold claims on either spool, and into a
spool that holds anything already; the source is left as it was, and a refused copy
makes no target (everything is checked before the target is made).
"""

from __future__ import annotations

import errno
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from riddlectl.document.model import Riddle
from riddlectl.errors import DuplicateId, RiddleError
from riddlectl.spool.contract import Corrupt, DropIn, Spool, Unreadable
from riddlectl.spool.dropins import shown_name
from riddlectl.spool.states import Queue

GROUP = 500  # documents stored per transaction or group commit
# What a target refuses one entry for, not the whole copy: a name too long for it, or
# one it cannot spell. (A full disk or a lost database ends the copy: exit 5.)
ONE_ENTRY = frozenset({errno.ENAMETOOLONG, errno.EILSEQ, errno.EINVAL})

T = TypeVar("T")


@dataclass
class Copied:
    """What a copy copied, per kind, and what it could not (each with the reason)."""

    riddles: dict[Queue, int] = field(default_factory=lambda: dict.fromkeys(Queue, 0))
    drop_ins: dict[Queue, int] = field(default_factory=lambda: dict.fromkeys(Queue, 0))
    set_aside: int = 0
    events: int = 0
    missed: list[Unreadable] = field(default_factory=list)


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
    if target is not None and _holds_anything(target):
        return RiddleError("not empty: copy into a new spool", where=names[1])
    return None


def _holds_anything(spool: Spool) -> bool:
    """Riddles, drop-ins, set-aside input or events: a copy into it would mix two spools."""
    if any(spool.counts().values()) or spool.corrupt_files():
        return True
    return next(iter(spool.events.read()), None) is not None


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
    on_missed: Callable[[Unreadable], object] | None = None,
) -> Copied:
    """Copy everything `source` holds into `target` (see the module); `on_missed` is told
    of each entry that could not be copied, as it is met."""
    why = refusal(source, target, names)
    if why is not None:
        raise why
    copied = Copied()

    def missed(entry: Unreadable) -> None:
        copied.missed.append(entry)
        if on_missed is not None:
            on_missed(entry)

    for queue in Queue:
        copied.riddles[queue], copied.drop_ins[queue] = _copy_queue(source, target, queue, missed)
    copied.set_aside = _copy_set_aside(source, target, missed)
    copied.events = _copy_events(source, target)
    return copied


def _copy_queue(
    source: Spool, target: Spool, queue: Queue, missed: Callable[[Unreadable], None]
) -> tuple[int, int]:
    """The riddles and the drop-ins of one queue, in groups; how many of each."""
    riddles = _Groups[Riddle](
        lambda group: target.restore(group, queue),
        lambda riddle: f"{queue.value}/{riddle.id}.json",
        _duplicate,
    )
    drop_ins = _Groups[DropIn](
        lambda group: target.restore_drop_ins(queue, group),
        lambda entry: f"{queue.value}/{shown_name(entry.name)}",
        _name_refused,
    )
    for entry in source.contents(queue):
        if isinstance(entry, Unreadable):
            missed(entry)
        elif isinstance(entry, DropIn):
            drop_ins.add(entry, missed)
        else:
            riddles.add(entry, missed)
    riddles.flush(missed)
    drop_ins.flush(missed)
    return riddles.stored, drop_ins.stored


def _copy_set_aside(source: Spool, target: Spool, missed: Callable[[Unreadable], None]) -> int:
    kept = _Groups[tuple[Corrupt, bytes]](
        target.restore_set_aside,
        lambda entry: f"corrupt/{shown_name(entry[0].name)}",
        _name_refused,
    )
    for found in source.corrupt_files():
        where = f"corrupt/{shown_name(found.name)}"
        try:
            raw = source.corrupt_content(found.name)
        except OSError as exc:
            missed(Unreadable(where, exc.strerror or str(exc)))
            continue
        if raw is None:
            missed(Unreadable(where, "cannot be read as a file"))
            continue
        kept.add((found, raw), missed)
    kept.flush(missed)
    return kept.stored


def _copy_events(source: Spool, target: Spool) -> int:
    events, batch = 0, []
    for event in source.events.read():
        batch.append(event)
        if len(batch) >= GROUP:
            target.events.append_many(batch)
            events, batch = events + len(batch), []
    if batch:
        target.events.append_many(batch)
        events += len(batch)
    return events


class _Groups(Generic[T]):
    """Entries stored `GROUP` at a time; a group the target refuses for one entry's sake
    (`refusal` says why, or None for an error that ends the copy) is stored again one by
    one, so that only the entries refused are missed (each named by `where`). Storing
    an entry again is harmless: a group is stored whole or not at all, or, on a disk,
    file by file, each the same again."""

    def __init__(
        self,
        store: Callable[[Sequence[T]], object],
        where: Callable[[T], str],
        refusal: Callable[[Exception], str | None],
    ) -> None:
        self.store, self.where, self.refusal = store, where, refusal
        self.group: list[T] = []
        self.stored = 0

    def add(self, entry: T, missed: Callable[[Unreadable], None]) -> None:
        self.group.append(entry)
        if len(self.group) >= GROUP:
            self.flush(missed)

    def flush(self, missed: Callable[[Unreadable], None]) -> None:
        group, self.group = self.group, []
        if not group:
            return
        try:
            self.store(group)
            self.stored += len(group)
            return
        except Exception as exc:
            if self.refusal(exc) is None:
                raise
        for entry in group:
            try:
                self.store([entry])
                self.stored += 1
            except Exception as exc:
                why = self.refusal(exc)
                if why is None:
                    raise
                missed(Unreadable(self.where(entry), why))


def _duplicate(exc: Exception) -> str | None:
    if isinstance(exc, DuplicateId):
        return "a second copy of a riddle copied already (doctor --fix keeps the newer)"
    return None


def _name_refused(exc: Exception) -> str | None:
    if isinstance(exc, ValueError) or (isinstance(exc, OSError) and exc.errno in ONE_ENTRY):
        return f"the target cannot hold this name ({exc})"
    return None
