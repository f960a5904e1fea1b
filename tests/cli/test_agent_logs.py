"""What `run` and `agent` log on stderr, one line an event, through the installed command:
start and stop, a riddle failed, a retry, a claim of a killed agent recovered, every
hand-off at debug; text or JSON; the level filters."""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
import time
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path

import orjson
import pytest

from tests.conftest import Cli, submit_for_solving

# Answers "1"; fails once (exit 1) for `flaky`, refuses (exit 65) `refused`, hangs on `hang`.
SOLVER = """\
#!/bin/sh
doc=$(cat)
case "$RIDDLE_ID" in
  flaky) [ -e "$MARKS/flaky" ] || { touch "$MARKS/flaky"; echo "busy, try later" >&2; exit 1; } ;;
  refused) echo "not my kind of riddle" >&2; exit 65 ;;
  hang) echo $$ >> "$MARKS/pgids"; sleep 100 ;;
esac
echo '{"solution": "1", "explanation": "one"}'
"""
ISO = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}\+00:00$")
TEXT = re.compile(
    r"^(\S+) (DEBUG|INFO|WARNING|ERROR) ([a-z-]+)( [a-z_]+=(\S+|\"([^\"\\]|\\.)*\"))*$"
)


@pytest.fixture
def solver(tmp_path: Path) -> Iterator[dict[str, str]]:
    """The solver script in the current directory, and the environment it needs."""
    (tmp_path / "solver.sh").write_text(SOLVER)
    (tmp_path / "solver.sh").chmod(0o755)
    marks = tmp_path / "marks"
    marks.mkdir()
    yield {"MARKS": str(marks)}
    pgids = marks / "pgids"
    for pgid in map(int, pgids.read_text().split() if pgids.exists() else []):
        with contextlib.suppress(ProcessLookupError):
            os.killpg(pgid, signal.SIGKILL)


def submit(cli: Cli, *ids: str) -> None:
    submit_for_solving(cli, *ids)


def json_lines(err: str | bytes) -> list[dict]:
    """Every line of stderr, each of which must be one JSON object with the fields every
    line has."""
    lines = [orjson.loads(line) for line in err.splitlines()]
    for line in lines:
        assert ISO.match(line["time"]) and datetime.fromisoformat(line["time"]), line
        assert line["level"] in ("debug", "info", "warning", "error"), line
        assert isinstance(line["event"], str), line
    return lines


def events(lines: list[dict]) -> list[str]:
    return [line["event"] for line in lines]


RUN = ["run", "--once", "--handler", "solve=cmd:./solver.sh", "--stages", "solve,manage"]


def test_run_once_logs_start_a_retry_a_failure_and_stop_keeping_its_summary_on_stdout(
    any_cli: Cli, solver: dict[str, str]
) -> None:
    submit(any_cli, "fine", "flaky", "refused")
    done = any_cli(*RUN, "--log-format", "json", env=solver)
    assert done.code == 1  # a riddle of this run failed
    assert done.out.startswith("2 done, 1 failed, 0 held") and done.out.count("\n") == 1
    lines = json_lines(done.err)
    assert events(lines)[0] == "started" and events(lines)[-1] == "stopped"
    started, stopped = lines[0], lines[-1]
    assert started["stages"] == ["solve", "manage"] and started["concurrency"] == "1+spares"
    assert started["handlers"] == {"solve": ["cmd:./solver.sh"], "manage": []}
    assert started["agent"] == "run:solve+manage" and started["level"] == "info"
    assert started["spool"] and "password" not in started["spool"]
    assert (stopped["why"], stopped["done"], stopped["failed"]) == ("nothing left to move", 2, 1)
    (retry,) = [line for line in lines if line["event"] == "retry"]
    assert (retry["id"], retry["stage"], retry["attempt"], retry["level"]) == (
        "flaky",
        "solve",
        1,
        "info",
    )
    assert "busy, try later" in retry["error"] and retry["delay"] > 0
    (failed,) = [line for line in lines if line["event"] == "riddle-failed"]
    assert (failed["id"], failed["stage"], failed["level"]) == ("refused", "solve", "warning")
    assert failed["agent"] == "run:solve+manage"
    assert "exit 65" in failed["error"] and "not my kind of riddle" in failed["error"]
    assert "hand-off" not in events(lines)  # debug only


def test_text_lines_say_the_same_one_line_an_event(cli: Cli, solver: dict[str, str]) -> None:
    submit(cli, "refused")
    done = cli(*RUN, env=solver)
    lines = done.err.splitlines()
    assert [TEXT.match(line).group(3) for line in lines] == [  # type: ignore[union-attr]
        "started",
        "riddle-failed",
        "stopped",
    ], done.err
    assert ISO.match(lines[0].split()[0])
    assert " WARNING riddle-failed id=refused stage=solve agent=run:solve+manage error=" in lines[1]
    assert 'why="nothing left to move"' in lines[2]


