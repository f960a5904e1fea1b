"""Every handler of `run` and `agent` is resolved as they start: one that cannot be used is
exit 2 with one line naming it, before any riddle is touched (the installed command, a
real spool; a matrix of kinds of handler x commands)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import orjson
import pytest

from tests.conftest import Cli

# What stands in the current directory (the test's tmp_path) for the handlers below.
SCRIPT = "#!/bin/sh\necho '{}'\n"


def lay_out(here: Path) -> None:
    (here / "not-executable.sh").write_text(SCRIPT)
    (here / "a-directory").mkdir()
    (here / "raises_at_import.py").write_text("raise RuntimeError('half written')\n")
    (here / "solvers.py").write_text("def solve(job):\n    return {}\n")
    # An installed package whose entry point names a module that is not there.
    dist = here / "site" / "broken_handlers-1.0.dist-info"
    dist.mkdir(parents=True)
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: broken-handlers\nVersion: 1.0\n")
    (dist / "entry_points.txt").write_text(
        "[riddlectl.handlers]\nbroken = no_such_module_anywhere:solve\n"
    )


# (stage, handler, environment, what the one line must say)
CASES: dict[str, tuple[str, str, dict[str, str], str]] = {
    "cmd missing": ("solve", "cmd:./my-solver", {}, "my-solver: no such file"),
    "cmd missing with args": (
        "extract",
        "cmd:./gone.sh --fast",
        {},
        "gone.sh: no such file",
    ),
    "cmd not executable": ("solve", "cmd:./not-executable.sh", {}, "not executable"),
    "cmd a directory": ("validate", "cmd:./a-directory", {}, "is a directory"),
    "cmd not on PATH": (
        "solve",
        "cmd:no-such-solver-anywhere x",
        {},
        "no-such-solver-anywhere: no such program on PATH",
    ),
    "module missing": ("solve", "no_such_module_here:solve", {}, "cannot import"),
    "attribute missing": ("solve", "solvers:nothing_by_that_name", {}, "has no"),
    "module raises": ("solve", "raises_at_import:solve", {}, "RuntimeError: half written"),
    "unknown name": ("solve", "no-such-builtin", {}, "unknown handler"),
    "entry point broken": ("solve", "broken", {}, "does not load"),
    "http without host": ("solve", "http:http://", {}, "with a host"),
    "http bad port": ("validate", "http://127.0.0.1:notaport/v", {}, "not a URL"),
    "openai bad base URL": (
        "solve",
        "openai:some-model",
        {"OPENAI_BASE_URL": "localhost:8080/v1"},
        "openai_base_url",
    ),
    "transcribe bad base URL": (
        "extract",
        "transcribe:whisper",
        {"OPENAI_BASE_URL": "ftp://example.org/v1"},
        "openai_base_url",
    ),
}

COMMANDS: dict[str, Callable[[str, str], list[str]]] = {
    "run": lambda stage, h: ["run", "--handler", f"{stage}={h}", "--handler", "solve=calculator"],
    "run --once": lambda stage, h: ["run", "--once", "--handler", f"{stage}={h}"],
    "agent": lambda stage, h: ["agent", stage, "--handler", h],
    "agent --once": lambda stage, h: ["agent", stage, "--once", "--handler", f"{stage}={h}"],
}


def snapshot(cli: Cli) -> tuple[dict[str, bytes], bytes]:
    """Every riddle file of the spool with its content, and the event log."""
    spool = Path(cli.spool)
    files = {
        str(path.relative_to(spool)): path.read_bytes()
        for path in spool.glob("*/*.json")
        if path.parent.name != "tmp"
    }
    events = b"".join(p.read_bytes() for p in sorted(spool.glob("events*")) if p.is_file())
    return files, events


@pytest.mark.parametrize("command", sorted(COMMANDS))
@pytest.mark.parametrize("case", sorted(CASES))
def test_a_handler_that_cannot_be_used_stops_the_agent_before_any_riddle(
    cli: Cli, tmp_path: Path, case: str, command: str
) -> None:
    lay_out(tmp_path)
    stage, handler, env, says = CASES[case]
    doc = {"id": "untouched", "riddle": {"question": "x + 1 ="}}
    assert cli("submit", "-", input=orjson.dumps(doc)).code == 0
    before = snapshot(cli)
    done = cli(
        *COMMANDS[command](stage, handler),
        env={**env, "PYTHONPATH": f"{tmp_path}:{tmp_path / 'site'}"},
        timeout=30,
    )
    assert done.code == 2, (done.code, done.err)
    lines = done.err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("riddlectl: "), done.err
    assert says in lines[0] and "Traceback" not in done.err, lines[0]
    assert handler.split()[0] in lines[0], lines[0]  # names it as given
    assert done.out == ""
    assert snapshot(cli) == before  # not one riddle moved, not one event
    assert (Path(cli.spool) / "incoming" / "untouched.json").exists()


def test_a_missing_solver_before_calculator_no_longer_fails_every_riddle(
    cli: Cli, tmp_path: Path
) -> None:
    # The way it was met: the second handler never got a turn, each riddle failed after
    # three attempts of the first. Now nothing runs and the line names the program.
    doc = {"id": "r", "riddle": {"question": "2 + 3 ="}}
    assert cli("submit", "-", input=orjson.dumps(doc)).code == 0
    done = cli(
        "run", "--once", "--handler", "solve=cmd:./my-solver", "--handler", "solve=calculator"
    )
    assert done.code == 2
    assert done.err == f"riddlectl: cmd:./my-solver: {tmp_path / 'my-solver'}: no such file\n"
    assert cli("status", "r", "--json").json()["riddles"][0]["queue"] == "incoming"


def test_a_bad_handler_is_told_before_waiting_for_a_database(tmp_path: Path) -> None:
    # Nothing listens on port 1: an agent would wait for the server; a bad handler is
    # the user's to fix first, and waiting would hide it.
    nowhere = Cli("postgresql://postgres@127.0.0.1:1/postgres", tmp_path)
    done = nowhere("agent", "solve", "--handler", "cmd:./my-solver", timeout=60)
    assert done.code == 2 and "my-solver: no such file" in done.err, done.err


def test_handlers_in_the_config_file_are_resolved_too(cli: Cli) -> None:
    (Path(cli.spool) / "config.toml").write_text('[handlers]\nsolve = ["cmd:./my-solver"]\n')
    done = cli("agent", "solve", "--once")
    assert done.code == 2 and "cmd:./my-solver" in done.err, done.err


def test_usable_handlers_of_every_kind_start(cli: Cli, tmp_path: Path) -> None:
    # The other side of the check: what can run is not refused (on PATH, a path, a module
    # beside the spool, an endpoint with a host: none is called, the inbox being empty).
    lay_out(tmp_path)
    (tmp_path / "not-executable.sh").chmod(0o755)
    for argv in (
        ["run", "--once", "--handler", "solve=cmd:cat", "--handler", "solve=calculator"],
        ["agent", "solve", "--once", "--handler", "cmd:./not-executable.sh"],
        ["agent", "solve", "--once", "--handler", "solvers:solve"],
        ["agent", "validate", "--once", "--handler", "http://127.0.0.1:9/validate"],
    ):
        done = cli(*argv, env={"PYTHONPATH": str(tmp_path)})
        assert done.code == 0, (argv, done.err)
