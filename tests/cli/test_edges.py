"""The edges of the command line: every error is one stderr line with its documented exit
code, never a traceback — whatever the spool (read-only, full, a regular file, missing,
not a spool, unreadable), the options (unknown, missing, mistyped) or the input."""

from __future__ import annotations

import contextlib
import os
import pty
import re
import select
import shlex
import shutil
import signal
import stat
import subprocess
import sys
import time
from collections.abc import Iterator
from importlib.metadata import version
from pathlib import Path

import orjson
import pytest

from riddlectl.cli.app import COMMANDS as LAZY_COMMANDS
from tests.conftest import ROOT, Cli, Completed, example_doc, write_json

# Every command, with arguments that would make it act on a spool holding `r1` (done) and
# `p1` (waiting in incoming/). `bench` is left out: it makes its own temporary spool; so is
# `serve`, which runs until stopped (its edges are tested in tests/web).
COMMANDS: dict[str, list[str]] = {
    "init": ["init"],
    "submit": ["submit", "--id", "new1", "--question", "x * y =", "--data", "example/x.txt"],
    "status": ["status"],
    "show": ["show", "r1"],
    "result": ["result", "r1"],
    "retry": ["retry", "r1"],
    "hold": ["hold", "p1"],
    "release": ["release", "p1"],
    "cancel": ["cancel", "p1"],
    "run": ["run", "--once"],
    "agent": ["agent", "extract", "--once"],
    "events": ["events"],
    "doctor": ["doctor"],
    "purge": ["purge", "--older-than", "0s"],
    "schema": ["schema"],
    "ingest": ["ingest", "."],
    "copy": ["copy", "--to", "copied"],
    "metrics": ["metrics"],
    "agents": ["agents"],
    "corrupt": ["corrupt", "list"],
}
# Commands that only read work on a read-only spool; the others refuse it (exit 5).
READERS = {"status", "show", "result", "events", "schema", "copy", "metrics", "agents", "corrupt"}
NEEDS_NO_SPOOL = {"schema"}
SPOOL_UNUSABLE = 5


def one_line(done: Completed, code: int, *needles: str) -> str:
    """The single stderr line of a command that exited `code`; it names every needle."""
    assert "Traceback" not in done.err, done.err[-3000:]
    assert done.code == code, (done.code, done.out[-500:], done.err[-2000:])
    lines = [line for line in done.err.splitlines() if line.strip()]
    assert len(lines) == 1, f"expected one stderr line, got {len(lines)}: {done.err[:2000]!r}"
    assert lines[0].startswith("riddlectl: "), lines[0]
    for needle in needles:
        assert needle in lines[0], f"{needle!r} not in {lines[0]!r}"
    return lines[0]


def quiet_success(done: Completed) -> None:
    assert "Traceback" not in done.err, done.err[-3000:]
    assert done.code == 0, (done.code, done.err[-2000:])
    assert len(done.err.splitlines()) <= 1, done.err


def tree(root: Path) -> dict[str, tuple[int, int]]:
    """Every path below `root` with its size and modification time: what a refusal must
    leave as it was."""
    out = {}
    for path in sorted(root.rglob("*")):
        info = path.lstat()
        out[str(path.relative_to(root))] = (info.st_size, info.st_mtime_ns)
    return out


def submit_two(cli: Cli) -> None:
    """`r1` done, `p1` waiting in incoming/."""
    assert cli("init").code == 0
    flags = ["--question", "x * y =", "--data", "example/x.txt", "--data", "example/y.txt"]
    assert cli("submit", "--id", "r1", *flags).code == 0
    assert cli("run", "--once", "--quiet").code == 0
    assert cli("submit", "--id", "p1", *flags).code == 0


def test_the_table_names_every_command() -> None:
    # `cache` is a group of its own, tested with the extraction cache.
    assert set(LAZY_COMMANDS) - {"bench", "cache", "serve"} == set(COMMANDS), (
        "a new command needs its edge cases here"
    )


# -- the spool cannot be used ----------------------------------------------------------------


@contextlib.contextmanager
def tmpfs(where: Path, size: str = "4m") -> Iterator[Path]:
    where.mkdir()
    made = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(where)], capture_output=True
    )
    if made.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {made.stderr.decode().strip()}")
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], check=False)


