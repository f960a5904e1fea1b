"""Hostile input: every bad document or data file gets one clear error.

At submit: exit 2, one stderr line naming the file and the field, no traceback, nothing
written. As a drop-in (a file copied into `spool/incoming/`, then `run --once`): a move to
`corrupt/` with `NAME.reason` beside it, or to `failed/` with `error`, while a good riddle
dropped alongside still ends in `done/` with 150. Valid documents whose questions are
expression bombs or injection attempts fail quickly at solve, and nothing is executed.
Everything runs the installed command in a subprocess (the `cli` fixture, or its `Cli`
class in the module-scoped fixtures that run the per-case commands a few at a time).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import orjson
import pytest

from riddlectl.spool.states import LAYOUT_DIRS, Queue
from tests.conftest import ROOT, Cli, Completed, example_doc

GOOD = "good"
HOSTILE = "hostile"  # the name of a submitted hostile file (drop-ins are named after their case)
QUESTION = {"context": "[Taschenrechner]", "question": "x * y ="}
LONG_ID = "a" * 10_000
MAX_ERROR_LINE = 1_000  # "one clear line": a bounded one, not a 10 KB echo of the input
OLD = time.time() - 3_600  # drop-ins are backdated past the drop-in grace period

# -- helpers -----------------------------------------------------------------------------------


def make_layout(spool: Path) -> None:
    """An existing, empty spool, so that "nothing written" means something."""
    for name in LAYOUT_DIRS:
        (spool / name).mkdir(parents=True, exist_ok=True)


def stored_files(spool: Path) -> dict[str, list[str]]:
    """Every file in a queue directory, `corrupt/` or `tmp/`: what a submit may not leave."""
    out = {}
    for name in LAYOUT_DIRS:
        directory = spool / name
        out[name] = sorted(p.name for p in directory.iterdir()) if directory.is_dir() else []
    return out


def assert_nothing_written(spool: Path) -> None:
    leftovers = {name: files for name, files in stored_files(spool).items() if files}
    assert leftovers == {}, f"a refused submit left files behind: {leftovers}"
    events = spool / "events.jsonl"
    assert not events.exists() or events.read_bytes().strip() == b"", "a submit event was logged"


def one_error_line(res: Completed, *needles: str) -> str:
    """The single stderr line of a refused command; it names every needle."""
    assert "Traceback" not in res.err, res.err[-3000:]
    lines = [line for line in res.err.splitlines() if line.strip()]
    assert len(lines) == 1, f"expected one error line, got {len(lines)}: {res.err[:2000]!r}"
    line = lines[0]
    assert line.startswith("riddlectl: "), line[:300]
    assert len(line) <= MAX_ERROR_LINE, f"error line is {len(line)} characters: {line[:200]!r}…"
    for needle in needles:
        assert needle in line, f"{needle!r} not named in {line[:300]!r}"
    return line


def read_doc(path: Path) -> dict:
    return orjson.loads(path.read_bytes())


def assert_good_done(spool: Path) -> None:
    path = spool / "done" / f"{GOOD}.json"
    where = {q.value: sorted(p.name for p in (spool / q.value).glob("*.json")) for q in Queue}
    assert path.exists(), f"the good riddle did not reach done/: {where}"
    doc = read_doc(path)
    assert doc["solution"]["solution"] == "150"
    assert doc["status"]["solved"] is True


def write(path: Path, raw: bytes, mtime: float | None = OLD) -> Path:
    path.write_bytes(raw)
    if mtime is not None:
        os.utime(path, (mtime, mtime))
    return path


def doc(**fields: object) -> bytes:
    return orjson.dumps({"riddle": QUESTION, **fields})


def with_data(file_plain: str) -> bytes:
    return doc(data=[{"type": "text", "file_plain": file_plain}])


# -- the hostile documents ---------------------------------------------------------------------


@dataclass(frozen=True)
class Hostile:
    """One hostile document. `build(data_dir, outside)` prepares files and returns its bytes;
    `needles` are what every error about it must name; a drop-in of it ends in `dropin`."""

    name: str
    build: Callable[[Path, Path], bytes]
    needles: tuple[str, ...]
    dropin: str  # "corrupt" (not a valid document) or "failed" (valid, but its data is bad)
    env: dict[str, str] = field(default_factory=dict)


def _fifo_link(data: Path, outside: Path) -> bytes:
    # A read of a FIFO blocks until a writer comes, which never happens: a run that reads
    # the link's target hangs, and the subprocess timeout turns that into a failure.
    os.mkfifo(outside / "fifo")
    (data / "evil.txt").symlink_to(outside / "fifo")
    return with_data("evil.txt")


def _dir_link(data: Path, outside: Path) -> bytes:
    (outside / "secret.txt").write_text("x = 666\n")
    (data / "outdir").symlink_to(outside, target_is_directory=True)
    return with_data("outdir/secret.txt")


def _fifo_inside(data: Path, outside: Path) -> bytes:
    os.mkfifo(data / "pipe.txt")
    return with_data("pipe.txt")


def _dotdot(data: Path, outside: Path) -> bytes:
    (outside / "secret.txt").write_text("x = 666\n")
    return with_data(f"../{outside.name}/secret.txt")


def _not_utf8(data: Path, outside: Path) -> bytes:
    (data / "latin1.txt").write_bytes("x = 10\ny = 15 # Größe\n".encode("latin-1"))
    return with_data("latin1.txt")


def _oversize(data: Path, outside: Path) -> bytes:
    (data / "big.txt").write_text("x = 10\n" + "#" * 1017)  # 1 KiB, over the 100-byte limit
    return with_data("big.txt")


def _nested(data: Path, outside: Path) -> bytes:
    depth = 100_000
    return b'{"riddle": {"question": "x"}, "deep": ' + b"[" * depth + b"]" * depth + b"}"


def _fat(data: Path, outside: Path) -> bytes:
    # 5 MiB: over the 4 MiB the agents accept for one document, under the 64 MiB a
    # submission may have in all.
    return doc(pad="p" * (5 * 1024 * 1024))


CASES = [
    Hostile(
        "malformed-json",
        lambda d, o: b'{"riddle": {"question": "x * y ="}, "data": [',
        ("not valid JSON", ".json:1:46:"),
        "corrupt",
    ),
    Hostile("not-an-object", lambda d, o: b'"x * y ="', ("JSON object",), "corrupt"),
    Hostile(
        "question-number",
        lambda d, o: orjson.dumps({"riddle": {"question": 42}}),
        ("riddle.question",),
        "corrupt",
    ),
    Hostile(
        "data-object",
        lambda d, o: doc(data={"type": "text", "file_plain": "example/x.txt"}),
        ("data",),
        "corrupt",
    ),
    Hostile("data-number", lambda d, o: doc(data=5), ("data",), "corrupt"),
    Hostile("legacy-trial-string", lambda d, o: doc(trial="x"), ("trial",), "corrupt"),
    Hostile("trial-negative", lambda d, o: doc(status={"trial": -1}), ("status.trial",), "corrupt"),
    Hostile(
        "legacy-steps-list",
        lambda d, o: doc(steps=["extract"]),
        ("steps",),
        "corrupt",
    ),
    Hostile(
        "legacy-status-string",
        lambda d, o: doc(trial=0, status="solved"),
        ("status",),
        "corrupt",
    ),
    Hostile(
        "legacy-data-object",
        lambda d, o: doc(trial=0, data={}),
        ("data",),
        "corrupt",
    ),
    Hostile(
        "answer-unknown-type",
        lambda d, o: orjson.dumps({"riddle": {**QUESTION, "answer": {"type": "essay"}}}),
        ("riddle.answer", "type"),
        "corrupt",
    ),
    Hostile(
        "answer-bad-pattern",
        lambda d, o: orjson.dumps(
            {"riddle": {**QUESTION, "answer": {"type": "fill", "pattern": "(unclosed"}}}
        ),
        ("riddle.answer", "pattern"),
        "corrupt",
    ),
    Hostile(
        "answer-one-choice",
        lambda d, o: orjson.dumps(
            {"riddle": {**QUESTION, "answer": {"type": "choice", "criteria": {"a": "only"}}}}
        ),
        ("riddle.answer", "criteria"),
        "corrupt",
    ),
    Hostile("id-slash", lambda d, o: doc(id="a/b"), ("id",), "corrupt"),
    Hostile("id-dotdot-path", lambda d, o: doc(id="../escape"), ("id",), "corrupt"),
    Hostile("id-dotdot", lambda d, o: doc(id=".."), ("id",), "corrupt"),
    Hostile("id-leading-dash", lambda d, o: doc(id="-rf"), ("id",), "corrupt"),
    Hostile("id-leading-dot", lambda d, o: doc(id=".hidden"), ("id",), "corrupt"),
    Hostile("id-10000-chars", lambda d, o: doc(id=LONG_ID), ("id",), "corrupt"),
    Hostile(
        "data-absolute",
        lambda d, o: with_data(str(o / "secret.txt")),
        ("data[0].file_plain", "absolute"),
        "failed",
    ),
    Hostile("data-dotdot", _dotdot, ("data[0].file_plain", ".."), "failed"),
    Hostile("data-link-to-fifo-outside", _fifo_link, ("data[0].file_plain", "outside"), "failed"),
    Hostile("data-dir-link-outside", _dir_link, ("data[0].file_plain", "outside"), "failed"),
    Hostile("data-fifo-inside", _fifo_inside, ("data[0].file_plain", "regular file"), "failed"),
    Hostile(
        "data-missing",
        lambda d, o: with_data("example/nope.txt"),
        ("data[0].file_plain", "does not exist"),
        "failed",
    ),
    Hostile("data-not-utf8", _not_utf8, ("data[0].file_plain", "UTF-8"), "failed"),
    Hostile(
        "data-oversize",
        _oversize,
        ("data[0].file_plain", "100-byte limit"),
        "failed",
        env={"RIDDLECTL_MAX_DATA_BYTES": "100"},
    ),
    Hostile("nested-100000-deep", _nested, ("not valid JSON", "depth"), "corrupt"),
    Hostile("document-over-4MiB", _fat, ("byte limit",), "corrupt"),
]


def case_params(for_dropin: bool) -> list[object]:
    return [pytest.param(case, id=case.name) for case in CASES]


# Every command costs a Python start-up (~0.7 s CPU), so the cases' commands are run by
# module-scoped fixtures, a few at a time, and each test then checks its own case.
PARALLEL = 3


def clean_env(extra: dict[str, str]) -> dict[str, str]:
    """The environment `isolate_environment` gives a test, for module-scoped runs."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("RIDDLECTL_", "RIDDLE_")) and k != "SOLUTION_MAX_TRIALS"
    }
    return {**env, **extra}


