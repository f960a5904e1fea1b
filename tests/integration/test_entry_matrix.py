"""The hostile-entry matrix: every kind of entry (`tests.hostile_entries.KINDS`) in every
place riddlectl reads entries (`PLACES`), under every command that looks there
(`COMMANDS`), through the installed command, each run under a time-out.

Each case must end in a defined outcome: no hang, no exit 70, no traceback, nothing of
what lies outside the spool printed (links lead to a file holding `SECRET`) nor changed,
and the riddle submitted first never lost. Every kind of a place lies in one spool and
the place's commands run over it in the table's order (read-only ones first), so one
run of a command answers for every kind at once; the places run side by side. A new
kind, place or command is one line of its table.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import subprocess
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import orjson
import pytest

from riddlectl.spool import open_spool
from tests import pg
from tests.conftest import ROOT, Cli
from tests.hostile_entries import (
    GOOD,
    KINDS,
    SECRET,
    make_entries,
    make_outside,
    outside_state,
    tidy,
)

HANG = 60.0  # seconds: a command still running then is taken as hung (a loaded machine)


@dataclass
class Spot:
    """One place made ready in one spool: where its entries lie and their names."""

    cli: Cli
    base: Path
    directory: Path
    names: list[str]
    outside: Path


@dataclass(frozen=True)
class Place:
    """Where entries lie (`where(spool, base)`), the extension they are named with, and
    the spools it applies to (a PostgreSQL spool has no queue directories, but what
    `ingest` reads, and the data directory, are directories there too)."""

    key: str
    where: Callable[[Path, Path], Path]
    ext: str = ".json"
    spools: tuple[str, ...] = ("fs",)
    named: Callable[[str], str] = str  # an entry's name there, from its kind's


def _cache_key(name: str) -> str:
    """A name the extraction cache takes for one of its own (and so reads)."""
    digest = hashlib.sha256(name.encode()).hexdigest()
    return f"{digest}.{digest[:12]}.json"


PLACES = [
    Place("incoming", lambda spool, base: spool / "incoming"),
    Place("corrupt", lambda spool, base: spool / "corrupt"),
    Place("ingest", lambda spool, base: base / "inbox", spools=("fs", "postgres")),
    Place("data", lambda spool, base: base / "data" / "hostile", ".txt", ("fs", "postgres")),
    Place("cache", lambda spool, base: spool / "cache" / "extractions", named=_cache_key),
    Place("tmp", lambda spool, base: spool / "tmp"),
]


def _per_entry(*args: str) -> Callable[[Spot], Iterator[list[str]]]:
    """A command run once per entry, `{name}` in `args` replaced by the entry's name."""

    def each(spot: Spot) -> Iterator[list[str]]:
        for name in spot.names:
            yield [a.replace("{name}", name) for a in args]

    return each


def _once(*args: str) -> Callable[[Spot], Iterator[list[str]]]:
    def one(spot: Spot) -> Iterator[list[str]]:
        yield [a.replace("{dir}", str(spot.directory)) for a in args]

    return one


def _copy(spot: Spot) -> Iterator[list[str]]:
    yield ["copy", "--to", str(spot.base / f"copy-{time.monotonic_ns()}")]


def _drop_all(spot: Spot) -> Iterator[list[str]]:
    """Every entry still set aside (those resubmitted went), at once: all or none."""
    left = [n for n in spot.names if os.path.lexists(spot.directory / n)]
    yield ["corrupt", "drop", *(n for n in left if not n.startswith("."))]


def _submit_data(spot: Spot) -> Iterator[list[str]]:
    for name in spot.names:
        yield ["submit", "--question", "x + 1 =", "--data", f"hostile/{name}"]


@dataclass(frozen=True)
class Command:
    """A command and the places it looks in, run in this table's order."""

    key: str
    runs: Callable[[Spot], Iterator[list[str]]]
    places: frozenset[str]
    codes: frozenset[int]  # the exit codes that are an answer here


def command(
    key: str, runs: Callable[[Spot], Iterator[list[str]]], *places: str, codes: str = "0"
) -> Command:
    return Command(key, runs, frozenset(places), frozenset(int(c) for c in codes))