@pytest.fixture(scope="module")
def read_only_cli(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cli]:
    """A spool with `r1` done and `p1` pending, on a real file system remounted read-only:
    one for the module, since nothing can change it (each test checks that it did not)."""
    where = tmp_path_factory.mktemp("read-only")
    data_dir = where / "data"
    shutil.copytree(ROOT / "data" / "share", data_dir)
    with tmpfs(where / "disk") as disk:
        cli = Cli(disk / "spool", data_dir)
        submit_two(cli)
        subprocess.run(["mount", "-o", "remount,ro", str(disk)], check=True)
        yield cli


@pytest.mark.parametrize("command", list(COMMANDS))
def test_read_only_spool(read_only_cli: Cli, command: str) -> None:
    before = tree(read_only_cli.spool)
    done = read_only_cli(*COMMANDS[command])
    if command in READERS:
        quiet_success(done)
    else:
        one_line(done, SPOOL_UNUSABLE, str(read_only_cli.spool), "read-only")
    assert tree(read_only_cli.spool) == before


def test_readers_show_a_read_only_spool(read_only_cli: Cli) -> None:
    assert read_only_cli("result", "r1").out == "150\n"
    assert read_only_cli("status", "--json").json()["counts"]["done"] == 1
    assert read_only_cli("show", "p1").json()["id"] == "p1"


@pytest.mark.parametrize("command", list(COMMANDS))
def test_spool_that_is_a_regular_file(tmp_path: Path, data_dir: Path, command: str) -> None:
    passwd = tmp_path / "passwd"
    shutil.copy("/etc/passwd", passwd)
    cli = Cli(passwd, data_dir)
    done = cli(*COMMANDS[command])
    if command in NEEDS_NO_SPOOL:
        quiet_success(done)
    else:
        one_line(done, SPOOL_UNUSABLE, str(passwd), "not a directory")
    assert passwd.read_bytes() == Path("/etc/passwd").read_bytes()


def test_etc_passwd_itself_is_refused(data_dir: Path) -> None:
    one_line(Cli(Path("/etc/passwd"), data_dir)("status"), SPOOL_UNUSABLE, "/etc/passwd")


@pytest.mark.parametrize("command", list(COMMANDS))
def test_missing_spool_is_made_by_init_only(tmp_path: Path, data_dir: Path, command: str) -> None:
    cli = Cli(tmp_path / "missing", data_dir)
    done = cli(*COMMANDS[command])
    if command == "init":
        quiet_success(done)
        assert (cli.spool / "incoming").is_dir()
        return
    if command in NEEDS_NO_SPOOL:
        quiet_success(done)
    else:
        one_line(done, SPOOL_UNUSABLE, str(cli.spool), "no spool", "riddlectl init")
    assert not cli.spool.exists(), f"{command} created the spool"


@pytest.mark.parametrize("command", sorted(set(COMMANDS) - NEEDS_NO_SPOOL))
def test_directory_that_is_not_a_spool(tmp_path: Path, data_dir: Path, command: str) -> None:
    home = tmp_path / "home"
    home.mkdir()
    (home / "notes.txt").write_text("mine\n")
    before = tree(home)
    done = Cli(home, data_dir)(*COMMANDS[command])
    if command == "init":  # making a spool in an existing directory is what init is for
        quiet_success(done)
        return
    one_line(done, SPOOL_UNUSABLE, str(home), "not a spool", "riddlectl init")
    assert tree(home) == before


def test_unreadable_spool(tmp_path: Path, data_dir: Path) -> None:
    """A spool this user may not read (as root: the command runs as `nobody`)."""
    cli = Cli(tmp_path / "spool", data_dir)
    assert cli("init").code == 0
    os.chmod(cli.spool, 0)
    prefix: list[str] = []
    if os.geteuid() == 0:
        if shutil.which("setpriv") is None:
            pytest.skip("running as root without setpriv: cannot be a user who may not read")
        prefix = ["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups"]
        if not _others_may_enter(Path(cli.argv()[0]).parent):
            pytest.skip("the checkout lies under a directory other users may not enter")
    try:
        for command in ("status", "submit", "run"):
            proc = subprocess.run(
                [*prefix, *cli.argv(*COMMANDS[command])], capture_output=True, cwd="/", timeout=60
            )
            done = Completed(proc.returncode, proc.stdout.decode(), proc.stderr.decode())
            one_line(done, SPOOL_UNUSABLE, str(cli.spool), "Permission denied")
    finally:
        os.chmod(cli.spool, 0o755)


def _others_may_enter(path: Path) -> bool:
    """Whether a user who owns nothing here can reach `path` (every parent searchable)."""
    return all(os.stat(p).st_mode & stat.S_IXOTH for p in [path, *path.parents])


