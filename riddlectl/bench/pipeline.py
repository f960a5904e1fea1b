"""`riddlectl bench`: the real pipeline on generated riddles, against a physical reference.

Everything happens in a temporary directory (removed afterwards): a spool, a data
directory with a handful of small text files (`a = …` / `b = …`, so the extraction cache
works as it would for real riddles), and the reference's scratch directories.

How it measures, in this order:

1. The **real agents** start: `riddlectl --spool S --data-dir D agent STAGE` for extract,
   solve, validate and manage, K processes per stage, `RIDDLECTL_FSYNC=0` with
   `--no-fsync`. A few warm-up riddles go through first (and prove the agents are up).
2. **latency**: riddles submitted one at a time through the library
   (`submit.prepare` + `submit.submit`), each waited for (polling `done/ID.json` every
   0.5 ms; on PostgreSQL, woken by the spool's NOTIFY of the done queue and looking
   every 20 ms besides, as 4,000 queries a second would load the server the agents use)
   before the next: submit→done p50/p99 at low load.
3. **throughput**: the agents already running, N riddles are submitted through the
   library in batches of 100 (like `riddlectl submit` of a 100-riddle file); riddles/s
   from the first submit to the moment the last one is seen in `done/` (or `failed/`),
   polled every 5 ms. The submit rate is N over the time the submitting took, with the
   agents running beside it. CPU per riddle is the agents' user+sys CPU
   (`/proc/PID/stat`) during this phase over N.
4. Just before the agents are stopped (SIGTERM, then waited for): each agent's peak RSS
   (`VmHWM`) and current RSS (`VmRSS`) from `/proc/PID/status`.
5. **reference** (`riddlectl.bench.reference`): a single-process loop doing four
   transitions per riddle (read, orjson parse, write temp, fsync, rename, fsync the
   directory, unlink), with fsync and without, on a document like the ones bench submits;
   and the watchdog (inotify) wake-up latency. Measured after the agents have stopped, on
   the same filesystem (why after: see `run_bench`).
6. **status** (only with `status_riddles` > 0): a second spool filled (dropped in, not
   timed) with that many finished riddles copied from a real done document, then the
   `riddlectl status` command (a subprocess, median of 3) and the library calls behind
   it (`report.counts` + `report.recent` + summaries) are timed.
7. **peers** (only with `peers`): the same pipeline on other queues, with the same
   number of riddles (`riddlectl.bench.peers`), each in a fresh directory of its own.

A phase where no riddle finishes for `stall_timeout` seconds stops the run: the agents
are stopped and the outcome holds what finished, with `error` set.

The outcome (`run_bench`; `riddlectl bench --json` prints it) has these fields:

- `version` (1), `error` (null or why the run stopped early), `machine` (`cpus`,
  `python`, `platform`, `tmpdir`), `options` (the `BenchOptions`)
- `reference`: `fsync` / `no_fsync` (`riddles`, `seconds`, `riddles_per_s`,
  `transition_ms`, `spread` [min, max] over the reps; the median rep is reported), `reps`,
  `payload_bytes`, `inotify_wakeup` (`samples`, `median_ms`, `max_ms`)
- `latency`: `riddles`, `failed`, `p50_ms`, `p99_ms`, `mean_ms`, `max_ms`, `capped`
- `submit`: `riddles`, `seconds`, `per_s`
- `throughput`: `riddles`, `done`, `failed`, `seconds`, `per_s`
- `cpu`: `seconds` (all agents, throughput phase), `ms_per_riddle`
- `agents`: one per process: `stage`, `pid`, `cpu_s` (whole life), `peak_rss_kb`,
  `rss_kb`, `exit_code`
- `status`: null, or `riddles`, `build_s`, `command_s`, `library_s`
- `peers`: null, or one object per peer: `name`, `durable`, `wakeup`, `skipped` (null,
  or why: its library is missing), `error`, and `latency`, `submit`, `throughput`
  (`riddles`, `done`, `seconds`, `per_s`), `cpu`, `workers` shaped as above
- `ratios`, `targets`: see `riddlectl.bench.summary.judge`.
"""

from __future__ import annotations

import os
import shutil
import statistics
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import orjson

