"""The filesystem spool: one directory per queue, one `ID.json` per riddle.

Claims are `flock`s on `locks/ID.lock` (see `locks`), so they die with their process.
The lock file holds the claim record: while a riddle is being handled, its holder; once
handled, and through its commit, where the riddle moves from (`mark_moving`), kept after
a move into an inbox until the next claim; else blanks. Finding a holder when claiming
means the previous holder died, which counts toward the poison limit; a move tells the
only queue where a second copy can lie (`_open_claim`).

Lock files are kept, not created and deleted per claim, but only for riddles the spool
holds: a lock file taken for a name that turns out to hold no riddle (an unknown id, a
drop-in stored under another id or set aside, a purged riddle, a refused submit) is
removed before it is let go, so that `doctor` finds none left over.
"""

from __future__ import annotations

import hashlib
import os
import time
from typing import TYPE_CHECKING, Any

from riddlectl.document import codec as documents
from riddlectl.entries import kind_of, present
from riddlectl.errors import InvalidDocument
from riddlectl.spool.contract import (
    WAIT_NOTICE,
    Claim,
    busy,
    order_key,
    retry_at,
    unknown,
)
from riddlectl.spool.dropins import drop_in_stem, read_drop_in, stamp_of
from riddlectl.spool.fs.inbox import Header, Inbox
from riddlectl.spool.fs.locks import Lock
from riddlectl.spool.states import FINAL, Queue

if TYPE_CHECKING:
    from riddlectl.document.model import Riddle

from riddlectl.spool.contract import Finding
from riddlectl.spool.events import Committed
from riddlectl.spool.fs import atomic, repair
from riddlectl.spool.fs.layout import DROP_IN_GRACE, Token, _record
from riddlectl.spool.fs.writing import Writing

__all__ = ["DROP_IN_GRACE", "FsSpool"]