QUEUES = ("incoming", "corrupt")
STORE = ("incoming", "corrupt", "cache", "tmp")  # the places of the spool's own directory
COMMANDS = [
    command("status", _once("status"), *QUEUES),
    command("status --json", _once("status", "--json"), *QUEUES),
    command("status --jsonl", _once("status", "--jsonl", "--limit", "0"), *QUEUES),
    command("status --stage incoming", _once("status", "--stage", "incoming", "--jsonl"), *QUEUES),
    command("status --stage corrupt", _once("status", "--stage", "corrupt", "--json"), *QUEUES),
    command("status ID", _once("status", GOOD, "nosuchid"), *QUEUES, codes="3"),
    command("show", _once("show", "nosuchid"), *QUEUES, codes="3"),
    command("corrupt list", _once("corrupt", "list"), "corrupt", "incoming"),
    command("corrupt list --json", _once("corrupt", "list", "--json"), "corrupt"),
    command("corrupt show", _per_entry("corrupt", "show", "{name}"), "corrupt", codes="023"),
    command("doctor", _once("doctor"), *STORE, codes="01"),
    command("copy", _copy, *STORE, "ingest", codes="012"),  # 1: an entry it could not copy
    command("cache clear --extractor", _once("cache", "clear", "--extractor", "text"), "cache"),
    command("submit --data", _submit_data, "data", codes="02"),
    command("ingest", _once("ingest", "{dir}"), "ingest"),
    command(
        "corrupt resubmit", _per_entry("corrupt", "resubmit", "{name}"), "corrupt", codes="023"
    ),
    command("run --once", _once("run", "--once"), *STORE, "ingest", "data", codes="01"),
    command("doctor --fix", _once("doctor", "--fix"), *STORE, codes="01"),
    command("purge", _once("purge", "--failed", "--older-than", "1d"), "incoming", "corrupt"),
    command("cache clear", _once("cache", "clear"), "cache"),
    command("corrupt drop", _drop_all, "corrupt", codes="0"),
    command("doctor after", _once("doctor"), "corrupt", codes="0"),
]


@dataclass
class Ran:
    """One run of a command: its arguments, exit code (None: hung), output, seconds."""

    args: list[str]
    code: int | None
    out: str
    err: str
    seconds: float


@dataclass
class Outcome:
    """A place in one spool, after its commands: each command's runs, what lay outside
    the spool before and after, and whether the first riddle is still there."""

    runs: dict[str, list[Ran]] = field(default_factory=dict)
    broken: str = ""  # the test's own failure to make the place, if any
    outside_before: dict[str, bytes] = field(default_factory=dict)
    outside_after: dict[str, bytes] = field(default_factory=dict)
    good_found: bool = False


def run(cli: Cli, args: list[str]) -> Ran:
    started = time.monotonic()
    env = {**os.environ, "RIDDLECTL_DROP_IN_GRACE": "0.1", "RIDDLECTL_FSYNC": "0"}
    try:
        proc = subprocess.run(
            cli.argv(*args), capture_output=True, timeout=HANG, env=env, stdin=subprocess.DEVNULL
        )
    except subprocess.TimeoutExpired:
        return Ran(args, None, "", "", time.monotonic() - started)
    out = proc.stdout.decode("utf-8", "replace")
    err = proc.stderr.decode("utf-8", "replace")
    return Ran(args, proc.returncode, out, err, time.monotonic() - started)


def prepare(place: Place, base: Path, spool: str) -> Spot:
    """A spool (a directory, or the PostgreSQL URL `spool`) with the first riddle in it
    and every kind of entry in `place`."""
    data = base / "data"
    shutil.copytree(ROOT / "data" / "share", data)
    location: Path | str = spool if spool.startswith("postgresql") else base / "spool"
    made = open_spool(location, create=True)
    if hasattr(made, "disconnect"):
        made.disconnect()
    cli = Cli(location, data)
    submitted = cli("submit", "--id", GOOD, "--question", "x * y =", "--data", "example/x.txt")
    assert submitted.code == 0, submitted.err
    outside = make_outside(base)
    root = base / "spool"
    directory = place.where(root, base)
    names = make_entries(directory, outside, place.ext, place.named)
    if place.key == "data":  # riddles dropped in that name each data entry
        inbox = base / "inbox"
        inbox.mkdir()
        for n, name in enumerate(names):
            doc = {"riddle": {"question": "x + 1 ="}, "data": [{"file_plain": f"hostile/{name}"}]}
            with contextlib.suppress(TypeError):  # a name that is no UTF-8 has no JSON
                (inbox / f"d{n}.json").write_bytes(orjson.dumps(doc))
    return Spot(cli, base, directory, names, outside)


