"""Shared fixtures: an isolated environment, a real temporary spool and data directory,
and a way to run the installed `riddlectl` command as a user would."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

import orjson
import pytest

from riddlectl import settings as settings_mod
from riddlectl.settings import Settings
from riddlectl.spool import open_spool
from riddlectl.spool.contract import Spool
from riddlectl.spool.memory import MemorySpool
from tests import pg
from tests.rig import Rig

ROOT = Path(__file__).resolve().parent.parent
HELPERS = Path(__file__).resolve().parent / "helpers"

# What a test needs, read from what it uses, so that a test written later carries its
# marker without being told (docs/guarantees.md#the-tests says what each marker means).
# A fixture it asks for, directly or through another fixture:
MARK_BY_FIXTURE = {
    "pg_url": "postgres",
    "pg_spool": "postgres",
    "pg_cli": "postgres",
    "browser": "browser",
    "page": "browser",
    "model_server": "model",
}
# A module its file imports something from (Tesseract and the Debian fonts of the image
# generator; PocketSphinx and espeak-ng/sox of the recording generator):
MARK_BY_IMPORT = {
    "tesserocr": "ocr",
    **dict.fromkeys(
        (
            f"riddlectl.handlers.builtin.images.{name}"
            for name in ("extractor", "engine", "lines", "page", "prep")
        ),
        "ocr",
    ),
    "riddlectl.bench.extractors.images": "ocr",
    "pocketsphinx": "audio",
    "riddlectl.handlers.builtin.speech": "audio",
    "riddlectl.bench.extractors.speech": "audio",
}


# Tests that share one costly thing per process, for one xdist worker under `--dist
# loadgroup`: one llama.cpp server, one Chromium. The tests of the shared PostgreSQL
# server run on any worker, each in a schema of its own; a test that ends other sessions
# or changes the server (a restart, an administrator's command) starts a server of its
# own and says so (`tests.pg.own_server`), which keeps its module's tests on one worker.
# (pytest-xdist 3.8 ignores the groups under pytest 9.2, pytest-xdist#1386: the test extra
# keeps pytest below 9.2.)
GROUP_BY_MARK = {"model": "model", "browser": "browser"}
# The other tests of a module that share a fixture built once per module (a bench run, a
# server, every hostile case run at once) go on one worker too: spread over four, each
# worker would build it again.
SHARED_SCOPES = ("module", "package")


# First: before `-m` deselects by marker and before xdist reads the groups.
@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        fixtures = getattr(item, "fixturenames", ())
        needs = {MARK_BY_FIXTURE[name] for name in fixtures if name in MARK_BY_FIXTURE}
        needs |= imported_needs(getattr(item, "module", None))
        for name in sorted(needs - {mark.name for mark in item.iter_markers()}):
            item.add_marker(name)
        group = worker_group(item)
        if group is not None:
            item.add_marker(pytest.mark.xdist_group(group))


def worker_group(item: pytest.Item) -> str | None:
    """The xdist group of `item`: none when it names its own (`tests.pg.own_server`), else
    its mark's, else its module's when it shares a module-scoped fixture, else none (any
    worker)."""
    if item.get_closest_marker("xdist_group") is not None:
        return None
    for mark, group in GROUP_BY_MARK.items():
        if item.get_closest_marker(mark) is not None:
            return group
    info = getattr(item, "_fixtureinfo", None)
    definitions = info.name2fixturedefs.values() if info is not None else ()
    if any(d.scope in SHARED_SCOPES for defs in definitions for d in defs):
        return item.nodeid.split("::", 1)[0]
    return None


def imported_needs(module: object) -> set[str]:
    """The markers the names a test module imported call for (`from X import y`, `import X`)."""
    found = set()
    for value in vars(module).values() if module is not None else ():
        if isinstance(value, ModuleType):
            origin = value.__name__
        else:
            origin = getattr(value, "__module__", None)
        if not isinstance(origin, str):
            continue
        # A prefix, not a whole name: `…builtin.speech` covers the family's modules.
        found |= {mark for prefix, mark in MARK_BY_IMPORT.items() if origin.startswith(prefix)}
    return found


@pytest.fixture(autouse=True)
def isolate_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """No riddlectl setting leaks in from the developer's shell; work in a temp dir."""
    for name in list(os.environ):
        if name.startswith(("RIDDLECTL_", "RIDDLE_")) or name == "SOLUTION_MAX_TRIALS":
            monkeypatch.delenv(name)
    monkeypatch.chdir(tmp_path)