@dataclass
class Scenario:
    """A spool and data directory for some cases; once run, what the command did (None:
    it hung and was killed)."""

    cases: list[Hostile]
    root: Path
    result: Completed | None = None

    @property
    def spool(self) -> Path:
        return self.root / "spool"

    @property
    def cli(self) -> Cli:
        return Cli(self.spool, self.root / "data")

    @property
    def env(self) -> dict[str, str]:
        return {k: v for case in self.cases for k, v in case.env.items()}

    def prepare(self) -> dict[str, bytes]:
        """The data directory (with each case's files) and each case's document."""
        shutil.copytree(ROOT / "data" / "share", self.root / "data")
        outside = self.root / "outside"
        outside.mkdir()
        (outside / "secret.txt").write_text("x = 666\n")
        return {case.name: case.build(self.root / "data", outside) for case in self.cases}

    def run(self, *args: str, timeout: float = 40) -> None:
        try:
            proc = subprocess.run(
                self.cli.argv(*args),
                capture_output=True,
                timeout=timeout,
                env=clean_env(self.env),
                cwd=self.root,
            )
        except subprocess.TimeoutExpired:
            self.result = None
            return
        self.result = Completed(proc.returncode, proc.stdout.decode(), proc.stderr.decode())


def run_all(scenarios: list[Scenario], *args: str) -> dict[str, Scenario]:
    with ThreadPoolExecutor(PARALLEL) as pool:
        list(pool.map(lambda sc: sc.run(*args), scenarios))
    return {case.name: sc for sc in scenarios for case in sc.cases}


