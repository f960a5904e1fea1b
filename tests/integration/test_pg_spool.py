"""What the PostgreSQL spool adds to the contract: the command line on it, claims that die
with their holder, late commits refused, migrations, wake-ups that survive a dropped
connection. A real server (tests/pg.py), real processes, real kill -9."""

from __future__ import annotations

import signal
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import orjson
import psycopg
import pytest

from riddlectl.errors import ClaimLost, SpoolUnusable
from riddlectl.identity import Actor
from riddlectl.spool import open_spool
from riddlectl.spool.postgres.extractions import _lock_key as _extraction_lock
from riddlectl.spool.postgres.pgspool import PgSpool
from riddlectl.spool.postgres.schema import LATEST
from riddlectl.spool.states import Queue
from tests import pg, pgserver
from tests.conftest import Cli, example_doc, spool_findings
from tests.contract.conftest import riddle
from tests.rig import until

# Some tests here end every riddlectl session on the server (`terminate`), as a restart
# would: on a server of the module's own, so that no other test's sessions end with them.
pytestmark = pg.own_server("spool")


@pytest.fixture(scope="module", autouse=True)
def own_server() -> Iterator[pgserver.Throwaway]:
    with pgserver.throwaway("riddlectl-pgspool-") as made, pytest.MonkeyPatch.context() as env:
        env.setattr(pg, "server", lambda: made.url)  # what pg_url and pg.require() give
        yield made


def opened(url: str) -> PgSpool:
    spool = open_spool(url, create=False)
    assert isinstance(spool, PgSpool)
    return spool


def terminate(spool: PgSpool, application: str = "") -> int:
    """End the server side of `spool`'s connections whose application name starts so
    (all of this spool's schema by default), as a server restart or a cut link would;
    back once they are gone (their last words sent)."""
    with psycopg.connect(pg.require(), autocommit=True) as conn:
        rows = conn.execute(
            "SELECT pg_terminate_backend(pid, 5000) FROM pg_stat_activity "
            "WHERE application_name LIKE %s AND pid <> pg_backend_pid() "
            "AND query NOT LIKE '%%pg_terminate_backend%%' AND backend_type = 'client backend' "
            "AND pid IN (SELECT pid FROM pg_stat_activity WHERE application_name LIKE %s)",
            (f"riddlectl {application}%", f"riddlectl {application}%"),
        ).fetchall()
    return len(rows)


def test_the_command_line_runs_a_riddle_to_done_on_postgresql(pg_cli: Cli) -> None:
    submitted = pg_cli("submit", "-", input=orjson.dumps(example_doc(id="ex")))
    assert submitted.code == 0, submitted.err
    assert submitted.out.strip() == "ex"
    ran = pg_cli("run", "--once")
    assert ran.code == 0, ran.err
    assert pg_cli("result", "ex").out == "150\n"
    status = pg_cli("status", "--json").json()
    assert status["counts"]["done"] == 1  # type: ignore[index]
    stages = [orjson.loads(line)["stage"] for line in pg_cli("events").out.splitlines()]
    assert stages[:1] == ["submit"] and "manage" in stages
    # Nothing wrong with the spool; the server's own settings are the server's (the
    # shared one may run with autovacuum off, which doctor then says).
    assert spool_findings(pg_cli) == []


def test_a_command_on_a_schema_without_a_spool_says_to_init(pg_url: str, data_dir: Path) -> None:
    done = Cli(pg_url, data_dir)("status")
    assert done.code == 5
    assert done.err.endswith(": no spool here (create one with riddlectl init)\n")
    init = Cli(pg_url, data_dir)("init")
    assert init.code == 0, init.err
    assert Cli(pg_url, data_dir)("status").code == 0


def test_init_is_idempotent_and_a_newer_schema_is_refused(pg_url: str) -> None:
    open_spool(pg_url).disconnect()  # type: ignore[attr-defined]
    spool = open_spool(pg_url)  # again: nothing to apply
    schema = pg_url.rsplit("schema=", 1)[1]
    with psycopg.connect(pg.require(), autocommit=True) as conn:
        versions = conn.execute(f'SELECT version FROM "{schema}".schema_version').fetchall()
        assert [v for (v,) in versions] == list(range(1, LATEST + 1))
        conn.execute(f'INSERT INTO "{schema}".schema_version VALUES (%s)', (LATEST + 1,))
    for create in (False, True):
        with pytest.raises(SpoolUnusable, match="newer than this riddlectl knows"):
            open_spool(pg_url, create=create)
    spool.disconnect()  # type: ignore[attr-defined]


