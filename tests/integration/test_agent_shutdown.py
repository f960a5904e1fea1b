"""Stopping an agent whose handlers are still running: real agent processes, real signals,
real handler processes (a shell script that runs `sleep 100`) and a Python handler that
hangs in its thread."""

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

from tests.conftest import Cli, submit_for_solving

HANG = '#!/bin/sh\necho $$ >> "$HANG_PGIDS"\nsleep 100\necho \'{"solution": "1"}\'\n'
PY_HANG = (
    "import time\n\n"
    "def solve(job):\n"
    "    open(__import__('os').environ['HANG_PGIDS'], 'a').write('0\\n')\n"
    "    time.sleep(100)\n"
    "    return {'solution': '1'}\n"
)


def submit_unextracted(cli: Cli, *ids: str) -> None:
    submit_for_solving(cli, *ids, question="x * y =")


@pytest.fixture
def started(tmp_path: Path) -> Iterator[list[subprocess.Popen]]:
    """Agents a test starts; any left running, and their handlers, are killed after it."""
    agents: list[subprocess.Popen] = []
    yield agents
    for agent in agents:
        if agent.poll() is None:
            agent.kill()
            agent.wait()
    pgids = tmp_path / "pgids"
    for pgid in map(int, pgids.read_text().split() if pgids.exists() else []):
        if pgid:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(pgid, signal.SIGKILL)


def start_agent(
    cli: Cli, tmp_path: Path, started: list, argv: list[str], grace: str | None
) -> subprocess.Popen:
    (tmp_path / "hang.sh").write_text(HANG)
    (tmp_path / "hang.sh").chmod(0o755)
    (tmp_path / "py_hang.py").write_text(PY_HANG)
    env = {**os.environ, "HANG_PGIDS": str(tmp_path / "pgids"), "PYTHONPATH": str(tmp_path)}
    if grace is not None:
        env["RIDDLECTL_STOP_GRACE"] = grace
    env["RIDDLECTL_LOG_FORMAT"] = "json"
    agent = cli.popen(*argv, env=env)
    started.append(agent)
    return agent


def logged(err: bytes) -> list[dict]:
    """The agent's log lines (JSON, one an event)."""
    return [orjson.loads(line) for line in err.splitlines()]


def wait_for_handlers(tmp_path: Path, count: int) -> list[int]:
    """The process groups of `count` started handlers (0 for a Python handler)."""
    pgids = tmp_path / "pgids"
    deadline = time.monotonic() + 30
    while not (pgids.exists() and len(pgids.read_text().split()) >= count):
        assert time.monotonic() < deadline, "the handlers did not start"
        time.sleep(0.02)
    return [int(p) for p in pgids.read_text().split()]


def group_members(pgid: int) -> list[int]:
    """Live (not zombie) processes of a process group, from /proc."""
    members = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        fields = stat.rsplit(")", 1)[1].split()
        if int(fields[2]) == pgid and fields[0] != "Z":
            members.append(int(entry.name))
    return members


def group_members_after_kill(pgid: int, within: float = 2.0) -> list[int]:
    """The group's members once a SIGKILL sent to it has had time to land: a killed
    process stays listed while the kernel tears it down, which on a loaded machine takes
    a moment after the agent has exited."""
    deadline = time.monotonic() + within
    while (members := group_members(pgid)) and time.monotonic() < deadline:
        time.sleep(0.05)
    return members


def assert_given_back(cli: Cli, *ids: str) -> None:
    """Back in the solve inbox, unchanged: not failed, no attempt charged (that the next
    claim counts no abandoned one either: `test_given_back_riddles_are_handled_…`)."""
    for riddle_id in ids:
        assert (cli.spool / "extracted" / f"{riddle_id}.json").exists(), riddle_id
        riddle = orjson.loads(cli("show", riddle_id).out)
        assert not riddle.get("attempts") and not riddle.get("retry_at"), riddle
        assert riddle.get("error") is None


AGENTS = {
    "agent": ["agent", "solve", "--handler", "cmd:./hang.sh"],
    "run": ["run", "--handler", "solve=cmd:./hang.sh"],
}


@pytest.mark.parametrize("command", sorted(AGENTS))
def test_sigterm_kills_hung_handlers_after_the_grace_and_gives_their_riddles_back(
    cli: Cli, tmp_path: Path, started: list, command: str
) -> None:
    submit_unextracted(cli, "hang-1")
    agent = start_agent(cli, tmp_path, started, AGENTS[command], grace="2")
    (pgid,) = wait_for_handlers(tmp_path, 1)
    assert len(group_members(pgid)) == 2  # sh and its sleep
    agent.send_signal(signal.SIGTERM)
    sent = time.monotonic()
    _, err = agent.communicate(timeout=30)
    took = time.monotonic() - sent
    assert agent.returncode == 0, err
    assert 2 <= took < 2 + 3, took
    assert group_members_after_kill(pgid) == []  # (a member may stay a zombie if PID 1 never reaps)
    said = logged(err)
    assert [line["event"] for line in said] == ["started", "stopping", "handlers-killed", "stopped"]
    assert (said[1]["running"], said[1]["grace"], said[2]["killed"]) == (1, 2, 1)
    assert said[3]["why"] == "signal SIGTERM"
    assert_given_back(cli, "hang-1")