def cli_many(cli: Cli, calls: list[tuple[str, ...]]) -> list[Completed]:
    """Independent commands on one spool, a few at a time."""
    with ThreadPoolExecutor(PARALLEL) as pool:
        return list(pool.map(lambda args: cli(*args), calls))


# -- at submit ---------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def submitted(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Scenario]:
    """Every hostile document submitted as a file to its own existing, empty spool."""
    scenarios = []
    for case in CASES:
        scenario = Scenario([case], tmp_path_factory.mktemp(f"submit-{case.name}"))
        raw = scenario.prepare()[case.name]
        make_layout(scenario.spool)
        write(scenario.root / f"{HOSTILE}.json", raw, mtime=None)
        scenarios.append(scenario)
    return run_all(scenarios, "submit", f"{HOSTILE}.json")


@pytest.mark.timeout(240)
@pytest.mark.parametrize("case", case_params(for_dropin=False))
def test_submit_refuses_hostile_document(case: Hostile, submitted: dict[str, Scenario]) -> None:
    scenario = submitted[case.name]
    res = scenario.result
    assert res is not None, "submit hung: it read a data file it should have refused (a FIFO?)"
    assert res.code == 2, (res.code, res.out[:300], res.err[-2000:])
    one_error_line(res, f"{HOSTILE}.json", *case.needles)
    assert res.out.strip() == "", "no id may be printed for a refused submission"
    assert_nothing_written(scenario.spool)


