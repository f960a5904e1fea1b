"""The model server of the tests ends with the test session that started it: at the
fixture's end, and when the session itself is killed (a CI timeout's `kill -9`), so that
no `llama_cpp.server` is left running under PID 1. Shown with the fixture's own launcher
(`tests/tether.py`) and a stand-in process, so that it holds where no model is built."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

SESSION = """
import os, sys, time
from pathlib import Path
from tests import tether

STAND_IN = "import os, sys, time; open(sys.argv[1], 'w').write(str(os.getpid())); time.sleep(900)"

def test_holds_a_server(tmp_path):
    pid_file = os.environ["STAND_IN_PID"]
    server = tether.start([sys.executable, "-c", STAND_IN, pid_file], tmp_path / "log")
    try:
        while not Path(os.environ["STAND_IN_PID"]).exists():
            time.sleep(0.05)
        release = Path(os.environ["STAND_IN_PID"] + ".release")
        while not release.exists():  # "finished": until the outer test has looked;
            time.sleep(0.05)  # "killed": until it kills this whole session
    finally:
        tether.stop(server)
"""


def alive(pid: int) -> bool:
    """Whether `pid` runs (a zombie nobody reaps runs no more)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError, IndexError):
        return False
    return state != "Z"


def in_group(pgid: int) -> list[int]:
    """The live processes of process group `pgid`."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except (FileNotFoundError, ProcessLookupError):
                continue
            if int(fields[2]) == pgid and fields[0] != "Z":
                found.append(int(entry.name))
    return found


def wait_until(check: object, what: str, limit: float = 60) -> None:
    deadline = time.monotonic() + limit
    while not check():  # type: ignore[operator]
        if time.monotonic() > deadline:
            pytest.fail(what)
        time.sleep(0.1)


@pytest.mark.timeout(180)
@pytest.mark.parametrize("how", ["finished", "killed"])
def test_the_server_ends_with_the_session(tmp_path: Path, how: str) -> None:
    test_file = tmp_path / "test_session.py"
    test_file.write_text(SESSION.replace("{how}", how))
    pid_file = tmp_path / "server.pid"
    session = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "-o",
            "addopts=",
            "--rootdir",
            str(tmp_path),
            str(test_file),
        ],
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(ROOT), "STAND_IN_PID": str(pid_file)},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    try:
        started = lambda: pid_file.exists() or session.poll() is not None  # noqa: E731
        wait_until(started, "the stand-in server never started", 120)
        assert session.poll() is None, session.communicate()[0].decode()[-3000:]
        wait_until(lambda: pid_file.read_text().strip(), "no pid written")
        server = int(pid_file.read_text())
        group = os.getpgid(server)
        assert alive(server)
        if how == "killed":
            session.kill()  # kill -9: no finaliser runs
        else:
            Path(f"{pid_file}.release").touch()
        session.wait(timeout=120)
        wait_until(
            lambda: not in_group(group) and not alive(server),
            f"left running after the session ended: {in_group(group) or [server]}",
        )
    finally:
        if session.poll() is None:
            session.kill()
        if pid_file.exists() and pid_file.read_text().strip():
            with contextlib.suppress(ProcessLookupError):
                os.killpg(int(pid_file.read_text()), signal.SIGKILL)  # what a failure left