def test_init_refuses_a_file_and_a_read_only_place(tmp_path: Path, data_dir: Path) -> None:
    afile = tmp_path / "afile"
    afile.write_text("keep me\n")
    one_line(Cli(afile, data_dir)("init"), SPOOL_UNUSABLE, str(afile))
    assert afile.read_text() == "keep me\n"
    with tmpfs(tmp_path / "disk") as disk:
        subprocess.run(["mount", "-o", "remount,ro", str(disk)], check=True)
        one_line(Cli(disk / "spool", data_dir)("init"), SPOOL_UNUSABLE, str(disk / "spool"))


def test_submit_on_a_full_disk_writes_nothing(tmp_path: Path, data_dir: Path) -> None:
    with tmpfs(tmp_path / "disk", size="1m") as disk:
        cli = Cli(disk / "spool", data_dir)
        assert cli("init").code == 0
        filler = disk / "filler"
        with contextlib.suppress(OSError), filler.open("wb") as handle:
            while True:
                handle.write(b"\0" * 65536)
                handle.flush()
        before = tree(cli.spool)
        docs = b"\n".join(orjson.dumps(example_doc(id=f"f{i}")) for i in range(20))
        done = cli("submit", "-", input=docs)
        one_line(done, SPOOL_UNUSABLE, str(cli.spool), "No space left on device")
        assert done.out == "", "no id may be printed for riddles that were not stored"
        after = tree(cli.spool)
        queues = ("incoming", "extracted", "solved", "validated", "done", "failed", "tmp")
        for queue in queues:
            assert [p for p in after if p.startswith(f"{queue}/")] == [
                p for p in before if p.startswith(f"{queue}/")
            ], f"{queue}/ changed"
        filler.unlink()
        assert cli("submit", "-", input=docs).out.split() == [f"f{i}" for i in range(20)]


def test_a_submit_that_fills_the_disk_part_way_takes_nothing(
    tmp_path: Path, data_dir: Path
) -> None:
    """Riddles are stored in groups; when a later group finds the disk full, the groups
    already stored are withdrawn: exit 5 means nothing was changed."""
    with tmpfs(tmp_path / "disk", size="400k") as disk:
        cli = Cli(disk / "spool", data_dir)
        assert cli("init").code == 0
        before = tree(cli.spool)
        docs = b"\n".join(orjson.dumps(example_doc(id=f"f{i}")) for i in range(2000))
        done = cli("submit", "-", input=docs)
        one_line(done, SPOOL_UNUSABLE, str(cli.spool), "No space left on device")
        assert done.out == ""
        # The same files (directories' times may differ: entries came and went).
        files = {p: v for p, v in tree(cli.spool).items() if not (cli.spool / p).is_dir()}
        assert files == {p: v for p, v in before.items() if not (cli.spool / p).is_dir()}
        assert cli("doctor").code == 0


def test_the_repository_spool_works_as_shipped(tmp_path: Path, data_dir: Path) -> None:
    """The quick start runs on the checked-in ./spool (queue directories and .gitkeep)."""
    shutil.copytree(ROOT / "spool", tmp_path / "shipped")
    cli = Cli(tmp_path / "shipped", data_dir)
    riddle_id = cli("submit", str(ROOT / "examples" / "x-times-y.json")).out.strip()
    assert riddle_id
    assert cli("run", "--once", "--quiet").code == 0
    assert cli("result", riddle_id).out == "150\n"


# -- usage errors ------------------------------------------------------------------------------

USAGE = 2


@pytest.mark.parametrize(
    ("args", "line"),
    [
        (["submit", "--bogus"], "riddlectl: submit: no such option: --bogus"),
        (["purge"], "riddlectl: purge: missing option '--older-than'"),
        (["result"], "riddlectl: result: missing argument 'ID...'"),
        (["show"], "riddlectl: show: missing argument 'ID...'"),
        (["bogus"], "riddlectl: no such command 'bogus'"),
        (["--bogus"], "riddlectl: no such option: --bogus"),
        (["status", "--limit", "x"], "riddlectl: status: invalid value for '--limit'"),
        (["run", "--once", "true"], "riddlectl: run: got unexpected extra argument(s) (true)"),
        (["run", "--concurrency", "0"], "riddlectl: run: invalid value for '--concurrency'"),
        (["agent"], "riddlectl: agent: missing argument 'STAGE'"),
    ],
)
def test_usage_errors_are_one_line(cli: Cli, args: list[str], line: str) -> None:
    error = one_line(cli(*args), USAGE)
    assert error.startswith(line), error


