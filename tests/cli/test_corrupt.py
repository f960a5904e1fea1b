"""`riddlectl corrupt list|show|drop|resubmit` on both spools: the files set aside."""

from __future__ import annotations

import os
import socket
from pathlib import Path

import orjson
import pytest

from riddlectl.spool import open_spool
from riddlectl.spool.states import Queue
from tests.conftest import Cli


def set_aside(cli: Cli, name: str, raw: bytes) -> None:
    """Drop `raw` into incoming/ as `name` and let a claim set it aside."""
    spool = open_spool(cli.spool, drop_in_grace=0.0)
    try:
        spool.drop_in(Queue.INCOMING, name, raw)
        for claim in spool.claim(Queue.INCOMING, limit=10):  # riddles already there
            spool.release(claim)
        assert name in [c.name for c in spool.corrupt_files()]
    finally:
        spool.close()


def test_list_show_drop(any_cli: Cli) -> None:
    set_aside(any_cli, "bad.json", b'{"riddle": {"question": "x ="')
    set_aside(any_cli, "worse.json", b"<html>")
    listed = any_cli("corrupt", "list", "--json")
    assert listed.code == 0, listed.err
    files = orjson.loads(listed.out)
    assert [f["name"] for f in files] == ["bad.json", "worse.json"]
    assert "not valid JSON" in files[0]["reason"] and files[1]["bytes"] == 6
    plain = any_cli("corrupt", "list").out.splitlines()
    assert plain[0].startswith("bad.json\t29\t")
    shown = any_cli("corrupt", "show", "worse.json")
    assert (shown.code, shown.out) == (0, "<html>")
    unknown = any_cli("corrupt", "show", "nope.json")
    assert unknown.code == 3 and "corrupt/nope.json" in unknown.err
    refused = any_cli("corrupt", "drop", "worse.json", "nope.json")
    assert refused.code == 3  # all or none: worse.json is still there
    assert len(orjson.loads(any_cli("corrupt", "list", "--json").out)) == 2
    dropped = any_cli("corrupt", "drop", "worse.json")
    assert (dropped.code, dropped.out) == (0, "worse.json\n")
    assert [f["name"] for f in orjson.loads(any_cli("corrupt", "list", "--json").out)] == [
        "bad.json"
    ]


EXAMPLE = {
    "riddle": {"context": "[Taschenrechner]", "question": "x * y ="},
    "data": [{"type": "text", "file_plain": f"example/{n}.txt"} for n in "xyz"],
}


def test_resubmit_corrected_from_stdin_runs_to_done(any_cli: Cli) -> None:
    set_aside(any_cli, "fix-me.json", orjson.dumps(EXAMPLE)[:-1])  # the last brace lost
    broken = any_cli("corrupt", "resubmit", "fix-me.json")
    assert broken.code == 2 and "corrupt/fix-me.json:1:" in broken.err
    invalid = any_cli("corrupt", "resubmit", "fix-me.json", "-", input='{"riddle": {}}')
    assert invalid.code == 2 and "riddle.question" in invalid.err
    done = any_cli("corrupt", "resubmit", "fix-me.json", "-", input=orjson.dumps(EXAMPLE))
    assert (done.code, done.out) == (0, "fix-me\n"), done.err  # the file's stem is its id
    assert orjson.loads(any_cli("corrupt", "list", "--json").out) == []
    assert any_cli("run", "--once").code == 0
    assert any_cli("result", "fix-me").out.strip().startswith("150")


def test_resubmit_as_it_is_and_from_a_file(any_cli: Cli, tmp_path: Path) -> None:
    assert any_cli("submit", "--id", "x1", "--question", "1 + 1 =").code == 0
    assert any_cli("cancel", "x1").code == 0  # in failed/: a drop-in of x1 is no riddle
    set_aside(any_cli, "twice.json", b'{"id": "x1", "riddle": {"question": "1 + 1 ="}}')
    refused = any_cli("corrupt", "resubmit", "twice.json")  # x1 is taken: the file stays
    assert refused.code == 2 and "x1" in refused.err
    assert [f["name"] for f in orjson.loads(any_cli("corrupt", "list", "--json").out)] == [
        "twice.json"
    ]
    corrected = tmp_path / "corrected.json"
    corrected.write_bytes(b'{"id": "x2", "riddle": {"question": "1 + 1 ="}}')
    done = any_cli("corrupt", "resubmit", "twice.json", str(corrected))
    assert (done.code, done.out) == (0, "x2\n"), done.err
    assert any_cli("status", "x2").code == 0
    assert any_cli("corrupt", "resubmit", "twice.json").code == 3


