"""`events` narrowed as an operator narrows a log: to some riddles (`--id`), a time
(`--since`), the last few (`-n`); `--follow` from the end, or after the last N as `tail -n
N -f` does; and each event's time in ISO 8601 (`at`). On every kind of spool."""

from __future__ import annotations

import datetime as dt
import subprocess
import threading
import time

import orjson
import pytest

from tests.conftest import Cli, example_doc


def submit(cli: Cli, *ids: str) -> None:
    done = cli("submit", "-", input=orjson.dumps([example_doc(id=i) for i in ids]))
    assert done.code == 0, done.err


def printed(cli: Cli, *args: str) -> list[dict[str, object]]:
    done = cli("events", *args)
    assert done.code == 0, done.err
    return [orjson.loads(line) for line in done.out.splitlines()]


def ids_of(events: list[dict[str, object]]) -> list[object]:
    return [event["id"] for event in events]


GAP = 2.0  # seconds between the events that --since sets apart


def test_events_are_narrowed_by_id_time_and_count(any_cli: Cli) -> None:
    submit(any_cli, "a1", "b1")
    time.sleep(GAP)
    between = dt.datetime.now(dt.UTC) - dt.timedelta(seconds=GAP / 4)
    submit(any_cli, "c1")
    assert ids_of(printed(any_cli)) == ["a1", "b1", "c1"]
    assert ids_of(printed(any_cli, "--id", "a1", "--id", "c1")) == ["a1", "c1"]
    assert ids_of(printed(any_cli, "--id", "nosuch")) == []
    # A duration ago: how long the command takes to start is no concern of a test (a
    # loaded machine takes seconds); the unit tests read durations against a fixed now.
    assert ids_of(printed(any_cli, "--since", "1h")) == ["a1", "b1", "c1"]
    assert ids_of(printed(any_cli, "--since", "0s")) == []
    aware = between.isoformat()  # +00:00
    naive = between.replace(tzinfo=None).isoformat()  # read as UTC
    zulu = naive + "Z"
    for when in (aware, naive, zulu):
        assert ids_of(printed(any_cli, "--since", when)) == ["c1"], when
    assert ids_of(printed(any_cli, "--since", "2999-01-01T00:00:00Z")) == []
    assert ids_of(printed(any_cli, "-n", "2")) == ["b1", "c1"]
    assert ids_of(printed(any_cli, "--tail", "0")) == []
    assert ids_of(printed(any_cli, "--tail", "9")) == ["a1", "b1", "c1"]
    assert ids_of(printed(any_cli, "--id", "a1", "--id", "b1", "-n", "1")) == ["b1"]
    assert ids_of(printed(any_cli, "--since", "1h", "-n", "1", "--id", "a1")) == ["a1"]


def test_each_event_says_its_time_in_iso_8601_beside_the_epoch(any_cli: Cli) -> None:
    submit(any_cli, "t1")
    (event,) = printed(any_cli)
    keys = list(event)
    assert keys[keys.index("time") + 1] == "at"
    at = str(event["at"])
    assert at.endswith("Z") and "T" in at
    parsed = dt.datetime.fromisoformat(at.replace("Z", "+00:00"))
    assert abs(parsed.timestamp() - float(event["time"])) < 0.001  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("args", "named"),
    [
        (["--since", "yesterday"], "--since"),
        (["--since", "-5m"], "--since"),
        (["--since", "2026-13-45"], "--since"),
        (["-n", "-1"], "-n"),
        (["--tail", "many"], "--tail"),
        (["--follow", "--since", "soon"], "--since"),
    ],
)
def test_a_bad_narrowing_is_exit_2_in_one_line(cli: Cli, args: list[str], named: str) -> None:
    done = cli("events", *args)
    assert done.code == 2, (done.code, done.err)
    assert len(done.err.splitlines()) == 1 and named in done.err, done.err
    assert "Traceback" not in done.err and done.out == ""


class Follower:
    """`events --follow …` in a subprocess, and the riddle ids it printed."""

    def __init__(self, cli: Cli, *args: str) -> None:
        self.proc = cli.popen("events", "--follow", *args)
        self.seen: list[str] = []
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.seen.append(str(orjson.loads(line)["id"]))

    def wait_for(self, count: int, timeout: float = 30) -> list[str]:
        deadline = time.monotonic() + timeout
        while len(self.seen) < count and time.monotonic() < deadline:
            time.sleep(0.05)
        return self.seen

    def stop(self) -> list[str]:
        self.proc.terminate()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
        self.reader.join(timeout=10)
        return self.seen


def test_follow_alone_starts_at_the_end(any_cli: Cli) -> None:
    submit(any_cli, "old1", "old2")
    follower = Follower(any_cli)
    try:
        # Riddles keep coming until the follower shows one: it printed none of the old.
        fresh = 0
        while not follower.seen and fresh < 100:
            fresh += 1
            submit(any_cli, f"new{fresh}")
            time.sleep(0.2)
        seen = follower.wait_for(1)
        assert seen, "the follower printed nothing"
        time.sleep(0.5)
    finally:
        seen = follower.stop()
    assert not {"old1", "old2"} & set(seen), seen
    first = int(seen[0].removeprefix("new"))
    assert seen == [f"new{n}" for n in range(first, fresh + 1)]


def test_follow_with_a_count_prints_the_last_ones_then_new_ones(any_cli: Cli) -> None:
    submit(any_cli, "p1", "p2", "p3")
    follower = Follower(any_cli, "-n", "2", "--id", "p1", "--id", "p3", "--id", "p4")
    try:
        assert follower.wait_for(2) == ["p1", "p3"]
        submit(any_cli, "p5", "p4")
        assert follower.wait_for(3) == ["p1", "p3", "p4"]
    finally:
        follower.stop()


def test_follow_since_prints_what_came_since_then_new_ones(any_cli: Cli) -> None:
    submit(any_cli, "s1")
    time.sleep(GAP)
    split = dt.datetime.now(dt.UTC) - dt.timedelta(seconds=GAP / 4)
    submit(any_cli, "s2")
    follower = Follower(any_cli, "--since", split.isoformat())
    try:
        assert follower.wait_for(1) == ["s2"]
        submit(any_cli, "s3")
        assert follower.wait_for(2) == ["s2", "s3"]
    finally:
        follower.stop()
