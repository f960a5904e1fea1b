"""`riddlectl ingest`: riddle files moved from a directory into any spool, by the drop-in
rules, then handled as if dropped into `incoming/`."""

from __future__ import annotations

import os
import socket
import time
from pathlib import Path

import orjson
import pytest

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
    assert done.out.splitlines() == ["first.json", "named.json"]
    assert sorted(p.name for p in inbox.iterdir()) == [".partial.json", "corrupt", "writing.tmp"]
    set_aside = sorted(p.name for p in (inbox / "corrupt").iterdir())
    assert set_aside == ["junk.json", "junk.json.reason"]
    ran = any_cli("run", "--once", env={"RIDDLECTL_DROP_IN_GRACE": "0.1"})
    assert ran.code == 0, ran.err
    assert any_cli("result", "first", "own").out == "first\t150\nown\t150\n"
    corrupt = any_cli("status", "--stage", "corrupt", "--json").json()
    assert corrupt["corrupt"] == []  # type: ignore[index]


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
    assert watching.returncode == 130, err  # after the orderly stop, as Ctrl-C ends any command
    assert out.decode().splitlines() == ["late.json"]
    assert any_cli("run", "--once").code == 0
    assert any_cli("result", "late").out == "150\n"


def test_a_directory_that_is_not_one_is_refused(cli: Cli, tmp_path: Path) -> None:
    (tmp_path / "file").write_text("x")
    done = cli("ingest", str(tmp_path / "file"))
    assert (done.code, done.err) == (2, f"riddlectl: {tmp_path / 'file'}: not a directory\n")


BOTH = pytest.mark.parametrize(
    "any_cli", ["fs", pytest.param("postgres", marks=pytest.mark.postgres)], indirect=True
)


def _old(path: Path) -> None:
    """As a file whose writer finished long ago: judged at once, with no grace."""
    os.utime(path, (time.time() - 60, time.time() - 60))


@BOTH
def test_files_that_are_no_riddle_are_set_aside_with_the_reason(
    any_cli: Cli, tmp_path: Path
) -> None:
    inbox = tmp_path / "inbox"
    inbox.mkdir()
    (any_cli.data / "big.txt").write_text("x = 1\n" * 100)
    bad = {
        "junk.json": b"{not json",
        "typed.json": orjson.dumps({"riddle": 5}),
        "empty.json": orjson.dumps(example_doc(riddle={"question": " "})),
        "missing.json": orjson.dumps(
            example_doc(data=[{"type": "text", "file_plain": "example/nonesuch.txt"}])
        ),
        "outside.json": orjson.dumps(
            example_doc(data=[{"type": "text", "file_plain": "../outside.txt"}])
        ),
        "big.json": orjson.dumps(example_doc(data=[{"type": "text", "file_plain": "big.txt"}])),
        "badid.json": orjson.dumps(example_doc(id="no/slash")),
    }
    (tmp_path / "outside.txt").write_text("x = 1\n")
    for name, raw in bad.items():
        (inbox / name).write_bytes(raw)
        _old(inbox / name)
    (inbox / "good.json").write_bytes(orjson.dumps(example_doc()))
    done = any_cli("ingest", str(inbox), env={"RIDDLECTL_MAX_DATA_BYTES": "100"})
    assert done.code == 0, done.err
    assert done.out == "good.json\n"
    assert sorted(p.name for p in inbox.iterdir()) == ["corrupt"]
    corrupt = inbox / "corrupt"
    assert sorted(p.name for p in corrupt.iterdir()) == sorted(
        [*bad, *(f"{name}.reason" for name in bad)]
    )
    for name, raw in bad.items():
        assert (corrupt / name).read_bytes() == raw  # set aside as it was
        reason = (corrupt / f"{name}.reason").read_text()
        assert reason.endswith("\n") and reason.count("\n") == 1, reason
    lines = done.err.splitlines()
    assert len(lines) == len(bad), done.err
    for name in bad:
        (line,) = [line for line in lines if f"{inbox / name}: " in line]
        assert line.startswith("riddlectl: ")
    fields = {
        "empty.json": "riddle.question",
        "missing.json": "data[0].file_plain",
        "outside.json": "data[0].file_plain",
        "big.json": "data[0].file_plain",
        "badid.json": "id",
    }
    for name, field in fields.items():
        assert f"{inbox / name}: {field}: " in done.err, done.err
        assert (corrupt / f"{name}.reason").read_text().startswith(f"{field}: ")
    ran = any_cli("run", "--once")
    assert ran.code == 0, ran.err
    assert any_cli("result", "good").out == "150\n"
    assert any_cli("status", "--stage", "corrupt", "--json").json()["corrupt"] == []  # type: ignore[index]