from riddlectl import runtime
from riddlectl.bench import reference
from riddlectl.bench.measure import (
    cpu_seconds,
    latency_figures,
    machine,
    process_figures,
    riddlectl_argv,
)
from riddlectl.bench.summary import judge
from riddlectl.document import codec as documents
from riddlectl.identity import Actor
from riddlectl.ops import report
from riddlectl.ops import submit as submitting
from riddlectl.settings import ENV_VARS, resolve
from riddlectl.spool import remove_spool, scratch_spool, server_url
from riddlectl.spool.contract import Spool
from riddlectl.spool.states import Queue

STAGES = ("extract", "solve", "validate", "manage")
LATENCY_POLL = 0.0005
LATENCY_WATCH_POLL = 0.02  # between looks while woken by the spool (a database's NOTIFY)
FINAL_QUEUES = (Queue.DONE, Queue.FAILED)
THROUGHPUT_POLL = 0.005


@dataclass(frozen=True)
class BenchOptions:
    riddles: int = 2000  # throughput phase
    agents_per_stage: int = 1
    fsync: bool = True
    status_riddles: int = 0  # 0: do not time `status`
    latency_riddles: int = 100  # sent one at a time
    warmup_riddles: int = 2
    data_files: int = 8  # distinct files per variable
    submit_batch: int = 100
    reference_seconds: float = 1.0  # timed work per reference loop
    reference_reps: int = 3
    wake_samples: int = 50
    stall_timeout: float = 30.0  # seconds without any riddle finishing
    latency_cap: float = 15.0  # seconds for the whole latency phase (then `capped`)
    peers: tuple[str, ...] = ()  # other queues run after riddlectl (bench.peers)
    # The kind of spool to run on, given as a location (the global `--spool`): the run
    # makes a new one of that kind (`scratch_spool`: a temporary directory, or a schema
    # `riddlectl_bench_PID` on the same PostgreSQL server) and drops it at the end.
    spool: str = "spool"


class Stalled(Exception):
    """A phase made no progress within the stall timeout (or an agent died)."""


# -- the spool under test -----------------------------------------------------------------------


class Bench:
    """A temporary spool and data directory, and the library submit into it."""

    def __init__(self, root: Path, options: BenchOptions) -> None:
        self.options = options
        self.data = root / "data"
        self.spool = scratch_spool(options.spool, "bench")
        env = {ENV_VARS["fsync"]: "1" if options.fsync else "0"}
        self.settings = resolve({"spool": self.spool, "data_dir": self.data}, env=env)
        self.pipeline = runtime.pipeline(
            self.settings, runtime.open_spool(self.settings), Actor("bench")
        )
        _make_data(self.data / "bench", options.data_files)

    def doc(self, riddle_id: str, index: int) -> dict[str, Any]:
        files = self.options.data_files
        return {
            "id": riddle_id,
            "riddle": {
                "context": "[Taschenrechner]",
                "question": ("a * b =", "a + b =")[index % 2],
            },
            "data": [
                {"type": "text", "file_plain": f"bench/a{index % files}.txt"},
                {"type": "text", "file_plain": f"bench/b{(index // files) % files}.txt"},
            ],
        }

    def submit(self, docs: list[dict[str, Any]]) -> None:
        riddles = submitting.prepare([(d["id"], d) for d in docs], self.settings)
        submitting.submit(self.pipeline, riddles)

    def final(self, riddle_id: str) -> str | None:
        """'done' or 'failed' once the riddle is there, else None (two `stat`s)."""
        for queue in (Queue.DONE, Queue.FAILED):
            if self.pipeline.spool.holds(queue, riddle_id):
                return queue.value
        return None

    def payload(self) -> bytes:
        """A document as submit stores it: the reference loop moves copies of it."""
        riddle = submitting.prepare([("ref", self.doc("ref", 0))], self.settings)[0]
        self.pipeline.record(riddle, "submit", None, None, "ok", rev=1)
        return orjson.dumps(riddle.to_json())

    def sample_done(self) -> bytes:
        for riddle in self.pipeline.spool.iter_queue(Queue.DONE):
            return documents.dumps(riddle)
        return self.payload()


