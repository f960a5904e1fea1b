"""A database that refuses, as a user meets it: every command on a PostgreSQL spool
through a role that may only read, a role without rights on the schema, a server that is
down and one that is starting up. One-shot commands say so in one line and exit 5; the
web API answers 503 in its JSON error format; long-running agents wait, say so once, and
go on once the server answers. Nothing shows a traceback.

The roles live on the shared server (unique names, dropped after); the server that is
stopped and started is a throwaway one of this module's own (initdb, a Unix socket), so
the shared server is never stopped.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import tempfile
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import orjson
import psycopg
import pytest

from tests import pg
from tests.conftest import Cli, example_doc
from tests.pgserver import Throwaway
from tests.web.conftest import start as serve

pytestmark = pytest.mark.postgres

ROOT = Path(__file__).resolve().parents[2]
SUBMIT = orjson.dumps(example_doc(id="fresh")).decode()

# Every command that is not an agent, with arguments that would work on a usable spool:
# `a` is done, `b` waits in incoming, `c` is held.
ONE_SHOT: dict[str, tuple[str, ...]] = {
    "init": ("init",),
    "submit": ("submit", "-"),
    "status": ("status",),
    "status-id": ("status", "b"),
    "show": ("show", "a"),
    "result": ("result", "a"),
    "retry": ("retry", "a"),
    "hold": ("hold", "b"),
    "release": ("release", "c"),
    "cancel": ("cancel", "b"),
    "purge": ("purge", "--done", "--older-than", "1s"),
    "cache-clear": ("cache", "clear"),
    "events": ("events",),
    "doctor": ("doctor",),
    "metrics": ("metrics",),
    "run-once": ("run", "--once"),
    "agent-once": ("agent", "extract", "--once"),
    "agents": ("agents",),
    "corrupt-list": ("corrupt", "list"),
    "ingest": ("ingest", "inbox"),
    "copy": ("copy", "--to", "copied"),
}
# What a role that may only read is still allowed to do (a copy reads its source only).
READS = {
    "status",
    "status-id",
    "show",
    "result",
    "events",
    "metrics",
    "doctor",
    "agents",
    "corrupt-list",
    "copy",
}


def refused_in_one_line(done: object) -> str:
    """The stderr line of a command that was refused because the spool cannot be used."""
    code, err = done.code, done.err  # type: ignore[attr-defined]
    assert code == 5, (code, err)
    assert err.count("\n") == 1 and err.startswith("riddlectl: "), err
    assert "the spool cannot be used" in err, err
    assert "Traceback" not in err and "internal error" not in err, err
    return str(err)


def run_one_shot(cli: Cli, name: str) -> object:
    if name == "ingest":  # a directory holding one riddle, in the test's own directory
        Path("inbox").mkdir()
        Path("inbox/fresh.json").write_text(SUBMIT)
    return cli(*ONE_SHOT[name], input=SUBMIT if name == "submit" else None, timeout=90)


def as_role(url: str, role: str) -> str:
    return url.replace("postgres@", f"{role}@", 1)


def seed(cli: Cli) -> None:
    """`a` done, `b` in incoming, `c` held."""
    assert cli("submit", "-", input=orjson.dumps(example_doc(id="a"))).code == 0
    ran = cli("run", "--once", timeout=120)
    assert ran.code == 0, ran.err
    for riddle_id in ("b", "c"):
        assert cli("submit", "-", input=orjson.dumps(example_doc(id=riddle_id))).code == 0
    assert cli("hold", "c").code == 0


def data_copy(base: Path) -> Path:
    data = base / "share"
    shutil.copytree(ROOT / "data" / "share", data)
    return data


# -- roles on the shared server ---------------------------------------------------------------


class Roles:
    def __init__(self, url: str, admin: str, suffix: str) -> None:
        self.url, self.admin = url, admin
        self.reader, self.stranger, self.frozen = (
            f"ro_{suffix}",
            f"none_{suffix}",
            f"frozen_{suffix}",
        )

    def cli(self, role: str, data: Path) -> Cli:
        return Cli(as_role(self.url, role), data)


@pytest.fixture(scope="module")
def roles(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Roles, Path]]:
    admin = pg.require()
    suffix = uuid.uuid4().hex[:10]
    schema = f"t_{suffix}"
    url = pg.with_schema(admin, schema)
    data = data_copy(tmp_path_factory.mktemp("faults"))
    made = Roles(url, admin, suffix)
    owner = Cli(url, data)
    assert owner("init").code == 0
    seed(owner)
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'CREATE ROLE "{made.reader}" LOGIN')
        conn.execute(f'GRANT USAGE ON SCHEMA "{schema}" TO "{made.reader}"')
        conn.execute(f'GRANT SELECT ON ALL TABLES IN SCHEMA "{schema}" TO "{made.reader}"')
        conn.execute(f'CREATE ROLE "{made.stranger}" LOGIN')
        # May do everything, on a server that says every transaction is read-only (what a
        # hot standby says too).
        conn.execute(f'CREATE ROLE "{made.frozen}" LOGIN')
        conn.execute(f'GRANT ALL ON SCHEMA "{schema}" TO "{made.frozen}"')
        conn.execute(f'GRANT ALL ON ALL TABLES IN SCHEMA "{schema}" TO "{made.frozen}"')
        conn.execute(f'GRANT ALL ON ALL SEQUENCES IN SCHEMA "{schema}" TO "{made.frozen}"')
        conn.execute(f'ALTER ROLE "{made.frozen}" SET default_transaction_read_only = on')
    try:
        yield made, data
    finally:
        with psycopg.connect(admin, autocommit=True) as conn:
            conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')
            for role in (made.reader, made.stranger, made.frozen):
                conn.execute(
                    "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = %s",
                    (role,),
                )
                with contextlib.suppress(psycopg.Error):
                    conn.execute(f'DROP OWNED BY "{role}"')
                conn.execute(f'DROP ROLE IF EXISTS "{role}"')


@pytest.mark.parametrize("name", sorted(ONE_SHOT))
@pytest.mark.parametrize("who", ["reader", "stranger"])
def test_a_role_without_rights_is_told_in_one_line(
    roles: tuple[Roles, Path], who: str, name: str
) -> None:
    made, data = roles
    role = made.reader if who == "reader" else made.stranger
    done = run_one_shot(made.cli(role, data), name)
    if who == "reader" and name in READS:
        # doctor exits 1 on a problem it finds in the spool (and only warns of the server).
        ran = (0, 1) if name == "doctor" else (0,)
        assert done.code in (*ran, 5), (done.code, done.err)  # type: ignore[attr-defined]
        if done.code in ran:  # type: ignore[attr-defined]
            assert "Traceback" not in done.err and "internal" not in done.err  # type: ignore[attr-defined]
            return
    line = refused_in_one_line(done)
    if name not in ("init",):
        assert "permission denied" in line and f"(role {role})" in line, line


@contextlib.contextmanager
def a_role(admin: str, schema: str, reads: bool) -> Iterator[str]:
    """A role of this test's own: with `reads`, one that may only read the spool's
    tables; else one without rights on the schema. Dropped after."""
    role = f"late_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'CREATE ROLE "{role}" LOGIN')
        if reads:
            conn.execute(f'GRANT USAGE ON SCHEMA "{schema}" TO "{role}"')
            conn.execute(f'GRANT SELECT ON ALL TABLES IN SCHEMA "{schema}" TO "{role}"')
    try:
        yield role
    finally:
        with psycopg.connect(admin, autocommit=True) as conn:
            conn.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = %s",
                (role,),
            )
            conn.execute(f'DROP OWNED BY "{role}"')
            conn.execute(f'DROP ROLE "{role}"')


def grant_all(admin: str, schema: str, role: str) -> None:
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'GRANT USAGE ON SCHEMA "{schema}" TO "{role}"')
        conn.execute(f'GRANT ALL ON ALL TABLES IN SCHEMA "{schema}" TO "{role}"')
        conn.execute(f'GRANT ALL ON ALL SEQUENCES IN SCHEMA "{schema}" TO "{role}"')
        conn.execute(f'GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA "{schema}" TO "{role}"')


@pytest.mark.parametrize("reads", [False, True], ids=["no-rights", "reads-only"])
def test_an_agent_whose_role_lacks_rights_waits_until_they_are_granted(
    roles: tuple[Roles, Path], reads: bool
) -> None:
    """Without rights on the schema it waits before it starts; with reading rights
    alone it starts, and waits at its first claim. Granted the rights, it goes on."""
    made, data = roles
    schema = made.url.rsplit("schema=", 1)[1]
    with a_role(made.admin, schema, reads) as role:
        cli = made.cli(role, data)
        agent = cli.popen("agent", "extract")
        try:
            waiting = read_line(agent)
            assert "permission denied" in waiting and f"(role {role})" in waiting, waiting
            grant_all(made.admin, schema, role)
            going = read_line(agent)
            assert "can be used again" in going, going
            submitted_and_handled(Cli(made.url, data), "granted", "extract")
        finally:
            agent.send_signal(signal.SIGTERM)
            _, rest = agent.communicate(timeout=60)
    assert b"Traceback" not in rest and b"agent error" not in rest, rest.decode()


def test_a_read_only_server_is_named(roles: tuple[Roles, Path]) -> None:
    made, data = roles
    done = made.cli(made.frozen, data)("submit", "-", input=SUBMIT)
    line = refused_in_one_line(done)
    assert "read-only" in line, line


@pytest.mark.parametrize("who", ["reader", "stranger"])
def test_the_api_of_a_role_without_rights_answers_503(roles: tuple[Roles, Path], who: str) -> None:
    made, data = roles
    cli = made.cli(made.reader if who == "reader" else made.stranger, data)
    try:
        server = serve(cli)
    except AssertionError as refused:  # serve that cannot use the spool says so at start
        assert "the spool cannot be used" in str(refused) and "Traceback" not in str(refused)
        return
    try:
        with server.client() as http:
            made_one = http.post("/api/submit", json=orjson.loads(SUBMIT))
            assert made_one.status_code == 503, made_one.text
            body = made_one.json()
            assert set(body) == {"error", "where", "field"}
            assert "permission denied" in body["error"]
    finally:
        server.stop()
    log = b"".join(server.proc.stderr.readlines()) if server.proc.stderr else b""
    assert b"Traceback" not in log, log.decode()


def test_a_statement_timeout_and_a_lock_timeout_are_told_in_one_line(
    roles: tuple[Roles, Path],
) -> None:
    """Both given in the URL (they pass through), while another session holds a lock
    on the riddles."""
    made, data = roles
    schema = made.url.rsplit("schema=", 1)[1]
    with psycopg.connect(made.admin) as locker:
        locker.execute(f'LOCK TABLE "{schema}".riddles IN ACCESS EXCLUSIVE MODE')
        for setting, said in (
            ("statement_timeout", "statement timeout"),
            ("lock_timeout", "lock timeout"),
        ):
            url = f"{made.url}&options=-c%20{setting}%3D300"
            done = Cli(url, data)("status", "b", timeout=60)
            line = refused_in_one_line(done)
            assert said in line, line
        locker.rollback()


def test_an_administrator_ending_the_session_is_told_in_one_line(
    roles: tuple[Roles, Path],
) -> None:
    made, data = roles
    schema = made.url.rsplit("schema=", 1)[1]
    with psycopg.connect(made.admin) as locker:
        locker.execute(f'LOCK TABLE "{schema}".riddles IN ACCESS EXCLUSIVE MODE')
        waiting = Cli(made.url, data).popen("show", "b")
        with psycopg.connect(made.admin, autocommit=True) as admin:
            deadline = time.monotonic() + 30
            ended: list[tuple[object, ...]] = []
            while not ended and time.monotonic() < deadline:
                # Only the session this test's lock holds up: tests on other workers
                # wait on locks of their own on the same server.
                ended = admin.execute(
                    "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                    "WHERE %s = ANY(pg_blocking_pids(pid)) "
                    "AND application_name LIKE 'riddlectl %%'",
                    (locker.info.backend_pid,),
                ).fetchall()
                time.sleep(0.05)
            assert ended
        _, err = waiting.communicate(timeout=60)
        locker.rollback()
    assert waiting.returncode == 5, err
    text = err.decode()
    assert text.count("\n") == 1 and "administrator command" in text, text


# -- a throwaway server, down and starting up -------------------------------------------------


OWN_SERVER = pg.own_server("faults")


@pytest.fixture(scope="module")
def throwaway() -> Iterator[tuple[Throwaway, Cli]]:
    if pg.as_postgres() is None or not pg.binary("initdb") or not pg.binary("pg_ctl"):
        pytest.skip("needs PostgreSQL's server (initdb, postgres, pg_ctl) and a postgres user")
    home = Path(tempfile.mkdtemp(prefix="riddlectl-faults-"))
    home.chmod(0o755)
    server = Throwaway(home)
    try:
        server.first_start()
        cli = Cli(pg.with_schema(server.url, "faults"), data_copy(home))
        assert cli("init").code == 0
        seed(cli)
        yield server, cli
    finally:
        server.stop()
        shutil.rmtree(home, ignore_errors=True)


@pytest.fixture(scope="module", params=["down", "starting up", "hot standby"])
def unreachable(
    request: pytest.FixtureRequest, throwaway: tuple[Throwaway, Cli]
) -> tuple[Throwaway, Cli]:
    server, cli = throwaway
    if server.state != request.param:
        if request.param == "down":
            server.stop()
        else:
            server.start(
                starting_up=request.param == "starting up",
                standby=request.param == "hot standby",
            )
    return server, cli


@OWN_SERVER
@pytest.mark.parametrize("name", sorted(ONE_SHOT))
def test_a_server_down_starting_up_or_read_only_is_told_in_one_line(
    unreachable: tuple[Throwaway, Cli], name: str
) -> None:
    server, cli = unreachable
    done = run_one_shot(cli, name)
    if server.state == "hot standby" and name in READS:  # a standby answers reads
        assert done.code == 0, done.err  # type: ignore[attr-defined]
        return
    line = refused_in_one_line(done)
    if server.state == "hot standby":
        assert "read-only" in line, line


@OWN_SERVER
def test_serve_on_a_server_down_starting_up_or_read_only(
    unreachable: tuple[Throwaway, Cli],
) -> None:
    """Started while the server is down or starting up, `serve` says so in one line and
    exits 5; on a hot standby it serves, and a change answers 503 naming the read-only
    server."""
    server, cli = unreachable
    if server.state != "hot standby":
        done = cli("serve", "--port", "0", timeout=60)
        refused_in_one_line(done)
        return
    served = serve(cli)
    try:
        with served.client() as http:
            served.wait_for(lambda: http.get("/api/riddles").status_code == 200)
            made = http.post("/api/submit", json=orjson.loads(SUBMIT))
            assert made.status_code == 503, made.text
            assert set(made.json()) == {"error", "where", "field"}
            assert "read-only" in made.json()["error"]
            for action, riddle_id in (("cancel", "b"), ("hold", "b"), ("retry", "a")):
                acted = http.post(f"/api/{action}", json={"ids": [riddle_id]})
                assert acted.status_code == 503, (action, acted.text)
                assert "read-only" in acted.json()["error"], acted.text
    finally:
        served.stop()
    log = served.proc.stderr.read() if served.proc.stderr else b""
    assert b"Traceback" not in log, log.decode()


def read_line(proc: subprocess.Popen[bytes], timeout: float = 60) -> str:
    """The next line `proc` writes on stderr, past the agent's `started` line."""
    assert proc.stderr is not None
    os.set_blocking(proc.stderr.fileno(), True)
    deadline = time.monotonic() + timeout
    line = b""
    while not line.endswith(b"\n") or b" INFO started " in line:
        if line.endswith(b"\n"):
            line = b""
        assert time.monotonic() < deadline, f"no line in {timeout} s: {line!r}"
        line += proc.stderr.readline()
        if not line and proc.poll() is not None:
            raise AssertionError(f"exited {proc.returncode} without a line")
    return line.decode()