@BOTH
def test_a_file_named_like_one_set_aside_before_is_set_aside_beside_it(
    any_cli: Cli, tmp_path: Path
) -> None:
    inbox = tmp_path / "inbox"
    inbox.mkdir()
    for content in (b"{one", b"{two"):
        (inbox / "bad.json").write_bytes(content)
        _old(inbox / "bad.json")
        assert any_cli("ingest", str(inbox)).code == 0
    kept = sorted((inbox / "corrupt").iterdir())
    assert len(kept) == 4
    assert sorted(p.read_bytes() for p in kept if not p.name.endswith(".reason")) == [
        b"{one",
        b"{two",
    ]


@BOTH
def test_an_id_already_in_the_spool_is_set_aside(any_cli: Cli, tmp_path: Path) -> None:
    assert any_cli("submit", "--question", "1 + 1 =", "--id", "taken").code == 0
    inbox = tmp_path / "inbox"
    inbox.mkdir()
    (inbox / "again.json").write_bytes(orjson.dumps(example_doc(id="taken")))
    _old(inbox / "again.json")
    done = any_cli("ingest", str(inbox))
    assert (done.code, done.out) == (0, "")
    assert f"{inbox / 'again.json'}: id: " in done.err
    assert (inbox / "corrupt" / "again.json").exists()


@BOTH
def test_a_young_file_whose_data_is_missing_waits_for_the_grace(
    any_cli: Cli, tmp_path: Path
) -> None:
    inbox = tmp_path / "inbox"
    inbox.mkdir()
    doc = example_doc(data=[{"type": "text", "file_plain": "example/later.txt"}])
    (inbox / "early.json").write_bytes(orjson.dumps(doc))
    waited = any_cli("ingest", str(inbox), env={"RIDDLECTL_DROP_IN_GRACE": "600"})
    assert (waited.code, waited.out) == (0, "")
    assert waited.err == (
        f"riddlectl: {inbox}: 1 file(s) younger than the 600 s grace left for the next look "
        "(--wait waits for them)\n"
    )
    assert (inbox / "early.json").exists()


def test_two_files_with_one_id_in_one_look_take_it_once(any_cli: Cli, tmp_path: Path) -> None:
    inbox = tmp_path / "inbox"
    inbox.mkdir()
    for name in ("a.json", "b.json"):
        (inbox / name).write_bytes(orjson.dumps(example_doc(id="twice")))
        _old(inbox / name)
    done = any_cli("ingest", str(inbox))
    assert done.code == 0, done.err
    assert done.out.splitlines() == ["a.json"]
    assert (inbox / "corrupt" / "b.json.reason").read_text() == (
        "id: twice is already in the spool\n"
    )
    shown = any_cli("status", "twice", "--json").json()
    assert shown["riddles"][0]["queue"] == "incoming"  # type: ignore[index]


