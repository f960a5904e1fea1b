"""The filesystem spool: one directory per queue, one `ID.json` per riddle.

Claims are `flock`s (filelock) on `locks/ID.lock`, so they die with their process. A
claim also leaves `claims/ID.json` (its owner) until it is committed or released: finding
one when claiming means the previous holder died, which counts toward the poison limit
and is the only case in which a duplicate left by a crash between two steps can exist.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import orjson
from filelock import FileLock, Timeout

from riddlectl import atomic, documents
from riddlectl.crashpoints import reach
from riddlectl.errors import InvalidDocument, UnknownRiddle
from riddlectl.identity import Actor, hostname
from riddlectl.models import ID_RE, Riddle
from riddlectl.queues import LAYOUT_DIRS, Queue, route
from riddlectl.spool import Claim, Corrupt, Spool, stamp

DROP_IN_GRACE = 5.0


@dataclass
class _Header:
    """What ordering needs of a file, cached by (name, inode): every commit is a new inode."""

    inode: int
    key: tuple[int, float, str]
    retry_at: float
    valid: bool


@dataclass
class _Token:
    lock: FileLock
    path: Path


def ignored(name: str) -> bool:
    """Names other programs use while writing: never read as riddles (SPEC §3)."""
    return name.startswith(".") or name.endswith(".tmp")


class FsSpool(Spool):
    def __init__(
        self,
        root: Path,
        *,
        durable: bool = True,
        actor: Actor | None = None,
        drop_in_grace: float = DROP_IN_GRACE,
    ) -> None:
        self.root = Path(root)
        self.durable = durable
        self.actor = actor or Actor("riddlectl")
        self.drop_in_grace = drop_in_grace
        self._headers: dict[tuple[Queue, str], _Header] = {}

    # -- layout -----------------------------------------------------------------------

    def dir(self, queue: Queue | str) -> Path:
        return self.root / str(queue)

    def init(self) -> None:
        for name in [*LAYOUT_DIRS, "locks", "claims", "cache"]:
            (self.root / name).mkdir(parents=True, exist_ok=True)

    def _path(self, queue: Queue, riddle_id: str) -> Path:
        return self.root / queue.value / f"{riddle_id}.json"

    def _lock(self, name: str) -> FileLock:
        return FileLock(self.root / "locks" / f"{name}.lock", thread_local=False)

    def _claims_path(self, name: str) -> Path:
        return self.root / "claims" / f"{name}.json"

    # -- writing ----------------------------------------------------------------------

    def _store(self, queue: Queue, riddle: Riddle) -> None:
        assert riddle.id is not None
        atomic.write(
            self._path(queue, riddle.id),
            documents.dumps(riddle),
            self.root / "tmp",
            durable=self.durable,
            checkpoints=True,
        )

    def add(self, riddles: Iterable[Riddle], queue: Queue | None = None) -> None:
        riddles = list(riddles)
        locks = [self._lock(r.id or "") for r in riddles]
        with contextlib.ExitStack() as stack:
            for lock in locks:
                stack.enter_context(lock.acquire(timeout=10))
            self.refuse_duplicates(riddles)
            for riddle in riddles:
                self._store(queue or route(riddle), stamp(riddle))

    def commit(self, claim: Claim, riddle: Riddle, to: Queue) -> Riddle:
        stored = stamp(riddle)
        self._store(to, stored)
        token: _Token = claim.token
        if token.path != self._path(to, stored.id or ""):
            token.path.unlink(missing_ok=True)
        reach("source-removed")
        self._end_claim(claim)
        reach("lock-released")
        return stored

    def release(self, claim: Claim) -> None:
        self._end_claim(claim)

    def delete(self, claim: Claim) -> None:
        claim.token.path.unlink(missing_ok=True)
        self._end_claim(claim)

    def _end_claim(self, claim: Claim) -> None:
        token: _Token = claim.token
        try:
            self._claims_path(claim.riddle.id or "").unlink(missing_ok=True)
        finally:  # on a read-only spool the record stays, but the lock must go
            token.lock.release()

    # -- reading ----------------------------------------------------------------------

    def _names(self, queue: Queue) -> list[os.DirEntry[str]]:
        try:
            with os.scandir(self.dir(queue)) as entries:
                return [e for e in entries if not ignored(e.name) and e.is_file()]
        except FileNotFoundError:
            return []

    def ids(self, queue: Queue) -> list[str]:
        return [e.name.removesuffix(".json") for e in self._names(queue)]

    def read(self, queue: Queue, riddle_id: str) -> Riddle | None:
        path = self._path(queue, riddle_id)
        try:
            raw = path.read_bytes()
        except FileNotFoundError:
            return None
        return documents.parse(raw, str(path))

    def find(self, riddle_id: str) -> tuple[Queue, Riddle] | None:
        if not ID_RE.fullmatch(riddle_id):
            return None
        found = []
        for queue in Queue:
            with contextlib.suppress(InvalidDocument):
                riddle = self.read(queue, riddle_id)
                if riddle is not None:
                    found.append((riddle.rev, queue, riddle))
        if not found:
            return None
        _, queue, riddle = max(found, key=lambda f: f[0])
        return queue, riddle

    def counts(self) -> dict[Queue, int]:
        return {queue: len(self._names(queue)) for queue in Queue}

    def recent(self, limit: int, queues: Iterable[Queue] = tuple(Queue)) -> list[tuple[Queue, str]]:
        # Modification times, not documents: every commit writes a new file, and a stat is
        # far cheaper than a parse on a spool of 100,000 riddles.
        found = []
        for queue in queues:
            for entry in self._names(queue):
                try:
                    found.append(
                        (entry.stat().st_mtime_ns, queue, entry.name.removesuffix(".json"))
                    )
                except FileNotFoundError:
                    continue
        found.sort(reverse=True)
        return [(q, riddle_id) for _, q, riddle_id in found[:limit]]

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

    def _header(self, queue: Queue, entry: os.DirEntry[str]) -> _Header:
        cached = self._headers.get((queue, entry.name))
        if cached is not None and cached.inode == entry.inode():
            return cached
        try:
            doc = orjson.loads(Path(entry.path).read_bytes())
            doc = doc if isinstance(doc, dict) else {}
            header = _Header(
                entry.inode(),
                (-int(doc.get("priority") or 0), float(doc.get("created") or 0), entry.name),
                float(doc.get("retry_at") or 0),
                True,
            )
        except (OSError, ValueError, TypeError):
            # Unreadable files sort first so they are set aside promptly.
            header = _Header(entry.inode(), (-(2**62), 0.0, entry.name), 0.0, False)
        self._headers[(queue, entry.name)] = header
        return header

    def claim(self, queue: Queue, limit: int = 1, now: float | None = None) -> list[Claim]:
        now = time.time() if now is None else now
        entries = self._names(queue)
        headers = {e.name: (self._header(queue, e), e) for e in entries}
        live = {(queue, e.name) for e in entries}
        self._headers = {k: v for k, v in self._headers.items() if k[0] != queue or k in live}
        ordered = sorted(headers.values(), key=lambda he: he[0].key)
        claims: list[Claim] = []
        for header, entry in ordered:
            if len(claims) >= limit:
                break
            if header.retry_at > now:
                continue
            claim = self._try_claim(queue, entry.name)
            if claim is not None:
                claims.append(claim)
        return claims

    def _try_claim(self, queue: Queue, name: str) -> Claim | None:
        stem = name.removesuffix(".json")
        lock_name = stem if ID_RE.fullmatch(stem) and name.endswith(".json") else _hashed(name)
        lock = self._lock(lock_name)
        try:
            lock.acquire(timeout=0)
        except Timeout:
            return None
        try:
            return self._claim_locked(queue, name, stem, lock)
        except BaseException:
            lock.release()
            raise

    def _claim_locked(self, queue: Queue, name: str, stem: str, lock: FileLock) -> Claim | None:
        path = self.dir(queue) / name
        try:
            raw = path.read_bytes()
            stat = path.stat()
        except FileNotFoundError:  # moved on by another agent between listing and locking
            lock.release()
            return None
        try:
            riddle = documents.parse(raw, f"{queue.value}/{name}", default_id=stem)
        except InvalidDocument as exc:
            if queue is Queue.INCOMING and time.time() - stat.st_mtime < self.drop_in_grace:
                lock.release()  # possibly still being written by another program
                return None
            self.set_aside(queue, name, str(exc))
            lock.release()
            return None
        if name != f"{riddle.id}.json":
            lock.release()
            return self._adopt(queue, name, riddle)
        return self._open_claim(queue, riddle, path, lock)

    def _open_claim(self, queue: Queue, riddle: Riddle, path: Path, lock: FileLock) -> Claim | None:
        riddle_id = riddle.id or ""
        claims_path = self._claims_path(riddle_id)
        abandoned = 0
        if claims_path.exists():
            abandoned = _read_abandoned(claims_path) + 1
            riddle = self._resolve_duplicates(queue, riddle)
            if riddle is None:
                lock.release()
                return None
        return Claim(riddle, queue, abandoned, _Token(lock, path))

    def begin(self, claim: Claim) -> None:
        # Written when handling starts, not at claim time: riddles claimed in the same
        # batch as a poison riddle must not be charged for the agent's death.
        record = {**self.actor.as_dict(), "time": time.time(), "abandoned": claim.abandoned}
        self._claims_path(claim.riddle.id or "").write_bytes(orjson.dumps(record))

    def _resolve_duplicates(self, queue: Queue, riddle: Riddle) -> Riddle | None:
        """Keep the best copy of a riddle (see `_best`); None when the claimed copy lost."""
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
        for other, _ in copies:
            if other is not best[0]:
                self._path(other, riddle.id or "").unlink(missing_ok=True)
        if best[0] is queue:
            return riddle
        # A newer copy means the dead holder's commit was complete: nothing was abandoned.
        self._claims_path(riddle.id or "").unlink(missing_ok=True)
        return None

    def dedupe(self, riddle_id: str, wait: float = 5.0) -> bool:
        """Resolve duplicates of one riddle under its lock; True when one copy is left."""
        lock = self._lock(riddle_id)
        try:
            lock.acquire(timeout=wait)
        except Timeout:
            return False
        try:
            found = self.find(riddle_id)
            if found is not None:
                self._resolve_duplicates(*found)
            return sum(self._path(q, riddle_id).exists() for q in Queue) <= 1
        finally:
            lock.release()

    def _adopt(self, queue: Queue, name: str, riddle: Riddle) -> Claim | None:
        """A drop-in named other than `ID.json`: store it under its id, then claim that."""
        riddle_id = riddle.id or ""
        lock = self._lock(riddle_id)
        try:
            lock.acquire(timeout=0)
        except Timeout:
            return None
        try:
            if self.find(riddle_id) is not None:
                self.set_aside(
                    queue, name, f"{queue.value}/{name}: id {riddle_id!r} is already in the spool"
                )
                lock.release()
                return None
            self._store(queue, riddle)
            (self.dir(queue) / name).unlink(missing_ok=True)
            return self._open_claim(queue, riddle, self._path(queue, riddle_id), lock)
        except BaseException:
            lock.release()
            raise

    def claim_id(self, riddle_id: str, wait: float = 5.0) -> Claim:
        if not ID_RE.fullmatch(riddle_id):
            raise UnknownRiddle("not a valid riddle id", where=riddle_id[:60])
        lock = self._lock(riddle_id)
        try:
            lock.acquire(timeout=wait)
        except Timeout:
            raise TimeoutError(f"{riddle_id}: busy, claimed by an agent") from None
        found = self.find(riddle_id)
        if found is None:
            lock.release()
            raise UnknownRiddle("no such riddle in the spool", where=riddle_id)
        queue, riddle = found
        claim = self._open_claim(queue, riddle, self._path(queue, riddle_id), lock)
        if claim is None:  # lost to a newer copy that appeared meanwhile: try once more
            return self.claim_id(riddle_id, wait)
        return claim

    def stale_claims(self) -> list[str]:
        """Ids whose claim record outlived a commit to a final queue (the holder died after
        committing, before cleaning up): nobody will claim them again to tidy up."""
        stale = []
        for entry in os.scandir(self.root / "claims"):
            riddle_id = entry.name.removesuffix(".json")
            found = self.find(riddle_id)
            if found is None or found[0] in (Queue.DONE, Queue.FAILED):
                stale.append(riddle_id)
        return stale

    def drop_claim_record(self, riddle_id: str) -> bool:
        """Remove a stale claim record under the riddle's lock; False if the lock is held."""
        lock = self._lock(riddle_id)
        try:
            lock.acquire(timeout=0)
        except Timeout:
            return False
        try:
            self._claims_path(riddle_id).unlink(missing_ok=True)
        finally:
            lock.release()
        return True

    def stale_tmp(self) -> list[Path]:
        """Temp files of writers on this host that are no longer alive (a crash's leftovers)."""
        stale = []
        for entry in os.scandir(self.root / "tmp"):
            owner = atomic.tmp_owner(entry.name)
            if owner is not None and owner[0] == hostname() and not _alive(owner[1]):
                stale.append(Path(entry.path))
        return stale

    def sweep(self) -> None:
        """Tidy what dead agents left: temp files, claim records of final riddles.
        Agents call this when they start."""
        for path in self.stale_tmp():
            path.unlink(missing_ok=True)
        for riddle_id in self.stale_claims():
            self.drop_claim_record(riddle_id)

    def set_aside(self, queue: Queue, name: str, reason: str) -> None:
        """Move an unreadable file to `corrupt/`, with `NAME.reason` beside it."""
        target = self.root / "corrupt" / name
        if target.exists():
            target = target.with_name(f"{name}.{time.time_ns()}")
        reason_path = target.with_name(f"{target.name}.reason")
        atomic.write(reason_path, f"{reason}\n".encode(), self.root / "tmp", durable=self.durable)
        os.rename(self.dir(queue) / name, target)
        self._on_corrupt(queue, name, reason)

    def _on_corrupt(self, queue: Queue, name: str, reason: str) -> None:
        """Hook for the agent layer to log the event; the spool itself only moves files."""


_RANK = {queue: rank for rank, queue in enumerate(Queue)}


def _best(copy: tuple[Queue, Riddle]) -> tuple[int, int]:
    """The copy that wins: the higher rev (every commit bumps it); on a tie, which only a
    person copying files can cause, the queue further along."""
    queue, riddle = copy
    return (riddle.rev, _RANK[queue])


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _hashed(name: str) -> str:
    return "_" + hashlib.sha256(name.encode("utf-8", "surrogateescape")).hexdigest()[:32]


def _read_abandoned(path: Path) -> int:
    try:
        return int(orjson.loads(path.read_bytes()).get("abandoned", 0))
    except (OSError, ValueError, AttributeError, TypeError):
        return 0