def test_inits_at_once_apply_each_migration_once(pg_url: str) -> None:
    errors: list[BaseException] = []

    def init() -> None:
        try:
            open_spool(pg_url).disconnect()  # type: ignore[attr-defined]
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=init) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []


HOLDER = textwrap.dedent(
    """
    import sys, time
    from riddlectl.spool import open_spool
    from riddlectl.spool.states import Queue
    spool = open_spool(sys.argv[1], create=False)
    (claim,) = spool.claim(Queue.INCOMING)
    if sys.argv[2] == "begin":
        spool.begin(claim)
    print(claim.riddle.id, flush=True)
    time.sleep(60)
    """
)


def hold_in_a_process(url: str, how: str) -> subprocess.Popen[str]:
    proc = subprocess.Popen(
        [sys.executable, "-c", HOLDER, url, how], stdout=subprocess.PIPE, text=True
    )
    assert proc.stdout is not None and proc.stdout.readline().strip() == "a"
    return proc


@pytest.mark.parametrize("how", ["begin", "claim"])
def test_a_claim_dies_with_its_process(pg_spool: PgSpool, pg_url: str, how: str) -> None:
    pg_spool.add([riddle("a")])
    proc = hold_in_a_process(pg_url, how)
    assert pg_spool.claim(Queue.INCOMING) == []  # held by a live process
    assert pg_spool.examine() == []
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    until(pg_spool.examine, 5)  # the server notices the closed connection at once, or nearly
    (finding,) = pg_spool.examine()
    assert (finding.kind, finding.subject, finding.fixed) == ("dead-claim", "a", False)
    assert f"(pid {proc.pid}), which is gone" in finding.detail
    assert [f.fixed for f in pg_spool.examine(fix=True)] == [True]
    (claim,) = pg_spool.claim(Queue.INCOMING)
    # The spool logs an abandoned claim itself, and keeps it in the riddle's history.
    told = [e for e in pg_spool.events.read() if e["outcome"] == "abandoned"]
    if how == "begin":  # its handling had begun: one abandoned claim, and who left it
        assert claim.abandoned == 1
        (event,) = told
        assert (event["id"], event["pid"], event["rev"]) == ("a", proc.pid, 1)
        assert event["error"] == "its agent died while handling it (1 in a row)"
        assert claim.riddle.history[-1] == event
    else:
        assert claim.abandoned == 0 and told == []
    assert pg_spool.commit(claim, claim.riddle, Queue.EXTRACTED).rev == 2
    assert pg_spool.examine() == []


BEGIN_FIRST = textwrap.dedent(
    """
    import sys, time
    from riddlectl.spool import open_spool
    from riddlectl.spool.states import Queue
    spool = open_spool(sys.argv[1], create=False)
    claims = spool.claim_and_begin(Queue.INCOMING, limit=2)
    print(" ".join(f"{c.riddle.id}:{c.begun}" for c in claims), flush=True)
    time.sleep(60)
    """
)


def test_a_claim_begun_as_it_is_taken_counts_only_the_first_as_abandoned(
    pg_spool: PgSpool, pg_url: str
) -> None:
    """`claim_and_begin` marks the first claim begun in the claim's own statement
    (what an agent handles at once), as `begin` would, and no other: a holder that dies
    then leaves one abandoned attempt, on that riddle alone."""
    assert killed_holder(pg_spool, pg_url, BEGIN_FIRST, "a:True b:False") == (
        {"a": 1, "b": 0},
        ["a"],
    )


def killed_holder(
    pg_spool: PgSpool, pg_url: str, script: str, says: str
) -> tuple[dict[str, int], list[str]]:
    """Riddles `a` (first) and `b` held by `script` in a process of its own, killed once it
    printed `says`: each riddle's abandoned count at the next claim, and the ids the event
    log says were abandoned."""
    pg_spool.add([riddle("a", priority=1), riddle("b")])
    proc = subprocess.Popen(
        [sys.executable, "-c", script, pg_url], stdout=subprocess.PIPE, text=True
    )
    assert proc.stdout is not None and proc.stdout.readline().strip() == says
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    until(pg_spool.examine, 5)
    pg_spool.examine(fix=True)
    claims = pg_spool.claim(Queue.INCOMING, limit=2)
    told = [e["id"] for e in pg_spool.events.read() if e["outcome"] == "abandoned"]
    return {c.riddle.id or "": c.abandoned for c in claims}, told


HAND_OVER = textwrap.dedent(
    """
    import sys, time
    from riddlectl.spool import open_spool
    from riddlectl.spool.states import Queue
    spool = open_spool(sys.argv[1], create=False)
    first, second = spool.claim_and_begin(Queue.INCOMING, limit=2)
    spool.hand_over(first, second)  # done with the first, handling the second
    print(f"{first.riddle.id} {second.riddle.id}:{second.begun}", flush=True)
    time.sleep(60)
    """
)


