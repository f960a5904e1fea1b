"""`riddlectl corrupt list|show|drop|resubmit` on both spools: the files set aside."""

from __future__ import annotations

from pathlib import Path

import orjson

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
