"""A real model server for the tests of this folder: llama.cpp's OpenAI-compatible
server with the Gemma 3 270M model, as `scripts/model-server` builds it (the README's test
command builds it once; it is reused after). Started once per session on a free port,
stopped at the end. Without the built server these tests are skipped, saying why, except
in CI (`CI=true`), where that is a failure. The server is tied to the session
(`tests/tether.py`): a session that is killed leaves none running."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

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


@pytest.fixture(scope="session")
def model_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The base URL (…/v1) of a running model server."""
    status = subprocess.run([str(SCRIPT), "status"], capture_output=True, text=True)
    if status.returncode != 0:
        _missing("not built")
    # Tied to this session: ended after it, and by the session's death too.
    log_dir = tmp_path_factory.mktemp("model-server")
    with tether.serving(SCRIPT, "model server", log_dir, STARTUP) as base:
        yield base
