"""`riddlectl copy`: a whole spool moved between the filesystem and PostgreSQL, in both
directions, with ids, queues, documents (to the byte) and events kept."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

import orjson
import pytest

from riddlectl.document import codec
from riddlectl.document.model import Riddle
from riddlectl.spool import open_spool
from riddlectl.spool.contract import Spool
from riddlectl.spool.states import Queue
from tests.conftest import Cli
from tests.contract.conftest import riddle

QUEUES = list(Queue)


def fill(spool: Spool, count: int) -> None:
    """`count` riddles with histories, spread over every queue, and one event for each."""
    for start in range(0, count, 1000):
        groups: dict[Queue, list[Riddle]] = {q: [] for q in QUEUES}
        for n in range(start, min(count, start + 1000)):
            made = riddle(
                f"r{n:05}",
                rev=n % 7 + 1,
                priority=n % 3 - 1,
                created=1_700_000_000.0 + n,
                updated=1_700_000_500.0 + n / 3,
                history=[{"stage": "submit", "outcome": "ok", "n": n}],
                custom={"kept": [n, "x"]},
            )
            groups[QUEUES[n % len(QUEUES)]].append(made)
        for queue, riddles in groups.items():
            spool.restore(riddles, queue)
        spool.events.append_many([{"id": f"r{n:05}", "n": n} for n in range(start, start + 1000)])


def snapshot(spool: Spool) -> dict[str, tuple[str, bytes]]:
    return {
        riddle.id or "": (queue.value, codec.dumps(riddle))
        for queue in QUEUES
        for riddle in spool.iter_queue(queue)
    }


def test_a_round_trip_file_postgresql_file_keeps_10000_riddles_as_they_were(
    tmp_path: Path, pg_url: str, data_dir: Path
) -> None:
    first = open_spool(tmp_path / "first", durable=False)
    fill(first, 10_000)
    cli = Cli(tmp_path / "unused", data_dir)
    there = cli("copy", "--from", str(tmp_path / "first"), "--to", pg_url, "--json", timeout=300)
    assert there.code == 0, there.err
    assert orjson.loads(there.out) == {
        "riddles": {q.value: 1250 for q in QUEUES},
        "events": 10_000,
    }
    back = cli("copy", "--from", pg_url, "--to", str(tmp_path / "again"), timeout=300)
    assert back.code == 0, back.err
    assert back.err == f"copied 10000 riddle(s) and 10000 event(s) to {tmp_path / 'again'}\n"
    again = open_spool(tmp_path / "again", create=False)
    assert snapshot(again) == snapshot(first)
    assert list(again.events.read()) == list(first.events.read())
    assert snapshot(open_spool(pg_url, create=False)) == snapshot(first)


HOLD = """
import sys, time
from riddlectl.spool import open_spool
from riddlectl.spool.states import Queue
spool = open_spool(sys.argv[1], create=False)
claim, = spool.claim(Queue.INCOMING)
print(claim.riddle.id, flush=True)
time.sleep(60)
"""


def test_copy_refuses_while_an_agent_holds_claims_or_into_a_spool_in_use(
    tmp_path: Path, pg_url: str, data_dir: Path
) -> None:
    source = open_spool(pg_url)
    source.add([riddle("a")])
    cli = Cli(tmp_path / "unused", data_dir)
    agent = subprocess.Popen([sys.executable, "-c", HOLD, pg_url], stdout=subprocess.PIPE)
    try:
        assert agent.stdout is not None and agent.stdout.readline()
        refused = cli("copy", "--from", pg_url, "--to", str(tmp_path / "copy"))
    finally:
        agent.send_signal(signal.SIGKILL)
        agent.wait()
    assert refused.code == 2
    assert "agents are running on it: " in refused.err and f"(pid {agent.pid})" in refused.err
    assert not (tmp_path / "copy").exists()  # a refused copy makes no target
    open_spool(tmp_path / "full").add([riddle("b")])
    full = cli("copy", "--from", pg_url, "--to", str(tmp_path / "full"))
    assert (full.code, full.err) == (
        2,
        f"riddlectl: {tmp_path / 'full'}: not empty: copy into a new spool\n",
    )


HOLD_THREE = """
import sys, time
from riddlectl.identity import Actor
from riddlectl.spool import open_spool
from riddlectl.spool.states import Queue
spool = open_spool(sys.argv[1], create=False, actor=Actor("solve"))
claims = spool.claim(Queue.INCOMING, limit=3)
for claim in claims:
    spool.begin(claim)  # as an agent does when it starts handling each
