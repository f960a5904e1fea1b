"""`riddlectl bench --web`: the web UI's speed over a large spool.

In a temporary directory (removed afterwards):

1. **fill**: a spool of N riddles (default 100,000) dropped straight into `done/` (75 %),
   `failed/` (15 %, with errors and trials) and `hold/` (10 %), with priorities 0 to 4 and
   creation times spread over 30 days; one in a thousand has `needle` in its question.
2. **serve**: `riddlectl serve --port 0` on it (`RIDDLECTL_FSYNC=0`), timed until it
   answers (the index built from the spool).
3. **pages**: each page requested `samples` times on one kept-alive connection, after one
   warm-up; the server's time is its `Server-Timing` header (from the request reaching
   the application to the response starting), the client's the round trip:
   `first` (`/app/table`), `filtered` (`?queue=failed&trial=1`), `search` (`?q=needle`),
   `deep` (the page after row 50,000, by its keyset cursor).
4. **live**: `tabs` live streams open (`/app/live`), each fetching `/app/table/rows` on
   every change as a browser tab does; then `flow` riddles are submitted (library, in
   batches of 100) and `riddlectl run --once` takes them to done. The server's CPU time
   (`/proc/PID/stat`) over that span, as seconds and as a share of one core.
"""

from __future__ import annotations

import contextlib
import http.client
import os
import random
import socket
import subprocess
import tempfile
import threading
import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import orjson

from riddlectl.bench.measure import cpu_seconds, machine, percentile, riddlectl_argv
from riddlectl.spool import open_spool
from riddlectl.spool.states import Queue

PAGES = {
    "first": "/app/table",
    "filtered": "/app/table?queue=failed&trial=1",
    "search": "/app/table?q=needle",
    "dashboard": "/app",
    "dashboard-week": "/app?window=week",
    "trends-json": "/api/trends?window=week",
    "corrupt": "/app/corrupt",
}
# Timed after the live phase, with an agent per stage alive (and the live phase's `run`
# among those gone): the agents pages read the agents' records, not the riddles.
AGENT_PAGES = {"agents": "/app/agents", "agents-json": "/api/agents"}
CORRUPT_FILES = 50  # set aside in the bench's spool, for /app/corrupt
STAGES = ("extract", "solve", "validate", "manage")
DEEP_ROW = 50_000
GOAL_P95_MS = 100.0


@dataclass(frozen=True)
class WebBenchOptions:
    riddles: int = 100_000
    samples: int = 40
    tabs: int = 20
    flow: int = 2000
    events: int = 1_000_000


def run_web_bench(options: WebBenchOptions) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="riddlectl-bench-web-") as tmp:
        root = Path(tmp)
        spool_dir, data = root / "spool", root / "data"
        data.mkdir()
        (data / "xy.txt").write_text("x = 10\ny = 15\n")
        started = time.monotonic()
        _fill(spool_dir, options.riddles)
        _fill_events(spool_dir, options.events)
        fill_s = time.monotonic() - started
        server = _Server(spool_dir, data)
        try:
            folded_s = _until_folded(server, options.events)
            pages = {name: _time(server, path, options.samples) for name, path in PAGES.items()}
            deep = _deep_path(spool_dir, min(DEEP_ROW, max(options.riddles - 60, 0)))
            pages["deep"] = _time(server, deep, options.samples)
            live = _live(server, spool_dir, data, options)
            with _agents_alive(server) as listed:
                for name, path in AGENT_PAGES.items():
                    pages[name] = _time(server, path, options.samples)
        finally:
            server.stop()
    return {
        "version": 1,
        "machine": machine(),
        "options": asdict(options),
        "fill_s": round(fill_s, 2),
        "ready_s": round(server.ready_s, 2),
        "folded_s": round(folded_s, 2),
        "pages": pages,
        "live": live,
        "agents_listed": listed,
        "goal_p95_ms": GOAL_P95_MS,
        "goal_met": all(p["server_p95_ms"] < GOAL_P95_MS for p in pages.values()),
    }


