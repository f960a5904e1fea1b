"""scripts/stage-cost: instructions per riddle and stage, counted under callgrind."""

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
    done = _run(["--small", "2", "--large", "6", "--stages", "solve,manage", "--json"], tmp_path)
    assert done.returncode == 0, done.stderr
    counts = json.loads(done.stdout)["counts"]["riddlectl"]
    assert set(counts) == {"solve", "manage"}
    for stage in counts.values():
        # A riddle costs its stage hundreds of thousands of instructions at least; an
        # agent's start (Python and riddlectl loading) hundreds of millions.
        assert 1e5 < stage["per_riddle"] < 1e8
        assert 1e8 < stage["start"] < 1e10
    # Solving reads the data and computes; managing only moves the riddle on.
    assert counts["solve"]["per_riddle"] > counts["manage"]["per_riddle"]


def test_bad_usage_is_exit_2_with_the_rule(tmp_path: Path) -> None:
    done = _run(["--stages", "cook"], tmp_path)
    assert done.returncode == 2
    assert "stage-cost: stages are extract, solve, validate, manage" in done.stderr
