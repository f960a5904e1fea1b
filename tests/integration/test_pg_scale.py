"""A PostgreSQL spool with many riddles: a bulk submit stored whole or not at all, and a
`doctor` that sees the database under it (autovacuum, dead rows, old transactions)."""

from __future__ import annotations

import contextlib
import math
import shutil
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest

from riddlectl.spool.postgres import health
from riddlectl.spool.postgres.schema import LATEST
from tests import pg
from tests.conftest import Cli, example_doc

pytestmark = pytest.mark.postgres

BULK = 10_000


def _schema(cli: Cli) -> str:
    return str(cli.spool).rsplit("schema=", 1)[1]


def _count(cli: Cli, table: str) -> int:
    with psycopg.connect(pg.without_schema(str(cli.spool))) as conn:
        row = conn.execute(f'SELECT count(*) FROM "{_schema(cli)}".{table}').fetchone()
        return int(row[0]) if row else -1


def _lines(docs: list[dict[str, object]]) -> bytes:
    import orjson

    return b"\n".join(orjson.dumps(doc) for doc in docs) + b"\n"


def test_a_bulk_submit_stores_every_riddle_with_its_data_files(pg_cli: Cli) -> None:
    done = pg_cli("submit", "-", input=_lines([example_doc() for _ in range(BULK)]), timeout=300)
    assert done.code == 0, done.err
    ids = done.out.split()
    assert len(ids) == len(set(ids)) == BULK
    assert _count(pg_cli, "riddles") == BULK
    assert _count(pg_cli, "riddle_data") == 3 * BULK  # x, y, z for each
    assert _count(pg_cli, "blobs") == 3  # each content once
    status = pg_cli("status", "--json")
    assert status.code == 0, status.err
    assert '"incoming": 10000' in status.out.replace(" ", "").replace(":", ": ")


