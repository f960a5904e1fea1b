"""Ordinary use leaves a spool that `doctor` calls healthy: no stray lock files, no temp
files of commands that have exited. Drop-ins take their file name's stem as id, and what is
not a regular file in an inbox is set aside, never counted or waited on."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import orjson
import pytest

from tests.conftest import Cli, example_doc, submit_flags, write_json

ULID_LENGTH = 26


def ok(cli: Cli, *args: str, code: int = 0, input: str | bytes | None = None) -> str:
    done = cli(*args, input=input)
    assert done.code == code, (args, done.code, done.err)
    assert "Traceback" not in done.err, done.err
    return done.out


def assert_healthy(cli: Cli) -> None:
    doctor = cli("doctor")
    assert (doctor.code, doctor.out, doctor.err) == (0, "", "spool is healthy\n")
    assert sorted(p.name for p in (cli.spool / "tmp").iterdir()) == []


def test_doctor_is_quiet_after_a_session_of_every_command(cli: Cli, tmp_path: Path) -> None:
    ok(cli, "init")
    assert_healthy(cli)
    submit_flags(cli, "a1")
    generated = ok(cli, "submit", "--question", "x + y =", "--data", "example/x.txt",
                   "--data", "example/y.txt").strip()  # fmt: skip
    ok(cli, "submit", str(write_json(tmp_path / "f.json", example_doc(id="f1"))))
    ok(cli, "submit", "-", input=orjson.dumps([example_doc(id="s1"), example_doc(id="s2")]))
    # Refused submits: a duplicate, alone and beside a new id; a riddle given twice.
    ok(cli, "submit", "--id", "a1", "--question", "q", code=2)
    ok(cli, "submit", "-", input=orjson.dumps([example_doc(id="n1"), example_doc(id="a1")]),
       code=2)  # fmt: skip
    ok(cli, "submit", "-", input=orjson.dumps([example_doc(id="n2"), example_doc(id="n2")]),
       code=2)  # fmt: skip
    incoming = cli.spool / "incoming"
    write_json(incoming / "notes.txt", example_doc())
    write_json(incoming / "UPPER.JSON", example_doc())
    write_json(incoming / "weird name.json", example_doc())
    write_json(incoming / "named-otherwise.json", example_doc(id="own-id"))
    write_json(incoming / "odd name.txt", example_doc(id="own-id-2"))
    ok(cli, "hold", "s2")
    assert_healthy(cli)
    ok(cli, "run", "--once")
    assert_healthy(cli)
    ok(cli, "hold", "s2")  # already held: left as it is
    ok(cli, "release", "s2")
    submit_flags(cli, "c1")
    ok(cli, "cancel", "c1")
    ok(cli, "retry", "c1")
    ok(cli, "cancel", "c1")
    for command in ("hold", "release", "cancel", "retry", "status", "show", "result"):
        ok(cli, command, "nope", code=3)
        ok(cli, command, "--", "../nope", code=3)
    ok(cli, "hold", "s1", "nope", code=3)
    ok(cli, "run", "--once")
    ok(cli, "retry", "a1", "--from", "validate")
    ok(cli, "run", "--once")
    ok(cli, "status")
    ok(cli, "status", "--json")
    ok(cli, "status", "a1", generated, "notes", "UPPER", "own-id", "own-id-2")
    ok(cli, "show", "a1")
    ok(cli, "result", "a1", "s1", "s2", "f1", "notes", "UPPER", "own-id")
    ok(cli, "result", "c1", code=1)
    ok(cli, "events")
    ok(cli, "schema")
    assert_healthy(cli)
    ok(cli, "purge", "--older-than", "0s", "--done")
    ok(cli, "purge", "--older-than", "0s", "--failed")
    assert_healthy(cli)
    assert sorted(p.name for p in (cli.spool / "locks").iterdir()) == []


@pytest.fixture
def facts(cli: Cli) -> None:
    (cli.data / "f").mkdir()
    (cli.data / "f" / "xy.txt").write_text("x = 10\ny = 15\n")
    (cli.data / "f" / "z.txt").write_text("z = x + y\n")
    (cli.data / "f" / "q.txt").write_text("q = x + nothing\n")


def doc(riddle_id: str, question: str, *files: str) -> dict[str, object]:
    data = [{"type": "text", "file_plain": f"f/{name}"} for name in files]
    return {"id": riddle_id, "riddle": {"question": question}, "data": data}


def test_doctor_is_quiet_after_riddles_fail_get_rejected_and_spawn_sub_riddles(
    cli: Cli, facts: None, helpers: Path
) -> None:
    docs = [
        doc("plain", "x * y =", "xy.txt"),
        doc("parent", "z * 2 =", "xy.txt", "z.txt"),  # a sub-riddle for z
        doc("orphaned", "q * 2 =", "xy.txt", "q.txt"),  # its sub-riddle fails, so does it
        doc("unknown", "w * 2 =", "xy.txt"),  # fails at once
        {**doc("missing", "x =", "xy.txt"), "data": [{"file_plain": "f/xy.txt"}] * 2},
    ]
    ok(cli, "submit", "-", input=orjson.dumps(docs))
    write_json(cli.spool / "incoming" / "bad.json", {"riddle": {"question": 7}})
    os.utime(cli.spool / "incoming" / "bad.json", (time.time() - 60,) * 2)
    assert cli("run", "--once").code == 1
    assert (cli.spool / "done" / "parent-1.json").exists()
    assert (cli.spool / "failed" / "orphaned.json").exists()
    ok(cli, "submit", "-", input=orjson.dumps([doc("rejected", "x * y =", "xy.txt")]))
    wrong = f"solve=cmd:{sys.executable} {helpers}/wrong_then_right.py"
    ok(cli, "run", "--once", "--handler", wrong)
    assert cli("show", "rejected").json()["status"]["trial"] == 1
    # The one finding is the file set aside: a person has to look at it.
    doctor = cli("doctor")
    assert (doctor.code, doctor.out.split("\t")[:2]) == (1, ["found", "corrupt"]), doctor.out
    assert len(doctor.out.splitlines()) == 1
    assert sorted(p.name for p in (cli.spool / "tmp").iterdir()) == []
    lock_names = {p.name.removesuffix(".lock") for p in (cli.spool / "locks").iterdir()}
    assert "bad" not in lock_names


def test_commands_leave_no_temp_files_and_unknown_ids_no_lock_files(cli: Cli) -> None:
    submit_flags(cli, "t1")
    for command in ("hold", "release", "cancel", "retry"):
        ok(cli, command, "t1")
        assert list((cli.spool / "tmp").iterdir()) == [], command
        ok(cli, command, "ghost", code=3)
    assert sorted(p.name for p in (cli.spool / "locks").iterdir()) == ["t1.lock"]
    assert cli("doctor").code == 0


def test_purge_removes_the_lock_files_of_what_it_deletes(cli: Cli) -> None:
    docs = [example_doc(id=f"p{i:03}", status={"extract": {"required": False}}) for i in range(60)]
    ok(cli, "submit", "-", input=orjson.dumps(docs))
    ok(cli, "cancel", "-", input=" ".join(f"p{i:03}" for i in range(60)))
    assert len(ok(cli, "purge", "--older-than", "0s", "--failed").split()) == 60
    assert list((cli.spool / "locks").iterdir()) == []
    assert cli("doctor").code == 0


def test_a_drop_in_named_otherwise_leaves_no_lock_of_its_name(cli: Cli) -> None:
    ok(cli, "init")
    write_json(cli.spool / "incoming" / "file-name.json", example_doc(id="own-id"))
    ok(cli, "run", "--once")
    assert ok(cli, "result", "own-id") == "150\n"
    assert sorted(p.name for p in (cli.spool / "locks").iterdir()) == ["own-id.lock"]
    assert cli("doctor").code == 0


# -- a full disk ---------------------------------------------------------------------------------


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    mount = tmp_path / "small"
    mount.mkdir()
    made = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(mount)], capture_output=True
    )
    if made.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {made.stderr.decode().strip()}")
    yield mount
    subprocess.run(["umount", "-l", str(mount)], check=False)


def test_a_submit_that_fills_the_disk_leaves_no_lock_files(cli: Cli, small_disk: Path) -> None:
    full = Cli(small_disk / "spool", cli.data)
    ok(full, "init")
    big = "x" * 200_000  # five of these fill the 1 MiB disk
    docs = [example_doc(id=f"big{i}", riddle={"question": "x * y =", "context": big})
            for i in range(8)]  # fmt: skip
    refused = full("submit", "-", input=orjson.dumps(docs))
    assert refused.code != 0
    assert "No space left on device" in refused.err
    assert list((full.spool / "incoming").iterdir()) == []
    assert list((full.spool / "tmp").iterdir()) == []
    assert list((full.spool / "locks").iterdir()) == []


# -- drop-in names --------------------------------------------------------------------------------


def test_drop_ins_take_their_file_names_stem(cli: Cli) -> None:
    ok(cli, "init")
    incoming = cli.spool / "incoming"
    for name in ("notes.txt", "UPPER.JSON", "two.dots.json", "no-extension"):
        write_json(incoming / name, example_doc())
    ok(cli, "run", "--once")
    for riddle_id in ("notes", "UPPER", "two.dots", "no-extension"):
        assert ok(cli, "result", riddle_id) == "150\n", riddle_id
    assert sorted(p.name for p in (cli.spool / "done").iterdir()) == [
        "UPPER.json", "no-extension.json", "notes.json", "two.dots.json"
    ]  # fmt: skip
    assert cli("doctor").code == 0


def test_a_stem_that_is_not_an_id_gets_a_generated_one(cli: Cli) -> None:
    ok(cli, "init")
    incoming = cli.spool / "incoming"
    names = ["weird name.json", "-dash.json", "x" * 130 + ".json", "ünï.json"]
    for name in names:
        write_json(incoming / name, example_doc())
    ok(cli, "run", "--once")
    done = sorted(p.name.removesuffix(".json") for p in (cli.spool / "done").iterdir())
    assert len(done) == len(names)
    assert all(len(riddle_id) == ULID_LENGTH for riddle_id in done), done
    assert list((cli.spool / "corrupt").iterdir()) == []
    dropped = {orjson.loads(ok(cli, "show", i)).get("dropped_as") for i in done}
    assert dropped == set(names), "the document keeps the name it was dropped as"
    assert cli("doctor").code == 0


# -- what is not a regular file -------------------------------------------------------------------


def test_what_is_not_a_regular_file_is_set_aside_without_blocking(cli: Cli, tmp_path: Path) -> None:
    ok(cli, "init")
    incoming = cli.spool / "incoming"
    os.mkfifo(incoming / "fifo.json")
    os.mkfifo(incoming / "fifo2")
    (incoming / "dir.json").mkdir()
    (incoming / "dir.json" / "inner.json").write_bytes(orjson.dumps(example_doc()))
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(incoming / "sock.json"))
    target = write_json(tmp_path / "mine.json", example_doc(id="mine"))
    os.symlink(target, incoming / "mine.json")
    os.symlink(tmp_path / "nowhere.json", incoming / "dangling.json")
    counts = ok(cli, "status", "--json")
    assert orjson.loads(counts)["counts"]["incoming"] == 0
    started = time.monotonic()
    ok(cli, "run", "--once")
    assert time.monotonic() - started < 20
    server.close()
    assert list(incoming.iterdir()) == []
    corrupt = cli.spool / "corrupt"
    reasons = {p.name: p.read_text() for p in corrupt.glob("*.reason")}
    assert sorted(reasons) == [
        f"{n}.reason"
        for n in ("dangling.json", "dir.json", "fifo.json", "fifo2", "mine.json", "sock.json")
    ]
    assert "not a regular file (a FIFO)" in reasons["fifo.json.reason"]
    assert "not a regular file (a directory)" in reasons["dir.json.reason"]
    assert "not a regular file (a socket)" in reasons["sock.json.reason"]
    assert "not a regular file (a symbolic link)" in reasons["mine.json.reason"]
    assert orjson.loads(ok(cli, "status", "--json"))["counts"]["corrupt"] == 6
    assert target.read_bytes() == orjson.dumps(example_doc(id="mine"))
    assert cli("doctor").code == 1  # set aside: a person has to look


def test_a_riddle_file_with_a_second_link_is_never_written_through(
    cli: Cli, tmp_path: Path
) -> None:
    ok(cli, "init")
    mine = write_json(tmp_path / "mine.json", example_doc(id="linked"))
    before = mine.read_bytes()
    os.link(mine, cli.spool / "incoming" / "linked.json")
    submit_flags(cli, "after")  # written after the link was recycled: not into `mine`
    ok(cli, "run", "--once")
    assert ok(cli, "result", "linked", "after") == "linked\t150\nafter\t150\n"
    assert mine.read_bytes() == before


def test_doctor_reports_what_is_not_a_regular_file_where_no_agent_takes_from(cli: Cli) -> None:
    submit_flags(cli, "h1")
    ok(cli, "hold", "h1")
    os.mkfifo(cli.spool / "hold" / "stray.json")
    (cli.spool / "done" / "folder").mkdir()
    counts = orjson.loads(ok(cli, "status", "--json"))["counts"]
    assert (counts["hold"], counts["done"]) == (1, 0)
    assert ok(cli, "status", "--stage", "hold", "--jsonl").count("\n") == 1
    doctor = cli("doctor")
    assert doctor.code == 1
    assert sorted(doctor.out.splitlines()) == [
        "found\tstray\tdone/folder\tnot a regular file (a directory)",
        "found\tstray\thold/stray.json\tnot a regular file (a FIFO)",
    ]
