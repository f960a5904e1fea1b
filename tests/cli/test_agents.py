"""`riddlectl agents`: who is working, what each holds, and who died holding what."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest

from tests.conftest import Cli, example_doc, submit_documents

SKIP_TO_SOLVE = {"extract": {"required": False}, "validate": {"required": False}}


def poll(cli: Cli, check: Callable[[dict[str, Any]], bool], seconds: float) -> dict[str, Any]:
    """`agents --json` again and again until `check` holds; the listing that held."""
    deadline = time.monotonic() + seconds
    while True:
        done = cli("agents", "--json")
        assert done.code == 0, done.err
        listed: dict[str, Any] = done.json()  # type: ignore[assignment]
        if check(listed):
            return listed
        assert time.monotonic() < deadline, f"not within {seconds} s: {listed}"
        time.sleep(0.1)


@contextlib.contextmanager
def hanging_agent(cli: Cli, helpers: Path, pids: Path) -> Iterator[subprocess.Popen[bytes]]:
    """An agent of solve, with a `cmd:` solver that hangs on riddle `hang`; it and the
    solver's processes are ended afterwards, whatever happened."""
    handler = f"cmd:{sys.executable} {helpers}/hang_solver.py"
    agent = cli.popen(
        "agent",
        "solve",
        "--handler",
        handler,
        "--concurrency",
        "2",
        env={**os.environ, "HANG_PIDS": str(pids)},
    )
    try:
        yield agent
    finally:
        with contextlib.suppress(ProcessLookupError):
            agent.kill()
        agent.wait(30)
        kill_solvers(pids)


def kill_solvers(pids: Path) -> None:
    if pids.exists():
        for pid in pids.read_text().split():
            with contextlib.suppress(ProcessLookupError):
                os.kill(int(pid), signal.SIGKILL)


def test_no_agents_lists_none(any_cli: Cli) -> None:
    done = any_cli("agents", "--json")
    assert done.code == 0, done.err
    assert done.json() == {"alive": [], "gone": []}
    table = any_cli("agents")
    assert table.code == 0 and "no agents" in table.out


def test_a_killed_agent_is_shown_gone_with_its_abandoned_claim_within_5_s(
    any_cli: Cli, helpers: Path, tmp_path: Path
) -> None:
    cli = any_cli
    submit_documents(cli, example_doc(id="hang", status=SKIP_TO_SOLVE))
    with hanging_agent(cli, helpers, tmp_path / "pids") as agent:
        listed = poll(cli, lambda a: bool(a["alive"] and a["alive"][0]["holds"]), 60)
        (alive,) = listed["alive"]
        assert alive["pid"] == agent.pid and alive["stages"] == ["solve"]
        assert alive["agent"] == "agent:solve" and alive["concurrency"] == 2
        assert alive["handlers"]["solve"][0].startswith("cmd:")
        assert alive["host"] == os.uname().nodename
        assert alive["started"] <= alive["seen"]
        (held,) = alive["holds"]
        assert held["id"] == "hang" and held["stage"] == "solve"
        assert held["since"] >= alive["started"]

        table = cli("agents")
        assert table.code == 0
        assert str(agent.pid) in table.out and "hang" in table.out and "solve" in table.out

        metrics = cli("metrics").out
        assert 'riddlectl_agents{stage="solve"} 1' in metrics
        assert 'riddlectl_agents{stage="extract"} 0' in metrics

        agent.send_signal(signal.SIGKILL)
        killed = time.monotonic()
        listed = poll(cli, lambda a: not a["alive"] and bool(a["gone"]), 5.0)
        assert time.monotonic() - killed < 5.0
    (gone,) = listed["gone"]
    assert gone["pid"] == alive["pid"] and gone["how"] == "died"
    assert [h["id"] for h in gone["abandoned"]] == ["hang"]
    assert 'riddlectl_agents{stage="solve"} 0' in cli("metrics").out
    table = cli("agents")
    assert "died" in table.out and "hang" in table.out


def test_an_agent_stopped_is_shown_gone_holding_nothing(any_cli: Cli) -> None:
    cli = any_cli
    agent = cli.popen("agent", "extract")
    try:
        poll(cli, lambda a: len(a["alive"]) == 1, 60)
        agent.send_signal(signal.SIGTERM)
        assert agent.wait(60) == 0
    finally:
        with contextlib.suppress(ProcessLookupError):
            agent.kill()
    listed = poll(cli, lambda a: not a["alive"], 5)
    (gone,) = listed["gone"]
    assert gone["how"] == "stopped" and gone["abandoned"] == []
    assert gone["stages"] == ["extract"]


def test_a_run_is_one_agent_of_every_stage_counting_what_it_handled(
    any_cli: Cli,
) -> None:
    cli = any_cli
    submit_documents(cli, example_doc(id="one"))
    done = cli("run", "--once", "--json")
    assert done.code == 0, done.err
    (gone,) = poll(cli, lambda a: bool(a["gone"]), 5)["gone"]
    assert gone["agent"].startswith("run:") and gone["how"] == "stopped"
    assert gone["stages"] == ["extract", "solve", "validate", "manage"]
    assert gone["handled"] >= 3


@pytest.mark.parametrize("flag", [[], ["--json"]])
def test_agents_on_no_spool_is_exit_5(tmp_path: Path, data_dir: Path, flag: list[str]) -> None:
    done = Cli(tmp_path / "nowhere", data_dir)("agents", *flag)
    assert done.code == 5 and len(done.err.strip().splitlines()) == 1


