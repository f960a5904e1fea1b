"""The naive durable file spool: what one writes in an afternoon, done carefully.

One directory per state (incoming, extracted, solved, validated, done) and tmp/. A worker
lists its inbox (names sorted: first in, first out), claims a file with a non-blocking
`flock`, reads and parses it, runs its stage, writes the result to tmp/, `fsync`s it,
renames it into the next directory, `fsync`s that directory, and unlinks the source. A
watchdog observer on the inbox (created and moved-in files only) wakes an idle worker,
with a one-second look as a safety net. With `fsync` off it is the same without the two
`fsync`s. No claims that outlive their holder, no retries, no event log: the floor a
durable spool of files has to beat.
"""

from __future__ import annotations

import fcntl
import os
import threading
from typing import Any

import orjson

from riddlectl.bench.peers.workload import StageRun, step

DIRS = {
    "extract": ("incoming", "extracted"),
    "solve": ("extracted", "solved"),
    "validate": ("solved", "validated"),
    "manage": ("validated", "done"),
}
LAYOUT = ("incoming", "extracted", "solved", "validated", "done", "tmp")
SAFETY_LOOK = 1.0  # seconds an idle worker waits for a wake-up before it looks anyway


def _layout(base: str) -> None:
    for name in LAYOUT:
        os.makedirs(os.path.join(base, name), exist_ok=True)


def _write(base: str, directory: str, name: str, data: bytes, fsync: bool, dir_fd: int) -> None:
    """Temp file, `fsync`, rename into `directory`, `fsync` the directory."""
    tmp = os.path.join(base, "tmp", f"{name}.{os.getpid()}")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        os.write(fd, data)
        if fsync:
            os.fsync(fd)
    finally:
        os.close(fd)
    os.rename(tmp, os.path.join(base, directory, name))
    if fsync:
        os.fsync(dir_fd)


class Submitter:
    def __init__(self, base: str, fsync: bool) -> None:
        _layout(base)
        self.base, self.fsync = base, fsync
        self.dir_fd = os.open(os.path.join(base, "incoming"), os.O_RDONLY)

    def submit(self, doc: dict[str, Any]) -> None:
        name = f"{doc['id']}.json"
        _write(self.base, "incoming", name, orjson.dumps(doc), self.fsync, self.dir_fd)

    def close(self) -> None:
        os.close(self.dir_fd)


def _handle(run: StageRun, name: str, dir_fd: int) -> bool:
    """Move one file on; False when another worker has it or it is gone."""
    source, target = DIRS[run.stage]
    path = os.path.join(run.base, source, name)
    try:
        fd = os.open(path, os.O_RDONLY)
    except FileNotFoundError:
        return False
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return False
        if os.fstat(fd).st_nlink == 0:  # finished by another worker meanwhile
            return False
        with os.fdopen(os.dup(fd), "rb") as handle:
            doc = step(run.stage, orjson.loads(handle.read()))
        _write(run.base, target, name, orjson.dumps(doc), run.fsync, dir_fd)
        os.unlink(path)
    finally:
        os.close(fd)
    if run.following is None:
        run.done(doc["id"])
    return True


def work(run: StageRun) -> None:
    """Run the stage until `stop` is set (`poll` is unused: inotify wakes this worker)."""
    from watchdog.events import FileCreatedEvent, FileMovedEvent, FileSystemEventHandler
    from watchdog.observers import Observer

    _layout(run.base)
    inbox = os.path.join(run.base, DIRS[run.stage][0])
    woken = threading.Event()

    class Wake(FileSystemEventHandler):
        def on_any_event(self, event: Any) -> None:
            woken.set()

    observer = Observer()
    observer.schedule(Wake(), inbox, event_filter=[FileCreatedEvent, FileMovedEvent])
    observer.daemon = True
    observer.start()
    dir_fd = os.open(os.path.join(run.base, DIRS[run.stage][1]), os.O_RDONLY)
    try:
        while not run.stop.is_set():
            woken.clear()
            names = sorted(e.name for e in os.scandir(inbox) if e.name.endswith(".json"))
            moved = sum(_handle(run, n, dir_fd) for n in names)
            if not moved:
                woken.wait(SAFETY_LOOK)
    finally:
        observer.stop()
        os.close(dir_fd)
