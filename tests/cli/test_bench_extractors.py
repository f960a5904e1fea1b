"""`riddlectl bench --extractors`: the outcome's shape, the generated tables read exactly,
and a generator that cannot run reported as skipped. Speed is reported, never asserted."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest

from riddlectl.bench.extractors import runner
from riddlectl.bench.extractors.csvfiles import generate as generate_csv
from riddlectl.bench.extractors.jsonfiles import generate as generate_json
from tests.conftest import Cli


def bench(cli: Cli, *args: str) -> dict[str, Any]:
    done = cli("bench", "--extractors", *args, "--json", timeout=170)
    assert done.code == 0, done.err
    outcome: dict[str, Any] = orjson.loads(done.out)
    return outcome


@pytest.mark.timeout(180)
def test_every_data_type_has_a_row_and_the_tables_are_read_exactly(cli: Cli) -> None:
    outcome = bench(cli, "--cases", "12", "--seed", "3")
    assert (outcome["cases_per_type"], outcome["seed"]) == (12, 3)
    rows = {row["type"]: row for row in outcome["extractors"]}
    assert list(rows) == list(runner.GENERATORS)
    for kind in ("csv", "json"):
        row = rows[kind]
        assert row["skipped"] is None
        assert row["extractor"] == "table"
        assert row["cases"] == row["exact"] == 12, row["misses"]
        assert row["accuracy"] == 100.0
        assert 0 < row["ms_p50"] <= row["ms_p95"]
    for row in rows.values():
        if row["skipped"]:  # image and audio, until their extractors and tools are here
            assert isinstance(row["skipped"], str)
            assert row["cases"] == 0 and row["accuracy"] is None


def test_types_choose_the_rows_and_text_output_names_them(cli: Cli) -> None:
    assert [r["type"] for r in bench(cli, "--cases", "2", "--types", "json")["extractors"]] == [
        "json"
    ]
    text = cli("bench", "--extractors", "--cases", "2", "--types", "csv")
    assert text.code == 0
    assert "csv    table    2/2 exact (100.0%)" in text.out
    unknown = cli("bench", "--extractors", "--types", "csv,pdf")
    assert unknown.code == 2
    assert "unknown data type pdf" in unknown.err


def test_a_generator_that_cannot_run_is_skipped_with_the_reason(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(runner.GENERATORS, "csv", "riddlectl.bench.extractors.no_such_module")
    row = runner.run_extractor_bench(2, 1, ["csv", "json"])["extractors"][0]
    assert row["skipped"].startswith("cannot generate csv cases: ModuleNotFoundError")


def test_generators_are_seeded(tmp_path: Path) -> None:
    for generate in (generate_csv, generate_json):
        first = generate(tmp_path / "a", 5, 9)
        again = generate(tmp_path / "b", 5, 9)
        other = generate(tmp_path / "c", 5, 10)
        assert first == again != other
        files = [
            ((tmp_path / d / c.file).read_bytes()) for d, c in (("a", first[0]), ("b", again[0]))
        ]
        assert files[0] == files[1]
