"""Several hosts on one PostgreSQL spool, one of them cut off mid-run.

Two network namespaces made by the test stand for two hosts, joined by a veth pair with
addresses inside them alone: `db` runs a throwaway PostgreSQL server (made with initdb,
its TCP keepalives set short) and agents for every stage; `far` runs a solve agent whose
handler is slow. Once the far agent has begun handling riddles, its link is cut. The
server gives up on its connection (keepalive probes unanswered), its session advisory
lock goes, and the agents in `db` reap its claims and finish every riddle. When the link
comes back, the far agent's handler ends and its commit is refused: every riddle is in
done, solved once.

Needs root, `ip` and PostgreSQL's server binaries; skipped without them (and under
`CI=true` it fails instead, as the other PostgreSQL tests do). It takes half a minute to
a minute (the far handler's pause, the detection, agents starting): the one
test of what a cut network does, so it runs with the others.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import orjson
import pytest

from tests import pg
from tests.conftest import Cli, example_doc
from tests.pg import IN_CI
from tests.rig import until

# Its own PostgreSQL servers, not the `pg_*` fixtures: marked by hand.
pytestmark = [pytest.mark.postgres, pg.own_server("hosts")]

# The server's TCP settings: a silent peer is probed after 1 s, every 1 s, dropped after 2
# unanswered probes; unacknowledged data is given up on after 2 s.
SERVER_TCP = {
    "tcp_keepalives_idle": "1",
    "tcp_keepalives_interval": "1",
    "tcp_keepalives_count": "2",
    "tcp_user_timeout": "2000",
}
# How soon a cut-off host's claims must be back: the settings above (about 3 s), the
# reaper's period (1 s), and room for a loaded machine.
RECOVERY_BOUND = 15.0
SLOW = 12  # seconds the far agent's handler takes: it ends after the link is back
RIDDLES = 12


def tools() -> str | None:
    """Why this test cannot run here, or None."""
    if os.geteuid() != 0:
        return "needs root (network namespaces)"
    if shutil.which("ip") is None:
        return "needs iproute2's ip"
    if pg.as_postgres() is None or not pg.binary("initdb") or not pg.binary("postgres"):
        return "needs PostgreSQL's server (initdb, postgres) and a postgres user"
    return None


def run(*argv: str) -> None:
    subprocess.run(argv, check=True, capture_output=True, timeout=60)


@contextlib.contextmanager
def two_hosts() -> Iterator[tuple[str, str, str]]:
    """Namespaces `db` and `far` joined by a veth pair: (db, far, db's address)."""
    tag = f"{os.getpid() % 10000}"
    db, far = f"rdb{tag}", f"rfar{tag}"
    near_if, far_if = f"vd{tag}", f"vf{tag}"
    subnet = f"10.231.{os.getpid() % 250}"
    try:
        run("ip", "netns", "add", db)
        run("ip", "netns", "add", far)
        run("ip", "link", "add", near_if, "type", "veth", "peer", "name", far_if)
        run("ip", "link", "set", near_if, "netns", db)
        run("ip", "link", "set", far_if, "netns", far)
        for ns, link, address in ((db, near_if, f"{subnet}.1"), (far, far_if, f"{subnet}.2")):
            run("ip", "netns", "exec", ns, "ip", "addr", "add", f"{address}/24", "dev", link)
            run("ip", "netns", "exec", ns, "ip", "link", "set", link, "up")
            run("ip", "netns", "exec", ns, "ip", "link", "set", "lo", "up")
        yield db, far, f"{subnet}.1"
    finally:
        for ns in (db, far):
            subprocess.run(["ip", "netns", "del", ns], capture_output=True, check=False)


@contextlib.contextmanager
def server(ns: str, address: str) -> Iterator[str]:
    """A throwaway PostgreSQL server in namespace `ns`, listening on `address`."""
    home = Path(tempfile.mkdtemp(prefix="riddlectl-pg-"))
    home.chmod(0o755)
    options = [f"-c{key}={value}" for key, value in SERVER_TCP.items()]
    options += [f"-clisten_addresses={address}", f"-cunix_socket_directories={home}"]
    proc = pg.start(home, options, prefix=["ip", "netns", "exec", ns], hba=address)
    url = f"postgresql://postgres@{address}:5432/postgres"
    try:
        until(lambda: _answers(ns, url), 30)
        yield url
    finally:
        pg.stop(proc, home)


def _answers(ns: str, url: str) -> bool:
    probe = f"import psycopg; psycopg.connect({url!r}, connect_timeout=2).close()"
    done = subprocess.run(
        ["ip", "netns", "exec", ns, sys.executable, "-c", probe], capture_output=True
    )
    return done.returncode == 0


def in_ns(ns: str, cli: Cli, *args: str, **options: object) -> subprocess.Popen[bytes]:
    return subprocess.Popen(["ip", "netns", "exec", ns, *cli.argv(*args)], **options)  # type: ignore[call-overload]


def test_a_host_cut_off_loses_its_claims_and_its_late_commit_is_refused(
    data_dir: Path, tmp_path: Path
) -> None:
    why = tools()
    if why is not None:
        if IN_CI:
            pytest.fail(why)
        pytest.skip(why)
    with two_hosts() as (db, far, address), server(db, address) as base:
        url = f"{base}?schema=hosts"
        cli = Cli(url, data_dir)
        here = ["ip", "netns", "exec", db]
        assert subprocess.run([*here, *cli.argv("init")], capture_output=True).returncode == 0
        docs = [example_doc(id=f"h{n:02}") for n in range(RIDDLES)]
        submitted = subprocess.run(
            [*here, *cli.argv("submit", "-")], input=orjson.dumps(docs), capture_output=True
        )
        assert submitted.returncode == 0, submitted.stderr
        slow = f"cmd:sh -c 'cat >/dev/null; sleep {SLOW}; echo {{}}'"  # then declines
        near = [in_ns(db, cli, "agent", "extract", stdout=subprocess.DEVNULL)]
        far_agent = in_ns(
            far, cli, "agent", "solve", "--handler", slow, "--handler", "calculator",
            stdout=subprocess.DEVNULL, stderr=(tmp_path / "far.log").open("wb"),
        )  # fmt: skip
        try:
            until(lambda: _probe_claims(db, url, far_agent.pid) > 0, 30)
            run("ip", "netns", "exec", far, "ip", "link", "set", f"vf{os.getpid() % 10000}", "down")
            cut = time.monotonic()
            for stage in ("solve", "validate", "manage"):
                near.append(
                    in_ns(
                        db,
                        cli,
                        "agent",
                        stage,
                        stdout=subprocess.DEVNULL,
                        stderr=subprocess.DEVNULL,
                    )
                )
            until(lambda: _probe_claims(db, url, far_agent.pid) == 0, RECOVERY_BOUND + 5)
            recovered = time.monotonic() - cut
            assert recovered <= RECOVERY_BOUND, f"claims back after {recovered:.1f} s"
            try:
                until(lambda: _done(db, url) == RIDDLES, 60)
            except AssertionError:
                logs = {p.name: p.read_text()[-1500:] for p in tmp_path.glob("*.err")}
                logs["far"] = (tmp_path / "far.log").read_text()[-1500:]
                raise AssertionError((_counts(db, url), logs)) from None
            run("ip", "netns", "exec", far, "ip", "link", "set", f"vf{os.getpid() % 10000}", "up")
            # The far handler ends, its commit is tried, and refused.
            until(lambda: b"ClaimLost" in (tmp_path / "far.log").read_bytes(), SLOW + 30)
        finally:
            far_agent.send_signal(signal.SIGTERM)
            far_agent.wait(timeout=60)
            for proc in near:
                proc.send_signal(signal.SIGTERM)
            for proc in near:
                proc.wait(timeout=60)
        print(f"claims of the host cut off were back after {recovered:.1f} s")
        refused = (tmp_path / "far.log").read_text()
        assert "the commit is refused" in refused, refused[-2000:]
        results = _results(db, url)
        assert results == {f"h{n:02}": (["done"], "150", 1) for n in range(RIDDLES)}


def _query(ns: str, url: str, code: str) -> object:
    script = (
        "import json, sys, psycopg\n"
        f"conn = psycopg.connect({url.split('?')[0]!r}, connect_timeout=5)\n"
        f"{code}\n"
    )
    done = subprocess.run(
        ["ip", "netns", "exec", ns, sys.executable, "-c", script],
        capture_output=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr.decode()[-2000:]
    return orjson.loads(done.stdout)


def _probe_claims(ns: str, url: str, pid: int) -> int:
    code = (
        'row = conn.execute("SELECT count(*) FROM hosts.riddles r JOIN hosts.holders h '
        f"ON h.key = r.holder WHERE (h.record->>'pid')::int = {pid} AND r.begun\").fetchone()\n"
        "print(row[0])"
    )
    return int(_query(ns, url, code))  # type: ignore[call-overload]


def _counts(ns: str, url: str) -> object:
    code = (
        "print(json.dumps([[q, json.loads(bytes(d)).get('error')] for q, d in "
        "conn.execute('SELECT queue, doc FROM hosts.riddles LIMIT 3').fetchall()]))"
    )
    return _query(ns, url, code)


def _done(ns: str, url: str) -> int:
    code = (
        "print(conn.execute(\"SELECT count(*) FROM hosts.riddles WHERE queue = 'done'\")"
        ".fetchone()[0])"
    )
    return int(_query(ns, url, code))  # type: ignore[call-overload]


def _results(ns: str, url: str) -> dict[str, tuple[list[str], str, int]]:
    code = (
        "out = {}\n"
        "for rid, queue, doc in conn.execute('SELECT id, queue, doc FROM hosts.riddles'):\n"
        "    d = json.loads(bytes(doc))\n"
        "    solved = [e for e in d['history'] if e.get('stage') == 'solve' "
        "and e.get('outcome') == 'ok']\n"
        "    out[rid] = [[queue], d['solution']['solution'], len(solved)]\n"
        "print(json.dumps(out))"
    )
    found = _query(ns, url, code)
    assert isinstance(found, dict)
    return {k: (v[0], v[1], v[2]) for k, v in found.items()}
