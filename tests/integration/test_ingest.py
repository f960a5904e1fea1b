"""`riddlectl ingest`: riddle files moved from a directory into any spool, by the drop-in
rules, then handled as if dropped into `incoming/`."""

from __future__ import annotations

import os
import time
from pathlib import Path

import orjson

from tests.conftest import Cli, example_doc
from tests.rig import until


def test_files_are_moved_in_and_handled(any_cli: Cli, tmp_path: Path) -> None:
    inbox = tmp_path / "inbox"
    inbox.mkdir()
    (inbox / "first.json").write_bytes(orjson.dumps(example_doc()))
    (inbox / "named.json").write_bytes(orjson.dumps(example_doc(id="own")))
    (inbox / "junk.json").write_bytes(b"{not json")
    os.utime(inbox / "junk.json", (time.time() - 60, time.time() - 60))  # not being written
    (inbox / ".partial.json").write_bytes(b"{")
    (inbox / "writing.tmp").write_bytes(b"{")
    done = any_cli("ingest", str(inbox))
    assert done.code == 0, done.err
    assert done.out.splitlines() == ["first.json", "junk.json", "named.json"]
    assert sorted(p.name for p in inbox.iterdir()) == [".partial.json", "writing.tmp"]
    ran = any_cli("run", "--once", env={"RIDDLECTL_DROP_IN_GRACE": "0.1"})
    assert ran.code == 0, ran.err
    assert any_cli("result", "first", "own").out == "first\t150\nown\t150\n"
    corrupt = any_cli("status", "--stage", "corrupt", "--json").json()
    assert [c["file"] for c in corrupt["corrupt"]] == ["junk.json"]  # type: ignore[index]


def test_a_young_file_that_does_not_read_yet_is_left_for_the_next_look(
    any_cli: Cli, tmp_path: Path
) -> None:
    inbox = tmp_path / "inbox"
    inbox.mkdir()
    (inbox / "half.json").write_bytes(b'{"riddle": {"quest')
    assert any_cli("ingest", str(inbox)).out == ""
    assert (inbox / "half.json").exists()


def test_watch_moves_what_arrives_until_interrupted(any_cli: Cli, tmp_path: Path) -> None:
    inbox = tmp_path / "inbox"
    inbox.mkdir()
    watching = any_cli.popen("ingest", str(inbox), "--watch", "--poll", "0.1")
    try:
        time.sleep(0.3)
        (inbox / "late.tmp").write_bytes(orjson.dumps(example_doc(id="late")))
        os.rename(inbox / "late.tmp", inbox / "late.json")  # as a careful writer does
        until(lambda: not (inbox / "late.json").exists(), 15)
    finally:
        watching.send_signal(2)  # SIGINT: a person's ^C
        out, err = watching.communicate(timeout=15)
    assert watching.returncode == 0, err
    assert out.decode().splitlines() == ["late.json"]
    assert any_cli("run", "--once").code == 0
    assert any_cli("result", "late").out == "150\n"


def test_a_directory_that_is_not_one_is_refused(cli: Cli, tmp_path: Path) -> None:
    (tmp_path / "file").write_text("x")
    done = cli("ingest", str(tmp_path / "file"))
    assert (done.code, done.err) == (2, f"riddlectl: {tmp_path / 'file'}: not a directory\n")
