"""A PostgreSQL spool with many riddles: a bulk submit stored whole or not at all, and a
`doctor` that sees the database under it (autovacuum, dead rows, old transactions)."""

from __future__ import annotations

import psycopg
import pytest

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
