"""The event log under concurrent writers, and its rotation."""

from __future__ import annotations

import multiprocessing
from pathlib import Path

import orjson

from riddlectl.spool.fs.events import FsEventLog


def write_events(path: str, writer: int, count: int, max_bytes: int) -> None:
    log = FsEventLog(Path(path), max_bytes)
    for n in range(count):
        log.append({"writer": writer, "n": n, "pad": "x" * (n % 200)})


def run_writers(path: Path, writers: int, count: int, max_bytes: int) -> None:
    context = multiprocessing.get_context("fork")
    procs = [
        context.Process(target=write_events, args=(str(path), w, count, max_bytes))
        for w in range(writers)
    ]
    for proc in procs:
        proc.start()
    for proc in procs:
        proc.join(60)
        assert proc.exitcode == 0


def test_concurrent_writers_never_interleave_lines(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    run_writers(path, writers=4, count=2000, max_bytes=1 << 30)
    lines = path.read_bytes().splitlines()
    assert len(lines) == 8000
    seen = {(e["writer"], e["n"]) for e in map(orjson.loads, lines)}
    assert len(seen) == 8000


def test_log_is_rotated_and_stays_bounded(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    run_writers(path, writers=2, count=3000, max_bytes=64 * 1024)
    assert path.stat().st_size < 64 * 1024 + 64 * 1024  # a racing writer may add a line or two
    assert path.with_name("events.jsonl.1").exists()
    events = list(FsEventLog(path).read())
    assert events and all("writer" in e for e in events)
