"""The timed phases of a pipeline run: warm-up, latency (one riddle at a time), throughput."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

from riddlectl.bench.breakdown import breakdown, read_traces
from riddlectl.bench.measure import latency_figures
from riddlectl.bench.subject import Agents, Bench, Stalled
from riddlectl.bench.waiting import wait_all, wait_one
from riddlectl.spool.states import Queue

FINAL_QUEUES = (Queue.DONE, Queue.FAILED)


def latency_phase(
    bench: Bench,
    agents: Agents,
    out: dict[str, Any],
    submitted: dict[str, float],
    trips: dict[str, tuple[float, float]],
) -> None:
    """One riddle at a time; `submitted` gets when each one's submit returned, `trips`
    when it was sent and when it was seen final."""
    options, samples, failed = bench.options, [], 0
    # On a database, looking every 0.5 ms would be 4,000 queries a second on the server the
    # agents use: there the wait is woken by the spool's own wake-up, as an agent's is.
    arrived = threading.Event() if bench.pipeline.spool.local_root is None else None
    watch = None if arrived is None else bench.pipeline.spool.watch(FINAL_QUEUES, arrived)
    started = time.perf_counter()
    try:
        for index in range(options.latency_riddles):
            riddle_id = f"lat{index:06d}"
            sent = time.perf_counter()
            sent_at = time.monotonic()
            bench.submit([bench.doc(riddle_id, index)])
            submitted[riddle_id] = time.monotonic()
            failed += wait_one(bench, riddle_id, agents.check, arrived) == "failed"
            samples.append((time.perf_counter() - sent) * 1000)
            trips[riddle_id] = (sent_at, time.monotonic())
            out["latency"] = latency_figures(samples, failed, capped=False)
            if time.perf_counter() - started > options.latency_cap:
                out["latency"]["capped"] = True
                break
    finally:
        if watch is not None:
            watch.stop()


def throughput_phase(bench: Bench, agents: Agents, out: dict[str, Any]) -> None:
    options = bench.options
    ids = [f"tp{i:07d}" for i in range(options.riddles)]
    cpu_before = agents.cpu_seconds()
    started = time.perf_counter()
    for first in range(0, len(ids), options.submit_batch):
        batch = ids[first : first + options.submit_batch]
        bench.submit([bench.doc(rid, first + i) for i, rid in enumerate(batch)])
    submitted = time.perf_counter() - started
    out["submit"] = {"riddles": len(ids), "seconds": round(submitted, 4)}
    out["submit"]["per_s"] = round(len(ids) / submitted, 1)
    seen = wait_all(bench, ids, agents.check)
    seconds, final = seen["last"] - started, seen["done"] + seen["failed"]
    cpu = agents.cpu_seconds() - cpu_before
    out["throughput"] = {
        "riddles": len(ids),
        "done": seen["done"],
        "failed": seen["failed"],
        "seconds": round(seconds, 4),
        "per_s": round(final / seconds, 1),
    }
    per_riddle = cpu * 1000 / max(final, 1)
    out["cpu"] = {"seconds": round(cpu, 3), "ms_per_riddle": round(per_riddle, 4)}
    if seen["stalled"]:
        raise Stalled(f"throughput: {seen['stalled']}")


def pipeline_phases(bench: Bench, root: Path, out: dict[str, Any]) -> None:
    """Start the agents, run warm-up, latency and throughput; always stop the agents.
    Then where the latency phase's time went (`breakdown`), from the agents' traces."""
    out.setdefault("error", None)
    traces = root / "trace"
    agents = Agents(bench, root / "agents.log", traces)
    submitted: dict[str, float] = {}
    trips: dict[str, tuple[float, float]] = {}
    try:
        for index in range(bench.options.warmup_riddles):
            bench.submit([bench.doc(f"warm{index:03d}", index)])
            wait_one(bench, f"warm{index:03d}", agents.check)
        latency_phase(bench, agents, out, submitted, trips)
        throughput_phase(bench, agents, out)
    except Stalled as exc:
        out["error"] = str(exc)
    finally:
        out["agents"] = agents.stop()
    events = bench.pipeline.events.read()
    out["breakdown"] = breakdown(read_traces(traces), submitted, events, trips)