def columns_aligned(lines: list[str]) -> None:
    """Each column of the header starts where its cells start, in every line."""
    header = lines[0]
    starts = [i for i in range(1, len(header)) if header[i] != " " and header[i - 1] == " "]
    for line in lines[1:]:
        for start in starts:
            assert line[start - 1] == " " and line[start] != " ", (start, lines)


def state_of(line: str) -> str:
    return line.split("  ")[0].strip()


def test_agents_are_aligned_newest_first_the_dead_first_one_shot_runs_folded(
    any_cli: Cli, helpers: Path, tmp_path: Path
) -> None:
    cli = any_cli
    submit_documents(cli, example_doc(id="hang", status=SKIP_TO_SOLVE))
    with hanging_agent(cli, helpers, tmp_path / "pids") as doomed:
        poll(cli, lambda a: bool(a["alive"] and a["alive"][0]["holds"]), 60)
        doomed.send_signal(signal.SIGKILL)
        poll(cli, lambda a: not a["alive"], 30.0)  # how soon: the test above
    stopping = cli.popen("agent", "extract", "--handler", "text")
    poll(cli, lambda a: len(a["alive"]) == 1, 60)
    stopping.send_signal(signal.SIGTERM)
    assert stopping.wait(60) == 0
    for _ in range(3):
        assert cli("run", "--once", "--stages", "solve").code in (0, 1)
    alive = cli.popen("agent", "validate")
    try:
        poll(cli, lambda a: len(a["alive"]) == 1, 60)
        table = cli("agents")
        everything = cli("agents", "--all")
        listed = cli("agents", "--json").json()
        listed_all = cli("agents", "--json", "--all").json()
    finally:
        alive.send_signal(signal.SIGTERM)
        alive.wait(60)
    assert table.code == 0, table.err
    lines = table.out.splitlines()
    assert lines[0].split() == [
        "STATE", "HOST", "PID", "STAGES", "HANDLERS", "CONC", "STARTED", "SEEN", "HANDLED",
        "FAILED", "HOLDS",
    ]  # fmt: skip
    assert lines[-1] == "+ 3 one-shot runs in the last hour (--all shows them)"
    rows = lines[1:-1]
    columns_aligned(lines[:-1])
    assert [state_of(r) for r in rows] == ["alive", "died", "stopped"]
    assert str(alive.pid) in rows[0] and "validate" in rows[0] and "gatekeeper" in rows[0]
    assert str(doomed.pid) in rows[1] and "abandoned hang (solve)" in rows[1]
    assert "cmd:" in rows[1]  # the handler the dead agent ran
    assert str(stopping.pid) in rows[2] and " text " in rows[2]
    # --all: the one-shot runs too, the newest first among the stopped.
    lines = everything.out.splitlines()
    columns_aligned(lines)
    assert [state_of(r) for r in lines[1:]] == [
        "alive", "died", "stopped (once)", "stopped (once)", "stopped (once)", "stopped",
    ]  # fmt: skip
    assert "solve=calculator" in lines[3] or " calculator " in lines[3]
    # --json is complete with or without --all: every agent, one-shot runs marked.
    assert isinstance(listed, dict) and isinstance(listed_all, dict)
    for group in ("alive", "gone"):
        assert [a["id"] for a in listed[group]] == [a["id"] for a in listed_all[group]]
    assert sorted(bool(a["once"]) for a in listed["gone"]) == [False, False, True, True, True]
    assert len(listed["alive"]) == 1 and listed["alive"][0]["once"] is False


SLOW_FIRST = '#!/bin/sh\ncase "$RIDDLE_ID" in slow*) sleep 2 ;; esac\necho \'{"solution": "1"}\'\n'


def test_an_abandoned_attempt_stays_in_history_when_its_claim_is_given_back_first(
    any_cli: Cli, helpers: Path, tmp_path: Path
) -> None:
    """The next agent finds `hang` abandoned, in one batch behind a riddle whose handler
    is slow; it gives `hang` back for a spare thread of its own to take. The abandoned
    attempt is in the riddle's history as it is in the event log."""
    cli = any_cli
    submit_documents(cli, example_doc(id="hang", status=SKIP_TO_SOLVE))
    with hanging_agent(cli, helpers, tmp_path / "pids") as agent:
        poll(cli, lambda a: bool(a["alive"] and a["alive"][0]["holds"]), 60)
        agent.send_signal(signal.SIGKILL)
    submit_documents(cli, example_doc(id="slow", status=SKIP_TO_SOLVE, priority=5))
    (tmp_path / "slow-first").write_text(SLOW_FIRST)
    (tmp_path / "slow-first").chmod(0o755)
    ran = cli("run", "--once", "--stages", "solve", "--handler", "solve=cmd:./slow-first")
    assert ran.code == 0, ran.err
    events = [orjson.loads(line) for line in cli("events").out.splitlines()]
    logged = [  # as stored: `events` adds the time in ISO 8601 (`at`) as it prints
        {k: v for k, v in e.items() if k != "at"}
        for e in events
        if e["id"] == "hang" and e["outcome"] == "abandoned"
    ]
    history = orjson.loads(cli("show", "hang").out)["history"]
    kept = [e for e in history if e["outcome"] == "abandoned"]
    assert len(logged) == 1 and kept == logged, (logged, history)
    assert cli("result", "hang").out == "1\n"