def test_submit_refuses_a_whole_batch_for_one_hostile_document(
    cli: Cli, spool_dir: Path, tmp_path: Path
) -> None:
    """All or nothing: a good document before a bad one is not stored either."""
    make_layout(spool_dir)
    batch = [example_doc(id=GOOD), {"id": "../escape", "riddle": QUESTION}]
    path = write(tmp_path / "batch.json", orjson.dumps(batch), mtime=None)
    res = cli("submit", str(path))
    assert res.code == 2, (res.code, res.out, res.err)
    one_error_line(res, "batch.json[2]", "id")
    assert_nothing_written(spool_dir)


def test_submit_flags_refuse_hostile_id_and_path(cli: Cli, spool_dir: Path) -> None:
    make_layout(spool_dir)
    calls = [
        ("submit", "--question", "x * y =", "--id", "../../escape"),
        ("submit", "--question", "x * y =", "--data", "/etc/passwd"),
    ]
    by_id, by_path = cli_many(cli, calls)
    assert by_id.code == 2, (by_id.code, by_id.err)
    one_error_line(by_id, "--id", "not a valid id")  # the option the user typed
    assert by_path.code == 2, (by_path.code, by_path.err)
    one_error_line(by_path, "--data", "/etc/passwd", "absolute")
    assert_nothing_written(spool_dir)


# -- as drop-ins -------------------------------------------------------------------------------


def drop_in_with_good(spool: Path, docs: dict[str, bytes], mtime: float | None = OLD) -> None:
    """Hostile files (NAME.json) and a good riddle, copied into incoming/ by "another
    program"; a hostile document without a valid `id` takes its file's stem."""
    (spool / "incoming").mkdir(parents=True, exist_ok=True)
    write(spool / "incoming" / f"{GOOD}.json", orjson.dumps(example_doc(id=GOOD)), mtime=None)
    for name, raw in docs.items():
        write(spool / "incoming" / f"{name}.json", raw, mtime=mtime)


@pytest.fixture(scope="module")
def dropped(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Scenario]:
    """Hostile documents dropped into incoming/ beside a good riddle, then `run --once`.

    The cases that need settings of their own, and those known to break the agent, each
    get their own spool; all others share one, which also shows that many hostile files
    at once leave the good riddle alone. A run that reads a refused data file hangs on a
    FIFO and is killed (None).
    """
    alone = [c for c in CASES if c.env]
    together = [c for c in CASES if c not in alone]
    scenarios = [Scenario(together, tmp_path_factory.mktemp("dropin-together"))]
    scenarios += [Scenario([c], tmp_path_factory.mktemp(f"dropin-{c.name}")) for c in alone]
    for scenario in scenarios:
        drop_in_with_good(scenario.spool, scenario.prepare())
    return run_all(scenarios, "run", "--once")