def _make_data(directory: Path, files: int) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    noise = "# notes: lorem ipsum dolor sit amet, " * 4
    for k in range(files):
        (directory / f"a{k}.txt").write_text(f"{noise}\na = {12 + 7 * k}\n", "utf-8")
        (directory / f"b{k}.txt").write_text(f"{noise}\nb = {3 + 5 * k}\nnote: {k}\n", "utf-8")


# -- agent processes ----------------------------------------------------------------------------


class Agents:
    """The real agent processes, K per stage, with their CPU and memory from /proc."""

    def __init__(self, bench: Bench, log: Path) -> None:
        env = {k: v for k, v in os.environ.items() if not k.startswith("RIDDLECTL_")}
        env.pop("SOLUTION_MAX_TRIALS", None)
        env[ENV_VARS["fsync"]] = "1" if bench.options.fsync else "0"
        base = [*riddlectl_argv(), "--spool", str(bench.spool), "--data-dir", str(bench.data)]
        self.log = log
        with log.open("ab") as out:
            self.procs = [
                (stage, subprocess.Popen([*base, "agent", stage], env=env, stdout=out, stderr=out))
                for stage in STAGES
                for _ in range(bench.options.agents_per_stage)
            ]

    def check(self) -> None:
        """`Stalled` when an agent has exited: the pipeline cannot finish without it."""
        for stage, proc in self.procs:
            if proc.poll() is not None:
                raise Stalled(
                    f"{stage} agent {proc.pid} exited with {proc.returncode}: {self.tail()}"
                )

    def tail(self) -> str:
        lines = self.log.read_text("utf-8", "replace").strip().splitlines()
        return " | ".join(lines[-3:]) or "no output"

    def cpu_seconds(self) -> float:
        return sum(cpu_seconds(proc.pid) for _, proc in self.procs)

    def stop(self) -> list[dict[str, Any]]:
        """Memory and CPU of each agent, read just before SIGTERM; then wait for them."""
        found = [process_figures(stage, proc.pid) for stage, proc in self.procs]
        for _, proc in self.procs:
            if proc.poll() is None:
                proc.terminate()
        for (_, proc), figures in zip(self.procs, found, strict=True):
            try:
                figures["exit_code"] = proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()
                figures["exit_code"] = proc.wait(5)
        return found


# -- waiting ------------------------------------------------------------------------------------


def wait_one(
    bench: Bench, riddle_id: str, check: Callable[[], None], arrived: threading.Event | None = None
) -> str:
    """Look until `riddle_id` is final; 'done' or 'failed'. `Stalled` past the timeout.

    Every `LATENCY_POLL`; or, given `arrived` (set by the spool's wake-up on the final
    queues), each time it is set and every `LATENCY_WATCH_POLL` besides."""
    deadline = time.perf_counter() + bench.options.stall_timeout
    checked = time.perf_counter()
    while True:
        if arrived is not None:
            arrived.clear()  # before looking: an arrival after the look wakes the wait
        state = bench.final(riddle_id)
        if state is not None:
            return state
        now = time.perf_counter()
        if now - checked > 0.2:
            checked = now
            check()
            if now > deadline:
                raise Stalled(f"{riddle_id} not final after {bench.options.stall_timeout:g} s")
        if arrived is None:
            time.sleep(LATENCY_POLL)
        else:
            arrived.wait(LATENCY_WATCH_POLL)


def _sweep(bench: Bench, pending: list[str], counts: dict[str, int]) -> list[str]:
    """Pending ids still not final; looks past at most 8 unfinished ones (order is ~FIFO)."""
    keep: list[str] = []
    misses = 0
    for index, riddle_id in enumerate(pending):
        if misses >= 8:
            return keep + pending[index:]
        state = bench.final(riddle_id)
        if state is None:
            misses += 1
            keep.append(riddle_id)
        else:
            counts[state] += 1
    return keep


def wait_all(bench: Bench, ids: list[str], check: Callable[[], None]) -> dict[str, Any]:
    """Poll until every id is final: the counts, when the last one was seen, and `stalled`
    (why waiting stopped early: a stall or a dead agent; None when all finished)."""
    counts: dict[str, Any] = {"done": 0, "failed": 0, "stalled": None}
    pending, last, polls = list(ids), time.perf_counter(), 0
    while pending and counts["stalled"] is None:
        before = len(pending)
        pending = _sweep(bench, pending, counts)
        now, polls = time.perf_counter(), polls + 1
        if len(pending) < before:
            last = now
        if polls % 40 == 0 or now - last > bench.options.stall_timeout:
            counts["stalled"] = _problem(check, pending, now - last, bench.options.stall_timeout)
        if pending:
            time.sleep(THROUGHPUT_POLL)
    return {**counts, "last": last}


