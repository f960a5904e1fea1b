"""The figures every benchmark reports, computed one way: percentiles, latency summaries,
a process's CPU time and memory (from /proc), the machine, and a target's verdict."""

from __future__ import annotations

import os
import platform
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

CLK_TCK = os.sysconf("SC_CLK_TCK")


def riddlectl_argv() -> list[str]:
    """The installed `riddlectl` command beside this interpreter, else `python -m riddlectl`."""
    exe = Path(sys.executable).with_name("riddlectl")
    return [str(exe)] if exe.exists() else [sys.executable, "-m", "riddlectl"]


def machine() -> dict[str, Any]:
    return {
        "cpus": os.cpu_count(),
        "python": platform.python_version(),
        "platform": platform.platform(),
        "tmpdir": tempfile.gettempdir(),
    }


def percentile(ordered: list[float], p: float) -> float:
    """Linear interpolation between the closest ranks of an ordered, non-empty list."""
    k = (len(ordered) - 1) * p / 100
    low = int(k)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (k - low)


def latency_figures(samples_ms: list[float], failed: int, capped: bool) -> dict[str, Any]:
    """p50, p99, mean and max of latency samples (milliseconds, at least one)."""
    ordered = sorted(samples_ms)
    return {
        "riddles": len(samples_ms),
        "failed": failed,
        "p50_ms": round(percentile(ordered, 50), 3),
        "p99_ms": round(percentile(ordered, 99), 3),
        "mean_ms": round(statistics.fmean(ordered), 3),
        "max_ms": round(ordered[-1], 3),
        "capped": capped,
    }


def cpu_seconds(pid: int) -> float:
    """utime + stime (+ reaped children's) of a process, in seconds; 0 once it is gone."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return 0.0
    return sum(int(fields[i]) for i in (11, 12, 13, 14)) / CLK_TCK


def process_figures(stage: str, pid: int) -> dict[str, Any]:
    """A worker process's CPU time so far and its peak and current memory."""
    memory: dict[str, int] = {}
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            key, _, value = line.partition(":")
            if key in ("VmHWM", "VmRSS"):
                memory[key] = int(value.split()[0])
    except OSError:
        pass
    return {
        "stage": stage,
        "pid": pid,
        "cpu_s": round(cpu_seconds(pid), 3),
        "peak_rss_kb": memory.get("VmHWM"),
        "rss_kb": memory.get("VmRSS"),
    }


def rounded(value: float | None) -> float | None:
    return None if value is None else round(value, 3)


def target(ratio: float | None, compare: str, limit: float) -> dict[str, Any]:
    """A target's verdict: `holds` is None when the ratio was not measured in this run."""
    holds = None
    if ratio is not None:
        holds = (
            ratio >= limit
            if compare == ">="
            else ratio <= limit
            if compare == "<="
            else ratio < limit
        )
    return {"ratio": rounded(ratio), "limit": limit, "compare": compare, "holds": holds}
