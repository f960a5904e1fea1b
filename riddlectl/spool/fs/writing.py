"""Writing the directory spool: submits stored as group commits, and a claim's commit
made durable before its source goes.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

import orjson

from riddlectl.document import codec as documents
from riddlectl.spool.contract import Claim, already_stored, refuse_repeats, stamp
from riddlectl.spool.crashpoints import reach
from riddlectl.spool.fs import atomic
from riddlectl.spool.fs.locks import Lock
from riddlectl.spool.states import FINAL, INBOX, Queue, route

if TYPE_CHECKING:
    from riddlectl.document.model import Riddle

from riddlectl.spool.fs.intake import Intake
from riddlectl.spool.fs.layout import Token

ADD_GROUP = 64  # riddles stored per group commit by `add` (each holds a lock meanwhile)
INBOXES = frozenset(INBOX.values())  # the queues agents claim from


class Writing(Intake):
    def _store(self, queue: Queue, riddle: Riddle) -> None:
        atomic.sync_dirs(self._store_many([(queue, riddle)]))

    def _store_many(self, documents_to: Sequence[tuple[Queue, Riddle]]) -> list[str]:
        """Write documents into their queues; returns the directories still to flush."""
        return atomic.publish(
            [
                (self._file(queue, riddle.id or ""), documents.dumps(riddle))
                for queue, riddle in documents_to
            ],
            self.tmp_dir,
            durable=self.durable,
            checkpoints=True,
        )

    def add(self, riddles: Iterable[Riddle], queue: Queue | None = None) -> None:
        riddles = list(riddles)
        if len(riddles) > ADD_GROUP:
            # Looked for before the first group is stored, so that a duplicate in a later
            # group refuses the lot without storing and withdrawing the groups before it.
            self.refuse_duplicates(riddles)
        else:  # one group looks for each id under its lock (`_add_group`): once is enough
            refuse_repeats(riddles)
        stored: list[tuple[Queue, Riddle]] = []
        try:
            for start in range(0, len(riddles), ADD_GROUP):
                stored += self._add_group(riddles[start : start + ADD_GROUP], queue)
        except BaseException:
            self._withdraw(stored)  # all or none, also when the disk fills half-way
            raise

    def restore(self, riddles: Sequence[Riddle], queue: Queue) -> None:
        # For `copy`, which runs with no agent on the spool: no lock is needed.
        self.refuse_duplicates(riddles)
        atomic.sync_dirs(self._store_many([(queue, riddle) for riddle in riddles]))

    def _withdraw(self, stored: Sequence[tuple[Queue, Riddle]]) -> None:
        """Remove riddles this `add` stored, where they still lie untouched. An agent
        cannot have moved one on meanwhile: on a full or failing disk its commit fails."""
        for queue, riddle in stored:
            riddle_id = riddle.id or ""
            lock = self.lock(riddle_id)
            if not lock.acquire(timeout=10):
                continue
            try:
                current = self.read(queue, riddle_id)
                if current is not None and current.rev == riddle.rev:
                    with contextlib.suppress(FileNotFoundError):
                        os.unlink(self._file(queue, riddle_id))
            finally:
                self._let_go(lock, riddle_id)

    def _add_group(self, riddles: list[Riddle], queue: Queue | None) -> list[tuple[Queue, Riddle]]:
        # Locked while checked and stored, so two submitters of one id cannot both win;
        # stored as one group commit, so 64 riddles cost a few disk flushes, not 128.
        locks: list[tuple[Lock, str]] = []
        unflushed: list[str] = []
        stored = False
        try:
            for riddle in riddles:
                riddle_id = riddle.id or ""
                lock = self.lock(riddle_id)
                # Held by another: an agent at work on a riddle of this id is no reason to
                # wait (it is a duplicate); a submitter of the same id, not yet done, is.
                if not lock.try_acquire():
                    if self._anywhere(riddle_id):
                        raise already_stored(riddle_id)
                    if not lock.acquire(timeout=10):
                        raise TimeoutError(f"{riddle_id}: still locked after 10 s")
                locks.append((lock, riddle_id))
                if self._anywhere(riddle_id):
                    raise already_stored(riddle_id)
            placed = [(queue or route(r), stamp(r)) for r in riddles]
            unflushed = self._store_many(placed)
            stored = True
            # Logged before an agent can take one up and log after it.
            self.events.made({riddle.id or "" for riddle in riddles})
        finally:
            for lock, riddle_id in locks:
                if stored:
                    lock.release()
                else:  # refused, or the disk is full: no lock file for an id never stored
                    self._let_go(lock, riddle_id)
        # Flushed after the locks go, so agents woken by the renames need not wait; safe,
        # as nothing was removed, and the ids are printed only once this returns.
        atomic.sync_dirs(unflushed)
        return placed

    def refuse_duplicates(self, riddles: Iterable[Riddle]) -> None:
        refuse_repeats(riddles, self._anywhere)

    def commit(self, claim: Claim, riddle: Riddle, to: Queue) -> Riddle:
        return self.commit_many([(claim, riddle, to)])[0]

    def commit_many(self, moves: Sequence[tuple[Claim, Riddle, Queue]]) -> list[Riddle]:
        stamped = [(claim, stamp(riddle), to) for claim, riddle, to in moves]
        files = [(self._file(to, r.id or ""), documents.dumps(r)) for _, r, to in stamped]
        # Measured as written, so a commit costs no serialisation more than it did.
        self.refuse_oversize(
            (claim, r, to, len(data))
            for (claim, r, to), (_, data) in zip(stamped, files, strict=True)
        )

        def mark_moves() -> None:
            # After the flush: a record written before it would be flushed with the
            # documents, on the way of the next stage, which waits for that flush.
            for claim, riddle, to in stamped:
                if to is not claim.queue and claim.token.moving_rev != riddle.rev:
                    self.mark_moving(claim, riddle.rev)

        unflushed = atomic.publish(
            files, self.tmp_dir, durable=self.durable, checkpoints=True, before_renames=mark_moves
        )
        # Logged while the riddles are still held: the agent that takes one up next logs
        # after this commit's events, never before them.
        self.events.made()
        # A riddle moving on to another stage's inbox is let go as soon as it is there
        # (the document is flushed, the record blanked): the next stage's agent, woken by
        # the rename, claims it while this one flushes the directory; the older copy it
        # finds meanwhile it removes itself, after flushing that directory too
        # (`_resolve_duplicates`): the two flushes of one directory mostly coincide.
        for claim, _, to in stamped:
            if to in INBOXES and not claim.keep:
                self._end_claim(claim, moved=True)
        # The renames are made durable before any source goes: a filesystem without a
        # journal (this project's own ext4 has none) may write a directory's removal back
        # before another's addition, and a crash between the two would lose the riddle.
        atomic.sync_dirs(unflushed)
        for claim, riddle, to in stamped:
            token: Token = claim.token
            if token.path != self._file(to, riddle.id or ""):
                atomic.recycle(token.path, self.tmp_dir)
        reach("source-removed")
        for (claim, _, to), (_, stored, _) in zip(moves, stamped, strict=True):
            if claim.keep and claim.open and to not in FINAL:
                self._keep_claim(claim, stored, to)
            else:
                self._end_claim(claim, final=to in FINAL)
        reach("lock-released")
        return [riddle for _, riddle, _ in stamped]

    def mark_moving(self, claim: Claim, rev: int) -> None:
        """Write into the claim's lock file that the riddle leaves `claim.queue` at `rev`
        (its holder, then `"moving"` and `"rev"`): made before the commit's renames, and
        left there when the claim lets go before the old copy is removed, so that the
        next claim of the id knows the one place a second copy can lie (`_open_claim`)."""
        self.write_record(claim, moving=claim.queue.value, rev=rev)
        claim.token.moving_rev = rev

    def write_record(self, claim: Claim, **fields: object) -> None:
        """Write the claim record into the claim's lock file: this process as the holder,
        the time, and `fields`."""
        record = {**self.actor.as_dict(), "time": time.time(), **fields}
        token: Token = claim.token
        token.lock.write_record(orjson.dumps(record))

    def release(self, claim: Claim) -> None:
        self.keep_found(claim)
        self._end_claim(claim)

    def _keep_claim(self, claim: Claim, stored: Riddle, to: Queue) -> None:
        """The lock stays held: the claim now holds the riddle as stored in `to`. Its
        record is left as it is: should this process die before handling it again, the
        record's rev, older than the stored one, tells that nothing was abandoned."""
        claim.keep = claim.begun = False  # its next stage is begun afresh
        claim.riddle, claim.queue, claim.abandoned, claim.found = stored, to, 0, []
        token: Token = claim.token
        token.path = self._file(to, stored.id or "")

    def delete(self, claim: Claim) -> None:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(claim.token.path)
        if claim.open:  # the riddle is gone: so is its lock file
            claim.open = False
            self._let_go(claim.token.lock, claim.riddle.id or "")

    def _end_claim(self, claim: Claim, *, final: bool = False, moved: bool = False) -> None:
        """Let go of the claim; its record blanked, or emptied when `final`, or kept when
        `moved` (into an inbox, its old copy not yet removed: see `mark_moving`)."""
        if not claim.open:
            return
        claim.open = False
        token: Token = claim.token
        try:
            if final:
                token.lock.drop_record()
            elif not moved:
                token.lock.clear_record()
                token.moving_rev = None
        finally:  # on a read-only spool the record stays, but the lock must go
            token.lock.release()
