"""Ctrl-C ends every command with exit 130, after the same orderly wind-down as a stop
asked any other way; SIGTERM, how service managers stop `agent` and `run`, stays exit 0.

Each case runs the installed command, waits until it is doing what it is there for (a
handler running, a first line printed, a server listening), and sends it a real signal.
"""

from __future__ import annotations

import select
import signal
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

import orjson
import pytest

from tests.conftest import Cli, queue_of, slow_solver

STARTED_WITHIN = 60.0  # seconds; the machine may be loaded


def submit(cli: Cli, riddle_id: str) -> None:
    done = cli("submit", "--id", riddle_id, "--question", "x * y =", "--data", "example/x.txt")
    assert done.code == 0, done.err


def until(ready: Callable[[], bool], proc: subprocess.Popen[bytes], what: str) -> None:
    deadline = time.monotonic() + STARTED_WITHIN
    while not ready():
        assert proc.poll() is None, f"ended before {what}: {proc.communicate()}"
        assert time.monotonic() < deadline, f"never {what}"
        time.sleep(0.05)


def catches_sigint(pid: int) -> bool:
    """Whether the process has a handler for SIGINT yet (Python installs one as it
    starts): before that, a SIGINT would kill the interpreter, not reach riddlectl."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("SigCgt:"):
            return bool(int(line.split()[1], 16) & (1 << (signal.SIGINT - 1)))
    return False


def printed_a_line(stream: object) -> Callable[[], bool]:
    fd = stream.fileno()  # type: ignore[attr-defined]
    return lambda: bool(select.select([fd], [], [], 0)[0])


def stop(proc: subprocess.Popen[bytes], signum: int) -> tuple[int, str, str]:
    proc.send_signal(signum)
    try:
        out, err = proc.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate()
        raise AssertionError(f"still running a minute after {signum}: {err.decode()}") from None
    assert b"Traceback" not in err, err.decode()
    return proc.returncode, out.decode(), err.decode()


@pytest.mark.parametrize(("signum", "code"), [(signal.SIGINT, 130), (signal.SIGTERM, 0)])
def test_run_once_interrupted_winds_down_then_says_how_it_ended(
    cli: Cli, tmp_path: Path, signum: int, code: int
) -> None:
    submit(cli, "busy")
    run = cli.popen("run", "--once", "--handler", f"solve={slow_solver(tmp_path)}")
    until((tmp_path / "started").exists, run, "started the handler")
    status, out, _ = stop(run, signum)
    assert status == code
    assert "0 done, 0 failed" in out  # the summary of the wind-down, as before
    assert queue_of(cli, "busy") == "extracted"  # given back, not failed


@pytest.mark.parametrize(("signum", "code"), [(signal.SIGINT, 130), (signal.SIGTERM, 0)])
def test_an_agent_interrupted_gives_back_its_riddle(
    cli: Cli, tmp_path: Path, signum: int, code: int
) -> None:
    submit(cli, "busy")
    assert cli("run", "--once", "--stages", "extract").code == 0
    agent = cli.popen("agent", "solve", "--handler", slow_solver(tmp_path))
    until((tmp_path / "started").exists, agent, "started the handler")
    status, _, _ = stop(agent, signum)
    assert status == code
    assert queue_of(cli, "busy") == "extracted"


def test_run_for_good_stopped_by_sigterm_is_exit_0(cli: Cli) -> None:
    run = cli.popen("run", "--quiet")
    until(lambda: "alive" in cli("agents").out, run, "listed among the agents")
    assert stop(run, signal.SIGTERM)[0] == 0


def test_status_watch_and_events_follow_end_with_130(cli: Cli) -> None:
    submit(cli, "seen")
    watched = (("status", "--watch"), ("status", "--watch", "--jsonl"), ("events", "-n", "1", "-f"))
    for args in watched:
        watching = cli.popen(*args)
        until(printed_a_line(watching.stdout), watching, f"printed from {args}")
        status, out, _ = stop(watching, signal.SIGINT)
        assert status == 130, args
        assert "seen" in out, args
        if args[0] == "events":  # what was printed is whole lines of JSON
            assert all(orjson.loads(line) for line in out.splitlines())


def test_ingest_watch_ends_with_130_between_looks(cli: Cli, tmp_path: Path) -> None:
    drop = tmp_path / "drop"
    drop.mkdir()
    (drop / "one.json").write_bytes(orjson.dumps({"riddle": {"question": "1 + 1 ="}}))
    ingesting = cli.popen("ingest", str(drop), "--watch", "--poll", "0.1")
    until(printed_a_line(ingesting.stdout), ingesting, "moved a file")
    status, out, _ = stop(ingesting, signal.SIGINT)
    assert (status, out) == (130, "one.json\n")
    assert queue_of(cli, "one") == "incoming"


@pytest.mark.parametrize("args", [("result", "late", "--wait"), ("submit", "--wait", "-")])
def test_waiting_for_results_ends_with_130(cli: Cli, args: tuple[str, ...]) -> None:
    submit(cli, "late")
    waiting = cli.popen(*args, stdin=subprocess.PIPE)
    assert waiting.stdin is not None
    if args[0] == "submit":
        waiting.stdin.write(orjson.dumps({"id": "later", "riddle": {"question": "1 + 1 ="}}))
    waiting.stdin.close()
    waiting.stdin = None  # closed: nothing more for `communicate` to send
    until(lambda: catches_sigint(waiting.pid), waiting, "caught SIGINT")
    if args[0] == "submit":
        until(lambda: cli("status", "later").code == 0, waiting, "stored the riddle")
    else:
        time.sleep(1)  # into the wait
    status, out, err = stop(waiting, signal.SIGINT)
    assert (status, out) == (130, "")
    assert len([line for line in err.splitlines() if line.strip()]) <= 1


@pytest.mark.parametrize(("signum", "code"), [(signal.SIGINT, 130), (signal.SIGTERM, 0)])
def test_serve_stops_in_order_and_says_how(cli: Cli, signum: int, code: int) -> None:
    server = cli.popen("serve", "--port", "0")
    assert server.stderr is not None
    until(printed_a_line(server.stderr), server, "said where it listens")
    status, _, err = stop(server, signum)
    assert status == code
    assert "serving http://127.0.0.1:" in err
