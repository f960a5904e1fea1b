"""Crash safety: die at every step of a transition, poison riddles, hangs, shutdown, full
and read-only disks. Real agent processes, real kill -9, real mounts where permitted."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path

import pytest

from riddlectl import runtime
from riddlectl.agent.supervisor import run
from riddlectl.identity import Actor, hostname
from riddlectl.ops import submit
from riddlectl.ops.doctor import examine
from riddlectl.settings import Settings
from riddlectl.spool import crashpoints
from riddlectl.spool.fs import atomic
from riddlectl.spool.states import Queue
from tests.conftest import Cli, example_doc

STAGES_BEFORE = {
    "extract": (),
    "solve": ("extract",),
    "validate": ("extract", "solve"),
    "manage": ("extract", "solve", "validate"),
}


def submit_docs(settings: Settings, *docs: dict) -> list[str]:
    spool = runtime.open_spool(settings)
    pipeline = runtime.pipeline(settings, spool, Actor("test"))
    return submit.submit(pipeline, submit.prepare([("doc", d) for d in docs], settings))


def copies(spool: Path, riddle_id: str) -> list[str]:
    """The queue directories holding the riddle."""
    return sorted(q.value for q in Queue if (spool / q.value / f"{riddle_id}.json").exists())


def assert_recovered(settings: Settings, riddle_id: str, solution: str = "150") -> None:
    """One copy, in done/, with the right answer, and nothing for doctor to report."""
    run(settings, once=True)
    assert copies(Path(settings.spool), riddle_id) == ["done"]
    spool = runtime.open_spool(settings)
    assert spool.require(riddle_id)[1].solution.solution == solution
    pipeline = runtime.pipeline(settings, spool, Actor("doctor"))
    assert [f.as_dict() for f in examine(pipeline)] == []
    assert [p.name for p in (Path(settings.spool) / "locks").iterdir() if p.stat().st_size] == []
    owners = {atomic.tmp_owner(p.name) for p in (Path(settings.spool) / "tmp").iterdir()}
    assert owners <= {(hostname(), os.getpid())}, "only this live process's recycled spares"


@pytest.mark.parametrize("point", crashpoints.POINTS)
@pytest.mark.parametrize("stage", ["extract", "solve", "validate", "manage"])
def test_agent_dying_at_each_step_is_recovered(
    cli: Cli, settings: Settings, stage: str, point: str
) -> None:
    (riddle_id,) = submit_docs(settings, example_doc())
    if STAGES_BEFORE[stage]:
        run(settings, STAGES_BEFORE[stage], once=True)
    env = {**os.environ, crashpoints.ENV: point}
    crashed = subprocess.run(
        cli.argv("agent", stage, "--once"), env=env, capture_output=True, timeout=60
    )
    assert crashed.returncode == crashpoints.CRASH_EXIT, crashed.stderr
    assert copies(Path(settings.spool), riddle_id), "the riddle must still be somewhere"
    assert_recovered(settings, riddle_id)


def test_kill_9_while_handling_is_taken_up_again(cli: Cli, settings: Settings) -> None:
    (riddle_id,) = submit_docs(settings, example_doc(status={"validate": {"required": False}}))
    run(settings, ("extract",), once=True)
    agent = cli.popen("agent", "solve", "--handler", "cmd:sleep 30")
    deadline = time.time() + 20
    claims = Path(settings.spool) / "locks" / f"{riddle_id}.lock"
    while not (claims.exists() and claims.stat().st_size) and time.time() < deadline:
        time.sleep(0.05)
    agent.send_signal(signal.SIGKILL)
    agent.wait(timeout=10)
    assert_recovered(settings, riddle_id)
    assert runtime.open_spool(settings).require(riddle_id)[1].history[-1]["stage"] == "solve"


def test_poison_riddle_fails_after_5_abandoned_claims(
    cli: Cli, settings: Settings, helpers: Path
) -> None:
    docs = [
        example_doc(id=i, status={"extract": {"required": False}, "validate": {"required": False}})
        for i in ("good-a", "poison", "good-b")
    ]
    submit_docs(settings, *docs)
    handler = f"cmd:{sys.executable} {helpers}/poison_solver.py"
    codes = []
    for _ in range(8):
        agent = subprocess.run(
            cli.argv("agent", "solve", "--once", "--handler", handler),
            capture_output=True,
            timeout=60,
        )
        codes.append(agent.returncode)
        if agent.returncode != -signal.SIGKILL:
            break
    assert codes == [-signal.SIGKILL] * 5 + [1]  # 1: a riddle of this run failed
    spool = runtime.open_spool(settings)
    queue, poison = spool.require("poison")
    assert queue is Queue.FAILED
    assert poison.error.startswith("abandoned 5 times in a row")
    assert poison.history[-1]["outcome"] == "abandoned"
    for good in ("good-a", "good-b"):
        queue, riddle = spool.require(good)
        assert (queue, riddle.solution.solution) == (Queue.DONE, "1")


def test_completed_claim_resets_the_abandoned_count(cli: Cli, settings: Settings) -> None:
    (riddle_id,) = submit_docs(settings, example_doc())
    env = {**os.environ, crashpoints.ENV: "handled"}
    for _ in range(4):
        subprocess.run(cli.argv("agent", "extract", "--once"), env=env, timeout=60)
    run(settings, ("extract",), once=True)  # the fifth claim completes: count back to 0
    for stage in ("solve", "validate"):
        for _ in range(4):
            subprocess.run(cli.argv("agent", stage, "--once"), env=env, timeout=60)
        run(settings, (stage,), once=True)
    assert_recovered(settings, riddle_id)


def test_hanging_handler_is_killed_with_its_children_and_others_go_on(
    cli: Cli, settings: Settings, helpers: Path, tmp_path: Path
) -> None:
    pids_file = tmp_path / "pids"
    docs = [
        example_doc(id=i, status={"extract": {"required": False}, "validate": {"required": False}})
        for i in ("hang", "quick-1", "quick-2")
    ]
    submit_docs(settings, *docs)
    handler = f"cmd:{sys.executable} {helpers}/hang_solver.py"
    started = time.monotonic()
    done = subprocess.run(
        cli.argv(
            "run",
            "--once",
            "--handler",
            f"solve={handler}",
            "--timeout",
            "1",
            "--max-attempts",
            "2",
        ),
        env={**os.environ, "HANG_PIDS": str(pids_file)},
        capture_output=True,
        timeout=120,
    )
    assert done.returncode == 1
    assert time.monotonic() - started < 60
    spool = runtime.open_spool(settings)
    queue, hung = spool.require("hang")
    assert queue is Queue.FAILED
    assert hung.error == f"solve failed after 2 attempts: {sys.executable} timed out after 1 s"
    assert [e["outcome"] for e in hung.history if e["stage"] == "solve"] == ["timeout"] * 2
    gap = hung.history[-1]["time"] - hung.history[-2]["time"]
    assert gap >= 1.0 + 0.4  # the timeout, plus the back-off before the second attempt
    for quick in ("quick-1", "quick-2"):
        assert spool.require(quick)[0] is Queue.DONE
    for line in pids_file.read_text().splitlines():
        for pid in map(int, line.split()):
            assert not _alive(pid), f"process {pid} of the hung handler survived"


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    status = Path(f"/proc/{pid}/status")
    return status.exists() and "zombie" not in status.read_text()


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_agent_stops_cleanly_finishing_what_it_holds(
    cli: Cli, settings: Settings, sig: signal.Signals
) -> None:
    (riddle_id,) = submit_docs(
        settings,
        example_doc(status={"extract": {"required": False}, "validate": {"required": False}}),
    )
    agent = cli.popen(
        "agent", "solve", "--handler", "cmd:sh -c 'sleep 1; echo {\\\"solution\\\": 7}'"
    )
    claims = Path(settings.spool) / "locks" / f"{riddle_id}.lock"
    deadline = time.time() + 20
    while not (claims.exists() and claims.stat().st_size) and time.time() < deadline:
        time.sleep(0.02)
    agent.send_signal(sig)
    assert agent.wait(timeout=30) == 0
    queue, riddle = runtime.open_spool(settings).require(riddle_id)
    assert (queue, riddle.solution.solution) == (Queue.DONE, "7")
    assert claims.stat().st_size == 0  # the lock file is kept, its claim record cleared
    assert cli("doctor").code == 0


@pytest.fixture
def small_disk(tmp_path: Path):
    mount = tmp_path / "small"
    mount.mkdir()
    made = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(mount)], capture_output=True
    )
    if made.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {made.stderr.decode().strip()}")
    yield mount
    subprocess.run(["umount", "-l", str(mount)], check=False)


def test_full_disk_backs_off_and_loses_nothing(
    cli: Cli, settings: Settings, small_disk: Path
) -> None:
    settings = replace(settings, spool=small_disk / "spool")
    ids = submit_docs(settings, *[example_doc() for _ in range(5)])
    filler = small_disk / "filler"
    fd = os.open(filler, os.O_WRONLY | os.O_CREAT)
    try:
        while True:
            os.write(fd, b"\0" * 4096)
    except OSError:
        pass
    finally:
        os.close(fd)
    agent = subprocess.Popen(
        Cli(settings.spool, settings.data_dir).argv("run"),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    time.sleep(2)
    filler.unlink()
    deadline = time.time() + 60
    spool = runtime.open_spool(settings)
    while len(spool.ids(Queue.DONE)) < 5 and time.time() < deadline:
        time.sleep(0.1)
    agent.send_signal(signal.SIGTERM)
    _, err = agent.communicate(timeout=30)
    assert "No space left on device" in err.decode()
    assert sorted(spool.ids(Queue.DONE)) == sorted(ids)
    for riddle_id in ids:
        assert spool.require(riddle_id)[1].solution.solution == "150"


def test_read_only_spool_backs_off(cli: Cli, settings: Settings, small_disk: Path) -> None:
    settings = replace(settings, spool=small_disk / "spool")
    (riddle_id,) = submit_docs(settings, example_doc())
    subprocess.run(["mount", "-o", "remount,ro", str(small_disk)], check=True)
    agent = subprocess.Popen(
        Cli(settings.spool, settings.data_dir).argv("run"),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    time.sleep(2)
    subprocess.run(["mount", "-o", "remount,rw", str(small_disk)], check=True)
    spool = runtime.open_spool(settings)
    deadline = time.time() + 60
    while spool.find(riddle_id)[0] is not Queue.DONE and time.time() < deadline:
        time.sleep(0.1)
    agent.send_signal(signal.SIGTERM)
    _, err = agent.communicate(timeout=30)
    assert "Read-only file system" in err.decode()
    assert spool.find(riddle_id)[1].solution.solution == "150"


def test_a_starting_agent_clears_claim_records_of_final_riddles_only(
    settings: Settings,
) -> None:
    # An agent that died after committing to a final queue leaves its claim record behind; one
    # that died while handling leaves one on a riddle still in flight, which must stay
    # (it counts the abandoned claims of a poison riddle).
    finished, in_flight = submit_docs(
        settings,
        example_doc(status={"extract": {"required": False}, "validate": {"required": False}}),
        example_doc(),
    )
    summary = run(settings, once=True, stages=["solve", "manage"])
    assert summary.failed == [finished]  # final (unsolvable without its extractions)
    locks = Path(settings.spool) / "locks"
    for riddle_id in (finished, in_flight):
        (locks / f"{riddle_id}.lock").write_bytes(b"1 host 123 0.0\n")
    run(settings, once=True, stages=["validate"])  # starts an agent, which finds no work
    assert (locks / f"{finished}.lock").stat().st_size == 0
    assert (locks / f"{in_flight}.lock").read_bytes() == b"1 host 123 0.0\n"