def test_a_holder_dying_after_a_hand_over_is_charged_to_the_riddle_it_went_on_to(
    pg_spool: PgSpool, pg_url: str
) -> None:
    """`hand_over` marks one riddle of a batch handled and the next begun in one
    statement: a holder that dies then leaves one abandoned attempt, on the next alone."""
    assert killed_holder(pg_spool, pg_url, HAND_OVER, "a b:True") == ({"a": 0, "b": 1}, ["b"])


COMMIT_AND_BEGIN = textwrap.dedent(
    """
    import sys, time
    from riddlectl.spool import open_spool
    from riddlectl.spool.states import Queue
    spool = open_spool(sys.argv[1], create=False)
    first, second = spool.claim_and_begin(Queue.INCOMING, limit=2)
    spool.commit_and_begin([(first, first.riddle, Queue.EXTRACTED)], second)
    print(f"{first.riddle.id} {second.riddle.id}:{second.begun}", flush=True)
    time.sleep(60)
    """
)


def test_a_holder_dying_after_a_commit_and_begin_is_charged_to_the_riddle_it_went_on_to(
    pg_spool: PgSpool, pg_url: str
) -> None:
    """`commit_and_begin` commits a group and marks the batch's next riddle begun in one
    statement: the committed one is stored, the next one alone charged."""
    assert killed_holder(pg_spool, pg_url, COMMIT_AND_BEGIN, "a b:True") == ({"b": 1}, ["b"])
    assert pg_spool.find("a")[0] is Queue.EXTRACTED


def test_a_late_commit_of_a_claim_given_back_is_refused(pg_spool: PgSpool, pg_url: str) -> None:
    pg_spool.add([riddle("a"), riddle("b")])
    cut_off = PgSpool(opened(pg_url).url, actor=Actor("cut"))
    (lost,) = cut_off.claim(Queue.INCOMING)
    cut_off.begin(lost)
    assert terminate(cut_off, "cut") >= 1  # its host loses the server: its lock goes
    until(lambda: pg_spool.examine(), 5)
    (again,) = [c for c in pg_spool.claim(Queue.INCOMING, limit=2) if c.riddle.id == lost.riddle.id]
    assert again.abandoned == 1
    later = pg_spool.commit(again, again.riddle, Queue.EXTRACTED)
    with pytest.raises(ClaimLost, match="the commit is refused"):
        cut_off.commit(lost, lost.riddle, Queue.DONE)  # reconnects, and is refused
    assert pg_spool.find(lost.riddle.id or "") == (Queue.EXTRACTED, later)
    cut_off.release(lost)  # giving back what is no longer held changes nothing either
    assert pg_spool.find(lost.riddle.id or "")[0] is Queue.EXTRACTED
    cut_off.disconnect()


def test_wake_ups_survive_a_dropped_listening_connection(pg_spool: PgSpool) -> None:
    wake = threading.Event()
    watching = pg_spool.watch([Queue.INCOMING], wake)
    try:
        assert terminate(pg_spool) >= 1  # the work connection and the listening one
        assert wake.wait(10), "woken once listening again (arrivals may have been missed)"
        wake.clear()
        pg_spool.add([riddle("a")])  # the work connection is made again too
        assert wake.wait(5), "woken by an arrival after the reconnect"
    finally:
        watching.stop()


def test_a_read_after_the_server_ended_the_connection_is_answered(pg_spool: PgSpool) -> None:
    pg_spool.add([riddle("a")])
    assert terminate(pg_spool) >= 1  # as a server restart does, while the agent is idle
    assert pg_spool.find("a")[0] is Queue.INCOMING  # not "the spool cannot be used"
    assert pg_spool.ids(Queue.INCOMING) == ["a"]


def test_extractions_are_made_after_the_server_ended_the_kept_connection(
    pg_spool: PgSpool,
) -> None:
    cache = pg_spool.extractions
    first = cache.get_or_make(cache.key(b"x = 1", "text", "1"), lambda: {"extractor": "text"})
    assert terminate(pg_spool) >= 1  # a server restart: the maker connection kept is gone
    second = cache.get_or_make(cache.key(b"x = 2", "text", "1"), lambda: {"extractor": "text"})
    assert cache.load(first) == cache.load(second) == {"extractor": "text"}