def _fill(spool_dir: Path, count: int) -> None:
    """`count` finished or held riddles, dropped straight into their queues."""
    spool = open_spool(spool_dir, create=True, durable=False)
    rng = random.Random(13)
    now = time.time()
    for n in range(count):
        queue = Queue.DONE if n % 20 < 15 else Queue.FAILED if n % 20 < 18 else Queue.HOLD
        spool.drop_in(queue, f"b{n:07d}.json", orjson.dumps(_doc(n, queue, rng, now)))


UNROTATED = 1 << 40  # bytes: the bench's log is filled once, in one file


def _fill_events(spool_dir: Path, count: int) -> None:
    """`count` events over the last week, as agents log them (a handling with its duration
    and its move), and a few files set aside."""
    # One log, never rotated: the server is then waited for until it has read them all.
    spool = open_spool(spool_dir, durable=False, events_max_bytes=UNROTATED)
    rng = random.Random(17)
    now = time.time()
    moves = {"extract": ("incoming", "extracted"), "solve": ("extracted", "solved"),
             "validate": ("solved", "validated"), "manage": ("validated", "done")}  # fmt: skip
    batch: list[dict[str, Any]] = []
    for n in range(count):
        stage = STAGES[n % 4]
        source, target = moves[stage]
        failed = stage == "manage" and n % 50 == 3
        batch.append({
            "time": now - rng.uniform(0, 7 * 86400), "id": f"e{n // 4:07d}", "stage": stage,
            "from": source, "to": "failed" if failed else target,
            "outcome": "failed" if failed else "ok", "agent": f"bench-{stage}",
            "host": "bench", "pid": 1, "rev": n % 4 + 1, "duration": rng.lognormvariate(-4, 1),
        })  # fmt: skip
        if len(batch) >= 10_000:
            spool.events.append_many(batch)
            batch = []
    spool.events.append_many(batch)
    for n in range(CORRUPT_FILES):
        spool.drop_in(Queue.INCOMING, f"bad{n:03d}.json", b'{"riddle": ' + b"x" * 5000)
    spool.claim(Queue.INCOMING, limit=CORRUPT_FILES)


def _until_folded(server: _Server, count: int, timeout: float = 1800.0) -> float:
    """Seconds until the server has read every event (its metrics count them all)."""
    started = time.monotonic()
    while time.monotonic() - started < timeout:
        _, _, body = server.get("/metrics")
        seen = sum(
            int(float(line.rsplit(" ", 1)[1]))
            for line in body.decode().splitlines()
            if line.startswith("riddlectl_transitions_total{")
        )
        if seen >= count:
            break
        time.sleep(1.0)
    return time.monotonic() - started


def _doc(n: int, queue: Queue, rng: random.Random, now: float) -> dict[str, Any]:
    created = now - rng.uniform(0, 30 * 86400)
    question = f"What is x * y for case {n}?" + (" needle" if n % 1000 == 7 else "")
    doc: dict[str, Any] = {
        "id": f"b{n:07d}",
        "riddle": {"context": f"[bench {n % 97}]", "question": question},
        "data": [{"type": "text", "file_plain": "xy.txt"}],
        "priority": rng.randrange(5),
        "created": created,
        "updated": created + rng.uniform(0, 60),
        "rev": 5,
        "status": {"trial": 0, "solved": queue is Queue.DONE},
    }
    if queue is Queue.DONE:
        doc["solution"] = {"solution": "150", "explanation": "x * y = 150", "accepted": True}
    elif queue is Queue.FAILED:
        doc["status"]["trial"] = n % 4
        doc["error"] = f"solve: unknown variable q{n % 50}"
    else:
        doc["held_from"] = "incoming"
    return doc