def test_the_default_grace_is_ten_seconds(cli: Cli, tmp_path: Path, started: list) -> None:
    submit_unextracted(cli, "hang-1")
    agent = start_agent(cli, tmp_path, started, AGENTS["agent"], grace=None)
    (pgid,) = wait_for_handlers(tmp_path, 1)
    agent.send_signal(signal.SIGTERM)
    sent = time.monotonic()
    _, err = agent.communicate(timeout=40)
    assert agent.returncode == 0
    assert 10 <= time.monotonic() - sent < 10 + 3
    assert logged(err)[1]["grace"] == 10
    assert group_members_after_kill(pgid) == []
    assert_given_back(cli, "hang-1")


@pytest.mark.parametrize(
    ("first", "second"),
    [(signal.SIGTERM, signal.SIGINT), (signal.SIGTERM, signal.SIGTERM), (signal.SIGINT,) * 2],
)
def test_a_second_signal_stops_at_once_still_killing_the_groups(
    cli: Cli, tmp_path: Path, started: list, first: signal.Signals, second: signal.Signals
) -> None:
    submit_unextracted(cli, "hang-1")
    argv = [*AGENTS["agent"], "--concurrency", "2"]
    submit_unextracted(cli, "hang-2")
    agent = start_agent(cli, tmp_path, started, argv, grace="60")
    pgids = wait_for_handlers(tmp_path, 2)
    agent.send_signal(first)
    time.sleep(0.3)  # a person pressing Ctrl-C twice
    agent.send_signal(second)
    sent = time.monotonic()
    _, err = agent.communicate(timeout=30)
    assert agent.returncode == (130 if first == signal.SIGINT else 0), err
    assert time.monotonic() - sent < 3
    for pgid in pgids:
        assert group_members_after_kill(pgid) == []
    assert [line["killed"] for line in logged(err) if line["event"] == "handlers-killed"] == [2]
    assert_given_back(cli, "hang-1", "hang-2")


KILLED = {
    "agent": AGENTS["agent"],
    "run": AGENTS["run"],
    # The second handler runs on a spare thread, added while the first hangs.
    "agent-spare": AGENTS["agent"],
    # The handler's child leaves its process group (and session) first.
    "agent-escaped": ["agent", "solve", "--handler", "cmd:./escape.sh"],
}
ESCAPE = (
    '#!/bin/sh\nsetsid sleep 100 &\necho $! >> "$ESCAPED"\necho $$ >> "$HANG_PGIDS"\nsleep 100\n'
)


@pytest.mark.parametrize("command", sorted(KILLED))
def test_a_killed_agent_takes_its_handlers_and_their_children_with_it(
    cli: Cli, tmp_path: Path, started: list, monkeypatch: pytest.MonkeyPatch, command: str
) -> None:
    """kill -9 of the agent: each handler (`sh`) and its children (`sleep`) are gone within
    2 s, and so is whatever the agent kept to see to it; none is left under init to run
    beside the agent that takes the riddle next."""
    ids = ["hang-1", "hang-2"] if command == "agent-spare" else ["hang-1"]
    submit_unextracted(cli, *ids)
    (tmp_path / "escape.sh").write_text(ESCAPE)
    (tmp_path / "escape.sh").chmod(0o755)
    monkeypatch.setenv("ESCAPED", str(tmp_path / "escaped"))
    agent = start_agent(cli, tmp_path, started, KILLED[command], grace="60")
    pgids = wait_for_handlers(tmp_path, len(ids))
    escaped = wait_for_escaped(tmp_path) if command == "agent-escaped" else []
    for pgid in pgids:
        assert len(group_members(pgid)) == 2  # sh and its sleep (the escaped one apart)
    helpers = children(agent.pid)
    agent.kill()
    agent.wait()
    try:
        for pgid in pgids:
            assert group_members_after_kill(pgid) == []
        assert [pid for pid in [*helpers, *escaped] if alive_after(pid)] == []
    finally:
        for pid in escaped:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)


def wait_for_escaped(tmp_path: Path) -> list[int]:
    """The pid of the child that left its handler's group, once written and gone: the
    shell writes `$!` when it has forked the child, which calls `setsid` a moment later
    (under load, after the test had counted it still in the group)."""
    written = tmp_path / "escaped"
    deadline = time.monotonic() + 30
    while not (written.exists() and written.read_text().endswith("\n")):
        assert time.monotonic() < deadline, "the child did not start"
        time.sleep(0.02)
    pid = int(written.read_text())
    while os.getsid(pid) != pid:
        assert time.monotonic() < deadline, "the child did not leave its session"
        time.sleep(0.02)
    return [pid]


