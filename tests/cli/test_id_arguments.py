"""Commands given ids: every id is checked before any is acted on, an id given twice counts
once, and an id that is not even a valid id is an unknown id. A riddle an agent is handling
makes the command say that it waits, and give up with exit 4."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from tests.conftest import Cli, queue_of, slow_solver


def submit(cli: Cli, *ids: str) -> None:
    for riddle_id in ids:
        done = cli("submit", "--id", riddle_id, "--question", "x * y =", "--data", "example/x.txt")
        assert done.code == 0, done.err


def error_lines(err: str) -> list[str]:
    assert "Traceback" not in err, err
    return [line for line in err.splitlines() if line.strip()]


def test_an_id_given_twice_counts_once(cli: Cli) -> None:
    submit(cli, "q3")
    held = cli("hold", "q3", "q3")
    assert (held.code, held.out, held.err) == (0, "q3\tincoming\n", "")
    released = cli("release", "q3", "-", input="q3\n")
    assert (released.code, released.out, released.err) == (0, "q3\tincoming\n", "")
    cancelled = cli("cancel", "q3", "q3")
    assert (cancelled.code, cancelled.out) == (0, "q3\n")
    retried = cli("retry", "q3", "q3")
    assert (retried.code, retried.out) == (0, "q3\tincoming\n")
    result = cli("result", "q3", "q3")
    assert (result.code, result.out) == (4, "")
    assert error_lines(result.err) == ["riddlectl: q3: not final yet"]
    assert len(cli("status", "q3", "q3", "--jsonl").out.splitlines()) == 1


@pytest.mark.parametrize("command", ["hold", "cancel"])
def test_an_unknown_id_changes_nothing(cli: Cli, command: str) -> None:
    submit(cli, "q3", "q4")
    refused = cli(command, "q3", "nope", "q4", "gone")
    assert refused.code == 3
    assert refused.out == ""
    assert error_lines(refused.err) == [
        "riddlectl: nope: no such riddle in the spool",
        "riddlectl: gone: no such riddle in the spool",
    ]
    assert queue_of(cli, "q3") == queue_of(cli, "q4") == "incoming"


def test_release_and_retry_with_an_unknown_id_change_nothing(cli: Cli) -> None:
    submit(cli, "q3", "f1")
    assert cli("hold", "q3").code == 0
    assert cli("cancel", "f1").code == 0
    released = cli("release", "q3", "nope")
    assert (released.code, released.out) == (3, "")
    assert queue_of(cli, "q3") == "hold"
    retried = cli("retry", "f1", "nope")
    assert (retried.code, retried.out) == (3, "")
    assert queue_of(cli, "f1") == "failed"


def test_an_id_that_cannot_be_acted_on_refuses_the_whole_command(cli: Cli) -> None:
    submit(cli, "q3", "f1", "h1")
    assert cli("cancel", "f1").code == 0
    assert cli("hold", "h1").code == 0
    refused = cli("hold", "q3", "f1")
    assert (refused.code, refused.out) == (2, "")
    assert error_lines(refused.err) == ["riddlectl: f1: cannot hold: it is in failed/, final"]
    assert queue_of(cli, "q3") == "incoming"
    refused = cli("retry", "f1", "h1")
    assert (refused.code, refused.out) == (2, "")
    assert error_lines(refused.err) == [
        "riddlectl: h1: cannot retry: it is held (release it first)"
    ]
    assert queue_of(cli, "f1") == "failed"
    # Unknown ids outrank ids that cannot be acted on: each is reported, exit 3.
    mixed = cli("retry", "h1", "nope")
    assert mixed.code == 3
    assert error_lines(mixed.err) == [
        "riddlectl: h1: cannot retry: it is held (release it first)",
        "riddlectl: nope: no such riddle in the spool",
    ]


def test_a_riddle_already_so_is_left_as_it_is_with_exit_0(cli: Cli) -> None:
    """One rule for every command that acts on ids: a riddle already as the command would
    leave it is left alone, the command prints its usual line and exits 0."""
    submit(cli, "q3", "f1")
    assert cli("cancel", "f1").code == 0
    assert cli("hold", "q3").code == 0
    again = cli("hold", "q3")
    assert (again.code, again.out, again.err) == (0, "q3\tincoming\n", "")
    assert cli("release", "q3").code == 0
    again = cli("release", "q3")
    assert (again.code, again.out, again.err) == (0, "q3\tincoming\n", "")
    in_pipeline = cli("retry", "q3")
    assert (in_pipeline.code, in_pipeline.out, in_pipeline.err) == (0, "q3\tincoming\n", "")
    again = cli("cancel", "f1")
    assert (again.code, again.out, again.err) == (0, "f1\n", "")
    assert queue_of(cli, "q3") == "incoming" and queue_of(cli, "f1") == "failed"
    history = cli("show", "q3").json()["history"]  # type: ignore[index]
    assert [e["stage"] for e in history].count("hold") == 1


@pytest.mark.parametrize("command", ["hold", "release", "cancel", "result", "show"])
def test_a_command_that_acts_on_ids_given_none_is_exit_2_in_one_line(
    cli: Cli, command: str
) -> None:
    submit(cli, "q3")
    refused = cli(command)
    assert (refused.code, refused.out) == (2, "")
    (line,) = error_lines(refused.err)
    assert line.startswith(f"riddlectl: {command}: missing argument 'ID"), line
    assert queue_of(cli, "q3") == "incoming"


@pytest.mark.parametrize(
    "command", ["hold", "release", "cancel", "retry", "result", "status", "show"]
)
def test_dash_with_nothing_on_stdin_acts_on_no_riddle(cli: Cli, command: str) -> None:
    """`-` that reads no ids is an empty list, as `xargs -r` takes it: nothing is printed
    or changed, exit 0 (`retry -` does not fall back to every failed riddle)."""
    submit(cli, "q3", "f1")
    assert cli("cancel", "f1").code == 0
    empty = cli(command, "-", input="")
    assert (empty.code, empty.out, empty.err) == (0, "", "")
    assert (queue_of(cli, "q3"), queue_of(cli, "f1")) == ("incoming", "failed")
    listed = cli("status", "-", "--json", input="\n")
    assert listed.json()["riddles"] == []  # type: ignore[index]


def test_show_prints_one_document_or_an_array_of_them_in_the_order_given(cli: Cli) -> None:
    submit(cli, "q3", "q4")
    one = cli("show", "-", input="q4\n")
    assert one.code == 0, one.err
    assert one.json()["id"] == "q4"  # type: ignore[index]
    several = cli("show", "q4", "-", input="q3 q4\n")
    assert several.code == 0, several.err
    assert [doc["id"] for doc in several.json()] == ["q4", "q3"]  # type: ignore[union-attr]
    refused = cli("show", "q3", "nope", "gone")
    assert (refused.code, refused.out) == (3, "")
    assert error_lines(refused.err) == [
        "riddlectl: nope: no such riddle in the spool",
        "riddlectl: gone: no such riddle in the spool",
    ]


def test_status_names_every_unknown_id_and_says_yes_or_no(cli: Cli) -> None:
    submit(cli, "q3")
    refused = cli("status", "a", "q3", "b")
    assert (refused.code, refused.out) == (3, "")
    assert error_lines(refused.err) == [
        "riddlectl: a: no such riddle in the spool",
        "riddlectl: b: no such riddle in the spool",
    ]
    refused = cli("result", "a", "q3", "b")
    assert refused.code == 3 and len(error_lines(refused.err)) == 2
    shown = cli("status", "q3").out.splitlines()
    assert shown[1].split()[:4] == ["q3", "incoming", "0", "no"]
    assert "False" not in cli("status").out and "True" not in cli("status").out


@pytest.mark.parametrize(
    "command", ["hold", "release", "cancel", "retry", "status", "show", "result"]
)
def test_an_id_that_is_not_valid_is_an_unknown_id(cli: Cli, command: str) -> None:
    submit(cli, "q3")
    # q3 as the command can act on it, so that only the bad id stops the command.
    prepare = {"release": "hold", "retry": "cancel"}.get(command)
    if prepare:
        assert cli(prepare, "q3").code == 0
    before = queue_of(cli, "q3")
    for bad in ("../x", "-a", "a b", "x" * 129, "line\nbreak"):
        # (One bad id beside q3: each unknown id is named, and there is only this one.)
        ids = ["q3", bad]
        refused = cli(command, "--", *ids)
        assert refused.code == 3, (bad, refused.err)
        assert refused.out == ""
        (line,) = error_lines(refused.err)
        assert line.startswith("riddlectl: '") and line.endswith(
            ": no such riddle in the spool (not a valid riddle id)"
        ), line
    assert queue_of(cli, "q3") == before


def handling(cli: Cli, tmp_path: Path, seconds: float) -> subprocess.Popen[bytes]:
    """An agent that is handling riddle `busy` (its handler started) when this returns."""
    submit(cli, "busy")
    assert cli("run", "--once", "--stages", "extract").code == 0
    agent = cli.popen(
        "agent",
        "solve",
        "--handler",
        slow_solver(tmp_path, seconds),
        "--timeout",
        "30",
        start_new_session=True,
    )
    deadline = time.monotonic() + 20
    while not (tmp_path / "started").exists():
        assert time.monotonic() < deadline, "the agent never started handling the riddle"
        time.sleep(0.02)
    return agent


def stop(agent: subprocess.Popen[bytes]) -> None:
    os.killpg(agent.pid, signal.SIGKILL)
    agent.wait(timeout=10)


def test_a_command_says_it_waits_for_the_agent_handling_a_riddle(cli: Cli, tmp_path: Path) -> None:
    agent = handling(cli, tmp_path, 2)
    try:
        held = cli("hold", "busy")
    finally:
        stop(agent)
    assert (held.code, held.out) == (0, "busy\tsolved\n"), held.err
    assert error_lines(held.err) == ["riddlectl: busy: waiting for the agent handling it…"]


def test_a_command_that_waits_too_long_exits_4_with_one_line(cli: Cli, tmp_path: Path) -> None:
    agent = handling(cli, tmp_path, 25)
    try:
        started = time.monotonic()
        held = cli("hold", "busy")
        waited = time.monotonic() - started
    finally:
        stop(agent)
    assert (held.code, held.out) == (4, "")
    assert error_lines(held.err) == [
        "riddlectl: busy: waiting for the agent handling it…",
        "riddlectl: busy: still handled by an agent after 5 s",
    ]
    assert waited < 15
    assert queue_of(cli, "busy") == "extracted"
