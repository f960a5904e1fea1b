"""What a crash or a person leaves behind in a filesystem spool, found and mended.

Findings (see `examine`): duplicates (an id in two queues), stale locks (lock files of
riddles no longer in the spool), leftovers in `tmp/`, claim records that outlived their
riddle's last commit, and strays: what is not a regular file in a queue directory that
no agent takes from (an agent sets those of its inbox aside). `fix` repairs what is safe:
the newer copy of a duplicate wins (on a tie, the one in done/ that says it is solved;
the finding names the copy kept), stale locks, old temp files and stale claim records
are removed. Strays are only reported: a person decides what they were.
"""

from __future__ import annotations

import contextlib
import os
import stat
import time
from collections import defaultdict
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from riddlectl.document.ids import ID_RE
from riddlectl.entries import kind_of
from riddlectl.identity import alive, hostname
from riddlectl.spool.contract import Finding
from riddlectl.spool.fs import atomic
from riddlectl.spool.fs.inbox import iter_entries
from riddlectl.spool.fs.locks import Lock
from riddlectl.spool.states import FINAL, Queue

if TYPE_CHECKING:
    from riddlectl.document.model import Riddle

TMP_GRACE = 60.0  # a temp file younger than this may still be in a writer's hands


class Mended(Protocol):
    """What repair uses of the spool it mends: its layout, its locks, and how it finds
    riddles and resolves duplicates (the filesystem spool is one)."""

    @property
    def root(self) -> Path: ...
    def dir(self, queue: Queue | str) -> Path: ...
    def ids(self, queue: Queue) -> list[str]: ...
    def holds(self, queue: Queue, riddle_id: str) -> bool: ...
    def find(self, riddle_id: str) -> tuple[Queue, Riddle] | None: ...
    def lock(self, name: str) -> Lock: ...
    def dedupe(self, riddle_id: str, wait: float = 5.0) -> tuple[Queue, Riddle] | None: ...


def examine(spool: Mended, fix: bool = False) -> list[Finding]:
    findings = _duplicates(spool, fix)
    findings += _stale_locks(spool, fix)
    findings += _tmp_leftovers(spool, fix)
    findings += _stale_claims(spool, fix)
    findings += _strays(spool)
    return findings


def sweep(spool: Mended) -> None:
    """Tidy what dead agents left (temp files, claim records of final riddles) and
    resolve duplicates a claim would not look for (copies made by hand; a commit's record
    lost with the power, see `FsSpool._open_claim`); agents do this when they start."""
    for path in stale_tmp(spool):
        with contextlib.suppress(IsADirectoryError):  # a person's: doctor reports it
            path.unlink(missing_ok=True)
    for riddle_id in stale_claims(spool):
        clear_claim(spool, riddle_id)
    for riddle_id in _copies(spool):
        if ID_RE.fullmatch(riddle_id):  # a drop-in's name is no riddle's yet
            spool.dedupe(riddle_id, wait=0.0)  # a held one: its holder's claim resolves it


def _strays(spool: Mended) -> list[Finding]:
    """Entries of queue directories that are not regular files: no riddles, so neither
    counted nor listed, and in a queue no agent takes from, never set aside."""
    findings = []
    for queue in Queue:
        for entry in iter_entries(str(spool.dir(queue))):
            if entry.is_file(follow_symlinks=False):  # the entry's type: no stat
                continue
            kind = kind_of(entry.stat(follow_symlinks=False).st_mode)
            if kind is not None:
                subject = f"{queue.value}/{entry.name}"
                findings.append(Finding("stray", subject, f"not a regular file ({kind})"))
    return findings


def _copies(spool: Mended) -> dict[str, list[Queue]]:
    """The entries listed in more than one queue, and those queues."""
    where: dict[str, list[Queue]] = defaultdict(list)
    for queue in Queue:
        for riddle_id in spool.ids(queue):
            where[riddle_id].append(queue)
    return {riddle_id: queues for riddle_id, queues in where.items() if len(queues) > 1}


def _duplicates(spool: Mended, fix: bool) -> list[Finding]:
    findings = []
    for riddle_id, queues in _copies(spool).items():
        finding = Finding("duplicate", riddle_id, "in " + ", ".join(q.value for q in queues))
        if fix:
            kept = spool.dedupe(riddle_id, wait=1.0)
            finding.fixed = kept is not None
            if kept is not None:  # said, so that a person can tell the right one won
                queue, riddle = kept
                solved = "solved" if riddle.status.solved else "not solved"
                finding.detail += f"; kept the copy in {queue.value} (rev {riddle.rev}, {solved})"
        findings.append(finding)
    return findings