@pytest.mark.timeout(240)
@pytest.mark.parametrize("case", case_params(for_dropin=True))
def test_drop_in_of_hostile_document_is_set_aside(
    case: Hostile, dropped: dict[str, Scenario]
) -> None:
    scenario = dropped[case.name]
    spool, res, name = scenario.spool, scenario.result, case.name
    assert res is not None, "run --once hung: it read a data file it should have refused"
    assert "Traceback" not in res.err, res.err[-3000:]
    assert_good_done(spool)
    assert not (spool / "incoming" / f"{name}.json").exists(), stored_files(spool)
    # exit 1 when this run moved a riddle to failed/ (any of the scenario's cases)
    expected_code = int(any(c.dropin == "failed" for c in scenario.cases))
    assert res.code == expected_code, (res.code, res.out, res.err[-2000:])
    if case.dropin == "corrupt":
        assert (spool / "corrupt" / f"{name}.json").exists(), stored_files(spool)
        reason = (spool / "corrupt" / f"{name}.json.reason").read_text()
        assert reason.strip() and len(reason.strip().splitlines()) == 1, reason[:2000]
        assert len(reason) <= MAX_ERROR_LINE, reason[:300]
        for needle in case.needles:
            assert needle in reason, f"{needle!r} not named in the reason {reason[:300]!r}"
        queued = {q.value: (spool / q.value / f"{name}.json").exists() for q in Queue}
        assert not any(queued.values()), queued
    else:
        failed = read_doc(spool / "failed" / f"{name}.json")
        for needle in case.needles:
            assert needle in (failed["error"] or ""), (needle, failed["error"])
        assert failed["status"]["solved"] is False
        assert failed.get("solution") is None


def test_unparseable_drop_in_waits_for_its_grace_then_goes_to_corrupt(
    cli: Cli, spool_dir: Path
) -> None:
    """A fresh file that does not parse may still be being written: `run --once` waits for
    it to age past the grace period, then sets it aside."""
    drop_in_with_good(spool_dir, {HOSTILE: b'{"riddle": {"question": "x *'}, mtime=None)
    started = time.monotonic()
    res = cli("run", "--once", env={"RIDDLECTL_DROP_IN_GRACE": "1"}, timeout=25)
    assert "Traceback" not in res.err, res.err[-3000:]
    assert res.code == 0, (res.code, res.err[-2000:])
    assert time.monotonic() - started >= 1.0
    assert (spool_dir / "corrupt" / f"{HOSTILE}.json").exists()
    assert "not valid JSON" in (spool_dir / "corrupt" / f"{HOSTILE}.json.reason").read_text()
    assert_good_done(spool_dir)


# -- a 100 MB document --------------------------------------------------------------------------

HUNDRED_MB = 100 * 1024 * 1024
MAX_RSS = 400 * 1024 * 1024  # the document once in memory, and then some; not a parse of it


