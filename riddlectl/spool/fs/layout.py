"""The directory spool's layout: where each queue, lock and record lives, and what the
spool is as a whole (its name, event log, extraction cache, agents, wake-ups). The
classes above it (`reading`, `intake`, `writing`, then `fsspool`'s claims) each add one
concern to it.
"""

from __future__ import annotations

import contextlib
import fcntl
import functools
import os
import threading
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson

from riddlectl.document.codec import Limits
from riddlectl.document.ids import ID_RE
from riddlectl.entries import present
from riddlectl.identity import Actor
from riddlectl.spool import agents as seats
from riddlectl.spool.contract import (
    Spool,
    Watch,
)
from riddlectl.spool.fs import agents as records
from riddlectl.spool.fs import atomic
from riddlectl.spool.fs.dropped import DropInIndex
from riddlectl.spool.fs.events import DEFAULT_MAX_BYTES, FsEventLog
from riddlectl.spool.fs.extractions import FsExtractionCache
from riddlectl.spool.fs.inbox import Inbox, iter_files
from riddlectl.spool.fs.locks import Lock
from riddlectl.spool.states import LAYOUT_DIRS, Queue

if TYPE_CHECKING:
    pass


DROP_IN_GRACE = 5.0


@dataclass
class Token:
    """A claim's hold on its file: the riddle's lock and the path it was claimed at."""

    lock: Lock
    path: str
    # The rev its lock file's record says the riddle moves on at (`Writing.mark_moving`);
    # None while the record is anything else.
    moving_rev: int | None = None


class Layout(Spool):
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

    def _anywhere(self, riddle_id: str) -> bool:
        """Whether a queue holds `riddle_id` (False for what is no valid id)."""
        return ID_RE.fullmatch(riddle_id) is not None and any(self._holding(riddle_id))

    def _holding(self, riddle_id: str, besides: Queue | None = None) -> Iterator[Queue]:
        """The queues but `besides` whose directory holds `ID.json`, looked at one by one
        as they are asked for (a claim asks this of every queue but its own)."""
        name = f"/{riddle_id}.json"
        return (q for q, d in self._dirs.items() if q is not besides and present(d + name))

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

    def register_agent(self, record: Mapping[str, Any]) -> seats.Seat:
        return records.register(self.root / "agents", record, self.actor)

    def agents(self) -> list[dict[str, Any]]:
        return seats.listed(records.listing(self.root / "agents"))

    def watch(self, queues: Iterable[Queue], wake: threading.Event) -> Watch | None:
        from riddlectl.spool.fs import wakeups  # watchdog: only for agents, not every command

        return wakeups.watch([self.dir(queue) for queue in queues], wake)

    def close(self) -> None:
        atomic.discard_spares()


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