class _Server:
    """`riddlectl serve` on the bench's spool, and a kept-alive connection to it."""

    def __init__(self, spool_dir: Path, data: Path) -> None:
        argv = [*riddlectl_argv(), "--spool", str(spool_dir), "--data-dir", str(data)]
        env = {**os.environ, "RIDDLECTL_FSYNC": "0", "RIDDLECTL_EVENTS_MAX_BYTES": str(UNROTATED)}
        started = time.monotonic()
        self.proc = subprocess.Popen(
            [*argv, "serve", "--port", "0"], stderr=subprocess.PIPE, env=env
        )
        assert self.proc.stderr is not None
        line = self.proc.stderr.readline().decode()
        if "serving " not in line:
            raise RuntimeError(f"riddlectl serve did not start: {line.strip()}")
        url = urlsplit(line.split("serving ", 1)[1].split()[0])
        self.host, self.port = url.hostname or "127.0.0.1", url.port or 80
        self.conn = self.connect()
        self.get("/api/status?limit=1")  # answers once the index is built
        self.ready_s = time.monotonic() - started
        self.argv, self.env = argv, env

    def connect(self) -> http.client.HTTPConnection:
        conn = http.client.HTTPConnection(self.host, self.port, timeout=600)
        conn.connect()
        # As a browser does: without it, a small request waits on delayed ACKs (40 ms).
        conn.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        return conn

    def get(self, path: str) -> tuple[float, float, bytes]:
        """(server ms, round-trip ms, body) of one GET."""
        started = time.perf_counter()
        try:
            self.conn.request("GET", path)
            answer = self.conn.getresponse()
        except (http.client.RemoteDisconnected, ConnectionResetError):
            # The server closed a connection left idle past its keep-alive (as during the
            # live phase): a browser opens another, and so does this.
            self.conn.close()
            self.conn = self.connect()
            started = time.perf_counter()
            self.conn.request("GET", path)
            answer = self.conn.getresponse()
        body = answer.read()
        took = (time.perf_counter() - started) * 1000
        if answer.status != 200:
            raise RuntimeError(f"GET {path}: {answer.status} {body[:200]!r}")
        timing = answer.getheader("server-timing") or "app;dur=nan"
        return float(timing.split("dur=")[1]), took, body

    def stop(self) -> None:
        self.conn.close()
        self.proc.terminate()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()


def _time(server: _Server, path: str, samples: int) -> dict[str, Any]:
    server.get(path)  # warm-up
    server_ms, round_ms = [], []
    rows = 0
    for _ in range(samples):
        at_server, round_trip, body = server.get(path)
        server_ms.append(at_server)
        round_ms.append(round_trip)
        rows = body.count(b'name="id"')
    server_ms.sort()
    round_ms.sort()
    return {
        "path": path if len(path) < 60 else path[:57] + "…",
        "rows": rows,
        "server_p50_ms": round(percentile(server_ms, 50), 2),
        "server_p95_ms": round(percentile(server_ms, 95), 2),
        "round_trip_p50_ms": round(percentile(round_ms, 50), 2),
        "round_trip_p95_ms": round(percentile(round_ms, 95), 2),
    }


def _deep_path(spool_dir: Path, row: int) -> str:
    """The table's page after row `row` (in priority order), by its keyset cursor."""
    from riddlectl.web import query
    from riddlectl.web.index import Index
    from riddlectl.web.service import INDEX_NAME

    index = Index(spool_dir / INDEX_NAME)
    found = index.query(
        "SELECT * FROM riddles ORDER BY priority DESC, created ASC, id ASC LIMIT 1 OFFSET ?",
        [row],
    )
    index.close()
    return f"/app/table?after={query.cursor_of(dict(found[0]), 'priority')}"


def _live(server: _Server, spool_dir: Path, data: Path, options: WebBenchOptions) -> dict[str, Any]:
    tabs = [_Tab(server) for _ in range(options.tabs)]
    for tab in tabs:
        tab.start()
    time.sleep(1.5)  # every tab has its first event and rows
    before = cpu_seconds(server.proc.pid)
    started = time.monotonic()
    _submit(spool_dir, data, options.flow)
    agents = subprocess.run(
        [*server.argv, "run", "--once", "--quiet"], env=server.env, capture_output=True
    )
    flowed = time.monotonic() - started
    time.sleep(2.0)  # the last changes reach the tabs
    spent = cpu_seconds(server.proc.pid) - before
    for tab in tabs:
        tab.stop()
    return {
        "tabs": options.tabs,
        "riddles": options.flow,
        "agents_exit": agents.returncode,
        "flow_s": round(flowed, 2),
        "server_cpu_s": round(spent, 2),
        "server_cpu_share": round(spent / (flowed + 2.0), 3),
        "refreshes": sum(tab.refreshes for tab in tabs),
        "events": sum(tab.events for tab in tabs),
    }


