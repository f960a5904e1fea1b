"""scripts/stage-cost: instructions (callgrind) or system calls (strace) per riddle and
stage."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT

TOOL = str(ROOT / "scripts" / "stage-cost")


def _run(args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    # The riddlectl of the venv running the tests is the one on PATH that it counts.
    path = f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"
    return subprocess.run(
        [sys.executable, TOOL, *args],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=cwd,
        env={**os.environ, "PATH": path},
    )


@pytest.mark.skipif(shutil.which("valgrind") is None, reason="needs valgrind")
def test_it_counts_what_one_riddle_costs_a_stage_and_its_start(tmp_path: Path) -> None:
    # One stage: each agent under callgrind costs about twenty seconds of CPU here, and the
    # stages are told apart by the system-call test below, at a fraction of that.
    done = _run(["--small", "2", "--large", "6", "--stages", "manage", "--json"], tmp_path)
    assert done.returncode == 0, done.stderr
    counts = json.loads(done.stdout)["counts"]["riddlectl"]
    assert set(counts) == {"manage"}
    # A riddle costs its stage hundreds of thousands of instructions at least; an agent's
    # start (Python and riddlectl loading) hundreds of millions.
    assert 1e5 < counts["manage"]["per_riddle"] < 1e8
    assert 1e8 < counts["manage"]["start"] < 1e10


def _can_trace() -> bool:
    """strace is there and may trace here (a container may forbid ptrace)."""
    if shutil.which("strace") is None:
        return False
    done = subprocess.run(["strace", "-c", "-o", os.devnull, "true"], capture_output=True)
    return done.returncode == 0


@pytest.mark.skipif(not _can_trace(), reason="needs strace, and ptrace allowed")
def test_it_counts_the_system_calls_one_riddle_costs_a_stage(tmp_path: Path) -> None:
    args = ["--syscalls", "--small", "2", "--large", "6", "--stages", "extract,solve", "--json"]
    done = _run(args, tmp_path)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["unit"] == "system calls"
    counts = report["counts"]["riddlectl"]
    for stage in counts.values():
        # A riddle costs its stage tens of calls (claim, read, write, rename); a start
        # thousands (Python loading its modules).
        assert 10 < stage["per_riddle"] < 200
        assert 1_000 < stage["start"] < 100_000
        calls = stage["calls"]
        assert calls["rename"] >= 1 and calls["flock"] >= 1  # a commit, and a claim
        assert "futex" not in calls  # waits are left out
        assert abs(sum(calls.values()) - stage["per_riddle"]) < 1e-6
    # Each stage is counted apart: extracting looks up every data file and its cached
    # extraction, which solving, handed the extractions, does not.
    # (`stat`, `newfstatat` or `statx`, as the C library of the machine calls it).
    looks = {
        stage: sum(n for name, n in counts[stage]["calls"].items() if "stat" in name)
        for stage in ("extract", "solve")
    }
    assert looks["extract"] > looks["solve"] + 2


def test_bad_usage_is_exit_2_with_the_rule(tmp_path: Path) -> None:
    done = _run(["--stages", "cook"], tmp_path)
    assert done.returncode == 2
    assert "stage-cost: stages are extract, solve, validate, manage" in done.stderr
