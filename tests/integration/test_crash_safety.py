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

import orjson
import pytest

from riddlectl import runtime
from riddlectl.agent.supervisor import run
from riddlectl.identity import Actor
from riddlectl.ops import submit
from riddlectl.ops.doctor import examine
from riddlectl.settings import Settings
from riddlectl.spool import crashpoints, open_spool
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
    # Nothing left behind either: no claim of a final riddle, no file of a dead writer.
    assert [f.as_dict() for f in examine(pipeline)] == []


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


def wait_for(path: Path, seconds: float = 20) -> None:
    """Wait until `path` exists: a handler that touches it has started."""
    deadline = time.monotonic() + seconds
    while not path.exists():
        assert time.monotonic() < deadline, f"{path.name} did not appear in {seconds} s"
        time.sleep(0.02)


def wait_for_text(path: Path, text: str, seconds: float = 30) -> None:
    """Wait until the file `path` (a process's stderr) says `text`."""
    deadline = time.monotonic() + seconds
    while text not in path.read_text(errors="replace"):
        assert time.monotonic() < deadline, f"{path.name} did not say {text!r} in {seconds} s"
        time.sleep(0.05)


def test_kill_9_while_handling_is_taken_up_again(
    cli: Cli, settings: Settings, tmp_path: Path
) -> None:
    (riddle_id,) = submit_docs(settings, example_doc(status={"validate": {"required": False}}))
    run(settings, ("extract",), once=True)
    started = tmp_path / "started"
    agent = cli.popen("agent", "solve", "--handler", f"cmd:sh -c 'touch {started}; sleep 30'")
    wait_for(started)
    agent.send_signal(signal.SIGKILL)
    agent.wait(timeout=10)
    assert_recovered(settings, riddle_id)
    assert runtime.open_spool(settings).require(riddle_id)[1].history[-1]["stage"] == "solve"


def test_poison_riddle_fails_after_5_abandoned_claims(any_cli: Cli, helpers: Path) -> None:
    docs = [
        example_doc(id=i, status={"extract": {"required": False}, "validate": {"required": False}})
        for i in ("good-a", "poison", "good-b")
    ]
    assert any_cli("submit", "-", input=orjson.dumps(docs)).code == 0
    handler = f"cmd:{sys.executable} {helpers}/poison_solver.py"
    codes = []
    for _ in range(8):
        agent = subprocess.run(
            any_cli.argv("agent", "solve", "--once", "--handler", handler),
            capture_output=True,
            timeout=60,
        )
        codes.append(agent.returncode)
        if agent.returncode != -signal.SIGKILL:
            break
    assert codes == [-signal.SIGKILL] * 5 + [1]  # 1: a riddle of this run failed
    spool = open_spool(str(any_cli.spool))
    queue, poison = spool.require("poison")
    assert queue is Queue.FAILED
    assert poison.error.startswith("abandoned 5 times in a row")
    assert poison.history[-1]["outcome"] == "abandoned"
    for good in ("good-a", "good-b"):
        queue, riddle = spool.require(good)
        assert (queue, riddle.solution.solution) == (Queue.DONE, "1")
    abandoned = [e for e in spool.events.read() if e.get("outcome") == "abandoned"]
    assert len(abandoned) >= 5 and abandoned[-1]["id"] == "poison"


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
    cli: Cli, settings: Settings, sig: signal.Signals, tmp_path: Path
) -> None:
    (riddle_id,) = submit_docs(
        settings,
        example_doc(status={"extract": {"required": False}, "validate": {"required": False}}),
    )
    started = tmp_path / "started"
    answer = 'echo {\\"solution\\": 7}'
    agent = cli.popen(
        "agent", "solve", "--handler", f"cmd:sh -c 'touch {started}; sleep 1; {answer}'"
    )
    wait_for(started)
    agent.send_signal(sig)
    assert agent.wait(timeout=30) == (130 if sig == signal.SIGINT else 0)  # Ctrl-C says so
    queue, riddle = runtime.open_spool(settings).require(riddle_id)
    assert (queue, riddle.solution.solution) == (Queue.DONE, "7")
    assert cli("doctor").code == 0  # and its claim is over: nothing stale to report


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
    cli: Cli, settings: Settings, small_disk: Path, tmp_path: Path
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
    stderr = tmp_path / "stderr"
    with open(stderr, "wb") as err:
        agent = subprocess.Popen(
            Cli(settings.spool, settings.data_dir).argv("run"), stdout=subprocess.PIPE, stderr=err
        )
    try:
        wait_for_text(stderr, "No space left on device")  # it says so, and waits
        filler.unlink()
        spool = runtime.open_spool(settings)
        deadline = time.monotonic() + 60
        while len(spool.ids(Queue.DONE)) < 5 and time.monotonic() < deadline:
            time.sleep(0.1)
    finally:
        agent.send_signal(signal.SIGTERM)
        agent.communicate(timeout=30)
    assert sorted(spool.ids(Queue.DONE)) == sorted(ids)
    for riddle_id in ids:
        assert spool.require(riddle_id)[1].solution.solution == "150"


