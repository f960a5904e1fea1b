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
   the group-sync limit (five transitions a riddle, one `syncfs` per 100); and the
   watchdog (inotify) wake-up latency. Measured after the agents have stopped, on
   the same filesystem (why after: see `run_bench`).
6. **status** (only with `status_riddles` > 0): a second spool filled (dropped in, not
   timed) with that many finished riddles copied from a real done document, then the
   `riddlectl status` command (a subprocess, median of 3) and the library calls behind
   it (`report.counts` + `report.recent` + summaries) are timed.
7. **bulk submit** (only with `submit_riddles` > 0): one `riddlectl submit -` of that
   many riddles as JSON Lines into a new spool of the same kind (`bulksubmit`).
8. **peers** (only with `peers`): the same pipeline on other queues, with the same
   number of riddles (`riddlectl.bench.peers`), each in a fresh directory of its own.

A phase where no riddle finishes for `stall_timeout` seconds stops the run: the agents
are stopped and the outcome holds what finished, with `error` set.

The outcome (`run_bench`; `riddlectl bench --json` prints it) has these fields:

- `version` (1), `error` (null or why the run stopped early), `machine` (`cpus`,
  `python`, `platform`, `tmpdir`), `options` (the `BenchOptions`)
- `reference`: `fsync` / `no_fsync` / `group_sync` (`riddles`, `seconds`,
  `riddles_per_s`, `transition_ms`, `transitions_per_riddle`, `spread` [min, max] over the
  reps; the median rep is reported), `reps`,
  `payload_bytes`, `inotify_wakeup` (`samples`, `median_ms`, `max_ms`)
- `latency`: `riddles`, `failed`, `p50_ms`, `p99_ms`, `mean_ms`, `max_ms`, `capped`
- `submit`: `riddles`, `seconds`, `per_s`
- `throughput`: `riddles`, `done`, `failed`, `seconds`, `per_s`
- `cpu`: `seconds` (all agents, throughput phase), `ms_per_riddle`
- `agents`: one per process: `stage`, `pid`, `cpu_s` (whole life), `peak_rss_kb`,
  `rss_kb`, `exit_code`
- `status`: null, or `riddles`, `build_s`, `command_s`, `library_s`
- `bulk_submit`: null, or `riddles`, `seconds`, `per_s`, `cpu_s` (the submitting
  process's user+sys), `cpu_ms_per_riddle`, `load_average` (1 min, at its end)
- `peers`: null, or one object per peer: `name`, `durable`, `wakeup`, `skipped` (null,
  or why: its library is missing), `error`, and `latency`, `submit`, `throughput`
  (`riddles`, `done`, `seconds`, `per_s`), `cpu`, `workers` shaped as above
- `breakdown`: where the latency phase's time went, per stage (`riddlectl.bench.breakdown`)
- `rounds` (with `peers`): riddlectl's run and the peers' in turn, `options.rounds` times
  (A B A B, `options.pause` s between runs; the first round's figures are the ones above):
  per round, for `riddlectl` and each peer, `p50_ms`, `per_s`, `cpu_ms`, `error`
- `comparison` (with `peers`): per peer, for `p50_ms`, `per_s` and `cpu_ms`, riddlectl's
  over the peer's in each round (`ratios`), their `median` and `spread` [min, max]
- `ratios`, `targets`: see `riddlectl.bench.summary.judge`.
"""

from __future__ import annotations

import os
import shutil
import statistics
import tempfile
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any

from riddlectl.bench import reference
from riddlectl.bench.bulksubmit import bulk_submit_phase
from riddlectl.bench.measure import machine
from riddlectl.bench.phases import pipeline_phases
from riddlectl.bench.statustime import status_phase
from riddlectl.bench.subject import Bench, BenchOptions
from riddlectl.bench.summary import judge
from riddlectl.spool import remove_spool, server_url

__all__ = ["BenchOptions", "run_bench"]


def run_bench(options: BenchOptions) -> dict[str, Any]:
    """Run every phase in a temporary directory; the outcome as a JSON-able dict."""
    out: dict[str, Any] = {"version": 1, "error": None, "machine": machine()}
    out["options"] = asdict(options)
    out.update(latency=None, submit=None, throughput=None, cpu=None, agents=[], status=None)
    out.update(peers=None, breakdown=None, rounds=None, comparison=None, bulk_submit=None)
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
        if options.submit_riddles:
            out["bulk_submit"] = bulk_submit_phase(
                options.spool, root / "bulk", bench.data, options.submit_riddles
            )
    if options.peers:
        server = server_url(options.spool)
        if server is not None:  # the peers on PostgreSQL use the same server
            os.environ.setdefault("RIDDLECTL_BENCH_PG", server)
        time.sleep(options.pause)
        out["peers"] = peers_phase(options)
        out["rounds"] = [round_figures(out, out["peers"])]
        for _ in range(1, options.rounds):  # A B A B: riddlectl again, then the peers again
            time.sleep(options.pause)
            again = riddlectl_round(options)
            time.sleep(options.pause)
            out["rounds"].append(round_figures(again, peers_phase(options)))
        out["comparison"] = compare(out["rounds"])
    out["ratios"], out["targets"] = judge(out, options)
    return out


def riddlectl_round(options: BenchOptions) -> dict[str, Any]:
    """riddlectl's pipeline once more, on a new spool: its latency, throughput and CPU."""
    out: dict[str, Any] = {"error": None, "latency": None, "throughput": None, "cpu": None}
    with tempfile.TemporaryDirectory(prefix="riddlectl-bench-") as tmp:
        bench = Bench(Path(tmp), options)
        try:
            pipeline_phases(bench, Path(tmp), out)
        finally:
            remove_spool(bench.spool)
    return out


def _figures(run: dict[str, Any]) -> dict[str, Any]:
    return {
        "p50_ms": (run.get("latency") or {}).get("p50_ms"),
        "per_s": (run.get("throughput") or {}).get("per_s"),
        "cpu_ms": (run.get("cpu") or {}).get("ms_per_riddle"),
        "error": run.get("error"),
    }


def round_figures(mine: dict[str, Any], peers: list[dict[str, Any]]) -> dict[str, Any]:
    """One round's p50, throughput and CPU per riddle: riddlectl's, then each peer's."""
    figures = {"riddlectl": _figures(mine)}
    figures.update((peer["name"], _figures(peer)) for peer in peers if not peer["skipped"])
    return figures


def compare(rounds: list[dict[str, Any]]) -> dict[str, Any]:
    """Per peer and figure, riddlectl's over the peer's in each round (each ratio from
    runs made one after the other), with the median and the spread [min, max]."""
    out: dict[str, Any] = {}
    peers = [name for name in rounds[0] if name != "riddlectl"]
    for name in peers:
        out[name] = {}
        for figure in ("p50_ms", "per_s", "cpu_ms"):
            ratios = [
                round(one["riddlectl"][figure] / one[name][figure], 3)
                for one in rounds
                if name in one and one["riddlectl"][figure] and one[name][figure]
            ]
            out[name][figure] = {
                "ratios": ratios,
                "median": round(statistics.median(ratios), 3) if ratios else None,
                "spread": [min(ratios), max(ratios)] if ratios else None,
            }
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
        pause=options.pause,
    )
    with tempfile.TemporaryDirectory(prefix="riddlectl-peers-") as tmp:
        return run_peers(options.peers, Path(tmp), peer_options)