def _problem(
    check: Callable[[], None], pending: list[str], idle: float, limit: float
) -> str | None:
    try:
        check()
    except Stalled as exc:
        return str(exc)
    return f"{len(pending)} riddles not final after a {idle:.0f} s stall" if idle > limit else None


# -- phases -------------------------------------------------------------------------------------


def latency_phase(bench: Bench, agents: Agents, out: dict[str, Any]) -> None:
    options, samples, failed = bench.options, [], 0
    # On a database, looking every 0.5 ms would be 4,000 queries a second on the server the
    # agents use: there the wait is woken by the spool's own wake-up, as an agent's is.
    arrived = threading.Event() if bench.pipeline.spool.local_root is None else None
    watch = None if arrived is None else bench.pipeline.spool.watch(FINAL_QUEUES, arrived)
    started = time.perf_counter()
    try:
        for index in range(options.latency_riddles):
            riddle_id = f"lat{index:06d}"
            sent = time.perf_counter()
            bench.submit([bench.doc(riddle_id, index)])
            failed += wait_one(bench, riddle_id, agents.check, arrived) == "failed"
            samples.append((time.perf_counter() - sent) * 1000)
            out["latency"] = latency_figures(samples, failed, capped=False)
            if time.perf_counter() - started > options.latency_cap:
                out["latency"]["capped"] = True
                break
    finally:
        if watch is not None:
            watch.stop()


def throughput_phase(bench: Bench, agents: Agents, out: dict[str, Any]) -> None:
    options = bench.options
    ids = [f"tp{i:07d}" for i in range(options.riddles)]
    cpu_before = agents.cpu_seconds()
    started = time.perf_counter()
    for first in range(0, len(ids), options.submit_batch):
        batch = ids[first : first + options.submit_batch]
        bench.submit([bench.doc(rid, first + i) for i, rid in enumerate(batch)])
    submitted = time.perf_counter() - started
    out["submit"] = {"riddles": len(ids), "seconds": round(submitted, 4)}
    out["submit"]["per_s"] = round(len(ids) / submitted, 1)
    seen = wait_all(bench, ids, agents.check)
    seconds, final = seen["last"] - started, seen["done"] + seen["failed"]
    cpu = agents.cpu_seconds() - cpu_before
    out["throughput"] = {
        "riddles": len(ids),
        "done": seen["done"],
        "failed": seen["failed"],
        "seconds": round(seconds, 4),
        "per_s": round(final / seconds, 1),
    }
    per_riddle = cpu * 1000 / max(final, 1)
    out["cpu"] = {"seconds": round(cpu, 3), "ms_per_riddle": round(per_riddle, 4)}
    if seen["stalled"]:
        raise Stalled(f"throughput: {seen['stalled']}")


def pipeline_phases(bench: Bench, root: Path, out: dict[str, Any]) -> None:
    """Start the agents, run warm-up, latency and throughput; always stop the agents."""
    agents = Agents(bench, root / "agents.log")
    try:
        for index in range(bench.options.warmup_riddles):
            bench.submit([bench.doc(f"warm{index:03d}", index)])
            wait_one(bench, f"warm{index:03d}", agents.check)
        latency_phase(bench, agents, out)
        throughput_phase(bench, agents, out)
    except Stalled as exc:
        out["error"] = str(exc)
    finally:
        out["agents"] = agents.stop()


def status_phase(root: Path, template: bytes, count: int, data: Path) -> dict[str, Any]:
    """Time `riddlectl status` (command and library) over a spool of `count` riddles."""
    # Not flushed: the filling is setup, and `status` only reads.
    settings = resolve({"spool": root, "data_dir": data}, env={ENV_VARS["fsync"]: "0"})
    spool = runtime.open_spool(settings)
    started = time.perf_counter()
    _fill(spool, orjson.loads(template), count)
    build = time.perf_counter() - started
    argv = [*riddlectl_argv(), "--spool", str(root), "--data-dir", str(data), "status"]
    command = _median_time(
        lambda: subprocess.run(argv, capture_output=True, timeout=300, check=True)
    )
    library = _median_time(
        lambda: (report.counts(spool), report.summaries(spool, report.recent(spool, 20)))
    )
    return {
        "riddles": count,
        "build_s": round(build, 3),
        "command_s": round(command, 4),
        "library_s": round(library, 4),
    }


