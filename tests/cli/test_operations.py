"""The operator's command line: exit codes, JSON outputs, ids from stdin, drop-ins, cron."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

import orjson
import pytest

from tests.conftest import Cli, example_doc, submit_flags, write_json


def test_init_is_idempotent_and_status_needs_a_spool(cli: Cli, tmp_path: Path) -> None:
    cli = Cli(tmp_path / "new-spool", cli.data)
    assert cli("status").code == 5
    assert "riddlectl init" in cli("status").err
    assert cli("init").code == 0 and cli("init").code == 0
    assert (cli.spool / "corrupt").is_dir() and (cli.spool / "tmp").is_dir()
    assert cli("status", "--json").json()["counts"]["incoming"] == 0


def test_submit_refuses_bad_input_and_writes_nothing(cli: Cli, tmp_path: Path) -> None:
    cli("init")
    good = write_json(tmp_path / "good.json", example_doc(id="good"))
    bad = write_json(tmp_path / "bad.json", {"riddle": {"question": 7}})
    refused = cli("submit", str(good), str(bad))
    assert refused.code == 2
    assert refused.err.strip().splitlines() == [
        f"riddlectl: {bad}: riddle.question: must be a string (got 7)"
    ]
    assert cli("status", "--json").json()["counts"]["incoming"] == 0
    evil = write_json(
        tmp_path / "evil.json", example_doc(data=[{"file_plain": "../../etc/passwd"}])
    )
    assert "data[0].file_plain" in cli("submit", str(evil)).err
    assert cli("submit", "--question", "q", "--data", "nope.txt").code == 2
    assert cli("submit", "--question", "q", "--answer-kind", "weird").code == 2
    assert list((cli.spool / "incoming").iterdir()) == []


def test_submit_refuses_duplicate_ids(cli: Cli) -> None:
    submit_flags(cli, "dup")
    again = cli("submit", "--id", "dup", "--question", "q")
    assert again.code == 2 and "dup: id: id already in the spool" in again.err


def test_submit_reads_json_lines_and_arrays_from_stdin(cli: Cli) -> None:
    lines = b"\n".join(orjson.dumps(example_doc()) for _ in range(3))
    ids = cli("submit", "-", input=lines).out.split()
    assert len(ids) == 3 and ids == sorted(ids), "generated ids are time-ordered"
    array = orjson.dumps([example_doc(id="a1"), example_doc(id="a2")])
    assert cli("submit", input=array).out.split() == ["a1", "a2"]


def test_submit_wait_prints_the_result(cli: Cli) -> None:
    agent = cli.popen("run")
    try:
        waited = cli(
            "submit",
            "--question",
            "x * y =",
            "--data",
            "example/x.txt",
            "--data",
            "example/y.txt",
            "--wait",
            "--timeout",
            "30",
        )
        assert (waited.code, waited.out) == (0, "150\n")
    finally:
        agent.terminate()
        assert agent.wait(timeout=30) == 0


def test_result_exit_codes(cli: Cli) -> None:
    submit_flags(cli, "r1")
    assert cli("result", "nope").code == 3
    pending = cli("result", "r1")
    assert pending.code == 4 and pending.out == ""
    timed_out = cli("result", "r1", "--wait", "--timeout", "0.2")
    assert timed_out.code == 4
    cli("run", "--once")
    assert cli("result", "r1").out == "150\n"
    submit_flags(cli, "r2")
    cli("run", "--once")
    assert cli("result", "r1", "r2").out == "r1\t150\nr2\t150\n"
    docs = cli("result", "r1", "r2", "--json").json()
    assert [d["id"] for d in docs] == ["r1", "r2"]
    assert cli("show", "r1").json()["solution"]["solution"] == "150"
    assert cli("show", "nope").code == 3


def test_status_json_jsonl_stage_and_ids(cli: Cli) -> None:
    submit_flags(cli, "s1")
    submit_flags(cli, "s2", "--priority", "3")
    status = cli("status", "--json").json()
    assert status["counts"]["incoming"] == 2
    assert {r["id"] for r in status["riddles"]} == {"s1", "s2"}
    rows = [
        orjson.loads(line)
        for line in cli("status", "--jsonl", "--stage", "extract").out.splitlines()
    ]
    assert [r["id"] for r in rows] == ["s2", "s1"]  # newest first
    assert cli("status", "--jsonl", "--stage", "done").out == ""
    one = cli("status", "s2", "--json").json()["riddles"]
    assert one[0]["queue"] == "incoming" and one[0]["priority"] == 3
    assert cli("status", "s1", "ghost").code == 3
    assert cli("status", "--stage", "nowhere").code == 2
    piped = cli("status", "-", "--jsonl", input="s1\ns2\n")
    assert [orjson.loads(x)["id"] for x in piped.out.splitlines()] == ["s1", "s2"]


def test_priority_is_honoured(cli: Cli, tmp_path: Path) -> None:
    for name, priority in (("low", 0), ("high", 9), ("mid", 5)):
        submit_flags(cli, name, "--priority", str(priority), "--no-extract", "--no-validate")
    cli("run", "--once")
    solve_times = {}
    for event in map(orjson.loads, cli("events").out.splitlines()):
        if event["stage"] == "solve":
            solve_times[event["id"]] = event["time"]
    assert sorted(solve_times, key=solve_times.get) == ["high", "mid", "low"]


def test_hold_release_cancel_retry(cli: Cli) -> None:
    submit_flags(cli, "h1")
    assert cli("hold", "h1").code == 0
    assert cli("run", "--once").code == 0
    assert cli("status", "h1", "--json").json()["riddles"][0]["queue"] == "hold"
    assert cli("hold", "h1").code == 0  # already so: left as it is
    assert cli("status", "h1", "--json").json()["riddles"][0]["queue"] == "hold"
    assert cli("release", "h1").out == "h1\tincoming\n"
    assert cli("release", "h1").code == 0
    assert cli("status", "h1", "--json").json()["riddles"][0]["queue"] == "incoming"
    submit_flags(cli, "c1")
    assert cli("cancel", "c1").code == 0
    cancelled = cli("show", "c1").json()
    assert cancelled["error"] == "cancelled"
    assert cli("cancel", "ghost").code == 3
    cli("run", "--once")
    assert cli("retry", "c1").out == "c1\tincoming\n"
    cli("run", "--once")
    assert cli("result", "c1").out == "150\n"
    assert cli("retry", "c1", "--from", "validate").out == "c1\tsolved\n"
    assert cli("retry", "c1", "--from", "nowhere").code == 2


def test_retry_after_trials_starts_at_solve_keeping_history(cli: Cli, helpers: Path) -> None:
    submit_flags(cli, "t1")
    wrong = f"solve=cmd:{os.sys.executable} {helpers}/always_wrong.py"
    assert cli("run", "--once", "--handler", wrong, "--max-trials", "1").code == 1
    assert cli("retry", "--failed").out == "t1\textracted\n"
    doc = cli("show", "t1").json()
    assert len(doc["riddle"]["solutions_before"]) == 1 and doc["status"]["trial"] == 1
    cli("run", "--once", "--handler", wrong, "--max-trials", "1")
    assert cli("retry", "t1", "--reset-trials").code == 0
    assert cli("show", "t1").json()["status"]["trial"] == 0
    assert cli("run", "--once").code == 0
    assert cli("result", "t1").out == "150\n"


def test_ids_from_stdin_for_acting_commands(cli: Cli) -> None:
    for name in ("i1", "i2"):
        submit_flags(cli, name)
    held = cli("hold", "-", input="i1 i2\n")
    assert held.out.split() == ["i1", "incoming", "i2", "incoming"]
    assert sorted(p.name for p in (cli.spool / "hold").glob("*.json")) == ["i1.json", "i2.json"]


def test_purge_and_schema(cli: Cli) -> None:
    submit_flags(cli, "p1")
    cli("run", "--once")
    assert cli("purge", "--older-than", "1h").out == ""
    assert cli("purge", "--older-than", "soon").code == 2
    assert cli("purge", "--older-than", "0s", "--done").out == "p1\n"
    assert cli("show", "p1").code == 3
    schema = cli("schema").json()
    assert schema["type"] == "object" and "riddle" in schema["required"]


def test_events_log_every_hand_off(cli: Cli) -> None:
    submit_flags(cli, "e1")
    cli("run", "--once")
    events = [orjson.loads(line) for line in cli("events").out.splitlines()]
    assert [e["stage"] for e in events] == ["submit", "extract", "solve", "validate", "manage"]
    assert [e["outcome"] for e in events][-2:] == ["accepted", "accepted"]
    for event in events:
        assert {
            "time",
            "id",
            "stage",
            "from",
            "to",
            "outcome",
            "agent",
            "host",
            "pid",
            "rev",
        } <= event.keys()
    assert [e["rev"] for e in events] == [1, 2, 3, 4, 5]


def test_events_follow_streams_new_events(cli: Cli) -> None:
    cli("init")
    # The last ten first: f1 is printed whether it is logged before the follower starts
    # reading or after (alone, --follow starts at the end of the log).
    follower = cli.popen("events", "--follow", "-n", "10")
    try:
        submit_flags(cli, "f1")
        assert orjson.loads(follower.stdout.readline())["id"] == "f1"
        # It is following by now: what comes next is streamed as it comes.
        submit_flags(cli, "f2")
        assert orjson.loads(follower.stdout.readline())["id"] == "f2"
    finally:
        follower.terminate()
        follower.wait(timeout=10)


def test_drop_ins_are_picked_up_and_corrupt_set_aside(cli: Cli) -> None:
    cli("init")
    incoming = cli.spool / "incoming"
    write_json(incoming / "stem-id.json", example_doc())
    write_json(incoming / "other-name.json", example_doc(id="own-id"))
    (incoming / "garbage.json").write_text("{nope")
    old = time.time() - 60
    os.utime(incoming / "garbage.json", (old, old))
    (incoming / ".hidden.json").write_text("{}")
    (incoming / "partial.json.tmp").write_text("{}")
    assert cli("run", "--once").code == 0
    assert cli("result", "stem-id", "own-id").out == "stem-id\t150\nown-id\t150\n"
    assert (cli.spool / "corrupt" / "garbage.json").exists()
    assert "not valid JSON" in (cli.spool / "corrupt" / "garbage.json.reason").read_text()
    assert cli("status", "--json").json()["counts"]["corrupt"] == 1
    assert sorted(p.name for p in incoming.iterdir()) == [".hidden.json", "partial.json.tmp"]
    doctor = cli("doctor")
    assert doctor.code == 1 and "corrupt\tgarbage.json" in doctor.out


def test_slow_drop_in_is_not_read_early(cli: Cli) -> None:
    cli("init")
    agent = cli.popen("agent", "extract")
    try:
        raw = orjson.dumps(example_doc(id="slow"))
        with open(cli.spool / "incoming" / "slow.json", "wb") as handle:
            for start in range(0, len(raw), 16):
                handle.write(raw[start : start + 16])
                handle.flush()
                time.sleep(0.05)
        deadline = time.time() + 30
        while not (cli.spool / "extracted" / "slow.json").exists() and time.time() < deadline:
            time.sleep(0.1)
    finally:
        agent.terminate()
        assert agent.wait(timeout=30) == 0
    assert (cli.spool / "extracted" / "slow.json").exists()
    assert list((cli.spool / "corrupt").glob("slow*")) == []


def test_bad_data_in_a_drop_in_fails_without_reading(cli: Cli, tmp_path: Path) -> None:
    cli("init")
    secret = tmp_path / "secret.txt"
    secret.write_text("x = 1\n")
    os.symlink(secret, cli.data / "link.txt")
    write_json(
        cli.spool / "incoming" / "linked.json", example_doc(data=[{"file_plain": "link.txt"}])
    )
    assert cli("run", "--once").code == 1
    assert "resolves outside the data directory" in cli("show", "linked").json()["error"]


def test_two_run_once_share_the_work(cli: Cli, helpers: Path) -> None:
    docs = [example_doc(id=f"w{i:03}") for i in range(60)]
    cli("submit", "-", input=orjson.dumps(docs))
    # Solving takes 6 s for one process alone, so the second has started long before the
    # first could be done: both must get a share, however loaded the machine.
    env = {**os.environ, "PYTHONPATH": str(helpers)}
    argv = ("run", "--once", "--json", "--handler", "solve=py_handlers:sluggish_calculator")
    runs = [cli.popen(*argv, env=env) for _ in range(2)]
    summaries = []
    for proc in runs:
        out, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err
        summaries.append(orjson.loads(out))
    assert sum(s["done"] for s in summaries) == 60
    assert all(s["done"] > 0 for s in summaries)
    handled = [
        orjson.loads(x) for x in cli("events").out.splitlines() if b'"extract"' in x.encode()
    ]
    assert len(handled) == 60, "each riddle extracted exactly once"


def test_doctor_fixes_tmp_leftovers_and_duplicates(cli: Cli) -> None:
    submit_flags(cli, "d1")
    assert cli("doctor").code == 0
    leftover = cli.spool / "tmp" / "x.json.1.2.tmp"
    leftover.write_text("{")
    os.utime(leftover, (time.time() - 3600,) * 2)
    copy = (cli.spool / "incoming" / "d1.json").read_bytes()
    (cli.spool / "done" / "d1.json").write_bytes(copy)
    found = cli("doctor", "--json")
    assert found.code == 1
    assert {f["kind"] for f in found.json()["findings"]} == {"tmp-leftover", "duplicate"}
    assert cli("doctor", "--fix").code == 0
    assert not leftover.exists()
    assert len(list(cli.spool.glob("*/d1.json"))) == 1


def test_a_copy_made_by_hand_is_resolved_when_an_agent_starts(cli: Cli) -> None:
    """A claim looks for a second copy only where a commit's record says one can lie; a
    copy a person made anywhere else is resolved by the next agent's start (the newer
    rev wins), before that agent could handle the older copy."""
    submit_flags(cli, "d1")
    doc = orjson.loads((cli.spool / "incoming" / "d1.json").read_bytes())
    (cli.spool / "hold" / "d1.json").write_bytes(orjson.dumps({**doc, "rev": doc["rev"] + 1}))
    assert cli("agent", "extract", "--once").code == 0
    assert sorted(p.parent.name for p in cli.spool.glob("*/d1.json")) == ["hold"]
    assert cli("doctor").code == 0
    events = [orjson.loads(line) for line in cli("events").out.splitlines()]
    assert not any(event["stage"] == "extract" for event in events)


def test_completion_lists_data_files(cli: Cli) -> None:
    env = {
        **os.environ,
        "_RIDDLECTL_COMPLETE": "complete_bash",
        "COMP_WORDS": f"riddlectl --data-dir {cli.data} submit --data exa",
        "COMP_CWORD": "5",
    }
    proc = subprocess.run(cli.argv()[:1], env=env, capture_output=True, text=True, timeout=30)
    assert "example/x.txt" in proc.stdout


@pytest.mark.parametrize(
    "args",
    [
        ["bogus"],
        ["run", "--stages", "nope"],
        ["agent", "nope"],
        ["run", "--handler", "solve"],
        ["status", "--limit", "x"],
    ],
)
def test_bad_usage_exits_2(cli: Cli, args: list[str]) -> None:
    cli("init")
    assert cli(*args).code == 2


def test_status_watch_refreshes_until_interrupted(cli: Cli) -> None:
    submit_flags(cli, "sw")
    watcher = cli.popen("status", "--watch", "--jsonl")
    try:
        first = orjson.loads(watcher.stdout.readline())
        assert first["id"] == "sw" and first["queue"] == "incoming"
        cli("hold", "sw")
        deadline = time.time() + 30
        while time.time() < deadline:
            if orjson.loads(watcher.stdout.readline())["queue"] == "hold":
                break
        else:
            pytest.fail("status --watch never showed the riddle held")
    finally:
        watcher.send_signal(signal.SIGINT)
        _, err = watcher.communicate(timeout=10)
    assert watcher.returncode == 130 and b"Traceback" not in err  # ended by Ctrl-C


def test_a_drop_in_that_is_no_riddle_is_set_aside_with_a_one_line_reason(cli: Cli) -> None:
    odd = cli.spool / "incoming" / "odd.json"
    write_json(odd, {"riddle": "what is 1 + 1?", "priority": "x"})
    os.utime(odd, (time.time() - 60,) * 2)  # written a minute ago: past the drop-in grace
    assert cli("run", "--once").code == 0
    reason = (cli.spool / "corrupt" / "odd.json.reason").read_text().strip()
    assert reason.endswith(
        'odd.json: riddle: must be an object (got "what is 1 + 1?"); '
        'priority must be an integer (got "x")'
    ), reason


def test_doctor_fix_keeps_the_solved_copy_in_done_when_two_copies_tie(cli: Cli) -> None:
    """A copy of a done riddle put into failed/ by hand, same rev: the copy in done/ that
    says it is solved wins (not the queue further along), and doctor says which it kept."""
    submit_flags(cli, "tie")
    assert cli("run", "--once").code == 0
    done = cli.spool / "done" / "tie.json"
    assert orjson.loads(done.read_bytes())["status"]["solved"] is True
    (cli.spool / "failed" / "tie.json").write_bytes(done.read_bytes())
    rev = orjson.loads(done.read_bytes())["rev"]
    fixed = cli("doctor", "--fix")
    assert fixed.code == 0, fixed.err
    assert fixed.out.splitlines() == [
        f"fixed\tduplicate\ttie\tin done, failed; kept the copy in done (rev {rev}, solved)"
    ]
    assert [p.parent.name for p in cli.spool.glob("*/tie.json")] == ["done"]
    shown = cli("status", "tie", "--json").json()
    assert shown["riddles"][0]["queue"] == "done"  # type: ignore[index]


def test_doctor_says_the_level_of_each_finding_and_strict_adds_nothing_to_a_sound_spool(
    cli: Cli,
) -> None:
    """A directory spool has no surroundings to warn of: --strict changes nothing there;
    a problem is one, with --strict or without."""
    submit_flags(cli, "s1")
    assert cli("doctor", "--strict").code == 0
    leftover = cli.spool / "tmp" / "x.json.1.2.tmp"
    leftover.write_text("{")
    os.utime(leftover, (time.time() - 3600,) * 2)
    for args in ([], ["--strict"]):
        shown = cli("doctor", "--json", *args)
        assert shown.code == 1
        found = shown.json()
        assert isinstance(found, dict)
        assert (found["ok"], found["problems"], found["warnings"]) == (False, 1, 0)
        assert [f["level"] for f in found["findings"]] == ["problem"]
    assert cli("doctor", "--fix").code == 0 and cli("doctor", "--strict").code == 0
