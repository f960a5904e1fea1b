"""Where a riddle's time goes: a trace of each stage's trip, for `riddlectl bench` only.

Off unless `RIDDLECTL_BENCH_TRACE` names a directory (bench sets it in the agents'
environment); then each agent process appends one line per riddle and stage to
`DIR/trace.PID.jsonl`: the riddle, the stage, and on the system-wide monotonic clock the
moments its agent woke up (began the pass that claimed it), claimed it, started and ended
the handlers, and made the commit durable; and how many fsyncs that commit made (a group
commit's shared among its riddles). When off, each hook is one test of a module global.
"""

from __future__ import annotations

import os
import threading
import time

ENV = "RIDDLECTL_BENCH_TRACE"
_directory = os.environ.get(ENV) or None
ON = _directory is not None

_local = threading.local()
_write_lock = threading.Lock()
_fd: int | None = None
fsyncs = 0  # made by this process, counted only while tracing


def synced(count: int = 1) -> None:
    """A flush (fsync, fdatasync or syncfs) was made."""
    global fsyncs
    if ON:
        fsyncs += count


def woke() -> None:
    """This thread begins a pass over its inboxes."""
    if ON:
        _local.wake = time.monotonic()


def claimed() -> None:
    """This thread's claim of a batch returned."""
    if ON:
        _local.claim = time.monotonic()


def carried() -> None:
    """A riddle goes on to the next stage in this thread without a wake-up or a claim."""
    if ON:
        _local.wake = _local.claim = time.monotonic()


def started(riddle_id: str | None) -> None:
    if ON:
        _marks()[riddle_id or ""] = [time.monotonic(), 0.0]


def ended(riddle_id: str | None) -> None:
    if ON:
        mark = _marks().get(riddle_id or "")
        if mark is not None:
            mark[1] = time.monotonic()


def before_commit() -> int:
    """The fsync count before a commit (0 when off)."""
    return fsyncs


def committed(stages: list[tuple[str | None, str]], fsyncs_before: int) -> None:
    """A group commit of (riddle id, stage) pairs is durable."""
    if not ON or not stages:
        return
    now = time.monotonic()
    share = (fsyncs - fsyncs_before) / len(stages)
    wake = getattr(_local, "wake", now)
    claim = getattr(_local, "claim", now)
    marks = _marks()
    lines = []
    for riddle_id, stage in stages:
        start, end = marks.pop(riddle_id or "", [now, now])
        lines.append(
            f'{{"id":"{riddle_id}","stage":"{stage}","wake":{wake:.6f},"claim":{claim:.6f},'
            f'"start":{start:.6f},"end":{end or now:.6f},"commit":{now:.6f},'
            f'"fsyncs":{share:.3f}}}\n'
        )
    _write("".join(lines).encode())


def _marks() -> dict[str, list[float]]:
    marks: dict[str, list[float]] | None = getattr(_local, "marks", None)
    if marks is None:
        marks = _local.marks = {}
    return marks


def _write(data: bytes) -> None:
    global _fd
    with _write_lock:
        if _fd is None:
            path = os.path.join(_directory or ".", f"trace.{os.getpid()}.jsonl")
            _fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o644)
        os.write(_fd, data)
