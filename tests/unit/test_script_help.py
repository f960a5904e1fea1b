"""Every Python tool in `scripts/` answers `--help` with its usage and exit 0, without
the extras or system packages its real work needs, and refuses a bad argument with exit 2:
found by their first line, so a tool added later is held to it without being named here."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT


def python_tools() -> list[Path]:
    found = []
    for path in sorted((ROOT / "scripts").iterdir()):
        if not path.is_file():
            continue
        first = path.read_text("utf-8", errors="replace").partition("\n")[0]
        if path.suffix == ".py" or (first.startswith("#!") and "python" in first):
            found.append(path)
    return found


def test_the_tools_are_found() -> None:
    names = {path.name for path in python_tools()}
    assert {"bench-compare", "stage-cost", "measure-ocr", "transcribe_server.py"} <= names, names


@pytest.mark.parametrize("tool", python_tools(), ids=lambda path: path.name)
def test_help_prints_the_usage_and_bad_usage_is_exit_2(tool: Path) -> None:
    helped = subprocess.run(
        [sys.executable, str(tool), "--help"], capture_output=True, text=True, timeout=60
    )
    assert helped.returncode == 0, helped.stderr
    assert helped.stdout.startswith(f"usage: {tool.name}"), helped.stdout[:200]
    refused = subprocess.run(
        [sys.executable, str(tool), "--no-such-option"], capture_output=True, text=True, timeout=60
    )
    assert refused.returncode == 2, refused.stderr
    assert f"{tool.name}: error: " in refused.stderr, refused.stderr
    assert "Traceback" not in refused.stderr
