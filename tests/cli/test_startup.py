"""A command imports only what it uses: the root command loads a command's module when
that command is asked for, `--help` and completion still see every command, and
`status` starts without the agent runner, the handlers, the doctor or the document
models. (How long it takes is `riddlectl bench --startup`'s to report, not a test's.)"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import typer

from riddlectl.cli.app import COMMANDS, app
from tests.conftest import Cli

# Modules `status` must start without: the other commands, the pipeline and its handlers,
# the agent runner, and what only they need (watchdog, rich, pydantic's model building).
NOT_FOR_STATUS = (
    "riddlectl.agent",
    "riddlectl.bench",
    "riddlectl.cli.admin",
    "riddlectl.cli.agents",
    "riddlectl.cli.bench",
    "riddlectl.cli.cache",
    "riddlectl.cli.submit",
    "riddlectl.document.model",
    "riddlectl.handlers",
    "riddlectl.ops.admin",
    "riddlectl.ops.doctor",
    "riddlectl.ops.submit",
    "riddlectl.pipeline.jobs",
    "riddlectl.pipeline.ledger",
    "riddlectl.pipeline.stages",
    "watchdog",
    "rich",
    "pydantic.main",
)


def loaded_by(*args: str) -> set[str]:
    """The modules a fresh interpreter holds after running `riddlectl ARGS`."""
    script = (
        "import sys\n"
        "from riddlectl.cli.app import main\n"
        "try:\n"
        f"    main({list(args)!r})\n"
        "except SystemExit as exc:\n"
        "    assert not exc.code, exc.code\n"
        "print(' '.join(sorted(sys.modules)), file=sys.stderr)\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-2000:]
    return set(done.stderr.split())


def within(modules: set[str], packages: tuple[str, ...]) -> set[str]:
    return {m for m in modules if any(m == p or m.startswith(p + ".") for p in packages)}


def test_status_loads_only_what_it_uses(cli: Cli) -> None:
    loaded = loaded_by("--spool", str(cli.spool), "status")
    assert "riddlectl.cli.query" in loaded
    assert within(loaded, NOT_FOR_STATUS) == set()


def test_version_loads_no_command() -> None:
    loaded = loaded_by("--version")
    assert within(loaded, ("riddlectl.runtime", "riddlectl.spool", "riddlectl.cli.query")) == set()


def test_help_lists_every_command_with_its_help_line(cli: Cli) -> None:
    shown = cli("--help")
    assert shown.code == 0, shown.err
    listed = shown.out.split("Commands:", 1)[1].splitlines()
    # A command's line starts two spaces in; its whole summary may wrap onto lines
    # indented further, which name no command.
    lines = {line.split()[0]: line for line in listed if line[:2] == "  " and line[2:3] != " "}
    assert list(lines) == list(COMMANDS)
    for name, line in lines.items():
        assert len(line.split()) > 1, f"{name} has no help line"


def test_every_command_of_the_table_loads() -> None:
    group = typer.main.get_group(app)
    context = typer.Context(group)
    for name in COMMANDS:
        command = group.get_command(context, name)
        assert command is not None and command.name == name
        assert (command.help or "").strip(), f"{name} has no help"


def test_a_mistyped_command_is_told_the_near_ones(cli: Cli) -> None:
    shown = cli("statsu")
    assert shown.code == 2
    assert shown.err.strip() == "riddlectl: no such command 'statsu'. Did you mean 'status'?"


@pytest.mark.parametrize(
    ("typed", "offered"), [("sta", {"status"}), ("re", {"result", "retry", "release"})]
)
def test_completion_offers_command_names(typed: str, offered: set[str], tmp_path: Path) -> None:
    env = {
        **os.environ,
        "_RIDDLECTL_COMPLETE": "complete_bash",
        "COMP_WORDS": f"riddlectl {typed}",
        "COMP_CWORD": "1",
    }
    argv = Cli(tmp_path, tmp_path).argv()[:1]
    done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=30)
    assert set(done.stdout.split()) == offered
