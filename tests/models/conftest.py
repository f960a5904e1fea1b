"""A real model server for the tests of this folder: llama.cpp's OpenAI-compatible
server with the Gemma 3 270M model, as `scripts/model-server` builds it (the README's test
command builds it once; it is reused after). Started once per session on a free port,
stopped at the end. Without the built server these tests are skipped, saying why, except
in CI (`CI=true`), where that is a failure. The server is tied to the session
(`tests/tether.py`): a session that is killed leaves none running."""

from __future__ import annotations

import os
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests import tether

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "model-server"
MODEL = "gemma3-270m"  # the alias scripts/model-server serves it under
STARTUP = 180.0  # seconds the server may take to load the model on a busy machine


def _missing(reason: str) -> None:
    if os.environ.get("CI") == "true":
        pytest.fail(f"model server: {reason}")
    pytest.skip(f"model server: {reason} (run scripts/model-server build)")


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture(scope="session")
def model_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The base URL (…/v1) of a running model server."""
    status = subprocess.run([str(SCRIPT), "status"], capture_output=True, text=True)
    if status.returncode != 0:
        _missing("not built")
    port = _free_port()
    log = tmp_path_factory.mktemp("model-server") / "server.log"
    # Tied to this session: ended by the finaliser, and by the session's death too.
    server = tether.start([str(SCRIPT), "start", str(port)], log)
    base = f"http://127.0.0.1:{port}/v1"
    try:
        _wait_up(base, server, log)
        yield base
    finally:
        tether.stop(server)


def _wait_up(base: str, server: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + STARTUP
    while time.monotonic() < deadline:
        if server.poll() is not None:
            tail = log.read_text(errors="replace")[-500:]
            pytest.fail(f"model server exited with {server.returncode}: {tail}")
        try:
            if httpx.get(f"{base}/models", timeout=2).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.5)
    pytest.fail(f"model server not up after {STARTUP:g} s (log: {log})")
