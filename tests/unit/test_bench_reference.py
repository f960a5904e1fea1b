"""The bench's physical reference loops, run for real on a small scale: every riddle
ends in done/ whichever the mode, and the group-sync limit counts five transitions a
riddle and shares its flushes."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from riddlectl.bench import reference

PAYLOAD = b'{"id": "r", "history": []}'


@pytest.mark.parametrize(("fsync", "group"), [(True, False), (False, False), (False, True)])
def test_each_loop_moves_every_riddle_to_done(tmp_path: Path, fsync: bool, group: bool) -> None:
    figures = reference.transition_loop(
        tmp_path, PAYLOAD, fsync=fsync, group=group, seconds=60, riddles=30
    )
    assert figures["riddles"] == 30
    assert figures["transitions_per_riddle"] == (5 if group else 4)
    assert sorted(os.listdir(tmp_path / "done")) == [f"r{i:07d}.json" for i in range(30)]
    for queue in reference.DIRS[:-1]:
        assert not os.listdir(tmp_path / queue)
    # Four stages each appended their entry to the document.
    assert (tmp_path / "done" / "r0000000.json").read_bytes().count(b'"stage"') == 4


@pytest.mark.skipif(shutil.which("strace") is None, reason="strace is not installed")
def test_the_group_sync_loop_flushes_once_per_group(tmp_path: Path) -> None:
    """30 riddles of 5 transitions: one syncfs per 100 transitions and one at the end
    (two), and no fsync of its own."""
    script = (
        "import sys; from pathlib import Path; from riddlectl.bench import reference; "
        "reference.transition_loop(Path(sys.argv[1]), b'{}', fsync=False, group=True, "
        "seconds=60, riddles=30)"
    )
    log = tmp_path / "trace"
    strace = ["strace", "-f", "-e", "trace=syncfs,fsync,fdatasync,sync", "-o", str(log)]
    traced = subprocess.run(
        [*strace, sys.executable, "-c", script, str(tmp_path / "loop")],
        capture_output=True,
        text=True,
        check=False,
    )
    if "ptrace" in traced.stderr or "Operation not permitted" in traced.stderr:
        pytest.skip("ptrace is not allowed here")
    assert traced.returncode == 0, traced.stderr
    calls = [line.split("(")[0].split()[-1] for line in log.read_text().splitlines()]
    calls = [name for name in calls if name in {"syncfs", "fsync", "fdatasync", "sync"}]
    assert calls == ["syncfs", "syncfs"]
