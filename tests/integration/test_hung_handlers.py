"""A handler that hangs does not hold up the others, with the default options: real agent
processes, a real `cmd:` solver (and a Python one) that hangs on one question only."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import orjson
import pytest

from tests.conftest import Cli

SOLVER = """\
import json, os, sys, time
doc = json.load(sys.stdin)
if doc["riddle"]["question"] == "hang":
    with open(os.environ["HANG_PGIDS"], "a") as pgids:
        pgids.write(f"{os.getpid()}\\n")
    time.sleep(100)
print(json.dumps({"solution": "1", "explanation": "quick"}))
"""
PY_SOLVER = """\
import os, time

def solve(job):
    if job.riddle.riddle.question == "hang":
        with open(os.environ["HANG_PGIDS"], "a") as pgids:
            pgids.write("0\\n")
        time.sleep(100)
    return {"solution": "1", "explanation": "quick"}
"""
HANDLERS = {"cmd": f"cmd:{sys.executable} solver.py", "python": "py_solver:solve"}
COMMANDS = {
    "run": lambda handler: ["run", "--timeout", "60", "--handler", f"solve={handler}"],
    "agent": lambda handler: ["agent", "solve", "--timeout", "60", "--handler", handler],
}


@pytest.fixture
def agent(cli: Cli, tmp_path: Path) -> Iterator[callable]:
    """Starts one agent process; stops it (and kills the hung handler) after the test."""
    (tmp_path / "solver.py").write_text(SOLVER)
    (tmp_path / "py_solver.py").write_text(PY_SOLVER)
    env = {**os.environ, "HANG_PGIDS": str(tmp_path / "pgids"), "PYTHONPATH": str(tmp_path)}
    started: list[subprocess.Popen] = []

    def start(argv: list[str]) -> subprocess.Popen:
        started.append(cli.popen(*argv, env=env))
        return started[-1]

    yield start
    for process in started:
        with contextlib.suppress(ProcessLookupError):
            process.kill()
        process.wait()
    pgids = tmp_path / "pgids"
    for pgid in map(int, pgids.read_text().split() if pgids.exists() else []):
        if pgid:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(pgid, signal.SIGKILL)


def submit(cli: Cli, *riddles: tuple[str, str, int]) -> None:
    """Riddles (id, question, priority) waiting for solve, needing no validation."""
    docs = [
        {
            "id": riddle_id,
            "riddle": {"question": question},
            "priority": priority,
            "status": {"extract": {"required": False}, "validate": {"required": False}},
        }
        for riddle_id, question, priority in riddles
    ]
    submitted = cli("submit", "-", input=b"\n".join(orjson.dumps(d) for d in docs))
    assert submitted.code == 0, submitted.err


def wait_until_hung(tmp_path: Path) -> None:
    pgids = tmp_path / "pgids"
    deadline = time.monotonic() + 30
    while not (pgids.exists() and pgids.read_text().strip()):
        assert time.monotonic() < deadline, "the hanging riddle was not started"
        time.sleep(0.02)


def wait_done(cli: Cli, ids: list[str], seconds: float) -> None:
    deadline = time.monotonic() + seconds
    while True:
        missing = [i for i in ids if not (cli.spool / "done" / f"{i}.json").exists()]
        if not missing:
            return
        assert time.monotonic() < deadline, f"still not done after {seconds} s: {missing}"
        time.sleep(0.05)


QUICK = [f"quick-{n}" for n in range(1, 6)]


@pytest.mark.parametrize("handler", sorted(HANDLERS))
@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_riddles_submitted_while_a_handler_hangs_are_solved(
    cli: Cli, tmp_path: Path, agent: callable, command: str, handler: str
) -> None:
    submit(cli, ("hung", "hang", 0))
    agent(COMMANDS[command](HANDLERS[handler]))
    wait_until_hung(tmp_path)
    submit(cli, *[(i, "quick", 0) for i in QUICK])
    wait_done(cli, QUICK, 10)
    assert (cli.spool / "extracted" / "hung.json").exists()  # still being handled


def test_riddles_claimed_with_a_hanging_one_are_given_back_and_solved(
    cli: Cli, tmp_path: Path, agent: callable
) -> None:
    # The oldest first: the agent claims all six in one batch, the hanging one first.
    submit(cli, ("hung", "hang", 0))
    submit(cli, *[(i, "quick", 0) for i in QUICK])
    agent(COMMANDS["run"](HANDLERS["cmd"]))
    wait_until_hung(tmp_path)
    wait_done(cli, QUICK, 10)
    for riddle_id in QUICK:
        history = orjson.loads(cli("show", riddle_id).out)["history"]
        assert [e["outcome"] for e in history if e["stage"] == "solve"] == ["ok"]


def test_riddles_handled_before_a_hanging_one_are_committed(
    cli: Cli, tmp_path: Path, agent: callable
) -> None:
    # Higher priority first: the agent handles the five, then hangs on the last of its batch
    # (a Python handler answers them in microseconds: they would share one commit).
    submit(cli, *[(i, "quick", 1) for i in QUICK], ("hung", "hang", 0))
    agent(COMMANDS["run"](HANDLERS["python"]))
    wait_until_hung(tmp_path)
    wait_done(cli, QUICK, 10)


def test_hangs_overlap_and_run_once_still_ends(cli: Cli, tmp_path: Path, agent: callable) -> None:
    # Three hanging riddles at once, then quick ones: each hang gets a spare worker, the
    # quick ones go on, and `run --once` still ends when nothing can move.
    (tmp_path / "solver.py").write_text(SOLVER.replace("time.sleep(100)", "time.sleep(4)"))
    submit(cli, *[(f"hung-{n}", "hang", 0) for n in range(3)], *[(i, "quick", 0) for i in QUICK])
    started = time.monotonic()
    ran = agent(["run", "--once", "--quiet", "--handler", f"solve={HANDLERS['cmd']}"])
    assert ran.wait(timeout=60) == 0
    assert time.monotonic() - started < 3 * 4  # one after the other would take 12 s
    wait_done(cli, [*QUICK, "hung-0", "hung-1", "hung-2"], 0)


def test_spare_workers_retire_when_the_hang_is_over(
    cli: Cli, tmp_path: Path, agent: callable
) -> None:
    (tmp_path / "solver.py").write_text(SOLVER.replace("time.sleep(100)", "time.sleep(3)"))
    submit(cli, ("warm", "quick", 0))
    process = agent(["run", "--handler", f"solve={HANDLERS['cmd']}"])
    wait_done(cli, ["warm"], 30)
    tasks = Path(f"/proc/{process.pid}/task")
    idle = len(list(tasks.iterdir()))  # the agent's threads when it has nothing to do
    submit(cli, *[(f"hung-{n}", "hang", 0) for n in range(3)], *[(i, "quick", 0) for i in QUICK])
    wait_done(cli, QUICK, 10)
    assert len(list(tasks.iterdir())) > idle  # spares at work beside the hung ones
    wait_done(cli, ["hung-0", "hung-1", "hung-2"], 30)
    deadline = time.monotonic() + 10
    while len(list(tasks.iterdir())) > idle:
        assert time.monotonic() < deadline, "spare workers still there"
        time.sleep(0.1)


EXTRACTOR = """\
#!/bin/sh
cat >/dev/null
case "$RIDDLE_FILE" in
  *slow.txt) echo $$ >> "$HANG_PGIDS"; sleep 100 ;;
