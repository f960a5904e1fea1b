"""Other queues run through the same pipeline as `riddlectl bench`, in the same run.

Four stages (extract, solve, validate, manage), one worker process per stage, about 1 KB
of JSON per riddle (`workload`), and the same figures as riddlectl's own bench: latency
from submit to done with one riddle in flight at a time (p50, p99), then throughput from
the first of N riddles submitted back to back to the last one done, the workers' CPU per
riddle over that phase, and their peak memory.

The peers (each a module here with a `Submitter` and a `work` loop):

- `naive`: a durable spool of files written the plain way (`naive`), woken by inotify.
- `dirq`: dirq's QueueSimple, a directory queue (not durable), polled.
- `persist-queue`: persist-queue's SQLiteQueue, durable, polled.
- `huey-file`: huey with its FileStorage (not durable), polled.
- `procrastinate`: procrastinate on a PostgreSQL server (durable), LISTEN/NOTIFY; named
  alone, as it needs the server (`riddlectl --spool URL bench --peers procrastinate`).

Polling peers look every 5 ms when idle. The libraries come with the `peers` extra
(`pip install 'riddlectl[peers]'`); a peer whose library is missing is skipped, with a
note saying what to install. Run `python -m riddlectl.bench.peers --help`, or
`riddlectl bench --peers all` to have riddlectl's figures and the peers' in one run.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass


@dataclass(frozen=True)
class Peer:
    name: str
    module: str  # in this package
    needs: tuple[str, ...]  # modules it imports, in the order they are checked
    package: str  # what pip installs for it
    durable: bool | None  # None: as the run's fsync setting says
    wakeup: str
    in_all: bool = True  # one of `all` (procrastinate needs a server: named alone)


PEERS = {
    peer.name: peer
    for peer in (
        Peer("naive", "naive", ("watchdog", "orjson"), "watchdog", None, "inotify"),
        Peer("dirq", "dirq_queue", ("dirq",), "dirq", False, "poll"),
        Peer("persist-queue", "sqlite_queue", ("persistqueue",), "persist-queue", True, "poll"),
        Peer("huey-file", "huey_files", ("huey",), "huey", False, "poll"),
        Peer(
            "procrastinate",
            "procrastinate_queue",
            ("procrastinate",),
            "procrastinate",
            True,
            "listen/notify",
            in_all=False,
        ),
    )
}


def choose(names: str) -> tuple[str, ...]:
    """Peers by comma-separated names, or `all` (every one that needs no server);
    `ValueError` naming an unknown one."""
    if names.strip() == "all":
        return tuple(name for name, peer in PEERS.items() if peer.in_all)
    chosen = tuple(dict.fromkeys(n.strip() for n in names.split(",") if n.strip()))
    unknown = [n for n in chosen if n not in PEERS]
    if unknown or not chosen:
        raise ValueError(
            f"unknown peer {', '.join(unknown) or '(none)'}; one of {', '.join(PEERS)} or all"
        )
    return chosen


def missing(name: str) -> str | None:
    """Why peer `name` cannot run here (its library is not installed), or None."""
    peer = PEERS[name]
    for module in peer.needs:
        try:
            importlib.import_module(module)
        except ImportError:
            return f"needs {peer.package}: pip install 'riddlectl[peers]'"
    return None
