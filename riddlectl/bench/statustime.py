"""`riddlectl bench --status-riddles N`: `status` timed over a spool of N finished riddles."""

from __future__ import annotations

import statistics
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson

from riddlectl import runtime
from riddlectl.bench.measure import riddlectl_argv
from riddlectl.ops import report
from riddlectl.settings import ENV_VARS, resolve
from riddlectl.spool.contract import Spool
from riddlectl.spool.states import Queue


def status_phase(root: Path, template: bytes, count: int, data: Path) -> dict[str, Any]:
    """Time `riddlectl status` (command and library) over a spool of `count` riddles."""
    # Not flushed: the filling is setup, and `status` only reads.
    settings = resolve({"spool": root, "data_dir": data}, env={ENV_VARS["fsync"]: "0"})
    spool = runtime.open_spool(settings)
    started = time.perf_counter()
    _fill(spool, orjson.loads(template), count)
    build = time.perf_counter() - started
    argv = [*riddlectl_argv(), "--spool", str(root), "--data-dir", str(data), "status"]
    command = _median_time(
        lambda: subprocess.run(argv, capture_output=True, timeout=300, check=True)
    )
    library = _median_time(
        lambda: (report.counts(spool), report.summaries(spool, report.recent(spool, 20)))
    )
    return {
        "riddles": count,
        "build_s": round(build, 3),
        "command_s": round(command, 4),
        "library_s": round(library, 4),
    }


def _fill(spool: Spool, doc: dict[str, Any], count: int) -> None:
    """`count` finished riddles, one in a hundred failed, dropped in as they are (setup,
    not timed), and the event log the pipeline would have written (`status` reads it)."""
    now = time.time() - count * 0.001
    events = []
    for index in range(count):
        to = Queue.FAILED if index % 100 == 99 else Queue.DONE
        doc.update(id=f"st{index:07d}", updated=now + index * 0.001)
        doc["error"] = "bench: a failed riddle" if to is Queue.FAILED else None
        spool.drop_in(to, f"st{index:07d}.json", orjson.dumps(doc))
        events.append(
            {
                "time": now + index * 0.001,
                "id": f"st{index:07d}",
                "stage": "manage",
                "from": "validated",
                "to": to.value,
                "outcome": "accepted",
                "rev": 5,
            }
        )
    spool.events.append_many(events)


def _median_time(action: Callable[[], object], reps: int = 3) -> float:
    times = []
    for _ in range(reps):
        started = time.perf_counter()
        action()
        times.append(time.perf_counter() - started)
    return statistics.median(times)