@OWN_SERVER
@pytest.mark.parametrize("how", ["down", "starting up"])
@pytest.mark.parametrize("command", [("agent", "extract"), ("run",)])
def test_a_long_running_agent_waits_for_the_server_then_goes_on(
    throwaway: tuple[Throwaway, Cli], how: str, command: tuple[str, ...]
) -> None:
    server, cli = throwaway
    if how == "down":
        server.stop()
    else:
        server.start(starting_up=True)
    agent = cli.popen(*command)
    try:
        waiting = read_line(agent)
        assert "the spool cannot be used" in waiting and "waiting" in waiting, waiting
        # It keeps trying meanwhile, quietly: after 0.5 s, then 1.5 s (when the server is
        # back, started now), 3.5 s… (see riddlectl.agent.supervisor.patiently).
        time.sleep(0.3)
        assert agent.poll() is None
        if how == "down":
            server.start()
        else:
            server.promote()
        connected = read_line(agent)
        assert "can be used again" in connected, connected
        stage = command[1] if command[0] == "agent" else "validate"
        submitted_and_handled(cli, "after", stage)
    finally:
        agent.send_signal(signal.SIGTERM)
        _, rest = agent.communicate(timeout=60)
    assert b"Traceback" not in rest and b"internal error" not in rest, rest.decode()
    assert rest.count(b"the spool cannot be used") == 0, rest.decode()  # said once, above