def test_flags_show_as_flags_in_help(cli: Cli) -> None:
    for command in ("run", "agent", "submit", "status", "doctor"):
        shown = cli(command, "--help")
        assert shown.code == 0 and "<bool>" not in shown.out, shown.out
    assert "--once " in cli("run", "--help").out
    assert cli("run", "--once", "--help").code == 0


def test_version() -> None:
    shown = Cli(Path("unused"), Path("unused"))("--version")
    assert (shown.code, shown.out, shown.err) == (0, f"riddlectl {version('riddlectl')}\n", "")


# -- input: places, empty input, byte order marks ---------------------------------------------


def test_submit_names_the_line_of_a_syntax_error(cli: Cli, tmp_path: Path) -> None:
    pretty = tmp_path / "pretty.json"
    pretty.write_text('{\n  "riddle": {\n    "question": "x * y ="\n  },\n}\n')
    one_line(cli("submit", str(pretty)), USAGE, f"{pretty}:4:4: not valid JSON", "trailing comma")


def test_submit_numbers_documents_from_one(cli: Cli, tmp_path: Path) -> None:
    good = orjson.dumps(example_doc()).decode()
    bad = orjson.dumps({"riddle": {"question": 7}}).decode()
    lines = f"{good}\n\n{bad}\n"
    one_line(cli("submit", "-", input=lines), USAGE, "<stdin>:3: riddle.question")
    batch = write_json(tmp_path / "batch.json", [example_doc(), {"riddle": {"question": 7}}])
    one_line(cli("submit", str(batch)), USAGE, f"{batch}[2]: riddle.question")
    assert list((cli.spool / "incoming").iterdir()) == []


@pytest.mark.parametrize("question", ["", "   ", "\t\n"])
def test_submit_refuses_an_empty_question(cli: Cli, tmp_path: Path, question: str) -> None:
    one_line(cli("submit", "--question", question), USAGE, "riddle.question", "empty")
    doc = write_json(tmp_path / "q.json", {"riddle": {"question": question}})
    one_line(cli("submit", str(doc)), USAGE, str(doc), "riddle.question", "empty")
    assert list((cli.spool / "incoming").iterdir()) == []


@pytest.mark.parametrize("given", ["[]", "[ ]\n", "", "\n"])
def test_submit_of_nothing_says_so(cli: Cli, given: str) -> None:
    done = cli("submit", "-", input=given)
    one_line(done, USAGE, "nothing to submit")
    assert done.out == ""


def test_a_byte_order_mark_is_accepted(cli: Cli, tmp_path: Path) -> None:
    bom = b"\xef\xbb\xbf"
    submitted = tmp_path / "bom.json"
    submitted.write_bytes(bom + orjson.dumps(example_doc(id="bom1")))
    assert cli("submit", str(submitted)).out == "bom1\n"
    dropped = cli.spool / "incoming" / "bom2.json"
    dropped.write_bytes(bom + orjson.dumps(example_doc()))
    assert cli("run", "--once", "--quiet").code == 0
    assert cli("result", "bom1", "bom2").out == "bom1\t150\nbom2\t150\n"
    assert list((cli.spool / "corrupt").iterdir()) == []


# -- status --stage corrupt -------------------------------------------------------------------


def test_status_lists_the_corrupt_files_with_their_reasons(cli: Cli) -> None:
    incoming = cli.spool / "incoming"
    (incoming / "garbage.json").write_text("{nope")
    write_json(incoming / "wrongtype.json", {"riddle": {"question": 7}})
    for name in ("garbage.json", "wrongtype.json"):
        os.utime(incoming / name, (1, 1))  # past the drop-in grace
    assert cli("run", "--once", "--quiet").code == 0
    text = cli("status", "--stage", "corrupt")
    assert text.code == 0, text.err
    assert "garbage.json" in text.out and "not valid JSON" in text.out
    assert "wrongtype.json" in text.out and "riddle.question" in text.out
    listed = cli("status", "--stage", "corrupt", "--jsonl").out
    rows = [orjson.loads(line) for line in listed.splitlines()]
    assert [(r["file"], r["queue"]) for r in rows] == [
        ("garbage.json", "corrupt"),
        ("wrongtype.json", "corrupt"),
    ]
    assert "riddle.question" in rows[1]["reason"]
    whole = cli("status", "--stage", "corrupt", "--json").json()
    assert whole["counts"]["corrupt"] == 2
    assert [f["file"] for f in whole["corrupt"]] == ["garbage.json", "wrongtype.json"]
    assert cli("status", "--stage", "corrupt", "--jsonl", "--limit", "1").code == 0