def test_a_thousand_files_in_one_look_are_all_riddles(any_cli: Cli, tmp_path: Path) -> None:
    """Files are taken in batches (one transaction, or one flush, for many): every one
    is moved in under its id, and a bad one among them is set aside alone."""
    inbox = tmp_path / "inbox"
    inbox.mkdir()
    for n in range(1000):
        doc = example_doc(id=f"many-{n:04d}") if n != 500 else {"riddle": {"question": ""}}
        (inbox / f"r{n:04d}.json").write_bytes(orjson.dumps(doc))
    _old(inbox / "r0500.json")
    done = any_cli("ingest", str(inbox))
    assert done.code == 0, done.err
    assert len(done.out.splitlines()) == 999 and "r0500.json" not in done.out
    assert sorted(p.name for p in inbox.iterdir()) == ["corrupt"]
    status = any_cli("status", "--json").json()
    assert status["counts"]["incoming"] == 999  # type: ignore[index]
    shown = any_cli("status", "many-0000", "many-0999", "--json").json()
    assert [r["id"] for r in shown["riddles"]] == ["many-0000", "many-0999"]  # type: ignore[index]


def test_entries_that_are_no_regular_file_are_set_aside_unopened(
    any_cli: Cli, tmp_path: Path
) -> None:
    """A FIFO, a socket, links (out, dangling, to a directory) and a directory named as
    riddle files are set aside in DIRECTORY/corrupt/ at once, one stderr line each,
    never opened nor followed; what they lead to stays as it was."""
    inbox, outside = tmp_path / "inbox", tmp_path / "outside"
    inbox.mkdir()
    outside.mkdir()
    (outside / "secret.json").write_bytes(orjson.dumps(example_doc(id="secret")))
    os.mkfifo(inbox / "fifo.json")
    (inbox / "out.json").symlink_to(outside / "secret.json")
    (inbox / "dangling.json").symlink_to(outside / "nothing")
    (inbox / "todir.jsonl").symlink_to(outside, target_is_directory=True)
    (inbox / "dir.json").mkdir()
    sock = socket.socket(socket.AF_UNIX)
    sock.bind(str(inbox / "sock.json"))
    sock.close()
    (inbox / "good.json").write_bytes(orjson.dumps(example_doc(id="good")))
    done = any_cli("ingest", str(inbox), timeout=60)
    assert (done.code, done.out) == (0, "good.json\n"), done.err
    kinds = {
        "dangling.json": "a symbolic link",
        "dir.json": "a directory",
        "fifo.json": "a FIFO",
        "out.json": "a symbolic link",
        "sock.json": "a socket",
        "todir.jsonl": "a symbolic link",
    }
    assert sorted(done.err.splitlines()) == [
        f"riddlectl: {inbox / name}: not a regular file ({kind})" for name, kind in kinds.items()
    ]
    assert sorted(p.name for p in inbox.iterdir()) == ["corrupt"]
    corrupt = inbox / "corrupt"
    for name, kind in kinds.items():
        assert os.path.lexists(corrupt / name), name
        assert (corrupt / f"{name}.reason").read_text() == f"not a regular file ({kind})\n"
    assert os.readlink(corrupt / "out.json") == str(outside / "secret.json")
    assert sorted(p.name for p in outside.iterdir()) == ["secret.json"]
    assert any_cli("status", "secret").code == 3  # what the link leads to was not taken


def test_other_names_are_left_alone_and_counted(any_cli: Cli, tmp_path: Path) -> None:
    inbox = tmp_path / "inbox"
    inbox.mkdir()
    (inbox / "notes.txt").write_text("not a riddle")
    (inbox / "README").write_text("nor this")
    (inbox / "batch2").mkdir()
    (inbox / "UPPER.JSON").write_bytes(orjson.dumps(example_doc(id="upper")))
    (inbox / "one.jsonl").write_bytes(orjson.dumps(example_doc(id="oneline")) + b"\n")
    for name in ("notes.txt", "README", "UPPER.JSON", "one.jsonl"):
        _old(inbox / name)
    done = any_cli("ingest", str(inbox))
    assert done.code == 0, done.err
    assert sorted(done.out.splitlines()) == ["UPPER.JSON", "one.jsonl"]
    assert done.err == (
        f"riddlectl: {inbox}: 3 other file(s) left alone (riddle files are *.json and *.jsonl)\n"
    )
    assert sorted(p.name for p in inbox.iterdir()) == ["README", "batch2", "notes.txt"]
    assert any_cli("status", "upper", "oneline").code == 0


