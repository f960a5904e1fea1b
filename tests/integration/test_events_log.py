"""The event log misses nothing: not what agents killed mid-commit did, not what is written
while `events --follow` starts or while the log is rotated; and a claim whose agent died is
logged as `abandoned`. Real agent processes, real kill -9."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path

import orjson
import pytest

from riddlectl.identity import hostname
from riddlectl.spool import crashpoints
from riddlectl.spool.states import Queue
from tests.conftest import Cli, example_doc, logged_events

# The points of a commit after its document is stored and before its events are logged.
AFTER_STORING = ("renamed", "source-removed", "lock-released")
STAGES_BEFORE = {"extract": (), "solve": ("extract",), "validate": ("extract", "solve")}


logged = logged_events


def key(event: dict) -> tuple:
    return (event["id"], event["rev"], event["stage"], event["time"], event["outcome"])


def histories(spool: Path) -> list[dict]:
    """Every history entry of every riddle in the spool."""
    entries = []
    for queue in Queue:
        for path in (spool / queue.value).glob("*.json"):
            entries += orjson.loads(path.read_bytes())["history"]
    return entries


def assert_log_matches_histories(cli: Cli) -> None:
    """Each history entry has its event, once; and no event of a commit is left over
    that no history holds (a commit that never took place)."""
    events = [e for e in logged(cli) if e["outcome"] not in ("abandoned", "corrupt")]
    counts = Counter(key(e) for e in events)
    doubled = [k for k, n in counts.items() if n > 1]
    assert doubled == [], f"events logged twice: {doubled[:5]}"
    # An abandoned claim is in the history of the riddle only once its next commit is made.
    entries = {key(e) for e in histories(cli.spool) if e["outcome"] != "abandoned"}
    missing = entries - counts.keys()
    assert missing == set(), f"{len(missing)} history entries have no event: {sorted(missing)[:5]}"
    phantoms = counts.keys() - entries
    assert phantoms == set(), f"events of commits that never took place: {sorted(phantoms)[:5]}"


def submit_example(cli: Cli, *ids: str) -> None:
    docs = [example_doc(id=riddle_id) for riddle_id in ids]
    res = cli("submit", "-", input=orjson.dumps(docs))
    assert res.code == 0, res.err


# -- agents and commands killed mid-commit -------------------------------------------------


@pytest.mark.parametrize("point", [*AFTER_STORING, "flushed"])
@pytest.mark.parametrize("stage", ["extract", "solve", "validate"])
def test_events_of_an_agent_killed_mid_commit_are_recovered(
    cli: Cli, stage: str, point: str
) -> None:
    submit_example(cli, "r1", "r2", "r3")
    for before in STAGES_BEFORE[stage]:
        assert cli("agent", before, "--once").code == 0
    env = {crashpoints.ENV: point}
    crashed = cli("agent", stage, "--once", env=env)
    assert crashed.code == crashpoints.CRASH_EXIT, crashed.err
    assert_log_matches_histories(cli)  # `events` itself recovers them
    assert cli("run", "--once").code == 0
    assert_log_matches_histories(cli)


def test_events_of_a_submit_killed_mid_commit_are_recovered(cli: Cli) -> None:
    cli("init")
    ids = [f"s{n:03}" for n in range(200)]  # several groups: the first is stored, then death
    docs = [example_doc(id=riddle_id) for riddle_id in ids]
    crashed = cli("submit", "-", input=orjson.dumps(docs), env={crashpoints.ENV: "renamed"})
    assert crashed.code == crashpoints.CRASH_EXIT, crashed.err
    stored = list((cli.spool / "incoming").glob("*.json"))
    assert stored, "the first group was stored before the crash"
    assert_log_matches_histories(cli)
    submitted = [e["id"] for e in logged(cli) if e["stage"] == "submit"]
    assert sorted(submitted) == sorted(p.stem for p in stored)


def test_events_of_a_command_killed_mid_commit_are_recovered(cli: Cli) -> None:
    submit_example(cli, "h1")
    crashed = cli("hold", "h1", env={crashpoints.ENV: "lock-released"})
    assert crashed.code == crashpoints.CRASH_EXIT, crashed.err
    assert [e["stage"] for e in logged(cli)] == ["submit", "hold"]
    assert_log_matches_histories(cli)


def test_submits_killed_at_random_lose_no_event(cli: Cli) -> None:
    """kill -9 at a random moment of each of four submits of 1,000 riddles, while it
    stores them."""
    rng = random.Random(5)
    cli("init")
    for batch in range(4):
        docs = [example_doc(id=f"k{batch}-{n:04}") for n in range(1000)]
        submitting = cli.popen("submit", "-", stdin=subprocess.PIPE)
        submitting.stdin.write(orjson.dumps(docs))
        submitting.stdin.close()
        # Killed while it stores: once its first riddles are in, at a random moment after.
        deadline = time.monotonic() + 30
        while not any((cli.spool / "incoming").glob(f"k{batch}-*")):
            assert time.monotonic() < deadline and submitting.poll() is None
            time.sleep(0.001)
        time.sleep(rng.uniform(0, 0.05))
        submitting.send_signal(signal.SIGKILL)
        submitting.wait()
    assert list((cli.spool / "incoming").glob("*.json")), "no submit got as far as storing"
    assert_log_matches_histories(cli)


def test_agents_killed_at_random_lose_no_event(cli: Cli, helpers: Path) -> None:
    """kill -9 at random moments, agents of every stage, while 150 riddles flow."""
    rng = random.Random(11)
    submit_example(cli, *(f"k{n:03}" for n in range(150)))
    env = {**os.environ, "PYTHONPATH": str(helpers), "RIDDLECTL_MAX_ABANDONED": "1000"}
    stages = ("extract", "solve", "validate", "manage")

    def start(stage: str) -> subprocess.Popen[bytes]:
        extra = ["--handler", "py_handlers:slow_calculator"] if stage == "solve" else []
        return subprocess.Popen(
            cli.argv("agent", stage, *extra),
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )

    agents = {stage: start(stage) for stage in stages}
    kills = 0
    deadline = time.monotonic() + 20
    try:
        while time.monotonic() < deadline and len(list((cli.spool / "done").glob("*"))) < 150:
            time.sleep(rng.uniform(0.02, 0.2))
            stage = rng.choice(stages)
            agents[stage].send_signal(signal.SIGKILL)
            agents[stage].wait()
            kills += 1
            agents[stage] = start(stage)
    finally:
        for agent in agents.values():
            agent.send_signal(signal.SIGKILL)
            agent.wait()
    assert kills > 10
    finish = cli("run", "--once", env={"PYTHONPATH": str(helpers)}, timeout=300)
    assert finish.code == 0, finish.err
    assert len(list((cli.spool / "done").glob("*.json"))) == 150
    assert_log_matches_histories(cli)


# -- abandoned claims ------------------------------------------------------------------------


def kill_an_agent_handling_a1(cli: Cli, tmp_path: Path) -> subprocess.Popen[bytes]:
    """Submit `a1`, start a solve agent whose handler hangs, and `kill -9` it while the
    handler runs: the agent dies holding the riddle."""
    cli("submit", "--id", "a1", "--question", "x * y =", "--no-extract", "--no-validate")
    started = tmp_path / "started"
    agent = cli.popen("agent", "solve", "--handler", f"cmd:sh -c 'touch {started}; sleep 30'")
    deadline = time.monotonic() + 20
    while not started.exists():  # the handler runs: the agent is handling the riddle
        assert time.monotonic() < deadline, "the handler did not start"
        time.sleep(0.02)
    agent.send_signal(signal.SIGKILL)
    agent.wait(timeout=10)
    return agent


def test_a_claim_whose_agent_was_killed_is_logged_as_abandoned(cli: Cli, tmp_path: Path) -> None:
    agent = kill_an_agent_handling_a1(cli, tmp_path)
    cli("run", "--once", "--handler", """solve=cmd:echo '{"solution": 7}'""")
    (abandoned,) = [e for e in logged(cli) if e["outcome"] == "abandoned"]
    assert abandoned["id"] == "a1" and abandoned["stage"] == "solve"
    assert (abandoned["from"], abandoned["pid"]) == ("extracted", agent.pid)
    assert abandoned["agent"] == "agent:solve" and abandoned["host"]
    assert abandoned["rev"] == 1 and "died" in abandoned["error"]
    assert cli("result", "a1").out == "7\n"


def test_an_abandoned_attempt_is_in_the_riddles_history(any_cli: Cli, tmp_path: Path) -> None:
    agent = kill_an_agent_handling_a1(any_cli, tmp_path)
    ran = any_cli("run", "--once", "--handler", """solve=cmd:echo '{"solution": 7}'""")
    assert ran.code == 0, ran.err
    history = orjson.loads(any_cli("show", "a1").out)["history"]
    assert [e["outcome"] for e in history] == ["ok", "abandoned", "ok"]
    abandoned = history[1]
    assert (abandoned["stage"], abandoned["pid"]) == ("solve", agent.pid)
    assert abandoned["agent"] == "agent:solve" and abandoned["host"]
    assert "died" in abandoned["error"]
    assert abandoned in logged(any_cli)  # the history's entry is the logged event


def test_a_claim_whose_agent_committed_before_dying_is_not_abandoned(cli: Cli) -> None:
    submit_example(cli, "c1")
    crashed = cli("agent", "extract", "--once", env={crashpoints.ENV: "source-removed"})
    assert crashed.code == crashpoints.CRASH_EXIT
    assert cli("run", "--once").code == 0
    assert [e for e in logged(cli) if e["outcome"] == "abandoned"] == []
    assert cli("result", "c1").out == "150\n"


# -- events --follow -------------------------------------------------------------------------


WRITER = """
import sys, time
from pathlib import Path
from riddlectl.spool.fs.events import FsEventLog
log = FsEventLog(Path(sys.argv[1]), int(sys.argv[3]))
for n in range(int(sys.argv[2])):
    log.append({"n": n, "pad": "x" * 40})
    time.sleep(0.0001)