@pytest.mark.parametrize("name", ["batch.jsonl", "batch.json"])
def test_several_riddles_dropped_as_one_file_are_told_and_taken_by_resubmit(
    any_cli: Cli, name: str
) -> None:
    """A file of JSON Lines (or an array) dropped into incoming/ is set aside as no
    riddle, with a reason a person can act on, and the command it names takes each."""
    docs = [{"riddle": {"question": q}} for q in ("1 + 1 =", "2 + 3 =", "4 * 5 =")]
    if name.endswith(".jsonl"):
        raw = b"".join(orjson.dumps(doc) + b"\n" for doc in docs)
    else:
        raw = orjson.dumps(docs)
    set_aside(any_cli, name, raw)
    (entry,) = orjson.loads(any_cli("corrupt", "list", "--json").out)
    assert entry["reason"] == (
        f"incoming/{name}: 3 riddles in one file (JSON Lines or an array), where a drop-in "
        "holds one: `riddlectl submit FILE` takes each of them, as does `riddlectl corrupt "
        "resubmit NAME` of a spool's set-aside file"
    )
    taken = any_cli("corrupt", "resubmit", name)
    assert taken.code == 0, taken.err
    ids = taken.out.split()
    assert len(ids) == 3 and orjson.loads(any_cli("corrupt", "list", "--json").out) == []
    assert any_cli("run", "--once").code == 0
    results = any_cli("result", *ids).out.splitlines()
    assert [line.split("\t")[1] for line in results] == ["2", "5", "20"]


SECRET = "secret-marker-7f3a"  # in a file outside the spool: never in any output


def entries_not_regular(spool: Path, outside: Path) -> dict[str, str]:
    """Entries of corrupt/ that are no regular file, as a claim sets them aside (with a
    reason beside each), by name, with what `show` must say each is."""
    (outside / "secret.txt").write_text(f'{{"riddle": {{"question": "{SECRET}"}}}}')
    corrupt = spool / "corrupt"
    os.mkfifo(corrupt / "fifo.json")
    (corrupt / "out.json").symlink_to(outside / "secret.txt")
    (spool / "kept.txt").write_text("a file of the spool's own")
    (corrupt / "in.json").symlink_to(spool / "kept.txt")
    (corrupt / "dangling.json").symlink_to(outside / "nothing-here")
    (corrupt / "todir.json").symlink_to(outside, target_is_directory=True)
    (corrupt / "dir.json").mkdir()
    (corrupt / "dir.json" / "inner.json").write_text("{}")
    sock = socket.socket(socket.AF_UNIX)
    sock.bind(str(corrupt / "sock.json"))
    sock.close()
    kinds = {
        "fifo.json": "a FIFO",
        "out.json": "a symbolic link",
        "in.json": "a symbolic link",
        "dangling.json": "a symbolic link",
        "todir.json": "a symbolic link",
        "dir.json": "a directory",
        "sock.json": "a socket",
    }
    for name, kind in kinds.items():
        (corrupt / f"{name}.reason").write_text(f"incoming/{name}: not a regular file ({kind})\n")
    return kinds


def test_entries_that_are_no_regular_file_are_listed_refused_and_dropped(
    cli: Cli, tmp_path: Path
) -> None:
    """A FIFO, a socket, links (out of the spool, inside it, dangling, to a directory) and
    a directory in corrupt/: listed for what they are, never opened (no command blocks,
    no output holds what a link leads to); `show` and `resubmit` say what each is (exit
    2), `drop` removes the entry itself, after which doctor is content."""
    outside = tmp_path / "outside"
    outside.mkdir()
    kinds = entries_not_regular(Path(cli.spool), outside)
    listed = cli("corrupt", "list", "--json", timeout=60)
    assert listed.code == 0, listed.err
    assert {f["name"]: f["kind"] for f in orjson.loads(listed.out)} == kinds
    assert all(f["bytes"] == 0 for f in orjson.loads(listed.out))
    plain = cli("corrupt", "list", timeout=60)
    assert plain.code == 0 and "out.json\t-\tincoming/out.json" in plain.out
    assert cli("doctor", timeout=60).code == 1
    outputs = [listed.out, plain.out]
    for name, kind in kinds.items():
        shown = cli("corrupt", "show", name, timeout=60)
        assert (shown.code, shown.out) == (2, ""), (name, shown)
        assert shown.err == f"riddlectl: corrupt/{name}: {kind}; not shown\n"
        again = cli("corrupt", "resubmit", name, timeout=60)
        assert (again.code, again.out) == (2, ""), (name, again)
        assert again.err == f"riddlectl: corrupt/{name}: {kind}; not submitted\n"
        outputs += [shown.err, again.err]
    assert not any(SECRET in text for text in outputs)
    dropped = cli("corrupt", "drop", *kinds, timeout=60)
    assert dropped.code == 0, dropped.err
    assert sorted(os.listdir(Path(cli.spool) / "corrupt")) == []
    assert sorted(os.listdir(outside)) == ["secret.txt"]  # targets untouched
    assert (Path(cli.spool) / "kept.txt").exists()
    assert cli("doctor", timeout=60).code == 0


def test_resubmit_names_the_corrected_file_at_fault(cli: Cli, tmp_path: Path) -> None:
    set_aside(cli, "a.json", b"<html>")
    other = tmp_path / "other.txt"
    other.write_text("root:*:19000:0:99999:7:::\n")
    refused = cli("corrupt", "resubmit", "a.json", str(other))
    assert refused.code == 2 and refused.err.startswith(f"riddlectl: {other}:1:"), refused.err
    piped = cli("corrupt", "resubmit", "a.json", "-", input="nope")
    assert piped.code == 2 and piped.err.startswith("riddlectl: <stdin>:1:"), piped.err
    as_it_is = cli("corrupt", "resubmit", "a.json")
    assert as_it_is.code == 2 and as_it_is.err.startswith("riddlectl: corrupt/a.json:1:")
