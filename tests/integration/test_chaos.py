"""Chaos: agents killed with SIGKILL at random moments, again and again, while riddles
flow through all four stages. Every riddle must end in done/ exactly once, right.

The CI run is short (fixed seed, bounded time); the long one is behind the `chaos` marker:
`.venv/bin/python -m pytest -m chaos`.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import time
from pathlib import Path

import orjson
import pytest

from riddlectl.spool import open_spool
from riddlectl.spool.states import Queue
from tests.conftest import Cli, spool_findings

STAGES = ("extract", "solve", "validate", "manage")


class Swarm:
    """Agent processes per stage, each restartable after a kill."""

    def __init__(self, cli: Cli, per_stage: int, helpers: Path) -> None:
        self.cli = cli
        self.env = {
            **os.environ,
            "PYTHONPATH": str(helpers),
            "RIDDLECTL_MAX_ABANDONED": "1000",
            "RIDDLECTL_FSYNC": "0",
        }
        self.slots = [(stage, None) for stage in STAGES for _ in range(per_stage)]
        self.procs: list[subprocess.Popen[bytes] | None] = [None] * len(self.slots)
        self.kills = 0

    def start(self, index: int) -> None:
        stage = self.slots[index][0]
        extra = ["--handler", "py_handlers:slow_calculator"] if stage == "solve" else []
        self.procs[index] = subprocess.Popen(
            self.cli.argv("agent", stage, *extra),
            env=self.env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )

    def start_all(self) -> None:
        for index in range(len(self.slots)):
            self.start(index)

    def kill_one(self, rng: random.Random) -> None:
        index = rng.randrange(len(self.procs))
        proc = self.procs[index]
        if proc is not None:
            proc.send_signal(signal.SIGKILL)
            proc.wait()
            self.kills += 1
        self.start(index)

    def stop(self) -> None:
        for proc in self.procs:
            if proc is not None:
                proc.terminate()
        for proc in self.procs:
            if proc is not None:
                proc.wait(timeout=60)


def chaos_run(
    cli: Cli, helpers: Path, riddles: int, per_stage: int, seconds: float, seed: int
) -> None:
    rng = random.Random(seed)
    for k in range(20):
        (cli.data / f"chaos{k}.txt").write_text(f"a = {k}\nb = {k + 1}\n")
    docs = [
        {
            "id": f"k{i:04}",
            "riddle": {"question": "a * b ="},
            "data": [{"type": "text", "file_plain": f"chaos{i % 20}.txt"}],
        }
        for i in range(riddles)
    ]
    assert cli("submit", "-", input=orjson.dumps(docs)).code == 0
    swarm = Swarm(cli, per_stage, helpers)
    swarm.start_all()
    deadline = time.monotonic() + seconds
    try:
        while time.monotonic() < deadline and done(cli) < riddles:
            time.sleep(rng.uniform(0.05, 0.4))
            swarm.kill_one(rng)
    finally:
        swarm.stop()
    assert swarm.kills > 0
    print(f"chaos: {riddles} riddles, {per_stage} agent(s) per stage, {swarm.kills} kill -9")
    finish = cli("run", "--once", timeout=300, env={"PYTHONPATH": str(helpers)})
    assert finish.code == 0, finish.err
    for doc in docs:
        assert homes(cli, doc["id"]) == ["done"], (doc["id"], homes(cli, doc["id"]))
    results = cli("result", *(doc["id"] for doc in docs)).out.splitlines()
    expected = [f"{doc['id']}\t{(i % 20) * (i % 20 + 1)}" for i, doc in enumerate(docs)]
    assert results == expected
    assert spool_findings(cli) == []


def done(cli: Cli) -> int:
    if isinstance(cli.spool, Path):
        return len(list((cli.spool / Queue.DONE.value).glob("*.json")))
    return open_spool(cli.spool, create=False).counts()[Queue.DONE]


def homes(cli: Cli, riddle_id: str) -> list[str]:
    """The queues holding the riddle: a directory per queue, or the one row of its id."""
    if isinstance(cli.spool, Path):
        return [q.value for q in Queue if (cli.spool / q.value / f"{riddle_id}.json").exists()]
    found = open_spool(cli.spool, create=False).find(riddle_id)
    return [] if found is None else [found[0].value]


def test_chaos_short(cli: Cli, helpers: Path) -> None:
    chaos_run(cli, helpers, riddles=60, per_stage=1, seconds=15, seed=7)


@pytest.mark.chaos
@pytest.mark.timeout(900)
@pytest.mark.parametrize("per_stage", [1, 3])
def test_chaos_long(cli: Cli, helpers: Path, per_stage: int) -> None:
    chaos_run(cli, helpers, riddles=1000, per_stage=per_stage, seconds=240, seed=per_stage)


def test_chaos_short_on_postgresql(pg_cli: Cli, helpers: Path) -> None:
    """200 riddles, two agents per stage, kill -9 at random for 20 s, then the rest."""
    chaos_run(pg_cli, helpers, riddles=200, per_stage=2, seconds=20, seed=7)


@pytest.mark.chaos
@pytest.mark.timeout(900)
def test_chaos_on_postgresql(pg_cli: Cli, helpers: Path) -> None:
    """200 riddles, two agents per stage on one PostgreSQL spool, kill -9 at random."""
    chaos_run(pg_cli, helpers, riddles=200, per_stage=2, seconds=240, seed=14)