"""


class Follower:
    """`events --follow` in a subprocess, and the event numbers it printed; `backlog`:
    with `--tail` larger than the log (the whole log first), else from the log's end."""

    def __init__(self, cli: Cli, backlog: bool) -> None:
        self.backlog = backlog
        self.proc = cli.popen("events", "--follow", *(["--tail", "1000000"] if backlog else []))
        self.seen: list[int] = []
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self) -> None:
        for line in self.proc.stdout:
            self.seen.append(orjson.loads(line)["n"])

    def stop(self) -> list[int]:
        self.proc.terminate()
        self.proc.wait(timeout=10)
        self.reader.join(timeout=10)
        return self.seen


@pytest.mark.parametrize("max_bytes", [1 << 30, 256 * 1024], ids=["one-log", "rotated"])
def test_follow_loses_nothing_while_it_starts_or_the_log_rotates(cli: Cli, max_bytes: int) -> None:
    """A writer appends 15,000 events over a few seconds while followers start one after
    the other; each must print every event from its first on, once, in order — across
    rotations of the log too (a rotated log turns over three times or more), whether it
    starts at the log's end or prints what is kept first."""
    cli("init")
    total = 15_000
    log = cli.spool / "events.jsonl"
    writer = subprocess.Popen([sys.executable, "-c", WRITER, str(log), str(total), str(max_bytes)])
    followers = []
    while writer.poll() is None and len(followers) < 4:
        time.sleep(0.25)
        followers.append(Follower(cli, backlog=len(followers) % 2 == 0))
    assert writer.wait(timeout=120) == 0
    assert len(followers) >= 2, "the writer finished before the followers started"
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and any(
        not f.seen or f.seen[-1] != total - 1 for f in followers
    ):
        time.sleep(0.05)
    time.sleep(0.5)  # anything more would be a line printed twice
    for follower in followers:
        seen = follower.stop()
        assert seen, "the follower printed nothing"
        first = seen[0]
        if follower.backlog and max_bytes > total * 100:
            assert first == 0  # the whole log, from its start
        gaps = sorted(set(range(first, total)) - set(seen))
        assert gaps == [], f"{len(gaps)} events lost by --follow, first {gaps[:5]}"
        assert seen == list(range(first, total)), "events repeated or out of order"