@pytest.fixture
def data_dir(tmp_path: Path) -> Path:
    data = tmp_path / "data"
    shutil.copytree(ROOT / "data" / "share", data)
    return data


# The PostgreSQL case of a fixture run on every kind of spool: marked, so that `-m 'not
# postgres'` (the fast tier) leaves it out and keeps the others.
ON_POSTGRES = pytest.param("postgres", marks=pytest.mark.postgres)


@pytest.fixture(params=["memory", "fs", ON_POSTGRES])
def spool(request: pytest.FixtureRequest, tmp_path: Path) -> Spool:
    """Each spool implementation in turn: a test of what lies above the spool runs on
    each (on PostgreSQL in a schema of its own)."""
    if request.param == "memory":
        made: Spool = MemorySpool()
        made.init()
        return made
    if request.param == "postgres":
        pg_spool: Spool = request.getfixturevalue("pg_spool")
        return pg_spool
    return open_spool(tmp_path / "spool", create=True, durable=False)


@pytest.fixture
def pg_url() -> Iterator[str]:
    """A PostgreSQL spool URL in a schema of its own (skipped without a server)."""
    with pg.fresh_schema() as url:
        yield url


@pytest.fixture
def pg_spool(pg_url: str) -> Iterator[Spool]:
    """A PostgreSQL spool, made as `riddlectl init` makes one, in a schema of its own."""
    made = open_spool(pg_url, create=True)
    yield made
    made.disconnect()  # type: ignore[attr-defined]


@pytest.fixture
def rig(spool: Spool, tmp_path: Path) -> Rig:
    """A pipeline on each spool in turn, for handlers given as Python functions."""
    return Rig(spool, tmp_path / "rig")


@pytest.fixture
def spool_dir(tmp_path: Path) -> Path:
    return tmp_path / "spool"


@pytest.fixture
def settings(spool_dir: Path, data_dir: Path) -> Settings:
    """Settings for library-level tests: fast retries so tests do not sleep long."""
    resolved = settings_mod.resolve({"spool": spool_dir, "data_dir": data_dir})
    return Settings(**{**resolved.__dict__, "retry_base": 0.05, "retry_cap": 0.2})


@dataclass
class Completed:
    code: int
    out: str
    err: str

    def json(self) -> object:
        return orjson.loads(self.out)


@dataclass
class Cli:
    """Runs `riddlectl` in a subprocess against the test's spool and data directory."""

    spool: Path | str  # a directory, or a PostgreSQL spool's URL
    data: Path

    def argv(self, *args: str) -> list[str]:
        exe = shutil.which("riddlectl", path=str(Path(sys.executable).parent))
        base = [exe] if exe else [sys.executable, "-m", "riddlectl"]
        return [*base, "--spool", str(self.spool), "--data-dir", str(self.data), *args]

    def __call__(
        self,
        *args: str,
        input: str | bytes | None = None,
        timeout: float = 60,
        env: dict[str, str] | None = None,
    ) -> Completed:
        data = input.encode() if isinstance(input, str) else input
        proc = subprocess.run(
            self.argv(*args),
            input=data,
            capture_output=True,
            timeout=timeout,
            env={**os.environ, **(env or {})},
        )
        # A file name that is no UTF-8 comes out as its bytes, as `ls` prints it.
        out, err = (b.decode(errors="backslashreplace") for b in (proc.stdout, proc.stderr))
        return Completed(proc.returncode, out, err)

    def popen(self, *args: str, **kwargs: object) -> subprocess.Popen[bytes]:
        return subprocess.Popen(
            self.argv(*args), stdout=subprocess.PIPE, stderr=subprocess.PIPE, **kwargs
        )  # type: ignore[call-overload]


@pytest.fixture
def cli(spool_dir: Path, data_dir: Path) -> Cli:
    """The command on a spool made as `riddlectl init` makes it (only `init` makes one)."""
    open_spool(spool_dir, create=True)
    return Cli(spool_dir, data_dir)


@pytest.fixture
def pg_cli(pg_url: str, data_dir: Path) -> Cli:
    """The command on a PostgreSQL spool made as `riddlectl init` makes it."""
    open_spool(pg_url, create=True).disconnect()  # type: ignore[attr-defined]
    return Cli(pg_url, data_dir)


@pytest.fixture(params=["fs", ON_POSTGRES])
def any_cli(request: pytest.FixtureRequest) -> Cli:
    """`cli` and `pg_cli` in turn: for what must hold on every kind of spool."""
    cli: Cli = request.getfixturevalue("cli" if request.param == "fs" else "pg_cli")
    return cli


