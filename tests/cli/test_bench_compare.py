"""scripts/bench-compare end to end: a revision installed into a venv of its own, its bench
run in turns, every figure compared. Speed is reported, never asserted."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT


@pytest.mark.timeout(600)
def test_two_rounds_of_head_against_itself_compare_every_figure(tmp_path: Path) -> None:
    env = {**os.environ, "RIDDLECTL_BENCH_COMPARE_HOME": str(tmp_path / "home")}
    argv = [sys.executable, str(ROOT / "scripts" / "bench-compare"), "HEAD", "HEAD"]
    small = ["--riddles", "20", "--rounds", "2", "--pause", "0", "--json"]
    done = subprocess.run(
        [*argv, *small, "--", "--latency-riddles", "5"],
        capture_output=True,
        text=True,
        timeout=590,
        env=env,
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr
    outcome = json.loads(done.stdout)
    assert outcome["revisions"]["before"] == outcome["revisions"]["after"]
    figures = {row["figure"]: row for row in outcome["figures"]}
    assert {"throughput (riddles/s)", "CPU per riddle (ms)", "latency p50 (ms)"} <= set(figures)
    for row in figures.values():
        assert row["ratio"]["min"] <= row["ratio"]["median"] <= row["ratio"]["max"]
        assert row["before"]["min"] > 0 and row["after"]["min"] > 0
    # One install for one commit, reused by both sides; the order of runs was A B A B.
    assert len(list((tmp_path / "home").iterdir())) == 1
    turns = [line for line in done.stderr.splitlines() if "round" in line]
    assert turns == [f"bench-compare: round {r}/2: HEAD" for r in (1, 1, 2, 2)]


def test_an_unknown_revision_is_one_line_and_exit_1(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "bench-compare"), "no-such-rev-xyz"],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=tmp_path,
    )
    assert done.returncode == 1
    assert done.stderr == "bench-compare: unknown revision 'no-such-rev-xyz'\n"
