"""One peer's worker for one stage, as a process of its own:

    python -m riddlectl.bench.peers.worker PEER STAGE BASE --done SOCKET [--fsync] [--poll S]

SIGTERM or SIGINT stops it.
"""

from __future__ import annotations

import argparse
import importlib
import signal
import threading
from typing import Any

from riddlectl.bench.peers import PEERS
from riddlectl.bench.peers.workload import STAGES, Notifier, StageRun


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m riddlectl.bench.peers.worker")
    parser.add_argument("peer", choices=sorted(PEERS))
    parser.add_argument("stage", choices=STAGES)
    parser.add_argument("base")
    parser.add_argument("--done", required=True, help="the driver's done socket")
    parser.add_argument("--fsync", action="store_true")
    parser.add_argument("--poll", type=float, default=0.005)
    args = parser.parse_args(argv)
    stop = threading.Event()

    def stopping(signum: int, frame: Any) -> None:
        stop.set()

    signal.signal(signal.SIGTERM, stopping)
    signal.signal(signal.SIGINT, stopping)
    peer = importlib.import_module(f"riddlectl.bench.peers.{PEERS[args.peer].module}")
    done = Notifier(args.done)
    peer.work(StageRun(args.stage, args.base, stop, done, args.fsync, args.poll))


if __name__ == "__main__":
    main()