class FsSpool(Writing):
    """The directory spool: the claims, on top of its layout, reading, intake and
    writing (see `layout`)."""

    def claim(self, queue: Queue, limit: int = 1, now: float | None = None) -> list[Claim]:
        now = time.time() if now is None else now
        inbox = self._inboxes.get(queue)
        if inbox is None:
            inbox = self._inboxes[queue] = Inbox(str(self.dir(queue)), self.limits.readable)
        backlog = inbox.candidates(now, limit)
        claims: list[Claim] = []
        self.contended = 0
        while backlog and len(claims) < limit:
            claim = self._try_claim(queue, backlog.popleft(), inbox, now)
            if claim is not None:
                claims.append(claim)
        claims.sort(key=lambda c: order_key(c.riddle))  # a small backlog comes unordered
        return claims

    def _try_claim(self, queue: Queue, name: str, inbox: Inbox, now: float) -> Claim | None:
        # Locked by the id its name gives, the one the riddle has unless its document says
        # otherwise; a name that gives none by a hash of it (never a valid id).
        stem = drop_in_stem(name)
        lock = self.lock(stem or _hashed(name))
        if not lock.try_acquire():
            self.contended += 1
            return None
        try:
            return self._claim_locked(queue, name, stem, lock, inbox, now)
        except BaseException:
            lock.release()
            raise

    def _claim_locked(
        self, queue: Queue, name: str, stem: str | None, lock: Lock, inbox: Inbox, now: float
    ) -> Claim | None:
        path = f"{self._dirs[queue]}/{name}"
        try:
            riddle, inode = self._read_claimed(queue, name, path)
        except FileNotFoundError:  # moved on by another agent between listing and locking
            riddle, inode = None, 0
        if riddle is None:
            self._let_go(lock, stem)  # gone, set aside, or still being written
            return None
        due = retry_at(riddle)
        if due > now:
            lock.release()  # not due yet: not read again until it is
            inbox.note(Header(name, inode, riddle.priority, riddle.created or 0.0, due))
            return None
        if name != f"{riddle.id}.json":
            return self._adopt(queue, name, riddle, lock, stem)
        return self._open_claim(queue, riddle, path, lock)

    def _read_claimed(self, queue: Queue, name: str, path: str) -> tuple[Riddle | None, int]:
        """The document at `path` and its inode, or None after setting an unreadable one
        aside (a young drop-in that does not parse is left alone: it may be being written).
        What is not a regular file is set aside at once, and never opened to wait on."""
        where = f"{queue.value}/{name}"
        limits = self.limits
        try:
            raw, info = documents.read_raw(path, limits.readable + 1)
        except FileNotFoundError:
            raise
        except OSError:  # a socket or a symbolic link cannot be opened as read_raw does
            kind = kind_of(os.lstat(path).st_mode)
            if kind is None:
                raise  # a regular file that cannot be read now: not the file's fault
            self.set_aside(queue, name, f"{where}: not a regular file ({kind})")
            return None, 0
        if raw is None:
            kind = kind_of(info.st_mode)
            self.set_aside(queue, name, f"{where}: not a regular file ({kind})")
            return None, info.st_ino
        try:
            stamp = stamp_of(info.st_mtime_ns)
            return read_drop_in(raw, info.st_size, queue, name, limits, stamp), info.st_ino
        except InvalidDocument as exc:
            if queue is Queue.INCOMING and time.time() - info.st_mtime < self.drop_in_grace:
                return None, info.st_ino
            self.set_aside(queue, name, str(exc))
        except Exception as exc:
            self.set_aside(queue, name, f"{where}: unreadable: {type(exc).__name__}: {exc}")
        return None, info.st_ino

    def _open_claim(self, queue: Queue, riddle: Riddle, path: str, lock: Lock) -> Claim | None:
        # A second copy of the riddle is left by a commit between its rename and the
        # removal of the old copy (an agent lets go of a riddle it moves into an inbox in
        # that gap; a crash anywhere in it). Every commit that moves a riddle first writes
        # where from into the lock file's record (`mark_moving`), so the record says where
        # to look: the queue left, for the copy that moved; every queue, for an older copy
        # or a holder that died; none, for a blank record. (Copies made by hand, and a
        # record lost with the power, are found when an agent starts: `repair.sweep`.)
        raw = lock.read_record()
        owner = _record(raw)
        left = _moving_from(owner)
        if left is not None:
            abandoned = 0  # its last holder had finished with it
            suspects: list[Queue] | None = [] if left is queue else [left]
            if riddle.rev != owner["rev"]:
                suspects = None  # an older copy, or a commit that died before its renames
        else:
            abandoned = int(owner.get("abandoned") or 0) + 1 if raw else 0
            if isinstance(owner.get("rev"), int) and riddle.rev > owner["rev"]:
                abandoned = 0  # its holder died after its commit was made: nothing abandoned
            suspects = None if raw else []
        riddle_id = riddle.id or ""
        if suspects is None:
            copied = any(self._holding(riddle_id, besides=queue))
        else:
            copied = any(present(self._file(q, riddle_id)) for q in suspects)
        if copied:
            if self._resolve_duplicates(queue, riddle, lock)[0] is not queue:
                lock.release()
                return None
            abandoned = 0  # the older copy's commit had completed: nothing was abandoned
        found = [self.log_abandoned(queue, riddle, owner, abandoned)] if abandoned else []
        return Claim(riddle, queue, abandoned, Token(lock, path), found=found)

    def handled(self, claim: Claim) -> None:
        # The commit to come moves the riddle on at the next rev: said now, in the write
        # that also tells that the holder is done with it (see `begin`).
        self.mark_moving(claim, claim.riddle.rev + 1)

    def begin(self, claim: Claim) -> None:
        # Written when handling starts, not at claim time: riddles claimed in the same
        # batch as a poison riddle must not be charged for the agent's death.
        # A later rev found with the record tells that the commit was made.
        self.write_record(claim, abandoned=claim.abandoned, rev=claim.riddle.rev)
        claim.token.moving_rev = None

    def _resolve_duplicates(self, queue: Queue, riddle: Riddle, lock: Lock) -> tuple[Queue, Riddle]:
        """Keep the best copy of a riddle (see `_best`) of `riddle` in `queue` and those
        in other queues: the copy kept.

        The copy kept is made durable (its directory flushed) before any other goes: it
        may be the one a commit still under way has just renamed into an inbox, its agent
        having let go of the riddle before that flush (see `Writing.commit_many`)."""
        copies = [(queue, riddle)]
        for other in Queue:
            if other is not queue:
                try:
                    copy = self.read(other, riddle.id or "")
                except InvalidDocument:
                    copy = None
                if copy is not None:
                    copies.append((other, copy))
        best = max(copies, key=_best)
        stale = [other for other, _ in copies if other is not best[0]]
        if stale and self.durable:
            atomic.fsync_dir(self.dir(best[0]))
        for other in stale:
            self._path(other, riddle.id or "").unlink(missing_ok=True)
        # Two copies mean the dead holder's commit was complete: nothing was abandoned.
        if best[0] in FINAL:
            lock.drop_record()
        else:
            lock.clear_record()
        return best

    def dedupe(self, riddle_id: str, wait: float = 5.0) -> tuple[Queue, Riddle] | None:
        """Resolve duplicates of one riddle under its lock: the copy kept when one is left
        (see `_best`), None when copies are left or the riddle could not be locked."""
        lock = self.lock(riddle_id)
        if not lock.acquire(wait):
            return None
        try:
            found = self.find(riddle_id)
            kept = self._resolve_duplicates(*found, lock) if found is not None else None
            left = list(self._holding(riddle_id))
            return kept if kept is not None and left == [kept[0]] else None
        finally:
            lock.release()

    def _adopt(
        self, queue: Queue, name: str, riddle: Riddle, name_lock: Lock, stem: str | None
    ) -> Claim | None:
        """A drop-in named other than `ID.json`: store it under its id, then claim that.

        The lock of its name is held throughout (it is the id's own lock when the id came
        from the name), so no other agent adopts the same file meanwhile.
        """
        riddle_id = riddle.id or ""
        lock = name_lock if riddle_id == stem else self.lock(riddle_id)
        if lock is not name_lock and not lock.try_acquire():
            self._let_go(name_lock, stem)
            return None
        try:
            if self._anywhere(riddle_id):
                self.set_aside(
                    queue, name, f"{queue.value}/{name}: id {riddle_id!r} is already in the spool"
                )
                lock.release()
                if lock is not name_lock:
                    self._let_go(name_lock, stem)
                return None
            self._store(queue, riddle)
            (self.dir(queue) / name).unlink(missing_ok=True)
        except BaseException:
            lock.release()
            name_lock.release()
            raise
        if lock is not name_lock:
            self._let_go(name_lock, stem)
        return self._open_claim(queue, riddle, self._file(queue, riddle_id), lock)

    def claim_id(self, riddle_id: str, wait: float = 5.0) -> Claim:
        if not self._anywhere(riddle_id):  # before any lock file is made for it
            claim = self._claim_dropped(riddle_id, wait)
            if claim is not None:
                return claim
            if not self._anywhere(riddle_id):  # an agent may have taken it in meanwhile
                raise unknown(riddle_id)
        lock = self.lock(riddle_id)
        if not self._acquire(lock, riddle_id, wait):
            raise busy(riddle_id, wait)
        found = self.find(riddle_id)
        if found is None:  # gone meanwhile (purged)
            self._let_go(lock, riddle_id)
            raise unknown(riddle_id)
        queue, riddle = found
        claim = self._open_claim(queue, riddle, self._file(queue, riddle_id), lock)
        if claim is None:  # lost to a newer copy that appeared meanwhile: try once more
            return self.claim_id(riddle_id, wait)
        return claim

    def _claim_dropped(self, riddle_id: str, wait: float) -> Claim | None:
        """Claim the drop-in that is `riddle_id` under another name, storing it as
        `ID.json` first, as an agent's claim does; None when there is none (any more)."""
        dropped = self._dropped(riddle_id)
        if dropped is None:
            return None
        name = dropped[0]
        stem = drop_in_stem(name)
        name_lock = self.lock(stem or _hashed(name))
        if not self._acquire(name_lock, riddle_id, wait):
            raise busy(riddle_id, wait)
        riddle = self._peek(name)  # again, under the lock: an agent may have been first
        if riddle is None or riddle.id != riddle_id:
            self._let_go(name_lock, stem)
            return None
        return self._adopt(Queue.INCOMING, name, riddle, name_lock, stem)

    def _acquire(self, lock: Lock, riddle_id: str, wait: float) -> bool:
        """Take a riddle's lock within `wait` s, telling `on_wait` once it takes long."""
        if lock.acquire(min(wait, WAIT_NOTICE)):
            return True
        if wait <= WAIT_NOTICE:
            return False
        if self.on_wait is not None:
            self.on_wait(riddle_id)
        return lock.acquire(wait - WAIT_NOTICE)

    # -- repair: what a crash left, and what doctor looks at

    def recover(self, committed: Committed) -> int:
        repair.sweep(self)  # temp files and claim records of agents that died
        return self.events.recover(committed)

    def examine(self, fix: bool = False) -> list[Finding]:
        return repair.examine(self, fix)


_RANK = {queue: rank for rank, queue in enumerate(Queue)}


def _best(copy: tuple[Queue, Riddle]) -> tuple[int, bool, int]:
    """The copy that wins: the higher rev (every commit bumps it); on a tie, which only a
    person copying files can cause, a copy in done/ that says it is solved (its place and
    its word agree: a solved riddle is not one that failed), then the queue further along."""
    queue, riddle = copy
    return (riddle.rev, queue is Queue.DONE and riddle.status.solved, _RANK[queue])


def _moving_from(record: dict[str, Any]) -> Queue | None:
    """The queue a `mark_moving` record says the riddle left; None for other records."""
    try:
        left = Queue(record["moving"])
    except (KeyError, ValueError, TypeError):
        return None
    return left if isinstance(record.get("rev"), int) else None


def _hashed(name: str) -> str:

    return "_" + hashlib.sha256(name.encode("utf-8", "surrogateescape")).hexdigest()[:32]
