"""Waiting for riddles to be final: one at a time (latency), or a whole batch (throughput)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

from riddlectl.bench.subject import Bench, Stalled

LATENCY_POLL = 0.0005
LATENCY_WATCH_POLL = 0.02  # between looks while woken by the spool (a database's NOTIFY)
THROUGHPUT_POLL = 0.005


def wait_one(
    bench: Bench, riddle_id: str, check: Callable[[], None], arrived: threading.Event | None = None
) -> str:
    """Look until `riddle_id` is final; 'done' or 'failed'. `Stalled` past the timeout.

    Every `LATENCY_POLL`; or, given `arrived` (set by the spool's wake-up on the final
    queues), each time it is set and every `LATENCY_WATCH_POLL` besides."""
    deadline = time.perf_counter() + bench.options.stall_timeout
    checked = time.perf_counter()
    while True:
        if arrived is not None:
            arrived.clear()  # before looking: an arrival after the look wakes the wait
        state = bench.final(riddle_id)
        if state is not None:
            return state
        now = time.perf_counter()
        if now - checked > 0.2:
            checked = now
            check()
            if now > deadline:
                raise Stalled(f"{riddle_id} not final after {bench.options.stall_timeout:g} s")
        if arrived is None:
            time.sleep(LATENCY_POLL)
        else:
            arrived.wait(LATENCY_WATCH_POLL)


def _sweep(bench: Bench, pending: list[str], counts: dict[str, int]) -> list[str]:
    """Pending ids still not final; looks past at most 8 unfinished ones (order is ~FIFO)."""
    keep: list[str] = []
    misses = 0
    for index, riddle_id in enumerate(pending):
        if misses >= 8:
            return keep + pending[index:]
        state = bench.final(riddle_id)
        if state is None:
            misses += 1
            keep.append(riddle_id)
        else:
            counts[state] += 1
    return keep


def wait_all(bench: Bench, ids: list[str], check: Callable[[], None]) -> dict[str, Any]:
    """Poll until every id is final: the counts, when the last one was seen, and `stalled`
    (why waiting stopped early: a stall or a dead agent; None when all finished)."""
    counts: dict[str, Any] = {"done": 0, "failed": 0, "stalled": None}
    pending, last, polls = list(ids), time.perf_counter(), 0
    while pending and counts["stalled"] is None:
        before = len(pending)
        pending = _sweep(bench, pending, counts)
        now, polls = time.perf_counter(), polls + 1
        if len(pending) < before:
            last = now
        if polls % 40 == 0 or now - last > bench.options.stall_timeout:
            counts["stalled"] = _problem(check, pending, now - last, bench.options.stall_timeout)
        if pending:
            time.sleep(THROUGHPUT_POLL)
    return {**counts, "last": last}


def _problem(
    check: Callable[[], None], pending: list[str], idle: float, limit: float
) -> str | None:
    try:
        check()
    except Stalled as exc:
        return str(exc)
    return f"{len(pending)} riddles not final after a {idle:.0f} s stall" if idle > limit else None
