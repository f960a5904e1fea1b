"""The README's tour runs as printed, line after line, in one shell, on a fresh copy of
the repository (its tracked files, as a clone has them) with the installed command on the
PATH, as the README's `source .venv/bin/activate` puts it there. (The README's Python
handler is run as printed in tests/cli/test_edges.py.)

A command that runs until it is stopped (`run` without `--once`, `agent`, `--follow`,
`--watch`, `serve`) is given a few seconds, then Ctrl-C, and must end with 130 after
starting without an error; every other line must exit 0.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT

RUNS_FOR = 6  # seconds a long-running command of the tour is given before Ctrl-C


def tour_lines() -> list[str]:
    readme = (ROOT / "README.md").read_text()
    tour = readme.split("## A tour", 1)[1].split("\n### ", 1)[0]
    lines = []
    for block in re.findall(r"```sh\n(.*?)```", tour, re.S):
        lines += [line for line in block.splitlines() if line.strip()]
    return lines


def runs_until_stopped(line: str) -> bool:
    words = shlex.split(line, comments=True)
    if words[:1] != ["riddlectl"] or len(words) < 2:
        return False
    command, options = words[1], set(words[2:])
    return (
        (command in ("run", "agent") and "--once" not in options)
        or command == "serve"
        or bool(options & {"--follow", "-f", "--watch"})
    )


def fresh_clone(into: Path) -> Path:
    tracked = subprocess.run(
        ["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True
    ).stdout.decode()
    for name in filter(None, tracked.split("\0")):
        source, target = ROOT / name, into / name
        if source.is_file():
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target)
    return into


def script(lines: list[str]) -> str:
    """The tour as one bash script that stops at the first line that does not do as the
    README says, naming its number. Each line stays as printed, its comment included, on
    a line of its own: the checks go on the lines around it."""
    out = ["set -eE -o pipefail", "trap 'echo \"tour line $n failed with $?\" >&2; exit 1' ERR"]
    for number, line in enumerate(lines, start=1):
        if line.startswith("source .venv/bin/activate"):
            continue  # the test's PATH holds the installed command already
        out.append(f"n={number}")
        if runs_until_stopped(line):
            out += [
                "rc=0",
                f"{{ timeout --preserve-status -s INT {RUNS_FOR} {line}",
                "} || rc=$?",
                '[ "$rc" = 130 ] || { echo "tour line $n ended with $rc, not 130" >&2; exit 1; }',
            ]
        else:
            out.append(line)
    return "\n".join(out) + "\n"


def test_the_tour_names_only_what_the_repository_has() -> None:
    for line in tour_lines():
        for name in re.findall(r"\bexamples/[\w.-]+", line):
            assert (ROOT / name).exists(), line
            assert (
                name
                in subprocess.run(
                    ["git", "ls-files", name], cwd=ROOT, capture_output=True, text=True
                ).stdout
            ), f"{name} is not in the repository (git add it)"


@pytest.mark.timeout(600)  # some twenty commands, three of them given RUNS_FOR seconds
def test_the_readme_tour_runs_as_printed_from_a_fresh_clone(tmp_path: Path) -> None:
    lines = tour_lines()
    assert any(runs_until_stopped(line) for line in lines)
    clone = fresh_clone(tmp_path / "clone")
    path = f"{Path(sys.executable).parent}:{os.environ['PATH']}"
    env = {k: v for k, v in os.environ.items() if not k.startswith("RIDDLECTL_")}
    ran = subprocess.run(
        ["bash", "-c", script(lines)],
        cwd=clone,
        env={**env, "PATH": path},
        capture_output=True,
        text=True,
        timeout=600,
    )
    said = "\n".join(f"{n}: {line}" for n, line in enumerate(lines, start=1))
    assert ran.returncode == 0, f"{ran.stderr[-3000:]}\n{said}"
    assert "Traceback" not in ran.stderr, ran.stderr[-3000:]
    assert "\n150\n" in ran.stdout  # `result "$id"` of the seed example