@OWN_SERVER
def test_an_agent_waiting_for_the_server_stops_at_sigterm(tmp_path: Path) -> None:
    nothing_there = Cli("postgresql://postgres@127.0.0.1:1/postgres", tmp_path)
    agent = nothing_there.popen("agent", "extract")
    try:
        assert "spool-waiting" in read_line(agent)
    finally:
        agent.send_signal(signal.SIGTERM)
        _, rest = agent.communicate(timeout=30)
    assert agent.returncode == 0, rest.decode()
    (stopped,) = rest.decode().splitlines()  # and nothing else
    assert "stopped" in stopped and 'why="signal SIGTERM before the spool answered"' in stopped


@OWN_SERVER
def test_a_running_agent_outlives_a_server_restart_saying_so_once(
    throwaway: tuple[Throwaway, Cli],
) -> None:
    server, cli = throwaway
    if server.state != "up":
        server.start()
    agent = cli.popen("agent", "extract")
    try:
        time.sleep(2)  # at work: connected, claiming now and then
        server.stop()
        lost = read_line(agent)
        assert "spool-waiting" in lost and "the spool cannot be used" in lost, lost
        assert 'retry="in ' in lost, lost
        time.sleep(2)  # a few tries meanwhile, quietly
        server.start()
        back = read_line(agent)
        assert "can be used again" in back, back
        submitted_and_handled(cli, "later", "extract")
    finally:
        agent.send_signal(signal.SIGTERM)
        _, rest = agent.communicate(timeout=60)
    assert b"Traceback" not in rest and b"agent error" not in rest, rest.decode()
    assert b"cannot be used" not in rest, rest.decode()  # said once, above


