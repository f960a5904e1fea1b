"""What `riddlectl bench` measures: the spool under test (a new one of the kind `--spool`
names), its data files, the library submit into it, and the real agent processes.
"""

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from riddlectl import runtime, trace
from riddlectl.bench.measure import cpu_seconds, process_figures, riddlectl_argv
from riddlectl.document import codec as documents
from riddlectl.identity import Actor
from riddlectl.ops import submit as submitting
from riddlectl.settings import ENV_VARS, resolve
from riddlectl.spool import scratch_spool
from riddlectl.spool.states import Queue

STAGES = ("extract", "solve", "validate", "manage")


@dataclass(frozen=True)
class BenchOptions:
    riddles: int = 2000  # throughput phase
    agents_per_stage: int = 1
    fsync: bool = True
    status_riddles: int = 0  # 0: do not time `status`
    submit_riddles: int = 0  # 0: do not time one bulk submit (`bulksubmit`)
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
    # "agents": one `agent` process per stage (K with agents_per_stage); "run": the four
    # stages in one `run` process, which carries a riddle from stage to stage.
    mode: str = "agents"
    # Rounds of riddlectl's run and the peers' in turn (A B A B), with `pause` seconds
    # between runs, so that the disk's moods fall on both; 1 when there are no peers.
    # A run deletes thousands of files, and the next run's flushes paid for that for tens
    # of seconds here (riddlectl fell from 1,119 to 479 riddles/s between rounds a second
    # apart, and held 987-1,037 with 35 s between): hence half a minute.
    rounds: int = 2
    pause: float = 30.0
    # The kind of spool to run on, given as a location (the global `--spool`): the run
    # makes a new one of that kind (`scratch_spool`: a temporary directory, or a schema
    # `riddlectl_bench_PID` on the same PostgreSQL server) and drops it at the end.
    spool: str = "spool"


class Stalled(Exception):
    """A phase made no progress within the stall timeout (or an agent died)."""


class Bench:
    """A temporary spool and data directory, and the library submit into it."""

    def __init__(self, root: Path, options: BenchOptions) -> None:
        self.options = options
        self.data = root / "data"
        self.spool = scratch_spool(options.spool, "bench")
        env = {ENV_VARS["fsync"]: "1" if options.fsync else "0"}
        self.settings = resolve({"spool": self.spool, "data_dir": self.data}, env=env)
        bench = Actor("bench")
        self.pipeline = runtime.pipeline(
            self.settings, runtime.open_spool(self.settings, bench), bench
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


class Agents:
    """The real agent processes, K per stage, with their CPU and memory from /proc."""

    def __init__(self, bench: Bench, log: Path, traces: Path | None = None) -> None:
        env = {k: v for k, v in os.environ.items() if not k.startswith("RIDDLECTL_")}
        env.pop("SOLUTION_MAX_TRIALS", None)
        env[ENV_VARS["fsync"]] = "1" if bench.options.fsync else "0"
        if traces is not None:  # where the time goes (riddlectl.trace)
            traces.mkdir(parents=True, exist_ok=True)
            env[trace.ENV] = str(traces)
        base = [*riddlectl_argv(), "--spool", str(bench.spool), "--data-dir", str(bench.data)]
        self.log = log
        commands = [(stage, [*base, "agent", stage]) for stage in STAGES]
        commands *= bench.options.agents_per_stage
        if bench.options.mode == "run":
            concurrency = str(bench.options.agents_per_stage)
            commands = [("run", [*base, "run", "--concurrency", concurrency])]
        with log.open("ab") as out:
            self.procs = [
                (stage, subprocess.Popen(argv, env=env, stdout=out, stderr=out))
                for stage, argv in commands
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