# -- the README's Python handler, exactly as printed ------------------------------------------


def readme_python_handler() -> tuple[str, str, list[str]]:
    """(file name, code, command) of the README's "A handler in Python"."""
    readme = (ROOT / "README.md").read_text()
    section = readme.split("### A handler in Python", 1)[1].split("\n### ", 1)[0]
    code = section.split("```python\n", 1)[1].split("```", 1)[0]
    name = code.splitlines()[0].removeprefix("# ").strip()
    command = next(part for part in section.split("`") if part.startswith("riddlectl run "))
    return name, code, shlex.split(command)


def test_the_readme_python_handler_runs_as_printed(tmp_path: Path, data_dir: Path) -> None:
    name, code, command = readme_python_handler()
    assert "--once" in command, "the README's command must end by itself to be tried"
    work = tmp_path / "work"
    (work / "data").mkdir(parents=True)
    shutil.copytree(data_dir, work / "data" / "share")
    (work / name).write_text(code)
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}"}

    def riddlectl(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            list(args), cwd=work, env=env, capture_output=True, text=True, timeout=120
        )

    assert riddlectl("riddlectl", "init").returncode == 0
    flags = ["--no-validate", "--no-extract"]
    riddlectl("riddlectl", "submit", "--id", "w1", "--question", "How is the weather?", *flags)
    riddlectl(
        "riddlectl",
        "submit",
        "--id",
        "c1",
        "--question",
        "x * y =",
        "--data",
        "example/x.txt",
        "--data",
        "example/y.txt",
    )
    ran = riddlectl(*command)
    assert ran.returncode == 0 and "Traceback" not in ran.stderr, ran.stderr
    assert riddlectl("riddlectl", "result", "w1", "c1").stdout == "w1\tsunny\nc1\t150\n"


@pytest.mark.parametrize(
    ("code", "spec", "needle"),
    [
        ("1 / 0\n", "broken_here:solve", "ZeroDivisionError"),
        ("def solve(:\n", "broken_here:solve", "SyntaxError"),
        ("solve = 3\n", "broken_here:solve", "not callable"),
        ("", "broken_here:nope", "has no nope"),
        ("", "not_anywhere_at_all:solve", "No module named"),
    ],
)
def test_a_python_handler_that_cannot_load_is_one_line(
    cli: Cli, tmp_path: Path, code: str, spec: str, needle: str
) -> None:
    (tmp_path / "broken_here.py").write_text(code)  # the test runs in tmp_path
    one_line(cli("run", "--once", "--handler", f"solve={spec}"), USAGE, spec, needle)


# -- status --watch on a terminal -------------------------------------------------------------


def test_status_watch_redraws_in_place_on_a_terminal(cli: Cli) -> None:
    assert cli("submit", "--id", "tw", "--question", "x * y =").code == 0
    main, child = pty.openpty()
    env = {**os.environ, "TERM": "xterm", "COLUMNS": "100", "LINES": "40"}
    watcher = subprocess.Popen(
        cli.argv("status", "--watch"), stdout=child, stderr=subprocess.PIPE, env=env
    )
    os.close(child)
    seen, held = b"", False
    cursor_up = re.compile(rb"\x1b\[\d*A")
    try:
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            if select.select([main], [], [], 0.2)[0]:
                seen += os.read(main, 65536)
            if not held and b"incoming" in seen:
                held = cli("hold", "tw").code == 0
            if held and b"tw                           hold" in seen and cursor_up.search(seen):
                break
    finally:
        watcher.send_signal(signal.SIGINT)
        _, err = watcher.communicate(timeout=10)
        os.close(main)
    assert watcher.returncode == 130 and b"Traceback" not in err, err  # ended by Ctrl-C
    assert b"tw                           hold" in seen, seen
    assert cursor_up.search(seen), f"no cursor movement: the table was reprinted: {seen!r}"


# -- hostile values ---------------------------------------------------------------------------

HOSTILE_IDS = ["-a", "../x", "a" * 200, "a/b", "\u00e9t\u00e9", ".hidden", ""]