def _fill(spool: Spool, doc: dict[str, Any], count: int) -> None:
    """`count` finished riddles, one in a hundred failed, dropped in as they are (setup,
    not timed), and the event log the pipeline would have written (`status` reads it)."""
    now = time.time() - count * 0.001
    events = []
    for index in range(count):
        to = Queue.FAILED if index % 100 == 99 else Queue.DONE
        doc.update(id=f"st{index:07d}", updated=now + index * 0.001)
        doc["error"] = "bench: a failed riddle" if to is Queue.FAILED else None
        spool.drop_in(to, f"st{index:07d}.json", orjson.dumps(doc))
        events.append(
            {
                "time": now + index * 0.001,
                "id": f"st{index:07d}",
                "stage": "manage",
                "from": "validated",
                "to": to.value,
                "outcome": "accepted",
                "rev": 5,
            }
        )
    spool.events.append_many(events)


def _median_time(action: Callable[[], object], reps: int = 3) -> float:
    times = []
    for _ in range(reps):
        started = time.perf_counter()
        action()
        times.append(time.perf_counter() - started)
    return statistics.median(times)


# -- the whole run ------------------------------------------------------------------------------


def run_bench(options: BenchOptions) -> dict[str, Any]:
    """Run every phase in a temporary directory; the outcome as a JSON-able dict."""
    out: dict[str, Any] = {"version": 1, "error": None, "machine": machine()}
    out["options"] = asdict(options)
    out.update(latency=None, submit=None, throughput=None, cpu=None, agents=[], status=None)
    out["peers"] = None
    with tempfile.TemporaryDirectory(prefix="riddlectl-bench-") as tmp:
        root = Path(tmp)
        bench = Bench(root, options)
        # The physical reference is the filesystem's: a database spool is compared with
        # its peers on the same server instead (summary.judge).
        out["on_directory"] = bench.pipeline.spool.local_root is not None
        create_at_start = reference.file_create_us(root / "create-at-start")
        try:
            pipeline_phases(bench, root, out)
        finally:
            remove_spool(bench.spool)
        # The reference runs second: it creates and deletes tens of thousands of files,
        # and ext4 then scans past every recently deleted inode on each file it creates
        # (`recently_deleted` in ialloc.c), which would slow the pipeline's submits.
        out["reference"] = reference.measure(
            root / "reference",
            bench.payload(),
            seconds=options.reference_seconds,
            reps=options.reference_reps,
            wake_samples=options.wake_samples,
        )
        out["reference"]["file_create_us_at_start"] = create_at_start
        shutil.rmtree(root / "reference", ignore_errors=True)
        if options.status_riddles:
            template = bench.sample_done()
            out["status"] = status_phase(
                root / "status", template, options.status_riddles, bench.data
            )
    if options.peers:
        server = server_url(options.spool)
        if server is not None:  # the peers on PostgreSQL use the same server
            os.environ.setdefault("RIDDLECTL_BENCH_PG", server)
        out["peers"] = peers_phase(options)
    out["ratios"], out["targets"] = judge(out, options)
    return out


def peers_phase(options: BenchOptions) -> list[dict[str, Any]]:
    """The peers, last and in a temporary directory of their own: a fresh top-level
    directory lands elsewhere on the disk than the inodes riddlectl's run just freed."""
    from riddlectl.bench.peers.driver import PeerOptions, run_peers

    peer_options = PeerOptions(
        riddles=options.riddles,
        latency_riddles=options.latency_riddles,
        warmup_riddles=options.warmup_riddles,
        fsync=options.fsync,
        stall_timeout=options.stall_timeout,
        latency_cap=options.latency_cap,
    )
    with tempfile.TemporaryDirectory(prefix="riddlectl-peers-") as tmp:
        return run_peers(options.peers, Path(tmp), peer_options)