esac
echo '{"variables": {"x": "1"}}'
"""


def test_riddles_waiting_for_an_extraction_another_makes_do_not_hold_up_others(
    cli: Cli, tmp_path: Path, agent: callable
) -> None:
    # Two riddles use the file whose extraction hangs: the second waits for the first's
    # extraction (it is made once), and the riddles behind it must not wait with it.
    (tmp_path / "extract.sh").write_text(EXTRACTOR)
    (tmp_path / "extract.sh").chmod(0o755)
    (cli.data / "slow.txt").write_text("x = 1 (this one is slow)\n")
    (cli.data / "quick.txt").write_text("x = 1\n")
    docs = [
        {"id": riddle_id, "riddle": {"question": "x + 1 ="}, "data": [{"file_plain": name}]}
        for riddle_id, name in (("slow-1", "slow.txt"), ("slow-2", "slow.txt"))
    ]
    docs += [
        {"id": riddle_id, "riddle": {"question": "x + 1 ="}, "data": [{"file_plain": "quick.txt"}]}
        for riddle_id in QUICK
    ]
    submitted = cli("submit", "-", input=b"\n".join(orjson.dumps(d) for d in docs))
    assert submitted.code == 0, submitted.err
    agent(["run", "--timeout", "60", "--handler", "extract=cmd:./extract.sh"])
    wait_until_hung(tmp_path)
    wait_done(cli, QUICK, 10)