@OWN_SERVER
def test_a_full_disk_is_told_in_one_line_and_nothing_is_stored(
    throwaway: tuple[Throwaway, Cli], tmp_path: Path
) -> None:
    """The spool's tables in a tablespace on a tmpfs of 2 MiB (its place given in the
    URL's options), and riddles larger than that submitted at once."""
    server, cli = throwaway
    if server.state != "up":
        server.start()
    tiny = server.home / "tiny"
    tiny.mkdir()
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", str(tiny)], capture_output=True
    )
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {mounted.stderr.decode().strip()}")
    try:
        os.chown(tiny, server.data.stat().st_uid, server.data.stat().st_gid)
        with psycopg.connect(server.url, autocommit=True) as admin:
            admin.execute(f"CREATE TABLESPACE tiny LOCATION '{tiny}'")
        full = Cli(
            f"{pg.with_schema(server.url, 'full')}&options=-c%20default_tablespace%3Dtiny",
            cli.data,
        )
        assert full("init").code == 0
        docs = [
            {
                "id": f"big{n}",
                "riddle": {"question": "x * y =", "context": os.urandom(150_000).hex()},
            }
            for n in range(8)
        ]
        done = full("submit", "-", input="\n".join(orjson.dumps(d).decode() for d in docs))
        line = refused_in_one_line(done)
        assert "No space left on device" in line, line
        assert full("status", "big0").code == 3  # nothing of it was stored
    finally:
        with contextlib.suppress(psycopg.Error), psycopg.connect(server.url) as admin:
            admin.autocommit = True
            admin.execute('DROP SCHEMA IF EXISTS "full" CASCADE')
            admin.execute("DROP TABLESPACE IF EXISTS tiny")
        subprocess.run(["umount", str(tiny)], check=False)


