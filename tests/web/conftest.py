"""A real `riddlectl serve` in a subprocess on a free port, over a real temporary spool,
and an HTTP client for it."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import pytest

from riddlectl.spool import open_spool
from tests.conftest import HELPERS, ROOT, Cli
from tests.web.dressing import Dressed


@dataclass
class Served:
    """A running server: its URL, the spool and data it serves, the command beside it."""

    url: str
    proc: subprocess.Popen[bytes]
    cli: Cli
    token: str | None = None
    log: list[str] = field(default_factory=list)

    def client(self, **headers: str) -> httpx.Client:
        auth = {"authorization": f"Bearer {self.token}"} if self.token else {}
        return httpx.Client(base_url=self.url, headers={**auth, **headers}, timeout=20)

    def stop(self, sig: int = signal.SIGTERM, wait: float = 10) -> float:
        """Stop the server; seconds it took to exit."""
        started = time.monotonic()
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
            self.proc.wait(wait)
        return time.monotonic() - started

    def wait_for(self, predicate: object, timeout: float = 20.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if predicate():  # type: ignore[operator]
                return
            time.sleep(0.1)
        raise AssertionError("condition not met in time")


def make_cli(base: Path) -> Cli:
    spool, data = base / "spool", base / "data"
    shutil.copytree(ROOT / "data" / "share", data)
    open_spool(spool, create=True)
    return Cli(spool, data)


def start(
    cli: Cli, *args: str, token: str | None = None, env: dict[str, str] | None = None
) -> Served:
    """`riddlectl serve --port 0 ARGS`, once it says where it listens."""
    env = {**os.environ, "RIDDLECTL_FSYNC": "0", **(env or {})}
    proc = subprocess.Popen(
        cli.argv("serve", "--port", "0", *args),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env=env,
    )
    assert proc.stderr is not None
    line = proc.stderr.readline().decode()
    if "serving " not in line:
        proc.kill()
        raise AssertionError(f"serve did not start: {line}{proc.stderr.read().decode()}")
    url = line.split("serving ", 1)[1].split()[0].removesuffix("/app/table")
    return Served(url, proc, cli, token, [line])


@pytest.fixture(scope="module")
def module_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("web")


@pytest.fixture(scope="module")
def served(module_dir: Path) -> Iterator[Served]:
    """One server for the tests of a module (starting one costs about a second), with a
    data size limit of 64 KiB."""
    server = start(make_cli(module_dir), env={"RIDDLECTL_MAX_DATA_BYTES": "65536"})
    yield server
    server.stop()


@pytest.fixture
def fresh(tmp_path: Path) -> Iterator[Served]:
    server = start(make_cli(tmp_path))
    yield server
    server.stop()


def example(**overrides: object) -> dict[str, object]:
    doc: dict[str, object] = {
        "riddle": {"context": "[Taschenrechner]", "question": "x * y ="},
        "data": [{"type": "text", "file_plain": f"example/{n}.txt"} for n in "xyz"],
    }
    doc.update(overrides)
    return doc


@pytest.fixture(scope="package")
def dressed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Served, Dressed]]:
    """One server over a spool dressed by the real commands (`tests.web.dressing`), for
    the tests that only look at it (dressing it costs half a minute)."""
    from tests.web.dressing import dress

    base = tmp_path_factory.mktemp("dressed")
    cli = make_cli(base)
    made = dress(cli, HELPERS, base)
    server = start(cli)
    yield server, made
    server.stop()
