"""scripts/bench-compare from the command line: a revision git does not know is one line."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.conftest import ROOT


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


def test_a_spool_that_is_no_database_url_is_bad_usage(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "bench-compare"), "HEAD", "--spool", "./spool"],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=tmp_path,
    )
    assert done.returncode == 2
    assert "--spool takes a postgresql:// URL" in done.stderr
