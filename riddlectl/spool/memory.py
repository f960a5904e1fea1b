"""An in-memory spool: the filesystem spool's twin for fast tests of the pipeline logic.

Same contract, same ordering, same claim semantics (a claim is exclusive until committed
or released), no durability: nothing outlives the process, so nothing is left to
recover or repair. Thread-safe. Its event log and extraction cache are in `memlogs`.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

from riddlectl.document import codec as documents
from riddlectl.document.codec import Limits
from riddlectl.document.model import Riddle
from riddlectl.errors import InvalidDocument
from riddlectl.spool import agents as seats
from riddlectl.spool.contract import (
    WAIT_NOTICE,
    Claim,
    Corrupt,
    DropIn,
    Finding,
    Spool,
    Unreadable,
    busy,
    order_key,
    retry_at,
    stamp,
    unknown,
)
from riddlectl.spool.dropins import (
    check_name,
    entry_of,
    ignored,
    names_of,
    peek_drop_in,
    read_drop_in,
)
from riddlectl.spool.events import Committed
from riddlectl.spool.memlogs import MemoryEventLog, MemoryExtractionCache
from riddlectl.spool.states import Queue, route


class MemorySpool(Spool):
    def __init__(self) -> None:
        self._docs: dict[Queue, dict[str, Riddle]] = {q: {} for q in Queue}
        self._dropped: dict[Queue, dict[str, DropIn]] = {q: {} for q in Queue}  # unread input
        self._corrupt: dict[str, tuple[bytes, str]] = {}  # set aside: content and reason
        self._claimed: set[str] = set()
        self._mutex = threading.Condition()
        self._watches: list[_MemoryWatch] = []
        self._events = MemoryEventLog()
        self._extractions = MemoryExtractionCache()
        self._agents: dict[str, tuple[dict[str, Any], bool]] = {}  # id -> record, alive

    @property
    def name(self) -> str:
        return "memory"

    @property
    def events(self) -> MemoryEventLog:
        return self._events

    @property
    def extractions(self) -> MemoryExtractionCache:
        return self._extractions

    def init(self) -> None:
        pass

    def add(self, riddles: Iterable[Riddle], queue: Queue | None = None) -> None:
        riddles = list(riddles)
        with self._mutex:
            self.refuse_duplicates(riddles)
            for riddle in riddles:
                to = queue or route(riddle)
                self._docs[to][riddle.id or ""] = stamp(riddle)
                self._arrived(to)

    def restore(self, riddles: Sequence[Riddle], queue: Queue) -> None:
        with self._mutex:
            self.refuse_duplicates(riddles)
            for riddle in riddles:
                self._docs[queue][riddle.id or ""] = riddle.model_copy(deep=True)
            self._arrived(queue)

    def claim(self, queue: Queue, limit: int = 1, now: float | None = None) -> list[Claim]:
        now = time.time() if now is None else now
        with self._mutex:
            self._read_drop_ins(queue)
            ready = [
                r
                for r in self._docs[queue].values()
                if r.id not in self._claimed and retry_at(r) <= now
            ]
            ready.sort(key=order_key)
            claims = []
            for riddle in ready[:limit]:
                self._claimed.add(riddle.id or "")
                claims.append(Claim(riddle.model_copy(deep=True), queue))
            return claims

    def claim_id(self, riddle_id: str, wait: float = 5.0) -> Claim:
        started = time.monotonic()
        told = False
        with self._mutex:
            while riddle_id in self._claimed:
                waited = time.monotonic() - started
                if waited >= wait:
                    raise busy(riddle_id, wait)
                if waited >= WAIT_NOTICE and not told and self.on_wait is not None:
                    told = True
                    self.on_wait(riddle_id)
                pause = wait - waited if told else min(wait, WAIT_NOTICE) - waited
                self._mutex.wait(max(0.0, pause))
            found = self.find(riddle_id)
            if found is not None and self._docs[found[0]].get(riddle_id) is None:
                self._read_drop_ins(found[0])  # an unread drop-in: taken in, as a claim does
                found = self.find(riddle_id)
            if found is None:
                raise unknown(riddle_id)
            self._claimed.add(riddle_id)
            queue, riddle = found
            return Claim(riddle.model_copy(deep=True), queue)

    def commit(self, claim: Claim, riddle: Riddle, to: Queue) -> Riddle:
        return self.commit_many([(claim, riddle, to)])[0]

    def commit_many(self, moves: Sequence[tuple[Claim, Riddle, Queue]]) -> list[Riddle]:
        stamped = [(claim, stamp(riddle), to) for claim, riddle, to in moves]
        self.refuse_oversize((c, r, to, len(documents.dumps(r))) for c, r, to in stamped)
        return [self._commit(claim, stored, to) for claim, stored, to in stamped]

    def _commit(self, claim: Claim, stored: Riddle, to: Queue) -> Riddle:
        with self._mutex:
            self._docs[claim.queue].pop(claim.riddle.id or "", None)
            self._docs[to][stored.id or ""] = stored
            self._unclaim(claim)
            self._arrived(to)
        return stored.model_copy(deep=True)

    def reread(self, claim: Claim) -> Riddle:
        with self._mutex:
            return self._docs[claim.queue][claim.riddle.id or ""].model_copy(deep=True)

    def release(self, claim: Claim) -> None:
        with self._mutex:
            self._unclaim(claim)

    def delete(self, claim: Claim) -> None:
        with self._mutex:
            self._docs[claim.queue].pop(claim.riddle.id or "", None)
            self._unclaim(claim)

    def _unclaim(self, claim: Claim) -> None:
        if not claim.open:
            return
        claim.open = False
        self._claimed.discard(claim.riddle.id or "")
        self._mutex.notify_all()

    def find(self, riddle_id: str) -> tuple[Queue, Riddle] | None:
        with self._mutex:
            for queue, docs in self._docs.items():
                if riddle_id in docs:
                    return queue, docs[riddle_id].model_copy(deep=True)
            # A drop-in no claim has read yet is a riddle all the same.
            for queue, dropped in self._dropped.items():
                for entry in dropped.values():
                    riddle = _peek(queue, entry, self.limits)
                    if riddle is not None and riddle.id == riddle_id:
                        return queue, riddle
        return None

    def ids(self, queue: Queue) -> list[str]:
        # Unread drop-ins too, as a directory listing shows them: `run --once` waits.
        with self._mutex:
            dropped = [entry_of(n) for n in self._dropped[queue] if not ignored(n)]
            return [*self._docs[queue], *dropped]

    def read(self, queue: Queue, riddle_id: str) -> Riddle | None:
        with self._mutex:
            riddle = self._docs[queue].get(riddle_id)
            if riddle is not None:
                return riddle.model_copy(deep=True)
            # An entry of `ids` that is a drop-in's name, whatever id its document gives.
            for name in names_of(riddle_id):
                entry = self._dropped[queue].get(name)
                if entry is not None:
                    return _peek(queue, entry, self.limits)
            found = self.find(riddle_id)  # a drop-in under a name other than its id
            return found[1] if found is not None and found[0] is queue else None

    # -- input from outside ---------------------------------------------------------------

    def drop_in(self, queue: Queue, name: str, raw: bytes) -> None:
        check_name(name)
        with self._mutex:
            self._dropped[queue][name] = DropIn(name, bytes(raw), time.time_ns() // 1_000_000)
            self._arrived(queue)

    def _read_drop_ins(self, queue: Queue) -> None:
        """Store what was dropped into `queue` under its id, or set it aside (the rules of
        `dropins`); called under the mutex, by `claim`."""
        for name, entry in list(self._dropped[queue].items()):
            if ignored(name):
                continue
            try:
                raw = entry.raw
                riddle = read_drop_in(raw, len(raw), queue, name, self.limits, entry.stamp)
            except InvalidDocument as exc:
                self.set_aside(queue, name, str(exc))
                continue
            riddle_id = riddle.id or ""
            if self._find(riddle_id) is not None:
                reason = f"{queue.value}/{name}: id {riddle_id!r} is already in the spool"
                self.set_aside(queue, name, reason)
                continue
            del self._dropped[queue][name]
            self._docs[queue][riddle_id] = riddle

    def set_aside(self, queue: Queue, name: str, reason: str) -> None:
        with self._mutex:
            entry = self._dropped[queue].pop(name, None)
            if entry is not None:
                raw = entry.raw
            else:
                riddle = self._docs[queue].pop(name.removesuffix(".json"))
                raw = documents.dumps(riddle)
            kept = name if name not in self._corrupt else f"{name}.{time.time_ns()}"
            self._corrupt[kept] = (raw, reason)
        self.log_set_aside(queue, name, reason)

    def corrupt_files(self) -> list[Corrupt]:
        with self._mutex:
            kept = sorted(self._corrupt.items())
        return [Corrupt(name, reason, len(raw)) for name, (raw, reason) in kept]

    def corrupt_content(self, name: str) -> bytes | None:
        with self._mutex:
            kept = self._corrupt.get(name)
        return None if kept is None else kept[0]

    def drop_corrupt(self, name: str) -> None:
        with self._mutex:
            if self._corrupt.pop(name, None) is None:
                raise FileNotFoundError(f"corrupt/{name}: no such file set aside")

    # -- copying -------------------------------------------------------------------------

    def contents(self, queue: Queue) -> Iterator[Riddle | DropIn | Unreadable]:
        with self._mutex:
            stored = [riddle.model_copy(deep=True) for riddle in self._docs[queue].values()]
            dropped = [e for name, e in self._dropped[queue].items() if not ignored(name)]
        yield from stored
        yield from dropped

    def restore_drop_ins(self, queue: Queue, entries: Sequence[DropIn]) -> None:
        with self._mutex:
            for entry in entries:
                check_name(entry.name)
                self._dropped[queue][entry.name] = entry
            self._arrived(queue)

    def restore_set_aside(self, entries: Sequence[tuple[Corrupt, bytes]]) -> None:
        with self._mutex:
            for kept, raw in entries:
                self._corrupt[kept.name] = (raw, kept.reason)

    # -- agents -------------------------------------------------------------------------

    def register_agent(self, record: Mapping[str, Any]) -> seats.Seat:
        # Alive while its seat is open: nothing outlives this process anyway.
        made = seats.new_record(record, self.actor)
        key = made["id"]

        def write(current: dict[str, Any]) -> None:
            with self._mutex:
                self._agents[key] = (dict(current), self._agents[key][1])

        def leave() -> None:
            with self._mutex:
                self._agents[key] = (self._agents[key][0], False)

        with self._mutex:
            self._agents[key] = (dict(made), True)
        return seats.Seat(made, write, leave)

    def agents(self) -> list[dict[str, Any]]:
        with self._mutex:
            found = [seats.shown(record, alive) for record, alive in self._agents.values()]
        return seats.listed(found)

    def watch(self, queues: Iterable[Queue], wake: threading.Event) -> _MemoryWatch:
        watching = _MemoryWatch(self, frozenset(queues), wake)
        with self._mutex:
            self._watches.append(watching)
        return watching

    def _arrived(self, queue: Queue) -> None:
        for watching in self._watches:
            if queue in watching.queues:
                watching.wake.set()

    def _unwatch(self, watching: _MemoryWatch) -> None:
        with self._mutex:
            if watching in self._watches:
                self._watches.remove(watching)

    def recover(self, committed: Committed) -> int:
        return self._events.recover(committed)  # no process died holding memory

    def examine(self, fix: bool = False) -> list[Finding]:
        return []  # every change is made whole under one mutex: nothing half done

    def _find(self, riddle_id: str) -> Riddle | None:
        return next((d[riddle_id] for d in self._docs.values() if riddle_id in d), None)


class _MemoryWatch:
    def __init__(self, spool: MemorySpool, queues: frozenset[Queue], wake: threading.Event):
        self.spool = spool
        self.queues = queues
        self.wake = wake

    def stop(self) -> None:
        self.spool._unwatch(self)


def _peek(queue: Queue, entry: DropIn, limits: Limits) -> Riddle | None:
    return peek_drop_in(entry.raw, len(entry.raw), queue, entry.name, limits, entry.stamp)