def write_huge(path: Path) -> Path:
    """A 100 MB riddle document (a long array of zeros), written in chunks."""
    head, tail = b'{"riddle": {"question": "x * y ="}, "pad": [', b"0]}"
    chunk = b"0," * (1024 * 1024)
    with path.open("wb") as out:
        out.write(head)
        for _ in range((HUNDRED_MB - len(head)) // len(chunk)):
            out.write(chunk)
        out.write(tail)
    return path


def run_measured(cli: Cli, *args: str, timeout: float = 60) -> tuple[Completed, int, float]:
    """Run the command; its result, its own peak RSS in bytes (wait4), and its wall time.

    Its output is a few lines, far below a pipe's buffer, so it is read after the wait.
    """
    started = time.monotonic()
    proc = cli.popen(*args)
    timer = threading.Timer(timeout, proc.kill)
    timer.start()
    try:
        _, status, usage = os.wait4(proc.pid, 0)
    finally:
        timer.cancel()
    elapsed = time.monotonic() - started
    proc.returncode = os.waitstatus_to_exitcode(status)
    assert proc.stdout is not None and proc.stderr is not None
    out, err = proc.stdout.read(), proc.stderr.read()
    proc.stdout.close()
    proc.stderr.close()
    assert elapsed < timeout, f"riddlectl {' '.join(args)} was killed after {timeout} s"
    return Completed(proc.returncode, out.decode(), err.decode()), usage.ru_maxrss * 1024, elapsed


@pytest.mark.timeout(90)
def test_submit_refuses_100mb_document_without_parsing_it(
    cli: Cli, spool_dir: Path, tmp_path: Path
) -> None:
    make_layout(spool_dir)
    path = write_huge(tmp_path / "huge.json")
    res, peak, elapsed = run_measured(cli, "submit", str(path))
    assert res.code == 2, (res.code, res.err[-2000:])
    one_error_line(res, "huge.json", "limit")
    assert_nothing_written(spool_dir)
    assert peak < MAX_RSS, f"submit peaked at {peak >> 20} MiB for a refused document"
    assert elapsed < 20


@pytest.mark.timeout(90)
def test_drop_in_of_100mb_document_goes_to_corrupt_in_bounded_memory(
    cli: Cli, spool_dir: Path
) -> None:
    (spool_dir / "incoming").mkdir(parents=True, exist_ok=True)
    write(spool_dir / "incoming" / f"{GOOD}.json", orjson.dumps(example_doc(id=GOOD)), mtime=None)
    huge = write_huge(spool_dir / "incoming" / f"{HOSTILE}.json")
    os.utime(huge, (OLD, OLD))
    res, peak, elapsed = run_measured(cli, "run", "--once")
    assert "Traceback" not in res.err, res.err[-3000:]
    assert_good_done(spool_dir)
    assert (spool_dir / "corrupt" / f"{HOSTILE}.json").exists()
    assert "limit" in (spool_dir / "corrupt" / f"{HOSTILE}.json.reason").read_text()
    assert peak < MAX_RSS, f"run --once peaked at {peak >> 20} MiB for one 100 MB drop-in"
    assert elapsed < 10


# -- valid documents with hostile questions ----------------------------------------------------

BOMBS = {
    "tower": "9**9**9**9",
    "caret-tower": "9^9^9^9",
    "word-tower": "nine to the power of nine to the power of nine to the power of nine",
    "factors-20000": "*".join(["2"] * 20_000),
    "terms-20000": "+".join(["1"] * 20_000),
    "square-of-huge": "(2**99999)**2",
    "deep-parens": "(" * 1_000 + "1" + ")" * 1_000,
    "huge-exponent-literal": "1e999999999 + 1",
}


def riddle_from(riddle_id: str, question: str) -> dict:
    return {"id": riddle_id, "riddle": {"context": "", "question": question}}


def submit_and_run(cli: Cli, docs: list[dict], max_seconds: float) -> Completed:
    res = cli("submit", "-", input=orjson.dumps([example_doc(id=GOOD), *docs]))
    assert res.code == 0, (res.code, res.err[-2000:])
    started = time.monotonic()
    run = cli("run", "--once", timeout=60)
    elapsed = time.monotonic() - started
    assert "Traceback" not in run.err, run.err[-3000:]
    assert elapsed < max_seconds, f"run --once took {elapsed:.1f} s"
    return run


def assert_failed_at_solve_at_once(spool: Path, riddle_id: str) -> dict:
    path = spool / "failed" / f"{riddle_id}.json"
    where = [p.parent.name for p in spool.glob(f"*/{riddle_id}.json")]
    assert path.exists(), f"{riddle_id} is in {where}, not failed/"
    failed = read_doc(path)
    assert failed["error"], failed
    solve = [h for h in failed["history"] if h.get("stage") == "solve"]
    assert len(solve) == 1, f"{riddle_id} was tried at solve {len(solve)} times: {failed['error']}"
    return failed


@pytest.mark.timeout(60)
def test_expression_bombs_fail_quickly_at_solve(cli: Cli, spool_dir: Path) -> None:
    docs = [riddle_from(f"bomb-{name}", q) for name, q in BOMBS.items()]
    run = submit_and_run(cli, docs, max_seconds=15)
    assert run.code == 1, (run.code, run.out, run.err[-2000:])
    assert_good_done(spool_dir)
    for name in BOMBS:
        assert_failed_at_solve_at_once(spool_dir, f"bomb-{name}")


@pytest.mark.timeout(60)
def test_result_too_long_to_print_fails_at_once_or_is_written(cli: Cli, spool_dir: Path) -> None:
    run = submit_and_run(cli, [riddle_from("wide", "2**20000")], max_seconds=15)
    assert "Traceback" not in run.err
    assert_good_done(spool_dir)
    done = spool_dir / "done" / "wide.json"
    if done.exists():  # written exactly (docs/reference.md#numbers-in-solutions)
        solution = read_doc(done)["solution"]["solution"]
        assert len(solution) == 6_021 and solution.startswith("39802768")
        return
    failed = assert_failed_at_solve_at_once(spool_dir, "wide")
    assert "ValueError" not in failed["error"], failed["error"]


@pytest.mark.timeout(60)
def test_code_injection_questions_fail_cleanly_and_run_nothing(
    cli: Cli, spool_dir: Path, tmp_path: Path
) -> None:
    canary = tmp_path / "canary"
    canary.mkdir()
    (canary / "keep").write_text("still here")
    injections = {
        "python": f"__import__('os').system('touch {tmp_path}/pwned-python')",
        "python-eval": f"eval(\"__import__('os').system('touch {tmp_path}/pwned-eval')\")",
        "shell-semicolon": f"x; rm -rf {canary}",
        "template": "{{7*7}}",
        "shell-subst": "$(touch pwned-subst)",
        "backticks": "`touch pwned-backticks`",
        "format": "{0.__class__.__mro__}",
    }
    docs = [riddle_from(f"inject-{name}", q) for name, q in injections.items()]
    run = submit_and_run(cli, docs, max_seconds=15)
    assert run.code == 1, (run.code, run.out, run.err[-2000:])
    assert_good_done(spool_dir)
    for name in injections:
        failed = assert_failed_at_solve_at_once(spool_dir, f"inject-{name}")
        assert "49" not in (failed.get("solution") or {}).get("solution", "")
    assert (canary / "keep").read_text() == "still here"
    assert sorted(p.name for p in tmp_path.rglob("pwned*")) == []
    assert not Path("pwned-subst").exists() and not Path("pwned-backticks").exists()


# -- hostile ids on the reading commands --------------------------------------------------------


@pytest.fixture
def secret(tmp_path: Path, spool_dir: Path) -> Path:
    """A valid riddle document outside the spool, where a path built from a hostile id
    (`spool/incoming/../../secret.json`) would find it."""
    make_layout(spool_dir)
    path = tmp_path / "secret.json"
    path.write_bytes(orjson.dumps({"id": "secret", "riddle": {"question": "SECRET-MARKER"}}))
    return path


@pytest.mark.timeout(60)
def test_reading_commands_refuse_ids_that_point_outside_the_spool(
    cli: Cli, spool_dir: Path, secret: Path
) -> None:
    # spool/QUEUE/ + ID + .json: each of these would name the secret file.
    traversals = ["../../secret", str(secret.with_suffix("")), "incoming/../../../secret"]
    calls = [("show", i) for i in traversals]
    calls += [("status", traversals[0]), ("result", traversals[1])]
    calls += [("status", "--json", traversals[2]), ("result", "--json", traversals[0])]
    calls += [(command, LONG_ID) for command in ("show", "status", "result")]
    for call, res in zip(calls, cli_many(cli, calls), strict=True):
        assert res.code in (2, 3), (call[:-1], res.code, res.out[:300], res.err[:300])
        assert "SECRET-MARKER" not in res.out + res.err, call[:-1]
        assert res.out.strip() == "", (call[:-1], res.out[:300])
        assert "Traceback" not in res.err, res.err[-2000:]
        assert len([line for line in res.err.splitlines() if line.strip()]) == 1, res.err[:500]


def test_error_line_for_a_10000_char_id_is_bounded(cli: Cli, spool_dir: Path) -> None:
    make_layout(spool_dir)
    res = cli("show", LONG_ID)
    assert res.code in (2, 3)
    one_error_line(res)


@pytest.mark.timeout(60)
def test_acting_commands_refuse_ids_that_point_outside_the_spool(
    cli: Cli, spool_dir: Path, secret: Path, tmp_path: Path
) -> None:
    before = secret.read_bytes()
    calls = [(command, "../../secret") for command in ("cancel", "hold", "retry", "release")]
    for call, res in zip(calls, cli_many(cli, calls), strict=True):
        assert res.code in (2, 3), (call, res.code, res.out[:300], res.err[:300])
        assert "Traceback" not in res.err, res.err[-2000:]
    assert secret.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["data", "secret.json", "spool"]
    assert_nothing_written(spool_dir)
