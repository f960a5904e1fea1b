"""`riddlectl copy`: a whole spool moved between the filesystem and PostgreSQL, in both
directions, with ids, queues, documents (to the byte) and events kept."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
from pathlib import Path

import orjson
import pytest

from riddlectl.document import codec
from riddlectl.document.model import Riddle
from riddlectl.spool import open_spool
from riddlectl.spool.contract import Corrupt, Spool
from riddlectl.spool.states import Queue
from tests import pg
from tests.conftest import Cli, example_doc, submit_flags
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
        "drop_ins": {q.value: 0 for q in QUEUES},
        "set_aside": 0,
        "events": 10_000,
        "not_copied": [],
    }
    back = cli("copy", "--from", pg_url, "--to", str(tmp_path / "again"), timeout=300)
    assert back.code == 0, back.err
    assert back.err == (
        "copied 10000 riddle(s), 0 drop-in(s), 0 set-aside file(s) and 10000 event(s) "
        f"to {tmp_path / 'again'}\n"
    )
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


def _seed_spool(cli: Cli, tmp_path: Path) -> dict[str, str]:
    """A spool holding one of each kind of riddle a copy must carry: one submitted, two
    taken in by `ingest` and not claimed yet (one named no id), and on a directory two
    dropped into `incoming/` (one named no id, one under a name of its own). Returns
    what `status` lists: id → queue."""
    submit_flags(cli, "kept")
    doc = orjson.dumps(example_doc())
    inbox = tmp_path / "inbox"
    inbox.mkdir()
    (inbox / "in1.json").write_bytes(doc)
    (inbox / "weird name.json").write_bytes(doc)
    assert cli("ingest", str(inbox)).code == 0
    if isinstance(cli.spool, Path):
        (cli.spool / "incoming" / "ünïcödé.json").write_bytes(doc)
        (cli.spool / "incoming" / "other.json").write_bytes(orjson.dumps(example_doc(id="own")))
    listed = {r["id"]: r["queue"] for r in cli("status", "--json").json()["riddles"]}  # type: ignore[index]
    assert len(listed) == (5 if isinstance(cli.spool, Path) else 3)
    return listed


@pytest.mark.timeout(600)  # some thirty commands
@pytest.mark.parametrize("there", ["fs", pytest.param("pg", marks=pytest.mark.postgres)])
def test_copy_takes_drop_ins_of_every_name_and_what_was_set_aside(
    any_cli: Cli, there: str, tmp_path: Path, data_dir: Path
) -> None:
    listed = _seed_spool(any_cli, tmp_path)
    junk = b"{ not a riddle"
    if isinstance(any_cli.spool, Path):
        (any_cli.spool / "corrupt" / "junk.json").write_bytes(junk)
        (any_cli.spool / "corrupt" / "junk.json.reason").write_text("junk.json: not JSON\n")
    else:
        open_spool(any_cli.spool).restore_set_aside(
            [(Corrupt("junk.json", "junk.json: not JSON"), junk)]
        )
    with contextlib.ExitStack() as stack:
        target = str(tmp_path / "copy") if there == "fs" else stack.enter_context(pg.fresh_schema())
        _copied_alike(any_cli, Cli(target, data_dir), listed, junk)


def _copied_alike(source: Cli, into: Cli, listed: dict[str, str], junk: bytes) -> None:
    """`copy` from `source` into a new spool `into`: every kind of entry read alike."""
    any_cli, target = source, str(into.spool)
    copied = any_cli("copy", "--to", target, "--json")
    assert copied.code == 0, copied.err
    counts = copied.json()
    assert counts["set_aside"] == 1 and counts["not_copied"] == []  # type: ignore[index]
    assert sum(counts["riddles"].values()) + sum(counts["drop_ins"].values()) == len(listed)  # type: ignore[index]
    assert {r["id"]: r["queue"] for r in into("status", "--json").json()["riddles"]} == listed  # type: ignore[index]
    for riddle_id in listed:
        assert into("show", riddle_id).out == any_cli("show", riddle_id).out
    assert orjson.loads(into("corrupt", "list", "--json").out) == orjson.loads(
        any_cli("corrupt", "list", "--json").out
    )
    assert into("corrupt", "show", "junk.json").out.encode().startswith(junk)
    ran = into("run", "--once", timeout=120)
    assert ran.code == 0, ran.err
    assert into("result", *sorted(listed)).out.count("150") == len(listed)


def test_copy_names_what_it_cannot_copy_and_exits_1(tmp_path: Path, data_dir: Path) -> None:
    source = tmp_path / "source"
    open_spool(source).add([riddle("a")])
    os.mkfifo(source / "incoming" / "pipe.json")
    copied = Cli(source, data_dir)("copy", "--to", str(tmp_path / "copy"))
    assert copied.code == 1, copied.err
    assert copied.err.splitlines() == [
        "riddlectl: incoming/pipe.json: not copied: not a regular file (a FIFO)",
        "copied 1 riddle(s), 0 drop-in(s), 0 set-aside file(s) and 0 event(s) to "
        f"{tmp_path / 'copy'}; 1 entry(ies) not copied",
    ]
    assert open_spool(tmp_path / "copy", create=False).ids(Queue.INCOMING) == ["a"]