@pytest.mark.parametrize(
    ("how", "wanted"),
    [
        ("flag", "debug"),
        ("flag", "warning"),
        ("flag", "error"),
        ("env", "warning"),
        ("config", "warning"),
    ],
)
def test_the_level_filters_what_is_logged(
    cli: Cli, solver: dict[str, str], how: str, wanted: str
) -> None:
    submit(cli, "fine", "flaky", "refused")
    argv, env = [*RUN, "--log-format", "json"], dict(solver)
    if how == "flag":
        argv += ["--log-level", wanted]
    elif how == "env":
        env["RIDDLECTL_LOG_LEVEL"] = wanted.upper()
    else:
        (Path(cli.spool) / "config.toml").write_text(f'log_level = "{wanted}"\n')
    done = cli(*argv, env=env)
    assert done.code == 1, done.err
    said = events(json_lines(done.err))
    if wanted == "error":
        assert said == []
    elif wanted == "warning":
        assert said == ["riddle-failed"]
    else:
        assert said[0] == "started" and said[-1] == "stopped"
        assert {"retry", "riddle-failed", "hand-off"} <= set(said)
        hand_offs = [line for line in json_lines(done.err) if line["event"] == "hand-off"]
        # every move but the retry and the failure (with no validation, solve ends in done/)
        assert sorted((h["id"], h["stage"], h["to"]) for h in hand_offs) == [
            ("fine", "solve", "done"),
            ("flaky", "solve", "done"),
        ]


@pytest.mark.parametrize(
    ("argv", "env"),
    [
        (["--log-level", "chatty"], {}),
        (["--log-format", "xml"], {}),
        ([], {"RIDDLECTL_LOG_FORMAT": "yaml"}),
    ],
)
def test_an_unknown_level_or_format_is_refused_in_one_line(
    cli: Cli, argv: list[str], env: dict[str, str]
) -> None:
    done = cli("agent", "solve", "--once", *argv, env=env)
    assert done.code == 2 and done.err.count("\n") == 1, done.err
    assert "one of" in done.err


def test_an_agent_logs_its_start_and_why_it_stopped(cli: Cli) -> None:
    agent = cli.popen("agent", "solve", "--concurrency", "2", "--log-format", "json")
    assert agent.stderr is not None
    started = json_lines(agent.stderr.readline())[0]
    assert started["event"] == "started" and started["agent"] == "agent:solve"
    assert started["stages"] == ["solve"] and started["handlers"] == {"solve": ["calculator"]}
    assert started["concurrency"] == 2 and started["spool"] == str(cli.spool)
    assert started["pid"] == agent.pid and started["once"] is False
    agent.send_signal(signal.SIGTERM)
    _, rest = agent.communicate(timeout=60)
    assert agent.returncode == 0
    (stopped,) = json_lines(rest)
    assert stopped["event"] == "stopped" and stopped["why"] == "signal SIGTERM"


def test_a_claim_of_a_killed_agent_is_recovered_and_logged(
    cli: Cli, solver: dict[str, str]
) -> None:
    submit(cli, "hang")
    env = {**os.environ, **solver}
    first = cli.popen("agent", "solve", "--handler", "cmd:./solver.sh", env=env)
    try:
        pgids = Path(solver["MARKS"]) / "pgids"
        deadline = time.monotonic() + 60
        while not (pgids.exists() and pgids.read_text().strip()):
            assert time.monotonic() < deadline, "the handler did not start"
            time.sleep(0.05)
        first.kill()  # kill -9: the claim stays behind, with nobody to finish it
        first.wait()
        (pgid,) = map(int, pgids.read_text().split())
        os.killpg(pgid, signal.SIGKILL)  # its handler, lest it answer meanwhile
    finally:
        if first.poll() is None:
            first.kill()
    Path("answer.sh").write_text('#!/bin/sh\ncat >/dev/null\necho \'{"solution": "7"}\'\n')
    Path("answer.sh").chmod(0o755)
    done = cli("agent", "solve", "--once", "--handler", "cmd:./answer.sh", "--log-format", "json")
    assert done.code == 0, done.err
    lines = json_lines(done.err)
    (recovered,) = [line for line in lines if line["event"] == "claim-recovered"]
    assert (recovered["id"], recovered["stage"], recovered["level"]) == ("hang", "solve", "warning")
    assert recovered["agent"] == "agent:solve" and recovered["dead"]["pid"] == first.pid
    assert recovered["in_a_row"] == 1
    history = orjson.loads(cli("show", "hang").out)["history"]
    assert [e["outcome"] for e in history if e["stage"] == "solve"] == ["abandoned", "ok"]


def test_the_lines_carry_no_secret_of_the_spool_url(pg_cli: Cli) -> None:
    # The spool named in `started` is the URL as output shows it, without a password.
    url = str(pg_cli.spool).replace("postgres@", "postgres:hunter2@", 1)
    done = subprocess.run(
        [*Cli(url, pg_cli.data).argv("agent", "manage", "--once", "--log-format", "json")],
        capture_output=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert b"hunter2" not in done.stderr
    assert json_lines(done.stderr)[0]["event"] == "started"