def test_a_dead_writers_journal_is_settled_by_what_took_place(cli: Cli) -> None:
    """A journal left by a dead process: of its events, those whose commit took place are
    logged (a purge's once the riddle is gone), once; the others are dropped."""
    submit_example(cli, "gone")
    assert cli("run", "--once").code == 0
    assert cli("purge", "--older-than", "0s", "--done").out.split() == ["gone"]
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    submit_example(cli, "live")
    history = orjson.loads((cli.spool / "incoming" / "live.json").read_bytes())["history"]
    took_place = history[0]  # already in the log: not logged again
    never = {**took_place, "stage": "solve", "rev": 2, "time": 1.0}  # no commit of it
    purge = {**took_place, "id": "gone", "stage": "purge", "time": 2.0}  # gone: took place
    lines = b"".join(orjson.dumps(e) + b"\n" for e in (took_place, never, purge))
    journal = cli.spool / "journal" / f"{hostname().replace('.', '_')}.{dead.pid}.1"
    journal.parent.mkdir(exist_ok=True)
    journal.write_bytes(lines + b"\0" + b"stale tail of an earlier commit\n")
    events = logged(cli)
    assert [e for e in events if e["time"] in (1.0, 2.0)] == [purge]
    assert sum(e == took_place for e in events) == 1
    assert not journal.exists()