@pytest.mark.parametrize("outcome", ["made", "extractor failed"])
def test_a_key_made_here_is_free_for_other_hosts_at_once(pg_spool: PgSpool, outcome: str) -> None:
    cache = pg_spool.extractions
    key = cache.key(outcome.encode(), "text", "1")

    def make() -> dict[str, str]:
        if outcome == "extractor failed":
            raise ValueError("unreadable")
        return {"extractor": "text"}

    try:
        cache.get_or_make(key, make)
    except ValueError:
        assert outcome == "extractor failed"
    # The connection that made it is kept for the next making, so it must not keep the
    # key's lock: another host's agent takes it without waiting.
    with psycopg.connect(pg.require(), autocommit=True) as other:
        lock = _extraction_lock(pg_spool.db.url.schema, key)
        (free,) = other.execute("SELECT pg_try_advisory_lock(%s)", (lock,)).fetchone() or (None,)
        assert free is True
        other.execute("SELECT pg_advisory_unlock(%s)", (lock,))


def test_a_key_made_in_another_schema_does_not_wait(pg_spool: PgSpool) -> None:
    """Advisory locks are the server's, not a schema's: another spool on the same server,
    making the same file's extraction (the same key) at the same time, must not hold up
    this one's."""
    key = pg_spool.extractions.key(b"x = 3", "text", "1")
    making, finish = threading.Event(), threading.Event()

    def slow() -> dict[str, int]:
        making.set()
        finish.wait(30)
        return {"n": 0}

    with pg.fresh_schema() as url:
        other = open_spool(url, create=True)
        held = threading.Thread(target=other.extractions.get_or_make, args=(key, slow))
        held.start()
        try:
            assert making.wait(10)
            mine = threading.Thread(
                target=pg_spool.extractions.get_or_make, args=(key, lambda: {"n": 3})
            )
            mine.start()
            mine.join(10)
            assert not mine.is_alive(), "waited for the other spool's making of the same key"
        finally:
            finish.set()
            held.join(30)
            other.disconnect()  # type: ignore[attr-defined]
    assert pg_spool.extractions.load(pg_spool.extractions.reference(key)) == {"n": 3}


def test_events_are_written_with_their_commit(pg_spool: PgSpool) -> None:
    pg_spool.add([riddle("a")])
    (claim,) = pg_spool.claim(Queue.INCOMING)
    with (
        pytest.raises(ClaimLost),
        pg_spool.events.committing([{"id": "a", "n": 1}], lambda event: False),
    ):
        pg_spool.release(claim)  # then commits what it no longer holds
        claim.open = True
        pg_spool.commit(claim, claim.riddle, Queue.DONE)
    assert list(pg_spool.events.read()) == []  # refused: neither the move nor its event
    (claim,) = pg_spool.claim(Queue.INCOMING)
    with pg_spool.events.committing([{"id": "a", "n": 2}], lambda event: False):
        pg_spool.commit(claim, claim.riddle, Queue.DONE)
    assert [e["n"] for e in pg_spool.events.read()] == [2]
    assert pg_spool.events.recover(lambda event: True) == 0


def test_time_of_a_claim_does_not_depend_on_a_slow_listener(pg_spool: PgSpool) -> None:
    # The listening connection is its own: claims and commits never wait for it.
    wake = threading.Event()
    watching = pg_spool.watch([Queue.INCOMING], wake)
    try:
        pg_spool.add([riddle(f"r{n}") for n in range(20)])
        started = time.monotonic()
        while claims := pg_spool.claim(Queue.INCOMING, limit=5):
            pg_spool.commit_many([(c, c.riddle, Queue.DONE) for c in claims])
        assert pg_spool.counts()[Queue.DONE] == 20
        assert time.monotonic() - started < 30
    finally:
        watching.stop()


PROBE = """
import json, os, sys
doc = json.load(sys.stdin)
spool, data = os.environ["RIDDLE_SPOOL"], os.environ["RIDDLE_DATA"]
seen = {
    "data": open(os.path.join(data, "example", "x.txt")).read(),
    "extracted": json.load(open(os.path.join(spool, doc["data"][0]["file_extracted"]))),
    "url": os.environ["RIDDLE_SPOOL_URL"],
}
json.dump(seen, open(sys.argv[1], "w"))
print("{}")
"""