def children(pid: int) -> list[int]:
    """The live child processes of `pid`."""
    found = []
    for entry in Path("/proc").iterdir():
        with contextlib.suppress(OSError, IndexError):
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            if entry.name.isdigit() and int(fields[1]) == pid and fields[0] != "Z":
                found.append(int(entry.name))
    return found


def alive_after(pid: int, within: float = 2.0) -> bool:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            return False
        if state == "Z":
            return False
        time.sleep(0.05)
    return True


def test_a_python_handler_cannot_be_killed_and_is_abandoned(
    cli: Cli, tmp_path: Path, started: list
) -> None:
    submit_unextracted(cli, "hang-1")
    agent = start_agent(
        cli, tmp_path, started, ["agent", "solve", "--handler", "py_hang:solve"], "1"
    )
    wait_for_handlers(tmp_path, 1)
    agent.send_signal(signal.SIGTERM)
    sent = time.monotonic()
    _, err = agent.communicate(timeout=30)
    assert agent.returncode == 0, err
    assert 1 <= time.monotonic() - sent < 1 + 3
    said = logged(err)
    assert [line["event"] for line in said][-2:] == ["handlers-abandoned", "stopped"]
    assert said[-2]["threads"] == 1
    assert_given_back(cli, "hang-1")


def test_given_back_riddles_are_handled_by_the_next_agent(
    cli: Cli, tmp_path: Path, started: list
) -> None:
    submit_unextracted(cli, "hang-1")
    agent = start_agent(cli, tmp_path, started, AGENTS["agent"], grace="1")
    wait_for_handlers(tmp_path, 1)
    agent.send_signal(signal.SIGTERM)
    agent.communicate(timeout=30)
    answer = 'cmd:echo \'{"solution": "7"}\''
    ran = cli("run", "--once", "--quiet", "--handler", f"solve={answer}")
    assert ran.code == 0, ran.err
    assert cli("result", "hang-1").out == "7\n"
    history = orjson.loads(cli("show", "hang-1").out)["history"]
    assert [e["outcome"] for e in history if e["stage"] == "solve"] == ["ok"]
    # Given back, not abandoned: the next claim counted no dead agent against it.
    events = [orjson.loads(line) for line in cli("events").out.splitlines()]
    assert [e for e in events if e["outcome"] == "abandoned"] == []


def test_an_agent_with_nothing_running_stops_at_once_and_says_only_so(cli: Cli) -> None:
    agent = cli.popen("agent", "solve", "--log-format", "json")
    assert agent.stderr is not None
    assert orjson.loads(agent.stderr.readline())["event"] == "started"
    assert _catches_sigterm(agent.pid)  # installed before it starts
    agent.send_signal(signal.SIGTERM)
    sent = time.monotonic()
    _, err = agent.communicate(timeout=30)
    assert agent.returncode == 0
    assert [line["event"] for line in logged(err)] == ["stopped"]
    assert time.monotonic() - sent < 2


def _catches_sigterm(pid: int) -> bool:
    """Whether process `pid` has a handler for SIGTERM installed (its SigCgt mask)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("SigCgt:"):
            return bool(int(line.split()[1], 16) & (1 << (signal.SIGTERM - 1)))
    return False


def test_a_process_exiting_while_threads_commit_leaves_no_temp_files(
    tmp_path: Path, helpers: Path
) -> None:
    """Daemon threads go on committing while the process exits: whatever they staged or
    recycled is removed all the same (ten exits at varied moments)."""
    script = str(helpers / "exit_while_committing.py")
    for attempt in range(10):
        spool = tmp_path / f"spool{attempt}"
        done = subprocess.run(
            [sys.executable, script, str(spool), f"{0.1 + attempt * 0.05:.2f}"],
            capture_output=True,
            timeout=60,
        )
        # (Its exit status is the interpreter's affair: daemon threads caught by the
        # interpreter's end may crash it, after the files are seen to.)
        left = sorted(p.name for p in (spool / "tmp").iterdir())
        assert left == [], (attempt, done.returncode, done.stderr.decode()[-800:])


def test_a_standalone_agent_stopped_again_and_again_leaves_no_temp_files(cli: Cli) -> None:
    """Started under work and SIGTERM'd, three times: `doctor` finds nothing each time."""
    docs = [{"id": f"w{i:04}", "riddle": {"question": "x * y ="}} for i in range(1000)]
    submitted = cli("submit", "-", input=b"\n".join(orjson.dumps(d) for d in docs))
    assert submitted.code == 0, submitted.err
    for attempt in range(3):
        agent = cli.popen("agent", "extract")
        deadline = time.monotonic() + 60
        while not _catches_sigterm(agent.pid):
            assert time.monotonic() < deadline
            time.sleep(0.02)
        time.sleep(0.5 + attempt * 0.3)  # at work meanwhile
        agent.send_signal(signal.SIGTERM)
        _, err = agent.communicate(timeout=60)
        assert agent.returncode == 0, err
        doctor = cli("doctor")
        assert doctor.code == 0, (attempt, doctor.out, os.listdir(cli.spool / "tmp"))
