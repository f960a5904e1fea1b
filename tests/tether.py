"""A long-lived helper process of the test session (the model server), tied to it.

`start` runs the command under this file as a tether, in a process group of its own: the
tether asks the kernel for a signal when the test session dies (`PR_SET_PDEATHSIG`, also
when it is `kill -9`ed, as a CI timeout does), and the command it starts for a `SIGKILL`
when the tether dies; on either, or on `stop`, the whole group ends. So a stopped test run
leaves no model server running under PID 1.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from types import FrameType

PR_SET_PDEATHSIG = 1  # <linux/prctl.h>


# The servers the tests start compute on one thread each: the other test worker always
# holds a core, and llama.cpp's threads spin at each step's barrier while a peer waits
# for one (the model tests took 223 s with two threads beside one busy process, 99 s with
# one). The scripts' own default, for a machine of one's own, stays two.
ONE_THREAD = {"RIDDLECTL_MODEL_THREADS": "1", "RIDDLECTL_TRANSCRIBE_THREADS": "1"}


def start(
    argv: list[str], log: Path, defaults: dict[str, str] | None = None
) -> subprocess.Popen[bytes]:
    """`argv` running, tied to this process, its output in `log`; `defaults` are
    environment variables for it that the environment, where it sets them, overrides."""
    tethered = [sys.executable, str(Path(__file__).resolve()), str(os.getpid()), *argv]
    with log.open("wb") as out:
        return subprocess.Popen(
            tethered,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            env=None if defaults is None else {**defaults, **os.environ},
        )


@contextlib.contextmanager
def serving(script: Path, name: str, log_dir: Path, startup: float) -> Iterator[str]:
    """`script start PORT` (the model or the transcription server) on a free port, tied to
    this process; yields its base URL (…/v1) once `/models` answers, and ends it after.
    A server that exits, or is not up within `startup` seconds, fails the test."""
    import httpx  # not for the tether process itself, which needs the standard library only
    import pytest

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = int(sock.getsockname()[1])
    log = log_dir / "server.log"
    server = start([str(script), "start", str(port)], log, ONE_THREAD)
    base = f"http://127.0.0.1:{port}/v1"
    try:
        deadline = time.monotonic() + startup
        while True:
            if server.poll() is not None:
                tail = log.read_text(errors="replace")[-500:]
                pytest.fail(f"{name} exited with {server.returncode}: {tail}")
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(f"{base}/models", timeout=2).status_code == 200:
                    break
            if time.monotonic() > deadline:
                pytest.fail(f"{name} not up after {startup:g} s (log: {log})")
            time.sleep(0.3)
        yield base
    finally:
        stop(server)


def stop(process: subprocess.Popen[bytes], grace: float = 20) -> None:
    """End the tether's whole group: politely, then for good after `grace` seconds."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGTERM)
    try:
        process.wait(timeout=grace)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        process.wait()


def _die_with_parent(signum: int) -> None:
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signum, 0, 0, 0)


def _end_group(child: subprocess.Popen[bytes]) -> None:
    signal.signal(signal.SIGTERM, signal.SIG_IGN)  # the group's signal is not for us
    with contextlib.suppress(ProcessLookupError):
        os.killpg(0, signal.SIGTERM)
    with contextlib.suppress(subprocess.TimeoutExpired):
        child.wait(timeout=10)
    os.killpg(0, signal.SIGKILL)  # whatever is left, this tether too


def main(parent: int, argv: list[str]) -> int:
    _die_with_parent(signal.SIGTERM)
    if os.getppid() != parent:  # the session died before the request took effect
        return 1
    child = subprocess.Popen(argv, preexec_fn=lambda: _die_with_parent(signal.SIGKILL))

    def ending(signum: int, frame: FrameType | None) -> None:
        _end_group(child)

    for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(signum, ending)
    while child.poll() is None:
        if os.getppid() != parent:  # besides the kernel's signal: the session is gone
            _end_group(child)
        time.sleep(1)
    return child.returncode


if __name__ == "__main__":
    sys.exit(main(int(sys.argv[1]), sys.argv[2:]))
