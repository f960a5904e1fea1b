"""Running one peer: its four workers, then the warm-up, latency and throughput phases.

Each peer gets a fresh directory and fresh worker processes (`worker`), started with the
interpreter running the driver. Riddles are submitted from the driver's process, and a
riddle counts as done when the manage stage's notice arrives (`workload.DoneChannel`).
A phase where no riddle is done for `stall_timeout` seconds, or a worker that exits,
ends the peer's run with `error` set; the figures measured so far are kept.
"""

from __future__ import annotations

import importlib
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from riddlectl.bench.measure import cpu_seconds, latency_figures, process_figures
from riddlectl.bench.peers import PEERS, missing
from riddlectl.bench.peers.workload import STAGES, DoneChannel, make_doc


@dataclass(frozen=True)
class PeerOptions:
    riddles: int = 2000  # throughput phase
    latency_riddles: int = 100  # sent one at a time
    warmup_riddles: int = 2
    fsync: bool = True  # for the naive spool; the libraries do what they do
    poll: float = 0.005  # seconds between looks of an idle polling worker
    stall_timeout: float = 30.0
    latency_cap: float = 15.0  # seconds for the whole latency phase (then `capped`)
    pause: float = 0.0  # seconds between one peer's run and the next's


class Stalled(Exception):
    """No riddle done within the stall timeout, or a worker exited."""


class Workers:
    """The four worker processes of one peer."""

    def __init__(self, name: str, base: Path, done: str, options: PeerOptions) -> None:
        argv = [sys.executable, "-m", "riddlectl.bench.peers.worker", name]
        flags = ["--done", done, "--poll", str(options.poll)]
        flags += ["--fsync"] if options.fsync else []
        self.log = base.with_suffix(".log")
        with self.log.open("ab") as out:
            self.procs = [
                (stage, subprocess.Popen([*argv, stage, str(base), *flags], stdout=out, stderr=out))
                for stage in STAGES
            ]

    def check(self) -> None:
        for stage, proc in self.procs:
            if proc.poll() is not None:
                tail = self.log.read_text("utf-8", "replace").strip().splitlines()[-3:]
                raise Stalled(f"{stage} worker exited with {proc.returncode}: {' | '.join(tail)}")

    def cpu_seconds(self) -> float:
        return sum(cpu_seconds(proc.pid) for _, proc in self.procs)

    def stop(self) -> list[dict[str, Any]]:
        figures = [process_figures(stage, proc.pid) for stage, proc in self.procs]
        for _, proc in self.procs:
            if proc.poll() is None:
                proc.terminate()
        for (_, proc), fig in zip(self.procs, figures, strict=True):
            try:
                fig["exit_code"] = proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()
                fig["exit_code"] = proc.wait(5)
        return figures


def run_peer(name: str, scratch: Path, options: PeerOptions) -> dict[str, Any]:
    """One peer's figures (or why it was skipped), in a fresh directory under `scratch`."""
    peer = PEERS[name]
    durable = options.fsync if peer.durable is None else peer.durable
    out: dict[str, Any] = {"name": name, "durable": durable, "wakeup": peer.wakeup}
    out.update(skipped=missing(name), error=None, latency=None, submit=None)
    out.update(throughput=None, cpu=None, workers=[])
    if out["skipped"]:
        return out
    base = scratch / name
    base.mkdir(parents=True)
    module = importlib.import_module(f"riddlectl.bench.peers.{peer.module}")
    submitter = module.Submitter(str(base), options.fsync)  # makes the queues first
    channel = DoneChannel(str(scratch / f"{name}.sock"))
    workers = Workers(name, base, channel.path, options)
    try:
        _phases(submitter, channel, workers, options, out)
    except (Stalled, TimeoutError) as exc:
        out["error"] = str(exc)
    finally:
        out["workers"] = workers.stop()
        channel.close()
        submitter.close()
    return out


def _phases(
    submitter: Any, channel: DoneChannel, workers: Workers, options: PeerOptions, out: Any
) -> None:
    for index in range(options.warmup_riddles):  # also waits until every worker is up
        submitter.submit(make_doc(9_000_000 + index))
        _wait(channel, workers, 60.0 if index == 0 else options.stall_timeout)
    samples: list[float] = []
    started = time.perf_counter()
    for index in range(options.latency_riddles):
        sent = time.perf_counter()
        submitter.submit(make_doc(8_000_000 + index))
        samples.append((_wait(channel, workers, options.stall_timeout) - sent) * 1000)
        out["latency"] = latency_figures(samples, 0, capped=False)
        if time.perf_counter() - started > options.latency_cap:
            out["latency"]["capped"] = True
            break
    _throughput(submitter, channel, workers, options, out)


def _throughput(
    submitter: Any, channel: DoneChannel, workers: Workers, options: PeerOptions, out: Any
) -> None:
    docs = [make_doc(index) for index in range(options.riddles)]
    cpu_before = workers.cpu_seconds()
    started = time.perf_counter()
    for doc in docs:
        submitter.submit(doc)
    submitted = time.perf_counter() - started
    out["submit"] = {"riddles": len(docs), "seconds": round(submitted, 4)}
    out["submit"]["per_s"] = round(len(docs) / submitted, 1)
    seen, last = 0, started
    try:
        while seen < len(docs):
            last = _wait(channel, workers, options.stall_timeout)
            seen += 1
    finally:
        seconds = last - started
        cpu = workers.cpu_seconds() - cpu_before
        out["throughput"] = {
            "riddles": len(docs),
            "done": seen,
            "seconds": round(seconds, 4),
            "per_s": round(seen / seconds, 1) if seen else 0.0,
        }
        per_riddle = cpu * 1000 / max(seen, 1)
        out["cpu"] = {"seconds": round(cpu, 3), "ms_per_riddle": round(per_riddle, 4)}


def _wait(channel: DoneChannel, workers: Workers, timeout: float) -> float:
    """When the next riddle's done notice arrived; `Stalled` when none comes in time."""
    deadline = time.perf_counter() + timeout
    while True:
        try:
            return channel.next(min(1.0, max(deadline - time.perf_counter(), 0.001)))[1]
        except TimeoutError:
            workers.check()
            if time.perf_counter() >= deadline:
                raise Stalled(f"no riddle done for {timeout:g} s") from None


def run_peers(names: tuple[str, ...], scratch: Path, options: PeerOptions) -> list[dict[str, Any]]:
    """Every peer in turn, each in its own directory under `scratch`, `options.pause`
    seconds apart."""
    scratch.mkdir(parents=True, exist_ok=True)
    outcomes = []
    for index, name in enumerate(names):
        if index:
            time.sleep(options.pause)
        outcomes.append(run_peer(name, scratch, options))
    return outcomes
