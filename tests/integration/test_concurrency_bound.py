"""`--concurrency N` is a hard bound on the handler calls in flight per agent (per stage in
`run`), spares included: a real `cmd:` solver that records when each call starts and ends,
slow enough (past the 1 s after which a spare worker joins) that spares would cross it."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from tests.conftest import Cli, submit_for_solving

# Each call appends "start T" then, 1.5 s later, "end T" (T: the clock every process shares).
SOLVER = """\
import json, sys, time
calls = sys.argv[1]
json.load(sys.stdin)
with open(calls, "a") as out:
    out.write(f"start {time.monotonic()}\\n")
time.sleep(1.5)
with open(calls, "a") as out:
    out.write(f"end {time.monotonic()}\\n")
print(json.dumps({"solution": "1", "explanation": "slowly"}))
"""


def most_in_flight(calls: Path) -> tuple[int, int]:
    """(the most calls running at once, the calls made), from the starts and ends."""
    marks = sorted(
        (float(t), 1 if kind == "start" else -1)
        for kind, t in (line.split() for line in calls.read_text().splitlines())
    )
    running = most = 0
    for _, step in sorted(marks, key=lambda m: (m[0], m[1])):  # an end before a start
        running += step
        most = max(most, running)
    return most, sum(1 for _, step in marks if step == 1)


def submit(cli: Cli, count: int) -> list[str]:
    ids = [f"r{n}" for n in range(count)]
    submit_for_solving(cli, *ids, question="one?")
    return ids


COMMANDS = {
    "agent": ["agent", "solve", "--once"],
    "run": ["run", "--once", "--stages", "solve,manage"],
}


@pytest.mark.parametrize("bound", [1, 2])
@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_no_more_handler_calls_in_flight_than_the_bound(
    cli: Cli, tmp_path: Path, command: str, bound: int
) -> None:
    (tmp_path / "solver.py").write_text(SOLVER)
    calls = tmp_path / "calls"
    ids = submit(cli, 3 * bound + 1)
    handler = f"cmd:{sys.executable} solver.py {calls}"
    argv = [*COMMANDS[command], "--concurrency", str(bound)]
    argv += ["--handler", handler if command == "agent" else f"solve={handler}"]
    done = cli(*argv, timeout=240)
    assert done.code == 0, done.err
    most, made = most_in_flight(calls)
    assert made == len(ids)  # each riddle once: nothing doubled by the bound
    assert most == bound, (most, bound)  # never above; and the bound is used
    for riddle_id in ids:
        assert (Path(cli.spool) / "done" / f"{riddle_id}.json").exists(), riddle_id


def test_the_bound_holds_on_postgresql(pg_cli: Cli, tmp_path: Path) -> None:
    (tmp_path / "solver.py").write_text(SOLVER)
    calls = tmp_path / "calls"
    ids = submit(pg_cli, 5)
    handler = f"cmd:{sys.executable} solver.py {calls}"
    done = pg_cli(*COMMANDS["agent"], "--concurrency", "2", "--handler", handler, timeout=240)
    assert done.code == 0, done.err
    most, made = most_in_flight(calls)
    assert (most, made) == (2, len(ids))


def test_without_a_bound_spares_still_join_a_slow_call(cli: Cli, tmp_path: Path) -> None:
    # The default stays as it was: one worker, and spares while a call runs slow, so a
    # hung handler does not hold up the others (tests/integration/test_hung_handlers.py).
    (tmp_path / "solver.py").write_text(SOLVER)
    calls = tmp_path / "calls"
    submit(cli, 4)
    done = cli(*COMMANDS["agent"], "--handler", f"cmd:{sys.executable} solver.py {calls}")
    assert done.code == 0, done.err
    most, made = most_in_flight(calls)
    assert made == 4 and most >= 2
