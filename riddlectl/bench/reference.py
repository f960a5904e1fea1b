"""The physical reference `riddlectl bench` compares the pipeline against.

Measured in one process, on the same filesystem (the same temporary directory) as the
bench spool:

- `transition_loop`: what one riddle needs at the disk, done as fast as one process can.
  Each riddle makes four transitions incoming → extracted → solved → validated → done;
  one transition reads the file, parses it with orjson, appends a history entry, writes
  a temp file (and `fsync`s it), renames it into the next directory (and `fsync`s that
  directory), then unlinks the source. Riddles go through their four transitions one
  after another; the figure is riddles/s and the time of one transition.
- `group_sync`: the **group-sync limit**, what the disk allows when flushes are shared.
  Five transitions a riddle (the submit into incoming/ and the four stages, as riddlectl
  makes them), none flushed on its own: one `syncfs` of the filesystem per 100
  transitions, and one at the end, inside the timed part. riddlectl's durable throughput
  is judged against it (`summary.judge`): a spool that flushes each commit cannot beat
  it, one that shares its flushes well comes close.
- `inotify_wakeup`: the time from a `rename` into a watched directory to a thread
  waiting for it running again, woken through `Spool.watch` on a spool's `incoming/`
  (the way an idle agent is woken), median over a few dozen samples with a short pause
  between them so each one is a cold wake.

- `file_create_us`: the mean cost of creating a new file (inode) there, which on some
  filesystems outweighs fsync and explains why spools that create fewer files win.

Setup (writing each riddle's starting file) is never timed. Every loop runs for a fixed
time (1 s of timed work by default), so a slow disk cannot make bench hang.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import statistics
import threading
import time
from pathlib import Path
from typing import Any

import orjson

from riddlectl.spool import open_spool
from riddlectl.spool.states import Queue

DIRS = ("incoming", "extracted", "solved", "validated", "done")
CREATE_SAMPLES = 200
MODES = ("fsync", "no_fsync", "group_sync")
GROUP = 100  # transitions per shared flush in the group_sync mode


def _syncfs_call() -> Any:
    """libc's syncfs (Linux): flush one filesystem; None where there is none. Looked up
    here, not taken from the filesystem spool's `atomic`: the bench's reference stands
    beside the spools and imports none of their insides (tests/unit/test_layers.py)."""
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
        return libc.syncfs
    except (OSError, AttributeError):
        return None


_SYNCFS = _syncfs_call()


def syncfs(fd: int) -> None:
    """Flush the filesystem that holds `fd` (every file on it: the shared flush a group
    commit makes); the whole system's `sync` where syncfs is missing."""
    if _SYNCFS is None:
        os.sync()
    elif _SYNCFS(fd) != 0:
        errno = ctypes.get_errno()
        raise OSError(errno, os.strerror(errno))


def _transition(
    paths: list[str], tmp: str, name: str, step: int, fsync: bool, fds: list[int]
) -> None:
    """One transition of `name` from DIRS[step] to DIRS[step + 1] (string paths: no
    pathlib overhead in the loop that sets the bar)."""
    source = f"{paths[step]}/{name}"
    with open(source, "rb") as handle:
        doc = orjson.loads(handle.read())
    doc.setdefault("history", []).append({"stage": DIRS[step + 1], "time": time.time()})
    _place(orjson.dumps(doc), tmp, f"{paths[step + 1]}/{name}", fsync)
    if fsync:
        os.fsync(fds[step + 1])
    os.unlink(source)


def _place(data: bytes, tmp: str, target: str, fsync: bool) -> None:
    """`data` written to the temp file `tmp` (flushed with `fsync`), renamed to `target`."""
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        os.write(fd, data)
        if fsync:
            os.fsync(fd)
    finally:
        os.close(fd)
    os.rename(tmp, target)


