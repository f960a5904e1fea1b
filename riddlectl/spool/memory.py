"""An in-memory spool: the filesystem spool's twin for fast tests of the pipeline logic.

Same contract, same ordering, same claim semantics (a claim is exclusive until committed
or released), no durability. Thread-safe.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterable, Sequence

from riddlectl.document import codec as documents
from riddlectl.document.model import Riddle
from riddlectl.spool.contract import (
    WAIT_NOTICE,
    Claim,
    Spool,
    busy,
    order_key,
    retry_at,
    stamp,
    unknown,
)
from riddlectl.spool.states import Queue, route


class MemorySpool(Spool):
    def __init__(self) -> None:
        self._docs: dict[Queue, dict[str, Riddle]] = {q: {} for q in Queue}
        self._claimed: set[str] = set()
        self._mutex = threading.Condition()

    def init(self) -> None:
        pass

    def add(self, riddles: Iterable[Riddle], queue: Queue | None = None) -> None:
        riddles = list(riddles)
        with self._mutex:
            self.refuse_duplicates(riddles)
            for riddle in riddles:
                self._docs[queue or route(riddle)][riddle.id or ""] = stamp(riddle)

    def claim(self, queue: Queue, limit: int = 1, now: float | None = None) -> list[Claim]:
        now = time.time() if now is None else now
        with self._mutex:
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
        return None

    def ids(self, queue: Queue) -> list[str]:
        with self._mutex:
            return list(self._docs[queue])

    def read(self, queue: Queue, riddle_id: str) -> Riddle | None:
        with self._mutex:
            riddle = self._docs[queue].get(riddle_id)
            return None if riddle is None else riddle.model_copy(deep=True)
