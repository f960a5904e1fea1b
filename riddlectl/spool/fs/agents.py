"""The agents' records on the directory spool: `agents/ID.json`, each under an `flock`
its agent holds for its life (see `riddlectl.spool.agents`).

As with claims (`locks`), the lock belongs to the agent's open file description: the
kernel lets it go when the process dies, kill -9 included, and no handler process
inherits it (close-on-exec). A reader asks for a shared lock without waiting: refused,
the agent is alive; granted, it is gone, and the file holds its last words. The record
is written in place (`pwrite`, padded with blanks, so the file rarely changes size); a
reader that catches a write half-done reads again.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import orjson

from riddlectl.identity import Actor
from riddlectl.spool import agents as seats

RECORD_LIMIT = 256 * 1024  # bytes of a record read at most
PAD = 1024  # records are padded to a multiple of this
READ_TRIES = 5


def register(directory: Path, record: Mapping[str, Any], actor: Actor | None) -> seats.Seat:
    """A new record in `directory`, locked for as long as this process keeps the seat;
    records of agents gone for longer than `GONE_KEPT` are removed first."""
    directory.mkdir(exist_ok=True)
    prune(directory)
    made = seats.new_record(record, actor)
    path = directory / f"{made['id']}.json"
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o644)
    fcntl.flock(fd, fcntl.LOCK_EX)  # a new file: nobody else can hold it
    size = [0]

    def write(current: dict[str, Any]) -> None:
        data = orjson.dumps(current)
        data = data.ljust(-(-len(data) // PAD) * PAD)
        os.pwrite(fd, data, 0)
        if len(data) < size[0]:
            os.ftruncate(fd, len(data))
        size[0] = len(data)

    def leave() -> None:
        os.close(fd)

    write(made)
    return seats.Seat(made, write, leave)


def listing(directory: Path) -> list[dict[str, Any]]:
    """Every record in `directory`, each with whether its agent is alive."""
    found = []
    with contextlib.suppress(FileNotFoundError):
        for entry in os.scandir(directory):
            if entry.name.endswith(".json") and entry.is_file(follow_symlinks=False):
                read = _read(entry.path)
                if read is not None:
                    found.append(seats.shown(*read))
    return found


def prune(directory: Path, now: float | None = None) -> None:
    """Remove the records of agents gone for longer than `GONE_KEPT`."""
    now = time.time() if now is None else now
    with contextlib.suppress(FileNotFoundError):
        for entry in os.scandir(directory):
            if not entry.name.endswith(".json"):
                continue
            read = _read(entry.path)
            gone = read is not None and not read[1]
            if gone and now - float(read[0].get("seen") or 0) >= seats.GONE_KEPT:  # type: ignore[index]
                with contextlib.suppress(OSError):
                    os.unlink(entry.path)


def _read(path: str) -> tuple[dict[str, Any], bool] | None:
    """The record at `path` and whether its agent is alive; None when it is not there
    or cannot be read as a record."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
            alive = False
        except BlockingIOError:
            alive = True
        for _ in range(READ_TRIES):
            raw = os.pread(fd, RECORD_LIMIT, 0).strip()
            try:
                record = orjson.loads(raw)
            except orjson.JSONDecodeError:
                if not alive:
                    return None  # a dead writer's torn record stays torn
                time.sleep(0.005)  # caught while its agent writes it
                continue
            return (record, alive) if isinstance(record, dict) else None
        return None
    finally:
        os.close(fd)