def test_wait_waits_for_young_files_then_judges_them(any_cli: Cli, tmp_path: Path) -> None:
    """A one-shot look says what it left as younger than the grace; `--wait` waits for
    them and judges each: a file still bad once of age is set aside."""
    inbox = tmp_path / "inbox"
    inbox.mkdir()
    (inbox / "good.json").write_bytes(orjson.dumps(example_doc(id="good")))
    (inbox / "half.json").write_bytes(b'{"riddle": {"quest')
    doc = example_doc(id="later", data=[{"type": "text", "file_plain": "example/later.txt"}])
    (inbox / "later.json").write_bytes(orjson.dumps(doc))
    grace = {"RIDDLECTL_DROP_IN_GRACE": "15"}  # longer than a command starts in, loaded
    first = any_cli("ingest", str(inbox), env=grace)
    assert (first.code, first.out) == (0, "good.json\n"), first.err
    assert "2 file(s) younger than the 15 s grace left for the next look" in first.err
    (any_cli.data / "example" / "later.txt").write_text("x = 1\n")  # its data arrives
    started = time.monotonic()
    waited = any_cli("ingest", str(inbox), "--wait", env=grace)
    assert (waited.code, waited.out) == (0, "later.json\n"), waited.err
    assert (
        waited.err == f"riddlectl: {inbox / 'half.json'}: not valid JSON: unexpected end of data\n"
    )
    assert time.monotonic() - started < 30
    assert sorted(p.name for p in inbox.iterdir()) == ["corrupt"]


def _json_lines(*docs: object) -> bytes:
    return b"".join(orjson.dumps(doc) + b"\n" for doc in docs)


@BOTH
def test_a_json_lines_file_is_a_batch_taken_whole(any_cli: Cli, tmp_path: Path) -> None:
    """Each line of a `*.jsonl` file is a riddle: one with no id of its own gets one, the
    same at every look, and each keeps the line it came from."""
    inbox = tmp_path / "inbox"
    inbox.mkdir()
    batch = _json_lines(example_doc(id="l1"), example_doc())
    (inbox / "batch.jsonl").write_bytes(batch.replace(b"\n", b"\n\n", 1))  # line 3: no id
    _old(inbox / "batch.jsonl")
    done = any_cli("ingest", str(inbox))
    assert (done.code, done.out, done.err) == (0, "batch.jsonl\n", "")
    assert sorted(p.name for p in inbox.iterdir()) == []
    listed = any_cli("status", "--json").json()["riddles"]  # type: ignore[index]
    ids = sorted(riddle["id"] for riddle in listed)
    assert len(ids) == 2 and "l1" in ids
    made = next(riddle_id for riddle_id in ids if riddle_id != "l1")
    shown = any_cli("show", made).json()
    assert shown["dropped_as"] == "batch.jsonl:3"  # type: ignore[index]
    ran = any_cli("run", "--once")
    assert ran.code == 0, ran.err
    assert any_cli("result", "l1", made).out == f"l1\t150\n{made}\t150\n"