def test_read_only_spool_backs_off(
    cli: Cli, settings: Settings, small_disk: Path, tmp_path: Path
) -> None:
    settings = replace(settings, spool=small_disk / "spool")
    (riddle_id,) = submit_docs(settings, example_doc())
    subprocess.run(["mount", "-o", "remount,ro", str(small_disk)], check=True)
    stderr = tmp_path / "stderr"
    with open(stderr, "wb") as err:
        agent = subprocess.Popen(
            Cli(settings.spool, settings.data_dir).argv("run"), stdout=subprocess.PIPE, stderr=err
        )
    try:
        wait_for_text(stderr, "Read-only file system")  # it says so, and waits
        subprocess.run(["mount", "-o", "remount,rw", str(small_disk)], check=True)
        spool = runtime.open_spool(settings)
        deadline = time.monotonic() + 60
        while spool.find(riddle_id)[0] is not Queue.DONE and time.monotonic() < deadline:
            time.sleep(0.1)
    finally:
        agent.send_signal(signal.SIGTERM)
        agent.communicate(timeout=30)
    assert spool.find(riddle_id)[1].solution.solution == "150"


def test_a_starting_agent_forgets_the_claims_of_final_riddles_only(
    cli: Cli, settings: Settings
) -> None:
    # An agent that died after committing a riddle to a final queue left its claim behind,
    # and nobody will claim that riddle again to tidy up; one that died while handling a
    # riddle left a claim that counts towards a poison riddle, and must stay.
    finished, in_flight = submit_docs(
        settings,
        example_doc(status={"extract": {"required": False}, "validate": {"required": False}}),
        example_doc(),
    )
    for stage, point in (("extract", "claimed"), ("solve", "source-removed")):
        died = subprocess.run(
            cli.argv("agent", stage, "--once"),
            env={**os.environ, crashpoints.ENV: point},
            capture_output=True,
            timeout=60,
        )
        assert died.returncode == crashpoints.CRASH_EXIT, died.stderr
    assert runtime.open_spool(settings).require(finished)[0] is Queue.FAILED  # no extractions
    assert f"stale-claim\t{finished}" in cli("doctor").out
    run(settings, once=True, stages=["validate"])  # an agent starts, and finds no work
    assert cli("doctor").code == 0
    run(settings, once=True)
    abandoned = [e for e in runtime.event_log(settings).read() if e["outcome"] == "abandoned"]
    assert [(e["id"], e["stage"], e["error"]) for e in abandoned] == [
        (in_flight, "extract", "its agent died while handling it (1 in a row)")
    ]
    assert runtime.open_spool(settings).require(in_flight)[0] is Queue.DONE