def test_agents_elsewhere_need_no_copy_of_the_data_directory(pg_cli: Cli, tmp_path: Path) -> None:
    submitted = pg_cli("submit", "-", input=orjson.dumps(example_doc(id="ex")))
    assert submitted.code == 0, submitted.err
    elsewhere = Cli(pg_cli.spool, tmp_path / "empty-data")  # another host: no data files
    (tmp_path / "empty-data").mkdir()
    (tmp_path / "probe.py").write_text(PROBE)
    seen = tmp_path / "seen.json"
    probe = f"cmd:{sys.executable} {tmp_path / 'probe.py'} {seen}"
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    (scratch / "riddlectl-data-999999999-left").mkdir()  # left by a process killed with -9
    ran = elsewhere(
        "run",
        "--once",
        "--handler",
        f"solve={probe}",
        "--handler",
        "solve=calculator",
        env={"TMPDIR": str(scratch)},
    )
    assert ran.code == 0, ran.err
    assert elsewhere("result", "ex").out == "150\n"
    found = orjson.loads(seen.read_bytes())
    assert found["data"] == (pg_cli.data / "example" / "x.txt").read_text()
    assert found["extracted"]["source"] == "example/x.txt"  # a local copy of the extraction
    assert found["url"] == str(pg_cli.spool)  # the URL (it holds no password here)
    assert list(scratch.iterdir()) == []  # local copies removed after each call, and those
    # of a dead process before the first


def test_purge_takes_old_events_and_the_data_files_no_riddle_names_any_more(pg_cli: Cli) -> None:
    docs = [example_doc(id=f"r{n}", status={"extract": {"required": False}}) for n in (1, 2)]
    assert pg_cli("submit", "-", input=orjson.dumps(docs)).code == 0
    schema = str(pg_cli.spool).rsplit("schema=", 1)[1]

    def blobs() -> int:
        with psycopg.connect(pg.require()) as conn:
            row = conn.execute(f'SELECT count(*) FROM "{schema}".blobs').fetchone()
            return int(row[0]) if row else -1

    assert blobs() == 3  # x, y, z: stored once for both riddles
    assert pg_cli("cancel", "r1").code == 0
    assert pg_cli("purge", "--older-than", "0", "--failed").out == "r1\n"
    assert blobs() == 3  # r2 still names them
    assert pg_cli("cancel", "r2").code == 0
    assert pg_cli("purge", "--older-than", "0").code == 0
    assert blobs() == 0
    # The events logged before the cut go too: what is left is the last purge's.
    stages = [orjson.loads(line)["stage"] for line in pg_cli("events").out.splitlines()]
    assert stages == ["purge"]


@pytest.mark.postgres
def test_the_urls_own_connection_parameters_win_over_riddlectls(pg_url: str) -> None:
    url = f"{pg_url}&application_name=mytag&options=-c%20statement_timeout%3D2000&connect_timeout=3"
    spool = open_spool(url, create=True)
    assert isinstance(spool, PgSpool)
    try:
        with spool.db.session() as conn:
            row = conn.execute("SELECT pg_backend_pid(), current_setting('search_path')").fetchone()
            timeout = conn.execute("SHOW statement_timeout").fetchone()
        assert row is not None and timeout == ("2s",)
        assert spool.url.schema in row[1]  # riddlectl's own schema is still first
        with psycopg.connect(pg.require(), autocommit=True) as admin:
            seen = admin.execute(
                "SELECT application_name FROM pg_stat_activity WHERE pid = %s", (row[0],)
            ).fetchone()
        assert seen == ("mytag",)
        spool.add([riddle("p")])  # and the spool works as ever
        assert spool.find("p")[0] is Queue.INCOMING
    finally:
        spool.disconnect()


def test_drop_ins_are_found_by_id_whether_dropped_before_or_after_migration_5(
    pg_spool: PgSpool, pg_url: str
) -> None:
    """Since migration 5 a drop-in's id is stored beside it (`rid`) and found by an index;
    one dropped in by older code (no `rid`) is found by its name or content, as then."""
    pg_spool.drop_ins(
        Queue.INCOMING,
        [
            ("named.json", orjson.dumps(example_doc())),
            ("other.json", orjson.dumps(example_doc(id="own-id"))),
            ("older.json", orjson.dumps(example_doc(id="from-before"))),
            ("broken.json", b"{not yet"),
        ],
    )
    schema = pg_url.rsplit("schema=", 1)[1]
    with psycopg.connect(pg.require(), autocommit=True) as conn:
        conn.execute(f"UPDATE \"{schema}\".dropins SET rid = NULL WHERE name = 'older.json'")
        rids = dict(conn.execute(f'SELECT name, rid FROM "{schema}".dropins').fetchall())
    assert rids == {"named.json": "named", "other.json": "own-id", "older.json": None,
                    "broken.json": None}  # fmt: skip
    for riddle_id in ("named", "own-id", "from-before"):
        found = pg_spool.find(riddle_id)
        assert found is not None and found[1].id == riddle_id, riddle_id
    assert pg_spool.find("other") is None  # its own id wins over its name
    assert pg_spool.find("broken") is None