def test_a_batch_over_sixteen_documents_worth_is_set_aside_whole(cli: Cli, tmp_path: Path) -> None:
    """A JSON Lines file may hold as much as a submission of many riddles (16 x
    max_document_bytes); one over that is set aside whole, with its size, never cut."""
    limit = 64 * 1024  # the smallest max_document_bytes there is
    env = {"RIDDLECTL_MAX_DOCUMENT_BYTES": str(limit)}
    inbox = tmp_path / "inbox"
    inbox.mkdir()
    docs = [example_doc(id=f"b{n:04d}") for n in range(16 * limit // 150 + 10)]
    (inbox / "big.jsonl").write_bytes(_json_lines(*docs))
    _old(inbox / "big.jsonl")
    size = (inbox / "big.jsonl").stat().st_size
    assert size > 16 * limit
    done = cli("ingest", str(inbox), env=env)
    assert (done.code, done.out) == (0, "")
    reason = (inbox / "corrupt" / "big.jsonl.reason").read_text()
    assert reason.startswith(f"the file is {size} bytes, over the {16 * limit}-byte limit")
    assert cli("status", "--json").json()["riddles"] == []  # type: ignore[index]
    # Under the limit, as large as a submission may be: every line is a riddle.
    (inbox / "fits.jsonl").write_bytes(_json_lines(*docs[: 8 * limit // 150]))
    _old(inbox / "fits.jsonl")
    taken = cli("ingest", str(inbox), env=env)
    assert (taken.code, taken.out) == (0, "fits.jsonl\n"), taken.err
    assert len(cli("status", "--json").json()["riddles"]) == 8 * limit // 150  # type: ignore[index]


def test_one_document_over_several_lines_of_a_jsonl_file_is_one_riddle(
    cli: Cli, tmp_path: Path
) -> None:
    inbox = tmp_path / "inbox"
    inbox.mkdir()
    pretty = orjson.dumps(example_doc(id="pretty"), option=orjson.OPT_INDENT_2)
    (inbox / "pretty.jsonl").write_bytes(pretty)
    _old(inbox / "pretty.jsonl")
    done = cli("ingest", str(inbox))
    assert (done.code, done.out, done.err) == (0, "pretty.jsonl\n", "")
    # The file as a whole, not a line of it, is where the riddle came from.
    assert cli("show", "pretty").json()["dropped_as"] == "pretty.jsonl"  # type: ignore[index]


@BOTH
@pytest.mark.parametrize(
    ("second", "reason"),
    [
        ({"riddle": {"question": ""}}, "line 2: riddle.question: must not be empty"),
        (example_doc(id="twice"), "line 2: id: twice is given twice in the file"),
        (example_doc(id="taken"), "line 2: id: taken is already in the spool"),
    ],
)
def test_one_bad_line_sets_the_whole_file_aside(
    any_cli: Cli, tmp_path: Path, second: object, reason: str
) -> None:
    assert any_cli("submit", "--question", "1 + 1 =", "--id", "taken").code == 0
    inbox = tmp_path / "inbox"
    inbox.mkdir()
    (inbox / "batch.jsonl").write_bytes(_json_lines(example_doc(id="twice"), second))
    _old(inbox / "batch.jsonl")
    done = any_cli("ingest", str(inbox))
    assert (done.code, done.out) == (0, "")
    assert done.err.strip() == f"riddlectl: {inbox / 'batch.jsonl'}: {reason}"
    assert (inbox / "corrupt" / "batch.jsonl.reason").read_text() == f"{reason}\n"
    listed = any_cli("status", "--json").json()["riddles"]  # type: ignore[index]
    assert [riddle["id"] for riddle in listed] == ["taken"]  # nothing of the file went in


@pytest.mark.parametrize(
    ("options", "line"),
    [
        (["--poll", "2"], "riddlectl: --poll: only with --watch"),
        (
            ["--wait", "--watch"],
            "riddlectl: --wait: not with --watch, which waits for every file already",
        ),
    ],
)
def test_options_that_would_be_dropped_unsaid_are_refused(
    cli: Cli, tmp_path: Path, options: list[str], line: str
) -> None:
    inbox = tmp_path / "inbox"
    inbox.mkdir()
    (inbox / "first.json").write_bytes(orjson.dumps(example_doc()))
    refused = cli("ingest", str(inbox), *options, timeout=20)
    assert (refused.code, refused.out, refused.err) == (2, "", line + "\n")
    assert [p.name for p in inbox.iterdir()] == ["first.json"]  # nothing taken