def test_a_bulk_submit_with_one_bad_riddle_writes_nothing_and_names_it(pg_cli: Cli) -> None:
    docs = [example_doc() for _ in range(BULK)]
    docs[BULK // 2] = example_doc(riddle={"context": "", "question": "  "})
    done = pg_cli("submit", "-", input=_lines(docs), timeout=300)
    assert done.code != 0
    assert f"<stdin>:{BULK // 2 + 1}" in done.err, done.err
    assert "riddle.question" in done.err
    assert done.err.count("\n") == 1, done.err
    assert _count(pg_cli, "riddles") == 0
    assert _count(pg_cli, "blobs") == 0


# -- doctor on the database under the spool --------------------------------------------------


@contextlib.contextmanager
def _server(*options: str) -> Iterator[str]:
    """A throwaway server of the test's own (initdb, a Unix socket), with `options`."""
    if pg.as_postgres() is None or not pg.binary("initdb") or not pg.binary("postgres"):
        pytest.skip("needs PostgreSQL's server (initdb, postgres) and a postgres user")
    home = Path(tempfile.mkdtemp(prefix="riddlectl-health-"))
    home.chmod(0o755)
    proc = None
    try:
        proc = pg.start(
            home, ["-clisten_addresses=", f"-cunix_socket_directories={home}", *options]
        )
        url = f"postgresql://postgres@/postgres?host={home}"
        deadline = time.monotonic() + 60
        while not pg.answers(url):
            assert proc.poll() is None and time.monotonic() < deadline, "the server did not start"
            time.sleep(0.2)
        yield url
    finally:
        if proc is not None:
            pg.stop(proc, home)
        shutil.rmtree(home, ignore_errors=True)


OWN_SERVER = pg.own_server("health")


@pytest.fixture(scope="module")
def healthy_server() -> Iterator[str]:
    with _server() as url:
        yield url


def _doctor_cli(url: str, data_dir: Path) -> Cli:
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute('DROP SCHEMA IF EXISTS "spool" CASCADE')  # a module's server: one spool
    cli = Cli(pg.with_schema(url, "spool"), data_dir)
    assert cli("init").code == 0
    return cli


@OWN_SERVER
def test_doctor_is_quiet_on_a_healthy_database(healthy_server: str, data_dir: Path) -> None:
    cli = _doctor_cli(healthy_server, data_dir)
    done = cli("doctor")
    assert (done.code, done.out, done.err) == (0, "", "spool is healthy\n")
    shown = cli("doctor", "--json").json()
    assert isinstance(shown, dict) and shown["ok"] is True
    database = shown["database"]
    assert database["autovacuum"] is True and database["dead_rows"] == 0
    assert database["schema_version"] == database["schema_version_known"]
    assert database["connections"] >= 1 and database["max_connections"] > 0


@OWN_SERVER
def test_doctor_warns_when_autovacuum_is_off_for_the_server(data_dir: Path) -> None:
    """A server setting doctor cannot mend is a warning (exit 0: a scripted health check
    stays green for a sound spool); `--strict` makes it exit 1."""
    with _server("-cautovacuum=off") as url:
        cli = _doctor_cli(url, data_dir)
        done = cli("doctor")
        assert done.code == 0, done.err
        (line,) = done.out.splitlines()
        assert line.startswith("warn\tautovacuum\tserver\tautovacuum is off for the server")
        assert "autovacuum = on" in line  # what to do
        assert done.err == "spool is healthy; 1 warning(s) about its surroundings\n"
        strict = cli("doctor", "--strict")
        assert (strict.code, strict.out) == (1, done.out)
        shown = cli("doctor", "--json").json()
        assert isinstance(shown, dict) and shown["database"]["autovacuum"] is False
        assert (shown["ok"], shown["problems"], shown["warnings"]) == (True, 0, 1)
        assert [f["level"] for f in shown["findings"]] == ["warning"]
        assert cli("doctor", "--json", "--strict").json()["ok"] is False  # type: ignore[index]


@OWN_SERVER
def test_doctor_names_a_table_without_autovacuum_and_its_dead_rows(
    healthy_server: str, data_dir: Path
) -> None:
    cli = _doctor_cli(healthy_server, data_dir)
    assert cli("submit", "-", input=_lines([example_doc(id="e1")])).code == 0
    dead = health.DEAD_FLOOR + 2_000
    # Rows inserted and deleted by another application: dead until a vacuum takes them,
    # and none will (the table's autovacuum is off). The connection's end sends its
    # counts to the server's statistics.
    with psycopg.connect(healthy_server, autocommit=True) as conn:
        conn.execute('ALTER TABLE "spool".events SET (autovacuum_enabled = false)')
        conn.execute(
            'INSERT INTO "spool".events (at, body) SELECT 0, %s FROM generate_series(1, %s)',
            ("{}", dead),
        )
        conn.execute('DELETE FROM "spool".events WHERE at = 0')
    done = cli("doctor")
    assert done.code == 0, done.err
    lines = sorted(done.out.splitlines())
    assert len(lines) == 2, lines
    assert lines[0].startswith("warn\tautovacuum\tspool.events\tautovacuum is off for the table")
    assert "RESET (autovacuum_enabled)" in lines[0]  # what to do
    assert lines[1].startswith(f"warn\tdead-rows\tspool.events\t{dead} dead rows beside ")
    assert cli("doctor", "--strict").code == 1
    assert 'run VACUUM "spool".events' in lines[1]
    tables = cli("doctor", "--json").json()["database"]["tables"]  # type: ignore[index]
    assert tables["events"]["dead_rows"] == dead and tables["events"]["autovacuum"] is False


@OWN_SERVER
def test_doctor_warns_when_the_connections_near_the_servers_limit(
    healthy_server: str, data_dir: Path
) -> None:
    cli = _doctor_cli(healthy_server, data_dir)
    with psycopg.connect(healthy_server) as conn:
        allowed = conn.execute(health.CONNECTIONS).fetchone()[1]  # type: ignore[index]
    near = math.ceil(health.CONNECTIONS_NEAR * allowed)
    held = [psycopg.connect(healthy_server, application_name="pool") for _ in range(near)]
    try:
        done = cli("doctor")
    finally:
        for conn in held:
            conn.close()
    assert done.code == 0, done.err
    (line,) = done.out.splitlines()
    assert line.startswith("warn\tconnections\tserver\t"), line
    assert f"of {allowed} connections in use" in line and "connection pooler" in line
    assert cli("doctor", "--strict").code == 0  # closed: quiet again


@OWN_SERVER
def test_doctor_names_a_transaction_held_open(healthy_server: str, data_dir: Path) -> None:
    cli = _doctor_cli(healthy_server, data_dir)
    with psycopg.connect(healthy_server, application_name="forgot-to-commit") as held:
        held.execute("SELECT txid_current()")  # a transaction with an id, left open
        time.sleep(health.IDLE_IN_TRANSACTION + 1)
        done = cli("doctor")
        assert done.code == 0, done.err
        (line,) = done.out.splitlines()
        assert line.startswith("warn\told-transaction\tpid ")
        assert cli("doctor", "--strict").code == 1
        assert "forgot-to-commit has held a transaction open for" in line
        assert "pg_terminate_backend" in line
        oldest = cli("doctor", "--json").json()["database"]["oldest_transaction"]  # type: ignore[index]
        assert oldest["application"] == "forgot-to-commit" and oldest["age"] >= 10
    assert cli("doctor", "--strict").code == 0  # ended: quiet again


@OWN_SERVER
def test_metrics_show_dead_rows_and_the_oldest_transaction(
    healthy_server: str, data_dir: Path
) -> None:
    cli = _doctor_cli(healthy_server, data_dir)
    assert cli("submit", "-", input=_lines([example_doc(id="m1")])).code == 0
    assert cli("cancel", "m1").code == 0  # an update: one dead row, until vacuumed
    with psycopg.connect(healthy_server, application_name="held") as held:
        held.execute("SELECT txid_current()")
        time.sleep(1.1)
        text = cli("metrics").out
    assert "# TYPE riddlectl_dead_rows gauge" in text
    assert 'riddlectl_dead_rows{table="riddles"} ' in text
    assert 'riddlectl_dead_rows{table="events"} ' in text
    (age,) = [
        line
        for line in text.splitlines()
        if line.startswith("riddlectl_oldest_transaction_seconds ")
    ]
    assert float(age.split()[1]) >= 1.0


@OWN_SERVER
def test_doctor_warns_of_a_schema_older_than_the_code(healthy_server: str, data_dir: Path) -> None:
    pg_cli = _doctor_cli(healthy_server, data_dir)
    with psycopg.connect(pg.without_schema(str(pg_cli.spool)), autocommit=True) as conn:
        conn.execute(
            f'DELETE FROM "{_schema(pg_cli)}".schema_version WHERE version = %s', (LATEST,)
        )
    done = pg_cli("doctor")
    assert done.code == 1, done.err
    (line,) = done.out.splitlines()
    assert line.startswith("found\told-schema\t")  # a problem of the spool: exit 1
    assert f"version {LATEST - 1}" in line and "run riddlectl init to migrate it" in line
    shown = pg_cli("doctor", "--json").json()
    assert isinstance(shown, dict) and shown["ok"] is False
    assert [f["kind"] for f in shown["findings"]] == ["old-schema"]
    refused = pg_cli("status")  # the other commands refuse it, as before
    assert refused.code != 0 and "run riddlectl init to migrate it" in refused.err
    with psycopg.connect(pg.without_schema(str(pg_cli.spool)), autocommit=True) as conn:
        conn.execute(f'INSERT INTO "{_schema(pg_cli)}".schema_version VALUES (%s)', (LATEST,))
    assert pg_cli("doctor").code == 0  # as `init` would have left it
