"""`python -m riddlectl.bench.peers`: the peers alone (see the package's docstring).

`riddlectl bench --peers NAMES` runs them after riddlectl's own bench, in the same run.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from dataclasses import asdict
from pathlib import Path
from typing import Any

import orjson

from riddlectl.bench.measure import machine
from riddlectl.bench.peers import choose
from riddlectl.bench.peers.driver import PeerOptions, run_peers
from riddlectl.bench.peers.table import render


def parse(argv: list[str] | None) -> tuple[tuple[str, ...], PeerOptions, bool]:
    parser = argparse.ArgumentParser(
        prog="python -m riddlectl.bench.peers",
        description="Run the four-stage riddle pipeline on other queues and report "
        "throughput, latency, CPU and memory as `riddlectl bench` does.",
    )
    parser.add_argument("--peers", default="all", help="comma-separated names, or all")
    parser.add_argument("--n", type=int, default=2000, help="riddles for the throughput run")
    parser.add_argument("--lat-n", type=int, default=100, help="riddles sent one at a time")
    parser.add_argument("--no-fsync", action="store_true", help="the naive spool without fsync")
    parser.add_argument("--json", action="store_true", help="one JSON object")
    args = parser.parse_args(argv)
    if args.n < 1 or args.lat_n < 1:
        parser.error("--n and --lat-n must be at least 1")
    try:
        names = choose(args.peers)
    except ValueError as exc:
        parser.error(f"--peers: {exc}")
    options = PeerOptions(riddles=args.n, latency_riddles=args.lat_n, fsync=not args.no_fsync)
    return names, options, args.json


def measure(names: tuple[str, ...], options: PeerOptions) -> dict[str, Any]:
    """Every peer in a temporary directory (removed afterwards); the outcome as a dict."""
    with tempfile.TemporaryDirectory(prefix="riddlectl-peers-") as tmp:
        peers = run_peers(names, Path(tmp), options)
    return {"version": 1, "machine": machine(), "options": asdict(options), "peers": peers}


def main(argv: list[str] | None = None) -> None:
    names, options, as_json = parse(argv)
    outcome = measure(names, options)
    if as_json:
        sys.stdout.buffer.write(orjson.dumps(outcome, option=orjson.OPT_INDENT_2) + b"\n")
    else:
        print(render(outcome["peers"]))


if __name__ == "__main__":
    main()
