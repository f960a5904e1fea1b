"""The table of docs/reference.md#every-command-at-its-edges, generated here and checked:
every command of the command table, each of {no arguments, `-` with empty stdin, an unknown id,
Ctrl-C, `--json`}, each with the exit status and the first line the command prints, as
the installed command gives them on a directory spool holding one riddle.

The test fails when the table and the commands disagree. To write the table afresh after
a change: `WRITE_REFERENCE_TABLE=1 .venv/bin/python -m pytest -n 0
tests/cli/test_reference_table.py`, then read the difference before committing it.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import orjson
import pytest

from tests.conftest import ROOT, Cli
from tests.unit.test_help import COMMANDS_AND_GROUPS

DOC = ROOT / "docs" / "reference.md"
BEGIN, END = "<!-- edges-table:begin -->", "<!-- edges-table:end -->"
COLUMNS = ("no arguments", "`-` (empty stdin)", "an unknown id", "Ctrl-C", "`--json`")
WRITE = "WRITE_REFERENCE_TABLE"

# Forms that run until stopped, or for minutes: not run in their column (Ctrl-C's column
# runs the commands that wait).
NOT_RUN = {
    ("run",): "runs until stopped: see Ctrl-C",
    ("run", "--json"): "runs until stopped: see Ctrl-C",
    ("serve",): "runs until stopped: see Ctrl-C",
    ("bench",): "runs the benchmark (minutes)",
    ("bench", "--json"): "runs the benchmark (minutes)",
}


def commands() -> list[str]:
    """Every command that does something (a group's commands, not the group)."""
    return sorted(w for w, c in COMMANDS_AND_GROUPS.items() if not hasattr(c, "commands"))


def first_line(code: int, out: str, err: str, places: dict[str, str]) -> str:
    text = out if out.strip() else err
    line = next((line for line in text.splitlines() if line.strip()), "")
    for path, name in places.items():
        line = line.replace(path, name)
    line = re.sub(r":\d{2,5}/", ":PORT/", line)
    # Counts, durations, addresses: what varies from run to run, or machine to machine.
    line = re.sub(r"\d+", "N", line).replace("\t", "<TAB>")
    if line.startswith(("{", "[")):
        line = "JSON" + (" (one object a line)" if line.endswith("}") else "")
    elif len(line) > 90:
        line = line[:89] + "…"
    line = line.replace("|", "\\|").replace("`", "'")
    return f"{code}: `{line}`" if line else f"{code}"


class Place:
    """A spool and data directory of its own, made from the template, for one command."""

    def __init__(self, template: Path, root: Path) -> None:
        shutil.copytree(template, root)
        self.root = root
        self.cli = Cli(root / "spool", root / "data")
        self.places = {str(root): "TMP"}

    def run(self, args: tuple[str, ...]) -> str:
        done = self.cli(*args, input="", timeout=300)
        assert "Traceback" not in done.err, (args, done.err)
        return first_line(done.code, done.out, done.err, self.places)

    def interrupt(self, args: tuple[str, ...], ready: Callable[[subprocess.Popen], bool]) -> str:
        proc = self.cli.popen(*args, stdin=subprocess.PIPE, start_new_session=True)
        deadline = time.monotonic() + 120
        try:
            while not ready(proc):
                assert proc.poll() is None, (args, proc.communicate())
                assert time.monotonic() < deadline, f"{args} never got ready"
                time.sleep(0.05)
            proc.send_signal(signal.SIGINT)
            out, err = proc.communicate(timeout=120)
        finally:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
        assert b"Traceback" not in err, (args, err)
        return first_line(proc.returncode, out.decode(), err.decode(), self.places)


def reads_stdin(proc: subprocess.Popen) -> bool:
    """Blocked in read(2) on its standard input: past its start, waiting for ids."""
    try:
        return Path(f"/proc/{proc.pid}/syscall").read_text().startswith("0 0x0 ")
    except OSError:
        return False


def printed(stream: str) -> Callable[[subprocess.Popen], bool]:
    import select

    def ready(proc: subprocess.Popen) -> bool:
        handle = getattr(proc, stream)
        return bool(select.select([handle], [], [], 0)[0])

    return ready


def listed_alive(place: Place) -> Callable[[subprocess.Popen], bool]:
    return lambda proc: bool(place.cli("agents", "--json").json()["alive"])  # type: ignore[index]


def ctrl_c(words: str, place: Place) -> str:
    """The command's form that waits, interrupted; `—` for one that ends by itself."""
    name = words.split()
    ingest_dir = place.root / "drop"
    forms: dict[str, tuple[tuple[str, ...], Callable[[subprocess.Popen], bool]]] = {
        "run": (("run",), listed_alive(place)),
        "agent": (("agent", "solve"), listed_alive(place)),
        "events": (("events", "--tail", "1", "--follow"), printed("stdout")),
        "ingest": (("ingest", str(ingest_dir), "--watch"), printed("stdout")),
        "serve": (("serve", "--port", "0"), printed("stderr")),
        "corrupt resubmit": (("corrupt", "resubmit", "bad.json", "-"), reads_stdin),
    }
    for reader in ("submit", "status", "show", "result", "retry", "hold", "release", "cancel"):
        forms[reader] = ((reader, "-"), reads_stdin)
    if words not in forms:
        return "— (ends by itself)"
    args, ready = forms[words]
    if name[0] == "ingest":
        ingest_dir.mkdir()
        (ingest_dir / "one.json").write_bytes(orjson.dumps({"riddle": {"question": "1 + 1 ="}}))
    shown = " ".join(a if not a.startswith("/") else "DIR" for a in args)
    return f"`{shown}` → {place.interrupt(args, ready)}"


def row(words: str, template: Path, scratch: Path) -> str:
    cells = []
    forms = [(), ("-",), ("nope",), None, ("--json",)]
    for number, extra in enumerate(forms):
        place = Place(template, scratch / f"{words.replace(' ', '-')}-{number}")
        if extra is None:
            cells.append(ctrl_c(words, place))
            continue
        args = (*words.split(), *extra)
        cells.append(NOT_RUN.get(args) or place.run(args))
    return f"| `{words}` | " + " | ".join(cells) + " |"


def table(template: Path, scratch: Path) -> str:
    with ThreadPoolExecutor(4) as pool:
        rows = list(pool.map(lambda w: row(w, template, scratch), commands()))
    head = "| command | " + " | ".join(COLUMNS) + " |"
    rule = "|---" * (len(COLUMNS) + 1) + "|"
    return "\n".join([head, rule, *rows])


@pytest.fixture
def template(cli: Cli, tmp_path: Path) -> Path:
    """A spool holding riddle `r1` (in incoming/) and one file set aside (`bad.json`)."""
    done = cli("submit", "--id", "r1", "--question", "x * y =", "--data", "example/x.txt")
    assert done.code == 0, done.err
    assert isinstance(cli.spool, Path)
    (cli.spool / "corrupt" / "bad.json").write_bytes(b"{not json")
    (cli.spool / "corrupt" / "bad.json.reason").write_text("bad.json:1:2: not valid JSON\n")
    base = tmp_path / "template"
    base.mkdir()
    shutil.copytree(cli.spool, base / "spool")
    shutil.copytree(cli.data, base / "data")
    return base


@pytest.mark.timeout(1800)  # some 150 commands, on a machine that may be loaded
def test_the_reference_table_says_what_every_command_does_at_its_edges(
    template: Path, tmp_path: Path
) -> None:
    made = table(template, tmp_path / "places")
    text = DOC.read_text()
    before, rest = text.split(BEGIN, 1)
    _, after = rest.split(END, 1)
    wanted = f"{before}{BEGIN}\n{made}\n{END}{after}"
    if os.environ.get(WRITE):
        DOC.write_text(wanted)
        return
    assert text == wanted, (
        f"docs/reference.md's table disagrees with the commands; {WRITE}=1 writes it:\n{made}"
    )
