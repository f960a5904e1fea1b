"""scripts/bench-compare's arithmetic: figures read from bench reports, paired by round."""

from __future__ import annotations

import importlib.machinery
import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

from tests.conftest import ROOT


@pytest.fixture(scope="module")
def tool() -> ModuleType:
    path = ROOT / "scripts" / "bench-compare"
    loader = importlib.machinery.SourceFileLoader("bench_compare", str(path))
    spec = importlib.util.spec_from_loader("bench_compare", loader)
    assert spec is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["bench_compare"] = module  # dataclasses look their module up
    loader.exec_module(module)
    return module


def report(per_s: float, cpu: float, p50: float | None = 10.0) -> dict:
    latency = None if p50 is None else {"p50_ms": p50, "p99_ms": p50 * 3}
    return {"throughput": {"per_s": per_s}, "cpu": {"ms_per_riddle": cpu}, "latency": latency}


def test_each_round_is_paired_and_the_ratio_is_after_over_before(tool: ModuleType) -> None:
    rows = tool.compare(
        [report(100, 2.0), report(120, 2.2), report(110, 1.8)],
        [report(150, 1.0), report(120, 1.1), report(220, 0.9)],
    )
    by_name = {row["figure"]: row for row in rows}
    throughput = by_name["throughput (riddles/s)"]
    assert throughput["before"] == {"median": 110, "min": 100, "max": 120}
    assert throughput["after"] == {"median": 150, "min": 120, "max": 220}
    # Ratios of the pairs 150/100, 120/120, 220/110: not the ratio of the medians.
    assert throughput["ratio"] == {"median": 1.5, "min": 1.0, "max": 2.0}
    assert by_name["CPU per riddle (ms)"]["ratio"]["median"] == pytest.approx(0.5)


def test_a_figure_missing_from_a_round_leaves_that_round_out(tool: ModuleType) -> None:
    rows = tool.compare([report(100, 2.0, p50=None), report(100, 2.0)], [report(100, 2.0)] * 2)
    p50 = next(row for row in rows if row["figure"] == "latency p50 (ms)")
    assert p50["before"]["median"] == 10.0  # from the second round alone
    # A figure no round has is not shown at all, rather than as zero.
    assert all(row["figure"] != "submit (riddles/s)" for row in rows)
    assert tool.figure({"cpu": {"ms_per_riddle": True}}, ("cpu", "ms_per_riddle")) is None


def test_a_database_spool_is_a_global_option_and_needs_the_postgres_extra(
    tool: ModuleType, tmp_path: Path
) -> None:
    revision = tool.Revision("HEAD", "0" * 40, tmp_path / "riddlectl")
    url = "postgresql://postgres@127.0.0.1:5432/postgres"
    argv = tool.bench_argv(revision, 500, ["--rounds", "1"], url)
    assert argv[1:4] == ["--spool", url, "bench"]  # before the command, as riddlectl wants
    assert argv[-2:] == ["--rounds", "1"]
    assert tool.bench_argv(revision, 500, [], None)[1] == "bench"
    assert tool.requirement(tmp_path / "src", url) == f"{tmp_path / 'src'}[postgres]"
    assert tool.requirement(tmp_path / "src", None) == str(tmp_path / "src")
