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
