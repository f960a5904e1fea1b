"""The filesystem spool: one directory per queue, one `ID.json` per riddle.

Claims are `flock`s on `locks/ID.lock` (see `locks`), so they die with their process.
While a riddle is being handled its lock file holds the claim record (the owner); finding
a record when claiming means the previous holder died, which counts toward the poison
limit and is the only case in which a duplicate left by a crash between two steps can
exist. Lock files are kept, not created and deleted per claim, but only for riddles the
spool holds: a lock file taken for a name that turns out to hold no riddle (an unknown id, a
drop-in stored under another id or set aside, a purged riddle, a refused submit) is removed
before it is let go, so that `doctor` finds none left over.
"""

from __future__ import annotations

import contextlib
import fcntl
import functools
import hashlib
import heapq
import os
import threading
import time
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson

from riddlectl.document import codec as documents
from riddlectl.document.codec import Limits
from riddlectl.document.ids import ID_RE
from riddlectl.errors import DuplicateId, InvalidDocument
from riddlectl.identity import Actor
from riddlectl.spool.contract import (
    WAIT_NOTICE,
    Claim,
    Corrupt,
    Finding,
    Spool,
    Watch,
    busy,
    order_key,
    retry_at,
    stamp,
    unknown,
)
from riddlectl.spool.crashpoints import reach
from riddlectl.spool.dropins import drop_in_stem, ignored, read_drop_in
from riddlectl.spool.events import Committed
from riddlectl.spool.fs import atomic, repair
from riddlectl.spool.fs.dropped import DropInIndex
from riddlectl.spool.fs.events import DEFAULT_MAX_BYTES, FsEventLog
from riddlectl.spool.fs.extractions import FsExtractionCache
from riddlectl.spool.fs.inbox import Header, Inbox, iter_files, kind_of, list_files
from riddlectl.spool.fs.locks import Lock
from riddlectl.spool.states import FINAL, INBOX, LAYOUT_DIRS, Queue, route

if TYPE_CHECKING:
    from riddlectl.document.model import Riddle

DROP_IN_GRACE = 5.0
INBOXES = frozenset(INBOX.values())  # the queues agents claim from
ADD_GROUP = 64  # riddles stored per group commit by `add` (each holds a lock meanwhile)


@dataclass
class _Token:
    lock: Lock
    path: str


