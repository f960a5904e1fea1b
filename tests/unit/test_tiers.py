"""The fast tier (`bash scripts/test --fast`) touches no PostgreSQL: its selection leaves
out every case on that spool, and a test that reaches for the server unmarked fails."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from tests.conftest import ROOT


def fast_selection() -> str:
    """The marker expression scripts/test --fast hands pytest."""
    found = re.search(r'-m "(not \([^"]+\))"', (ROOT / "scripts" / "test").read_text())
    assert found, "scripts/test --fast names no marker expression"
    return found.group(1)


def pytest_run(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, **(env or {})},
    )


def collected(*args: str) -> list[str]:
    done = pytest_run("--collect-only", "-q", *args)
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


def test_a_test_that_reaches_for_postgresql_unmarked_fails_when_it_is_off(
    tmp_path: Path,
) -> None:
    (tmp_path / "test_sneaky.py").write_text(
        "from tests import pg\n\n\ndef test_sneaky():\n    pg.require()\n"
    )
    done = pytest_run(str(tmp_path), env={"RIDDLECTL_TEST_PG": "off"})
    assert done.returncode == 1, done.stdout
    assert "RIDDLECTL_TEST_PG=off" in done.stdout
    assert "marked `postgres`" in done.stdout
