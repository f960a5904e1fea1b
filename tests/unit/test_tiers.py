"""The fast tier (`bash scripts/test --fast`) touches no PostgreSQL: its selection leaves
out every case on that spool, and a test that reaches for the server unmarked fails."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests import pg
from tests.conftest import ROOT


def fast_selection() -> str:
    """The marker expression scripts/test --fast hands pytest."""
    found = re.search(r'-m "(not \([^"]+\))"', (ROOT / "scripts" / "test").read_text())
    assert found, "scripts/test --fast names no marker expression"
    return found.group(1)


def collected(*args: str) -> list[str]:
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--collect-only", "-q", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return [line for line in done.stdout.splitlines() if "::" in line]


# A case on the PostgreSQL spool: `test[postgres]`, `test[postgres-…]`, `test[…-postgres]`,
# the state machine's `TestPgSpoolProperties`; or a test of a PostgreSQL module.
ON_POSTGRES = re.compile(r"[\[-]postgres[\]-]|::TestPg|/test_pg_")


def test_the_fast_tier_leaves_out_every_postgresql_case() -> None:
    fast = collected("-m", fast_selection(), "tests/unit", "tests/contract")
    assert [test for test in fast if ON_POSTGRES.search(test)] == []
    # The same tests on the other spools stay in.
    assert any(test.endswith("[memory]") for test in fast)
    assert any(test.endswith("[fs]") for test in fast)
    assert any("::TestMemorySpoolProperties" in test for test in fast)


def test_a_test_that_reaches_for_postgresql_fails_when_it_is_off(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # As under RIDDLECTL_TEST_PG=off (read when tests/pg.py is imported): asking for the
    # server, or starting one, fails the test and names the marker, even with one at hand.
    monkeypatch.setattr(pg, "OFF", True)
    for reach in (pg.require, lambda: pg.start(tmp_path, [])):
        with pytest.raises(pytest.fail.Exception, match=r"RIDDLECTL_TEST_PG=off.*`postgres`"):
            reach()


def groups(*paths: str) -> dict[str, str]:
    """Each test of `paths` and the xdist group the full run puts it in ("-": none)."""
    lines = collected("-p", "tests.helpers.show_groups", *paths)
    rows = [
        line.removeprefix("GROUP ").rsplit(" ", 1) for line in lines if line.startswith("GROUP ")
    ]
    return {nodeid: group for nodeid, group in rows}


def test_the_full_run_keeps_shared_things_on_one_worker_and_nothing_else() -> None:
    found = groups(
        "tests/integration/test_pg_spool.py",
        "tests/integration/test_pg_scale.py",
        "tests/integration/test_hostile_input.py",
        "tests/unit/test_numbers.py",
    )
    by_file: dict[str, set[str]] = {}
    for nodeid, group in found.items():
        by_file.setdefault(nodeid.split("::", 1)[0], set()).add(group)
    # A module that ends every session on its server has a server of its own, its tests
    # on one worker; the shared server's tests go to any worker, each in its own schema.
    assert by_file["tests/integration/test_pg_spool.py"] == {"own-server-spool"}
    scale = {n.split("::", 1)[1]: g for n, g in found.items() if "test_pg_scale" in n}
    assert scale["test_doctor_names_a_transaction_held_open"] == "own-server-health"
    assert scale["test_a_bulk_submit_stores_every_riddle_with_its_data_files"] == "-"
    # A module-scoped fixture is built once: its tests on one worker; the rest anywhere.
    hostile = "tests/integration/test_hostile_input.py"
    shared = {
        n: g
        for n, g in found.items()
        if n.startswith(hostile + "::test_submit_refuses_hostile_document[")
    }
    assert shared and set(shared.values()) == {hostile}
    assert by_file["tests/unit/test_numbers.py"] == {"-"}


def test_the_full_run_builds_every_server_a_test_demands_under_ci() -> None:
    # A test that fails under CI=true when a server is not built (the model server, the
    # transcription server) passes on a machine that built it by hand and fails on a fresh
    # one: every script with a `build` step is built by scripts/test, before pytest runs.
    full_run = (ROOT / "scripts" / "test").read_text()
    buildable = sorted(
        script.name
        for script in (ROOT / "scripts").iterdir()
        if script.is_file() and re.search(r"^\s*build\)", script.read_text(errors="replace"), re.M)
    )
    assert buildable, "no script under scripts/ has a build step"
    built = set(re.findall(r"^\s*bash scripts/(\S+) build$", full_run, re.M))
    assert [name for name in buildable if name not in built] == []