@contextlib.contextmanager
def _agents_alive(server: _Server, timeout: float = 60.0) -> Iterator[dict[str, int]]:
    """An idle `agent` process per stage for the time of the block; yields how many
    agents `/api/agents` lists alive and gone once all four are up."""
    agents = [
        subprocess.Popen([*server.argv, "agent", stage], env=server.env, stderr=subprocess.DEVNULL)
        for stage in STAGES
    ]
    try:
        deadline = time.monotonic() + timeout
        while True:
            listed = orjson.loads(server.get("/api/agents")[2])
            counted = {key: len(listed[key]) for key in ("alive", "gone")}
            if counted["alive"] >= len(STAGES) or time.monotonic() > deadline:
                break
            time.sleep(0.2)
        yield counted
    finally:
        for agent in agents:
            agent.terminate()
        for agent in agents:
            try:
                agent.wait(15)
            except subprocess.TimeoutExpired:
                agent.kill()


def _submit(spool_dir: Path, data: Path, count: int) -> None:
    from riddlectl import runtime
    from riddlectl import settings as settings_mod
    from riddlectl.identity import Actor
    from riddlectl.ops import submit

    settings = settings_mod.resolve({"spool": spool_dir, "data_dir": data, "fsync": False})
    spool = runtime.open_spool(settings, create=False, writable=True)
    pipeline = runtime.pipeline(settings, spool, Actor("bench"))
    doc = {"riddle": {"question": "x * y ="}, "data": [{"file_plain": "xy.txt"}]}
    for start in range(0, count, 100):
        batch = [("bench", dict(doc)) for _ in range(min(100, count - start))]
        submit.submit(pipeline, submit.prepare(batch, settings))


class _Tab(threading.Thread):
    """A browser tab with the live table open: its stream, and a refresh per change."""

    def __init__(self, server: _Server) -> None:
        super().__init__(daemon=True)
        self.server = server
        self.events = 0
        self.refreshes = 0
        self.stream = server.connect()
        self.rows = server.connect()
        self.stopped = False

    def run(self) -> None:
        try:
            self.stream.request("GET", "/app/live")
            answer = self.stream.getresponse()
            while not self.stopped:
                line = answer.fp.readline()
                if not line:
                    return
                if line.startswith(b"data:"):
                    self.events += 1
                    self.rows.request("GET", "/app/table/rows")
                    self.rows.getresponse().read()
                    self.refreshes += 1
        except (OSError, http.client.HTTPException, ValueError):
            return

    def stop(self) -> None:
        self.stopped = True
        for conn in (self.stream, self.rows):
            with contextlib.suppress(OSError):
                conn.sock.shutdown(socket.SHUT_RDWR)  # wakes the read under way
        self.join(5)
        for conn in (self.stream, self.rows):
            conn.close()


def render(outcome: dict[str, Any]) -> str:
    options = outcome["options"]
    lines = [
        f"web UI over {options['riddles']:,} riddles and {options['events']:,} events "
        f"(filled in {outcome['fill_s']} s; server ready in {outcome['ready_s']} s, "
        f"every event read in {outcome['folded_s']} s)",
        f"{'page':14} {'rows':>5} {'server p50':>11} {'p95':>8} {'round trip p50':>15} {'p95':>8}",
    ]
    for name, p in outcome["pages"].items():
        lines.append(
            f"{name:14} {p['rows']:>5} {p['server_p50_ms']:>8.2f} ms {p['server_p95_ms']:>5.2f} ms"
            f" {p['round_trip_p50_ms']:>12.2f} ms {p['round_trip_p95_ms']:>5.2f} ms"
        )
    met = "met" if outcome["goal_met"] else "NOT met"
    lines.append(f"goal: server p95 under {outcome['goal_p95_ms']:g} ms for every page: {met}")
    listed = outcome["agents_listed"]
    lines.append(f"agents pages timed with {listed['alive']} agents alive, {listed['gone']} gone")
    live = outcome["live"]
    lines.append(
        f"live: {live['tabs']} tabs open while {live['riddles']} riddles flowed in "
        f"{live['flow_s']} s: server CPU {live['server_cpu_s']} s "
        f"({live['server_cpu_share']:.0%} of one core), {live['refreshes']} table refreshes"
    )
    return "\n".join(lines)


__all__ = ["WebBenchOptions", "render", "run_web_bench"]