def submitted_and_handled(cli: Cli, prefix: str, stage: str) -> None:
    """Submit a new riddle and wait (60 s at most) until `stage` is in its history: the
    agents running took it and went on."""
    riddle_id = f"{prefix}-{uuid.uuid4().hex[:6]}"
    assert cli("submit", "-", input=orjson.dumps(example_doc(id=riddle_id))).code == 0
    deadline = time.monotonic() + 60
    while not any(e.get("stage") == stage for e in history(cli, riddle_id)):
        assert time.monotonic() < deadline, cli("show", riddle_id).out
        time.sleep(0.2)


def history(cli: Cli, riddle_id: str) -> list[dict[str, object]]:
    shown = cli("show", riddle_id)
    assert shown.code == 0, shown.err
    doc = orjson.loads(shown.out)
    return list(doc.get("history") or [])


@OWN_SERVER
def test_a_down_server_under_serve_answers_503(throwaway: tuple[Throwaway, Cli]) -> None:
    server, cli = throwaway
    if server.state != "up":
        server.start()
    served = serve(cli)
    try:
        with served.client() as http:  # up: its index made from the spool
            served.wait_for(lambda: http.get("/api/riddles").status_code == 200)
        server.stop()
        with served.client() as http:
            made = http.post("/api/submit", json=orjson.loads(SUBMIT))
            assert made.status_code == 503, made.text
            assert set(made.json()) == {"error", "where", "field"}
            assert "the spool cannot be used" in made.json()["error"]
            listed = http.get("/api/riddles")
            assert listed.status_code in (200, 503), listed.text
    finally:
        served.stop()
        server.start()
    log = served.proc.stderr.read() if served.proc.stderr else b""
    assert served.proc.returncode in (0, -signal.SIGTERM), log.decode()
    assert b"Traceback" not in log, log.decode()