class FsSpool(Spool):
    def __init__(
        self,
        root: Path,
        *,
        durable: bool = True,
        actor: Actor | None = None,
        drop_in_grace: float = DROP_IN_GRACE,
        limits: Limits | None = None,
        events_max_bytes: int = DEFAULT_MAX_BYTES,
    ) -> None:
        self.root = Path(root)
        self.limits = limits or Limits()
        self.durable = durable
        self.actor: Actor = actor or Actor("riddlectl")
        self.drop_in_grace = drop_in_grace
        self.events_max_bytes = events_max_bytes
        self.tmp_dir = str(self.root / "tmp")
        self._dirs = {q: str(self.root / q.value) for q in Queue}
        self._locks = str(self.root / "locks")
        self._inboxes: dict[Queue, Inbox] = {}
        self._drop_in_index = DropInIndex(self._dirs[Queue.INCOMING], lambda: self.limits)
        self.contended = 0

    @property
    def name(self) -> str:
        return str(self.root)

    @property
    def local_root(self) -> Path:
        return self.root

    @functools.cached_property
    def events(self) -> FsEventLog:
        return FsEventLog(self.root / "events.jsonl", self.events_max_bytes)

    @functools.cached_property
    def extractions(self) -> FsExtractionCache:
        return FsExtractionCache(self.root, durable=self.durable)

    # -- layout -----------------------------------------------------------------------

    def dir(self, queue: Queue | str) -> Path:
        return self.root / str(queue)

    def init(self) -> None:
        for name in [*LAYOUT_DIRS, "locks", "cache"]:
            (self.root / name).mkdir(parents=True, exist_ok=True)

    def _path(self, queue: Queue, riddle_id: str) -> Path:
        return Path(self._file(queue, riddle_id))

    def _file(self, queue: Queue, riddle_id: str) -> str:
        # Strings, not Paths, on the hot path: pathlib cost more than the syscalls here.
        return f"{self._dirs[queue]}/{riddle_id}.json"

    def lock(self, name: str) -> Lock:
        return Lock(f"{self._locks}/{name}.lock")

    def _let_go(self, lock: Lock, riddle_id: str | None) -> None:
        """Release a lock taken for `riddle_id` (None: for a file name that is no id),
        removing its file first unless the spool holds that riddle. Safe under the lock:
        whoever opened the old file finds it unlinked once they hold it, and takes anew."""
        try:
            if riddle_id is None or not self._anywhere(riddle_id):
                with contextlib.suppress(OSError):  # tidying: never a reason to fail
                    os.unlink(lock.path)
        finally:
            lock.release()

    # -- writing ----------------------------------------------------------------------

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
        self.refuse_duplicates(riddles)
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

    def holders(self) -> list[dict[str, Any]]:
        """Claims held now: lock files another process holds (an idle agent holds none).
        Looked at read-only, so that a read-only spool can be copied."""
        found = []
        for entry in iter_files(self._locks):
            try:
                fd = os.open(entry.path, os.O_RDONLY | os.O_CLOEXEC)
            except OSError:
                continue
            try:
                try:
                    fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
                    continue  # free
                except BlockingIOError:
                    record = os.pread(fd, 4096, 0).strip()
                    found.append(_record(record) or {"lock": entry.name})
            finally:
                os.close(fd)
        return found

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
                lock = self.lock(riddle.id or "")
                if not lock.acquire(timeout=10):
                    raise TimeoutError(f"{riddle.id}: still locked after 10 s")
                locks.append((lock, riddle.id or ""))
                if self._anywhere(riddle.id or ""):
                    raise DuplicateId("id already in the spool", where=riddle.id, field="id")
            placed = [(queue or route(r), stamp(r)) for r in riddles]
            unflushed = self._store_many(placed)
            stored = True
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

    def _anywhere(self, riddle_id: str) -> bool:
        """Whether a queue holds `riddle_id` (False for what is no valid id)."""
        return ID_RE.fullmatch(riddle_id) is not None and any(
            os.path.exists(self._file(q, riddle_id)) for q in Queue
        )

    def refuse_duplicates(self, riddles: Iterable[Riddle]) -> None:
        seen: set[str] = set()
        for riddle in riddles:
            riddle_id = riddle.id or ""
            if riddle_id in seen or self._anywhere(riddle_id):
                raise DuplicateId("id already in the spool", where=riddle_id, field="id")
            seen.add(riddle_id)

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
        unflushed = atomic.publish(files, self.tmp_dir, durable=self.durable, checkpoints=True)
        # A riddle moving on to another stage's inbox is let go as soon as it is there
        # (the document is flushed, the record blanked): the next stage's agent, woken by
        # the rename, claims it while this one flushes the directory; the older copy it
        # finds meanwhile it removes itself, after flushing that directory too
        # (`_resolve_duplicates`): the two flushes of one directory mostly coincide.
        for claim, _, to in stamped:
            if to in INBOXES and not claim.keep:
                self._end_claim(claim)
        # The renames are made durable before any source goes: a filesystem without a
        # journal (this project's own ext4 has none) may write a directory's removal back
        # before another's addition, and a crash between the two would lose the riddle.
        atomic.sync_dirs(unflushed)
        for claim, riddle, to in stamped:
            token: _Token = claim.token
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

    def release(self, claim: Claim) -> None:
        self._end_claim(claim)

    def _keep_claim(self, claim: Claim, stored: Riddle, to: Queue) -> None:
        """The lock stays held: the claim now holds the riddle as stored in `to`. Its
        record is left as it is: should this process die before handling it again, the
        record's rev, older than the stored one, tells that nothing was abandoned."""
        claim.keep = False
        claim.riddle, claim.queue, claim.abandoned = stored, to, 0
        token: _Token = claim.token
        token.path = self._file(to, stored.id or "")

    def delete(self, claim: Claim) -> None:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(claim.token.path)
        if claim.open:  # the riddle is gone: so is its lock file
            claim.open = False
            self._let_go(claim.token.lock, claim.riddle.id or "")

    def _end_claim(self, claim: Claim, *, final: bool = False) -> None:
        if not claim.open:
            return
        claim.open = False
        token: _Token = claim.token
        try:
            if final:
                token.lock.drop_record()
            else:
                token.lock.clear_record()
        finally:  # on a read-only spool the record stays, but the lock must go
            token.lock.release()

    # -- reading ----------------------------------------------------------------------

    def _names(self, queue: Queue) -> list[os.DirEntry[str]]:
        return list_files(str(self.dir(queue)))

    def ids(self, queue: Queue) -> list[str]:
        """Names of the regular files of a queue, less `.json`; anything else is no riddle."""
        return [e.name.removesuffix(".json") for e in self._names(queue)]

    def holds(self, queue: Queue, riddle_id: str) -> bool:
        return ID_RE.fullmatch(riddle_id) is not None and os.path.exists(
            self._file(queue, riddle_id)
        )

    def read(self, queue: Queue, riddle_id: str) -> Riddle | None:
        """The document `ID.json` of `queue`; a drop-in there without an id of its own
        reads under its name's stem (`ID`). In `incoming/`, an entry of `ids` that is a
        drop-in's whole name (`notes.txt`) reads as that drop-in."""
        path = self._file(queue, riddle_id)
        try:
            return self._parse_file(path, path, drop_in_stem(f"{riddle_id}.json"))
        except FileNotFoundError:
            pass
        if queue is not Queue.INCOMING or "/" in riddle_id or ignored(riddle_id):
            return None
        path = f"{self._dirs[queue]}/{riddle_id}"
        try:
            return self._parse_file(path, path, drop_in_stem(riddle_id))
        except (FileNotFoundError, IsADirectoryError):
            return None

    def _parse_file(self, path: str, where: str, default_id: str | None = None) -> Riddle:
        """The document at `path`, read up to `limits.readable` (a document stored before
        the limit was lowered is still read), with its real size in the reason if over."""
        raw, info = documents.read_raw(path, self.limits.readable + 1)
        if raw is None:
            raise InvalidDocument("not a regular file", where=where)
        return documents.parse(raw, where, default_id, self.limits.readable, info.st_size)

    def reread(self, claim: Claim) -> Riddle:
        token: _Token = claim.token
        return self._parse_file(token.path, token.path)

    def find(self, riddle_id: str) -> tuple[Queue, Riddle] | None:
        if not ID_RE.fullmatch(riddle_id):
            return None
        found = []
        for queue in Queue:
            with contextlib.suppress(InvalidDocument):
                riddle = self.read(queue, riddle_id)
                # A drop-in `ID.json` whose document names another id is that riddle.
                if riddle is not None and riddle.id == riddle_id:
                    found.append((riddle.rev, queue, riddle))
        if not found:
            dropped = self._dropped(riddle_id)
            return None if dropped is None else (Queue.INCOMING, dropped[1])
        _, queue, riddle = max(found, key=lambda f: f[0])
        return queue, riddle

    def _dropped(self, riddle_id: str) -> tuple[str, Riddle] | None:
        """The drop-in of `incoming/` that is the riddle `riddle_id` under a name of its
        own (`b.json` holding `"id": "own"`), with that name. Each drop-in is read, so this
        is for an id no queue holds as `ID.json`, and `incoming/` alone: drop-ins land
        there, and an agent soon stores each as `ID.json`."""
        name = self._drop_ins().get(riddle_id)
        if name is None or name == f"{riddle_id}.json":
            return None
        riddle = self._peek(name)  # read again: the index may be a little behind
        return (name, riddle) if riddle is not None and riddle.id == riddle_id else None

    def _drop_ins(self) -> dict[str, str]:
        return self._drop_in_index.index()

    def _peek(self, name: str) -> Riddle | None:
        return self._drop_in_index.peek(name)

    def counts(self) -> dict[Queue, int]:
        # Regular files only, told by the directory entry's type: no stat per file, for
        # `status` on a spool of 100,000. A FIFO or a directory dropped in is no riddle.
        return {q: sum(1 for _ in iter_files(str(self.dir(q)))) for q in Queue}

    def recent(self, limit: int, queues: Iterable[Queue] = tuple(Queue)) -> list[tuple[Queue, str]]:
        # Modification times, not documents: every commit writes a new file, and a stat is
        # far cheaper than a parse. Streamed: on a spool of 100,000 riddles a list of
        # stat'ed directory entries alone took 100 MB.
        def stamped() -> Iterator[tuple[int, Queue, str]]:
            for queue in queues:
                for entry in iter_files(str(self.dir(queue))):
                    try:
                        yield entry.stat().st_mtime_ns, queue, entry.name.removesuffix(".json")
                    except FileNotFoundError:
                        continue

        return [(queue, riddle_id) for _, queue, riddle_id in heapq.nlargest(limit, stamped())]

    def corrupt_files(self) -> list[Corrupt]:
        out = []
        for entry in sorted(os.scandir(self.root / "corrupt"), key=lambda e: e.name):
            if entry.name.endswith(".reason") or ignored(entry.name):
                continue
            reason_path = self.root / "corrupt" / f"{entry.name}.reason"
            reason = (
                reason_path.read_text("utf-8", "replace").strip() if reason_path.exists() else ""
            )
            out.append(Corrupt(entry.name, reason))
        return out

    # -- claiming ---------------------------------------------------------------------

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
            return read_drop_in(raw, info.st_size, queue, name, limits), info.st_ino
        except InvalidDocument as exc:
            if queue is Queue.INCOMING and time.time() - info.st_mtime < self.drop_in_grace:
                return None, info.st_ino
            self.set_aside(queue, name, str(exc))
        except Exception as exc:
            self.set_aside(queue, name, f"{where}: unreadable: {type(exc).__name__}: {exc}")
        return None, info.st_ino

    def _open_claim(self, queue: Queue, riddle: Riddle, path: str, lock: Lock) -> Claim | None:
        # Duplicates are looked for on every claim (a stat per queue): a crash between the
        # rename and the unlink of any commit, an agent's or a command's, leaves one.
        raw = lock.read_record()
        owner = _record(raw)
        abandoned = int(owner.get("abandoned") or 0) + 1 if raw else 0
        if isinstance(owner.get("rev"), int) and riddle.rev > owner["rev"]:
            abandoned = 0  # its holder died after its commit was made: nothing abandoned
        riddle_id = riddle.id or ""
        others = [q for q in Queue if q is not queue and os.path.exists(self._file(q, riddle_id))]
        if others:
            if self._resolve_duplicates(queue, riddle, lock) is None:
                lock.release()
                return None
            abandoned = 0  # the older copy's commit had completed: nothing was abandoned
        if abandoned:
            self.log_abandoned(queue, riddle, owner, abandoned)
        return Claim(riddle, queue, abandoned, _Token(lock, path))

    def handled(self, claim: Claim) -> None:
        claim.token.lock.clear_record()

    def begin(self, claim: Claim) -> None:
        # Written when handling starts, not at claim time: riddles claimed in the same
        # batch as a poison riddle must not be charged for the agent's death.
        record = {
            **self.actor.as_dict(),
            "time": time.time(),
            "abandoned": claim.abandoned,
            "rev": claim.riddle.rev,  # a later rev found with the record: the commit was made
        }
        claim.token.lock.write_record(orjson.dumps(record))

    def _resolve_duplicates(self, queue: Queue, riddle: Riddle, lock: Lock) -> Riddle | None:
        """Keep the best copy of a riddle (see `_best`); None when the claimed copy lost.

        The copy kept is made durable (its directory flushed) before any other goes: it
        may be the one a commit still under way has just renamed into an inbox, its agent
        having let go of the riddle before that flush (see `commit_many`)."""
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
        return riddle if best[0] is queue else None

    def dedupe(self, riddle_id: str, wait: float = 5.0) -> bool:
        """Resolve duplicates of one riddle under its lock; True when one copy is left."""
        lock = self.lock(riddle_id)
        if not lock.acquire(wait):
            return False
        try:
            found = self.find(riddle_id)
            if found is not None:
                self._resolve_duplicates(*found, lock)
            return sum(self._path(q, riddle_id).exists() for q in Queue) <= 1
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
            riddle.extensions()["dropped_as"] = name  # how to find a riddle given an id
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

    def drop_in(self, queue: Queue, name: str, raw: bytes) -> None:
        if not name or "/" in name or name in (".", ".."):
            raise ValueError(f"not a name for a drop-in: {name!r}")
        atomic.write(self.dir(queue) / name, raw, self.tmp_dir, durable=self.durable)

    def set_aside(self, queue: Queue, name: str, reason: str) -> None:
        """Move an unreadable file to `corrupt/`, with `NAME.reason` beside it."""
        target = self.root / "corrupt" / name
        if target.exists():
            target = target.with_name(f"{name}.{time.time_ns()}")
        reason_path = target.with_name(f"{target.name}.reason")
        atomic.write(reason_path, f"{reason}\n".encode(), self.root / "tmp", durable=self.durable)
        os.rename(self.dir(queue) / name, target)
        self.log_set_aside(queue, name, reason)

    # -- agents and repair ----------------------------------------------------------------

    def watch(self, queues: Iterable[Queue], wake: threading.Event) -> Watch | None:
        from riddlectl.spool.fs import wakeups  # watchdog: only for agents, not every command

        return wakeups.watch([self.dir(queue) for queue in queues], wake)

    def recover(self, committed: Committed) -> int:
        repair.sweep(self)  # temp files and claim records of agents that died
        return self.events.recover(committed)

    def examine(self, fix: bool = False) -> list[Finding]:
        return repair.examine(self, fix)

    def close(self) -> None:
        atomic.discard_spares()


_RANK = {queue: rank for rank, queue in enumerate(Queue)}


def _best(copy: tuple[Queue, Riddle]) -> tuple[int, int]:
    """The copy that wins: the higher rev (every commit bumps it); on a tie, which only a
    person copying files can cause, the queue further along."""
    queue, riddle = copy
    return (riddle.rev, _RANK[queue])


def _hashed(name: str) -> str:

    return "_" + hashlib.sha256(name.encode("utf-8", "surrogateescape")).hexdigest()[:32]


def _record(raw: bytes) -> dict[str, Any]:
    """A claim record (the holder's agent, host, pid, time, abandoned count, rev); {} when
    there is none or it cannot be read."""
    try:
        record = orjson.loads(raw) if raw else {}
    except orjson.JSONDecodeError:
        return {}
    if not isinstance(record, dict) or not isinstance(record.get("abandoned", 0), int):
        return {}
    return record