def _all_ids(spool: Mended) -> dict[str, Queue]:
    """Every id in the spool and a queue holding it, from directory listings alone."""
    return {riddle_id: queue for queue in Queue for riddle_id in spool.ids(queue)}


def _lock_files(spool: Mended) -> list[os.DirEntry[str]]:
    with os.scandir(spool.root / "locks") as entries:
        return [e for e in entries if _is_lock_file(e.name)]


def _is_lock_file(name: str) -> bool:
    return name.endswith(".lock") and not name.startswith("_")


def _stale_locks(spool: Mended, fix: bool) -> list[Finding]:
    """Lock files of riddles that are gone (purged, or removed by hand)."""
    present = _all_ids(spool)
    findings = []
    for entry in _lock_files(spool):
        name = entry.name.removesuffix(".lock")
        if name in present:
            continue
        finding = Finding("stale-lock", name, "lock file of a riddle no longer in the spool")
        if fix:
            finding.fixed = remove_lock(spool, name)
        findings.append(finding)
    return findings


def remove_lock(spool: Mended, name: str) -> bool:
    """Delete a riddle's lock file, under the lock itself, if the riddle is gone."""
    lock = spool.lock(name)
    if not lock.try_acquire():
        return False
    try:
        if not spool.find(name):
            (spool.root / "locks" / f"{name}.lock").unlink(missing_ok=True)
            return True
        return False
    finally:
        lock.release()


def stale_tmp(spool: Mended) -> list[Path]:
    """Temp files of writers on this host that are no longer alive (a crash's leftovers)."""
    stale = []
    for entry in os.scandir(spool.root / "tmp"):
        owner = atomic.tmp_owner(entry.name)
        if owner is not None and owner[0] == hostname() and not alive(owner[1]):
            stale.append(Path(entry.path))
    return stale


def _tmp_leftovers(spool: Mended, fix: bool) -> list[Finding]:
    """Temp files of dead writers on this host; of unknown or remote writers, those older
    than TMP_GRACE. A live agent's files here (its writes, its recycled spares) are fine."""
    findings = []
    now = time.time()
    stale = set(stale_tmp(spool))
    for entry in os.scandir(spool.root / "tmp"):
        path = Path(entry.path)
        try:  # the entry itself: a link is not followed, wherever it leads
            info = entry.stat(follow_symlinks=False)
        except FileNotFoundError:
            continue
        age = now - info.st_mtime
        owner = atomic.tmp_owner(entry.name)
        local = owner is not None and owner[0] == hostname()
        if entry.name.startswith(".") or (path not in stale and (local or age < TMP_GRACE)):
            continue
        kind = kind_of(info.st_mode)
        finding = Finding(
            "tmp-leftover", entry.name, f"{age:.0f} s old" + (f", {kind}" if kind else "")
        )
        if fix and not stat.S_ISDIR(info.st_mode):  # a directory is a person's to remove
            path.unlink(missing_ok=True)
            finding.fixed = True
        findings.append(finding)
    return findings


def stale_claims(spool: Mended) -> list[str]:
    """Ids whose claim record outlived a commit to a final queue (the holder died after
    committing, before clearing it): nobody will claim them again to tidy up."""
    # Streamed, with a look at the queues only for the few records left: every agent
    # does this when it starts, in a spool of maybe 100,000 lock files.
    stale = []
    with os.scandir(spool.root / "locks") as entries:
        for entry in entries:
            if not _is_lock_file(entry.name) or not entry.stat().st_size:
                continue
            riddle_id = entry.name.removesuffix(".lock")
            if not any(spool.holds(queue, riddle_id) for queue in Queue if queue not in FINAL):
                stale.append(riddle_id)
    return stale


def clear_claim(spool: Mended, riddle_id: str) -> bool:
    """Clear a stale claim record under the riddle's lock; False if the lock is held."""
    lock = spool.lock(riddle_id)
    if not lock.try_acquire():
        return False
    try:
        lock.drop_record()
    finally:
        lock.release()
    return True


def _stale_claims(spool: Mended, fix: bool) -> list[Finding]:
    findings = []
    for riddle_id in stale_claims(spool):
        finding = Finding("stale-claim", riddle_id, "claim record of a final or missing riddle")
        if fix:
            finding.fixed = clear_claim(spool, riddle_id)
        findings.append(finding)
    return findings