@pytest.mark.parametrize(
    "command", ["status", "show", "result", "retry", "hold", "release", "cancel"]
)
@pytest.mark.parametrize("riddle_id", HOSTILE_IDS, ids=lambda i: repr(i[:12]))
def test_hostile_ids_are_unknown_in_one_line(cli: Cli, command: str, riddle_id: str) -> None:
    line = one_line(cli(command, "--", riddle_id), 3)
    assert len(line) < 200, line


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["submit", "--question", "q", "--priority", "9" * 23], "--priority"),
        (["submit", "--question", "q", "--priority", "-" + "9" * 23], "--priority"),
        (["submit", "--question", "q", "--wait", "--timeout", "-1"], "--timeout"),
        (["result", "r1", "--wait", "--timeout", "-1"], "--timeout"),
        (["status", "--limit", "-5"], "--limit"),
        (["purge", "--older-than", "-1s"], "--older-than"),
    ],
)
def test_out_of_range_values_are_usage_errors(cli: Cli, args: list[str], needle: str) -> None:
    one_line(cli(*args), USAGE, needle)
    assert list((cli.spool / "incoming").iterdir()) == []


@pytest.mark.parametrize(
    ("doc", "field"),
    [
        ('{"riddle": {"question": "q"}, "priority": 1e30}', "priority"),
        ('{"riddle": {"question": "q"}, "status": {"trial": 1e30}}', "status.trial"),
        (f'{{"riddle": {{"question": "q"}}, "contacts": {2**70}}}', "contacts"),
        (f'{{"riddle": {{"question": "q"}}, "data": [{{"file_plain": {2**63}}}]}}', "data[0]"),
    ],
)
def test_huge_numbers_in_a_document_are_refused(cli: Cli, doc: str, field: str) -> None:
    one_line(cli("submit", "-", input=doc), USAGE, field)


def test_a_data_dir_that_is_a_file_is_named(cli: Cli) -> None:
    one_line(Cli(cli.spool, Path("/etc/passwd"))("init"), USAGE, "/etc/passwd", "not a directory")


def test_a_bug_is_one_line_too(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """No bug can be produced on purpose, so one is planted: still one line, exit 70."""
    from riddlectl.cli import app as cli_module
    from riddlectl.ops import report

    spool = tmp_path / "spool"
    assert Cli(spool, tmp_path)("init").code == 0

    def planted(*args: object) -> None:
        raise RuntimeError("planted")

    monkeypatch.setattr(report, "counts", planted)
    with pytest.raises(SystemExit) as exited:
        cli_module.main(["--spool", str(spool), "status"])
    assert exited.value.code == 70
    err = capsys.readouterr().err
    assert err.splitlines() == [
        "riddlectl: internal error: RuntimeError: planted (RIDDLECTL_DEBUG=1 shows the traceback)"
    ]
    monkeypatch.setenv("RIDDLECTL_DEBUG", "1")
    with pytest.raises(RuntimeError, match="planted"):
        cli_module.main(["--spool", str(spool), "status"])


@pytest.mark.parametrize("args", [["events"], ["status", "--jsonl", "--stage", "extract"]])
def test_output_into_a_closed_pipe_is_quiet(cli: Cli, args: list[str]) -> None:
    docs = b"\n".join(orjson.dumps(example_doc(id=f"p{i:04}")) for i in range(600))
    assert cli("submit", "-", input=docs).code == 0  # far more than a pipe holds
    proc = subprocess.run(
        ["bash", "-c", f"set -o pipefail; {shlex.join(cli.argv(*args))} | head -c 1"],
        capture_output=True,
    )
    assert (proc.returncode, proc.stderr, proc.stdout) == (0, b"", b"{")


def test_help_names_every_kind_of_spool_and_no_machine_limits(cli: Cli) -> None:
    import tomllib

    top = cli("--help")
    assert top.code == 0
    assert "filesystem spool" not in top.out, top.out
    spool_help = " ".join(top.out.split("--spool", 1)[1].split("--data-dir", 1)[0].split())
    assert "directory" in spool_help and "postgresql://" in spool_help, spool_help
    submit = cli("submit", "--help")
    assert "9223372036854775808" not in submit.out and "64-bit" in submit.out, submit.out
    too_big = cli("submit", "--question", "q", "--priority", str(2**63))
    assert too_big.code == 2 and "64-bit" in too_big.err, too_big.err
    assert cli("submit", "--id", "low", "--question", "q", "--priority", str(-(2**63))).code == 0
    project = tomllib.loads((Path(__file__).parents[2] / "pyproject.toml").read_text())
    assert "filesystem spool" not in project["project"]["description"]