def play(place: Place, base: Path, spool: str) -> Outcome:
    """Every command that looks in `place`, in the table's order, over one spool."""
    try:
        spot = prepare(place, base, spool)
    except Exception as exc:
        tidy(base)
        return Outcome(broken=f"{type(exc).__name__}: {exc}")
    outcome = Outcome(outside_before=outside_state(spot.outside))
    try:
        for cmd in COMMANDS:
            if place.key in cmd.places:
                outcome.runs[cmd.key] = [run(spot.cli, args) for args in cmd.runs(spot)]
            if place.key == "data" and cmd.key == "submit --data":
                outcome.runs["ingest"] = [run(spot.cli, ["ingest", str(base / "inbox")])]
        outcome.good_found = run(spot.cli, ["status", GOOD]).code == 0
        outcome.outside_after = outside_state(spot.outside)
    finally:
        tidy(base)
    return outcome


def cases(spool: str) -> list[tuple[str, str]]:
    return [
        (place.key, cmd.key)
        for place in PLACES
        if spool in place.spools
        for cmd in COMMANDS
        if place.key in cmd.places
    ]


def play_all(base: Path, spool: str, urls: Iterator[str] | None = None) -> dict[str, Outcome]:
    places = [p for p in PLACES if spool in p.spools]
    with ThreadPoolExecutor(max_workers=len(places)) as pool:
        futures = {
            p.key: pool.submit(play, p, base / p.key, next(urls) if urls else "") for p in places
        }
        return {key: future.result() for key, future in futures.items()}


@pytest.fixture(scope="module")
def fs_outcomes(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Outcome]:
    started = time.monotonic()
    outcomes = play_all(tmp_path_factory.mktemp("matrix-fs"), "fs")
    runs = sum(len(r) for o in outcomes.values() for r in o.runs.values())
    print(
        f"\nthe matrix: {case_count()} cases in all; on directory spools {runs} runs "
        f"in {time.monotonic() - started:.1f} s"
    )
    return outcomes


@pytest.fixture(scope="module")
def pg_outcomes(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Outcome]]:
    with pg.fresh_schema() as first, pg.fresh_schema() as second:
        yield play_all(tmp_path_factory.mktemp("matrix-pg"), "postgres", iter([first, second]))


def params() -> list[object]:
    # The outcomes are asked for by name (`getfixturevalue`), which the grouping of tests
    # that share a module's fixture does not see (tests/conftest.py): grouped here, each
    # spool's cases on one worker, or every worker that takes one plays them all again
    # (four times over, 45 s each, in a run of 2026-12-07).
    fs_worker = pytest.mark.xdist_group("entry-matrix-fs")
    pg_worker = pytest.mark.xdist_group("entry-matrix-pg")
    fs = [
        pytest.param("fs", *case, id=f"fs-{case[0]}-{case[1]}", marks=fs_worker)
        for case in cases("fs")
    ]
    on_pg = [
        pytest.param(
            "postgres",
            *case,
            id=f"pg-{case[0]}-{case[1]}",
            marks=[pytest.mark.postgres, pg_worker],
        )
        for case in cases("postgres")
    ]
    return [*fs, *on_pg]


def case_count() -> int:
    """Kinds by (place, spool, command): what the matrix answers for."""
    return len(KINDS) * (len(cases("fs")) + len(cases("postgres")))


@pytest.mark.timeout(900)
@pytest.mark.parametrize(("spool", "place", "cmd"), params())
def test_every_kind_of_entry_gets_a_defined_outcome(
    request: pytest.FixtureRequest, spool: str, place: str, cmd: str
) -> None:
    outcomes = request.getfixturevalue("fs_outcomes" if spool == "fs" else "pg_outcomes")
    outcome: Outcome = outcomes[place]
    assert not outcome.broken, outcome.broken
    codes = next(c.codes for c in COMMANDS if c.key == cmd)
    for ran in outcome.runs[cmd]:
        said = f"riddlectl {' '.join(ran.args)} over {place}/: exit {ran.code}\n{ran.err[-2000:]}"
        assert ran.code is not None, f"hung (over {HANG:.0f} s): {said}"
        assert ran.code in codes and "Traceback" not in ran.err, said
        assert SECRET not in ran.out and SECRET not in ran.err, said
    assert outcome.outside_after == outcome.outside_before, "something outside the spool changed"
    assert outcome.good_found, f"the riddle {GOOD} was lost"
