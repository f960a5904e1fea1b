"""`riddlectl bench --submit-riddles N`: one `riddlectl submit -` of N riddles as JSON
Lines (ids left to submit to make, two data files each), into a new spool of the kind
`--spool` names: riddles per second, and the submitting process's CPU per riddle."""

from __future__ import annotations

import os
import resource
import subprocess
import time
from pathlib import Path
from typing import Any

import orjson

from riddlectl.bench.measure import riddlectl_argv
from riddlectl.spool import remove_spool, scratch_spool


def bulk_submit_phase(location: str, root: Path, data: Path, count: int) -> dict[str, Any]:
    """Time one submit of `count` riddles naming data files below `data` (`bench/aK.txt`,
    `bench/bK.txt`, as the pipeline's riddles do)."""
    root.mkdir(parents=True, exist_ok=True)
    batch = root / "batch.jsonl"
    with batch.open("wb") as out:
        for index in range(count):
            out.write(orjson.dumps(_doc(index)) + b"\n")
    spool = scratch_spool(location, "bulk")
    base = [*riddlectl_argv(), "--spool", spool, "--data-dir", str(data)]
    try:
        subprocess.run([*base, "init"], capture_output=True, check=True, timeout=120)
        before = _children_cpu()
        started = time.perf_counter()
        with batch.open("rb") as given:
            done = subprocess.run(
                [*base, "submit", "-"], stdin=given, capture_output=True, timeout=3600
            )
        seconds = time.perf_counter() - started
        cpu = _children_cpu() - before
    finally:
        remove_spool(spool)
        batch.unlink(missing_ok=True)
    if done.returncode != 0:
        raise RuntimeError(f"submit failed: {done.stderr.decode(errors='replace').strip()}")
    return {
        "riddles": count,
        "seconds": round(seconds, 3),
        "per_s": round(count / seconds, 1),
        "cpu_s": round(cpu, 3),
        "cpu_ms_per_riddle": round(cpu * 1000 / count, 4),
        "load_average": round(os.getloadavg()[0], 2),
    }


def _doc(index: int) -> dict[str, Any]:
    return {
        "riddle": {"context": "[Taschenrechner]", "question": ("a * b =", "a + b =")[index % 2]},
        "data": [
            {"type": "text", "file_plain": f"bench/a{index % 8}.txt"},
            {"type": "text", "file_plain": f"bench/b{(index // 8) % 8}.txt"},
        ],
    }


def _children_cpu() -> float:
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return used.ru_utime + used.ru_stime
