"""`riddlectl bench --startup`: how long the command takes to start and answer.

The yardstick is the two libraries every command needs: `python -c "import typer,
pydantic"` in the same interpreter. Against it, in a temporary directory:

- `status`: `riddlectl --spool S status` on a spool just made by `riddlectl init` (the
  quickest useful command: it reads the spool and prints the counts);
- `version`: `riddlectl --version` (the command line alone, no spool);
- `python`: `python -c pass`, the interpreter's own start, for scale.

Each is run `runs` times, interleaved round by round so that a busy moment of the
machine costs every command alike, after one untimed round (which also writes the
bytecode caches). The figures are each command's median and best wall time; the ratios
are `status` and `version` over the yardstick, median over median and best over best.
The target is the median ratio of `status`: at most 1.3.

The command is the installed `riddlectl` script beside the interpreter (what a user
runs), else `python -m riddlectl`.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from riddlectl.bench.measure import machine, riddlectl_argv, target

GOAL = 1.3  # status over the yardstick, medians
RUNS = 20


def commands(spool: Path) -> dict[str, list[str]]:
    """The timed commands, by name, yardstick first."""
    exe = riddlectl_argv()
    return {
        "typer_pydantic": [sys.executable, "-c", "import typer, pydantic"],
        "status": [*exe, "--spool", str(spool), "status"],
        "version": [*exe, "--version"],
        "python": [sys.executable, "-c", "pass"],
    }


def measure(runs: int = RUNS) -> dict[str, Any]:
    """Time every command `runs` times in a fresh temporary spool; the outcome as a dict."""
    # Bytecode caches allowed, as an installed command has them (the untimed first round
    # writes them where the package is editable).
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith("RIDDLECTL_") and k != "PYTHONDONTWRITEBYTECODE"
    }
    with tempfile.TemporaryDirectory(prefix="riddlectl-startup-") as tmp:
        spool = Path(tmp) / "spool"
        argv = [*riddlectl_argv(), "--spool", str(spool), "--data-dir", f"{tmp}/data", "init"]
        subprocess.run(argv, env=env, capture_output=True, check=True, timeout=60)
        timed = commands(spool)
        samples: dict[str, list[float]] = {name: [] for name in timed}
        for round_ in range(runs + 1):
            for name, command in timed.items():
                seconds = _time(command, env)
                if round_:  # the first round warms the caches
                    samples[name].append(seconds)
    return _outcome(timed, samples, runs)


def _time(command: list[str], env: dict[str, str]) -> float:
    started = time.perf_counter()
    done = subprocess.run(command, env=env, capture_output=True, timeout=60)
    seconds = time.perf_counter() - started
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(command)} exited {done.returncode}: {done.stderr[-500:]!r}")
    return seconds


def _outcome(
    timed: dict[str, list[str]], samples: dict[str, list[float]], runs: int
) -> dict[str, Any]:
    median = {name: statistics.median(times) for name, times in samples.items()}
    best = {name: min(times) for name, times in samples.items()}
    figures = {
        name: {
            "command": " ".join(Path(a).name if i == 0 else a for i, a in enumerate(command)),
            "median_ms": round(median[name] * 1000, 2),
            "best_ms": round(best[name] * 1000, 2),
        }
        for name, command in timed.items()
    }
    ratios = {
        name: {
            "median": round(median[name] / median["typer_pydantic"], 3),
            "best": round(best[name] / best["typer_pydantic"], 3),
        }
        for name in ("status", "version")
    }
    return {
        "version": 1,
        "machine": machine(),
        "runs": runs,
        "commands": figures,
        "ratios": ratios,
        "target": target(ratios["status"]["median"], "<=", GOAL),
    }


def render(outcome: dict[str, Any]) -> str:
    """The outcome for people: one line per command, then the ratios (the target the
    project holds itself to is in `--json` only)."""
    lines = [f"startup, {outcome['runs']} runs each (median / best):"]
    for name, fig in outcome["commands"].items():
        lines.append(
            f"  {name:15} {fig['median_ms']:8.1f} ms {fig['best_ms']:8.1f} ms   {fig['command']}"
        )
    for name, ratio in outcome["ratios"].items():
        lines.append(
            f"  {name} / typer+pydantic: {ratio['median']:.2f} (median), {ratio['best']:.2f} (best)"
        )
    return "\n".join(lines)