print(len(claims), flush=True)
time.sleep(60)
"""


def _holding_three(source: str) -> subprocess.Popen[bytes]:
    """An agent of its own process holding three claims on `source`."""
    open_spool(source).add([riddle("a"), riddle("b"), riddle("c")])
    agent = subprocess.Popen([sys.executable, "-c", HOLD_THREE, source], stdout=subprocess.PIPE)
    assert agent.stdout is not None and agent.stdout.readline() == b"3\n"
    return agent


def _tables(url: str) -> list[str]:
    import psycopg

    from riddlectl.spool.postgres import url as urls

    parsed = urls.parse(url)
    with psycopg.connect(parsed.conninfo) as conn:
        rows = conn.execute(
            "SELECT table_name FROM information_schema.tables WHERE table_schema = %s",
            (parsed.schema,),
        ).fetchall()
    return [name for (name,) in rows]


@pytest.mark.postgres
def test_a_refused_copy_into_a_database_creates_no_table_and_names_the_agent_once(
    tmp_path: Path, pg_url: str, data_dir: Path
) -> None:
    agent = _holding_three(str(tmp_path / "source"))
    try:
        refused = Cli(tmp_path / "source", data_dir)("copy", "--to", pg_url)
    finally:
        agent.send_signal(signal.SIGKILL)
        agent.wait()
    assert refused.code == 2, refused.err
    assert refused.err.count("\n") == 1 and refused.err.count(f"(pid {agent.pid})") == 1
    assert _tables(pg_url) == []


@pytest.mark.postgres
def test_a_refused_copy_into_a_directory_makes_no_directory(
    tmp_path: Path, pg_url: str, data_dir: Path
) -> None:
    agent = _holding_three(pg_url)
    try:
        refused = Cli(pg_url, data_dir)("copy", "--to", str(tmp_path / "copy"))
    finally:
        agent.send_signal(signal.SIGKILL)
        agent.wait()
    assert refused.code == 2, refused.err
    assert refused.err.count(f"(pid {agent.pid})") == 1
    assert not (tmp_path / "copy").exists()


def test_a_copy_refused_on_a_directory_source_leaves_no_target(
    tmp_path: Path, data_dir: Path
) -> None:
    agent = _holding_three(str(tmp_path / "source"))
    try:
        refused = Cli(tmp_path / "source", data_dir)("copy", "--to", str(tmp_path / "copy"))
    finally:
        agent.send_signal(signal.SIGKILL)
        agent.wait()
    assert refused.code == 2, refused.err
    assert refused.err.count(f"(pid {agent.pid})") == 1, refused.err
    assert not (tmp_path / "copy").exists()


def test_a_copy_whose_target_cannot_be_made_whole_leaves_no_target(
    tmp_path: Path, data_dir: Path
) -> None:
    open_spool(tmp_path / "source").add([riddle("a")])
    mount = tmp_path / "small"
    mount.mkdir()
    # Room for a few directories only: the target's layout is begun, then fails.
    made = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=4m,nr_inodes=8", "tmpfs", mount])
    if made.returncode != 0:
        pytest.skip("cannot mount a tmpfs here")
    try:
        failed = Cli(tmp_path / "source", data_dir)("copy", "--to", str(mount / "copy"))
        left = sorted(p.name for p in mount.iterdir())
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)
    assert failed.code == 5, failed.err
    assert failed.err.count("\n") == 1 and "No space left on device" in failed.err
    assert left == []