@pytest.fixture
def helpers() -> Path:
    return HELPERS


def example_doc(**overrides: object) -> dict[str, object]:
    """The seed example of the README's quick start (x * y over x.txt, y.txt, z.txt)."""
    doc: dict[str, object] = {
        "riddle": {"context": "[Taschenrechner]", "question": "x * y ="},
        "data": [{"type": "text", "file_plain": f"example/{n}.txt"} for n in "xyz"],
    }
    doc.update(overrides)
    return doc


def submit_flags(cli: Cli, riddle_id: str, *extra: str) -> None:
    """Submit `x * y =` over example/x.txt and y.txt as `riddle_id`, built from options."""
    done = cli(
        "submit",
        "--id",
        riddle_id,
        "--question",
        "x * y =",
        "--data",
        "example/x.txt",
        "--data",
        "example/y.txt",
        *extra,
    )
    assert done.code == 0, done.err


def submit_documents(cli: Cli, *docs: dict) -> None:
    """Submit riddle documents through `riddlectl submit -`, as JSON Lines."""
    lines = "\n".join(orjson.dumps(doc).decode() for doc in docs)
    done = cli("submit", "-", input=lines)
    assert done.code == 0, done.err


def submit_products(cli: Cli, count: int, ids: str, stem: str) -> list[dict[str, object]]:
    """`count` riddles `a * b =` (ids `ids.format(i)`) over 10 data files `STEM<k>.txt`
    with `a = k`, `b = k + 2`, submitted in one go; their documents."""
    for k in range(10):
        (cli.data / f"{stem}{k}.txt").write_text(f"a = {k}\nb = {k + 2}\n")
    docs: list[dict[str, object]] = [
        {
            "id": ids.format(i),
            "riddle": {"question": "a * b ="},
            "data": [{"type": "text", "file_plain": f"{stem}{i % 10}.txt"}],
        }
        for i in range(count)
    ]
    assert cli("submit", "-", input=orjson.dumps(docs)).code == 0, "the riddles were refused"
    return docs


def slow_solver(tmp_path: Path, seconds: float = 30) -> str:
    """A `cmd:` solver that touches `tmp_path/started`, then answers 150 after `seconds`."""
    script = tmp_path / "slow.sh"
    script.write_text(
        f"#!/bin/sh\ncat >/dev/null\ntouch {tmp_path / 'started'}\nsleep {seconds}\n"
        'echo \'{"solution": "150", "explanation": "slow"}\'\n'
    )
    script.chmod(0o755)
    return f"cmd:{script}"


def submit_for_solving(cli: Cli, *ids: str, question: str = "what is one?") -> None:
    """Riddles that need neither extraction nor validation: straight to a solver."""
    docs = [
        {
            "id": riddle_id,
            "riddle": {"question": question},
            "status": {"extract": {"required": False}, "validate": {"required": False}},
        }
        for riddle_id in ids
    ]
    done = cli("submit", "-", input=b"\n".join(orjson.dumps(d) for d in docs))
    assert done.code == 0, done.err


def queue_of(cli: Cli, riddle_id: str) -> str:
    """The queue a riddle is in, as `status ID --json` says, on any spool."""
    found = cli("status", riddle_id, "--json")
    assert found.code == 0, found.err
    return str(found.json()["riddles"][0]["queue"])


def final(cli: Cli, riddle_id: str) -> tuple[str, dict]:
    """The final queue of a riddle on a directory spool, and its document there."""
    assert isinstance(cli.spool, Path)
    for queue in ("done", "failed"):
        path = cli.spool / queue / f"{riddle_id}.json"
        if path.exists():
            return queue, orjson.loads(path.read_bytes())
    raise AssertionError(f"{riddle_id} is not final")


def logged_events(cli: Cli) -> list[dict]:
    """The event log as stored, to compare with a riddle's history: `events` adds each
    event's time in ISO 8601 (`at`) as it prints, which the history does not hold."""
    res = cli("events")
    assert res.code == 0, res.err
    return [
        {k: v for k, v in orjson.loads(line).items() if k != "at"} for line in res.out.splitlines()
    ]


def write_json(path: Path, value: object) -> Path:
    path.write_bytes(orjson.dumps(value))
    return path


def spool_findings(cli: Cli) -> list[str]:
    """What `doctor` finds wrong with the spool itself: warnings about its surroundings
    are left out (the shared test server may run with autovacuum off, which doctor says)."""
    return [line for line in cli("doctor").out.splitlines() if not line.startswith("warn\t")]