def transition_loop(
    root: Path,
    payload: bytes,
    *,
    fsync: bool,
    seconds: float = 1.0,
    riddles: int = 5000,
    group: bool = False,
) -> dict[str, Any]:
    """Riddles/s of the four-transition loop, run for about `seconds` (timed) or `riddles`.

    Each riddle's starting file is written just before its transitions, outside the
    timed part (no large setup, and the loop ends when the time is up). With `group`
    (and not `fsync`) the starting file is written as a fifth transition inside the timed
    part, and one `syncfs` per GROUP transitions, and one at the end, flushes them all.
    """
    for name in (*DIRS, "tmp"):
        (root / name).mkdir(parents=True, exist_ok=True)
    paths = [str(root / name) for name in DIRS]
    dir_fds = [os.open(path, os.O_RDONLY | os.O_DIRECTORY) for path in paths]
    tmp, done, timed, pending = str(root / "tmp" / "next.tmp"), 0, 0.0, 0
    try:
        while done < riddles and timed < seconds:
            name = f"r{done:07d}.json"
            if not group:
                (root / DIRS[0] / name).write_bytes(payload)
            started = time.perf_counter()
            if group:
                _place(payload, tmp, f"{paths[0]}/{name}", fsync=False)  # the submit
                pending += 1
            for step in range(4):
                _transition(paths, tmp, name, step, fsync, dir_fds)
                pending += 1
                if group and pending >= GROUP:
                    syncfs(dir_fds[0])
                    pending = 0
            timed += time.perf_counter() - started
            done += 1
        if group and pending:
            started = time.perf_counter()
            syncfs(dir_fds[0])
            timed += time.perf_counter() - started
    finally:
        for fd in dir_fds:
            os.close(fd)
    transitions = 5 if group else 4
    return {
        "riddles": done,
        "seconds": round(timed, 4),
        "riddles_per_s": round(done / timed, 1),
        "transition_ms": round(timed * 1000 / (transitions * done), 4),
        "transitions_per_riddle": transitions,
    }


def file_create_us(root: Path, samples: int = CREATE_SAMPLES) -> float:
    """Mean microseconds to create one new, empty file (a new inode) in a fresh directory:
    on some filesystems this, not fsync, is what a spool pays most."""
    root.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    for index in range(samples):
        os.close(os.open(root / f"c{index}", os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644))
    return round((time.perf_counter() - started) * 1e6 / samples, 1)


def inotify_wakeup(root: Path, samples: int = 50) -> dict[str, Any]:
    """Median ms from `rename` into a watched directory to a thread waiting on it running."""
    spool, staging = open_spool(root / "spool", durable=False), root / "staging"
    watched = root / "spool" / Queue.INCOMING.value  # a filesystem spool's inbox directory
    staging.mkdir(parents=True, exist_ok=True)
    wake = threading.Event()
    watching = spool.watch([Queue.INCOMING], wake)
    delays: list[float] = []
    try:
        time.sleep(0.05)
        for index in range(samples):
            delay = _one_wakeup(wake, staging, watched, f"w{index}.json")
            if delay is not None:
                delays.append(delay)
            time.sleep(0.005)
    finally:
        if watching is not None:
            watching.stop()
    median = statistics.median(delays) if delays else None
    return {
        "samples": len(delays),
        "median_ms": None if median is None else round(median * 1000, 4),
        "max_ms": round(max(delays) * 1000, 4) if delays else None,
    }


def _one_wakeup(wake: threading.Event, staging: Path, watched: Path, name: str) -> float | None:
    (staging / name).write_bytes(b"{}")
    wake.clear()
    started = time.perf_counter()
    os.rename(staging / name, watched / name)
    if not wake.wait(2.0):
        return None
    return time.perf_counter() - started


def measure(
    root: Path, payload: bytes, *, seconds: float = 1.0, reps: int = 3, wake_samples: int = 50
) -> dict[str, Any]:
    """The loops (MODES) in turn, `reps` times each (the median rep is reported, with the
    spread), the inotify wake-up, and the cost of creating a file."""
    runs: dict[str, list[dict[str, Any]]] = {mode: [] for mode in MODES}
    for rep in range(reps):
        for mode, results in runs.items():
            loop_root = root / f"{mode}{rep}"
            results.append(
                transition_loop(
                    loop_root,
                    payload,
                    fsync=mode == "fsync",
                    group=mode == "group_sync",
                    seconds=seconds,
                )
            )
    out: dict[str, Any] = {"reps": reps, "payload_bytes": len(payload)}
    for mode, results in runs.items():
        rates = sorted(r["riddles_per_s"] for r in results)
        median = next(r for r in results if r["riddles_per_s"] == rates[len(rates) // 2])
        out[mode] = {**median, "spread": [rates[0], rates[-1]]}
    out["inotify_wakeup"] = inotify_wakeup(root / "wake", wake_samples)
    out["file_create_us"] = file_create_us(root / "create")
    return out
