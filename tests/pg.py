"""The PostgreSQL server the tests use, and a schema of its own for each test.

The server is `RIDDLECTL_TEST_PG` (a libpq URL), else the local one at `DEFAULT` when it
answers. Without one, PostgreSQL tests are skipped, except under `CI=true`, where a
missing server is a failure: a green CI run must have run them.
"""

from __future__ import annotations

import contextlib
import functools
import os
import uuid
from collections.abc import Iterator

import pytest

ENV = "RIDDLECTL_TEST_PG"
DEFAULT = "postgresql://postgres@127.0.0.1:5432/postgres"
# Read at import: the tests' own fixture clears RIDDLECTL_* variables before each test.
CONFIGURED = os.environ.get(ENV)
IN_CI = os.environ.get("CI") == "true"


@functools.cache
def server() -> str | None:
    """The server's URL when it answers, else None."""
    try:
        import psycopg
    except ImportError:
        return None
    url = CONFIGURED or DEFAULT
    try:
        psycopg.connect(url, connect_timeout=3).close()
    except psycopg.Error:
        return None
    return url


def require() -> str:
    url = server()
    if url is None:
        why = f"no PostgreSQL server (set {ENV}, or run one at {DEFAULT})"
        if IN_CI:
            pytest.fail(why)
        pytest.skip(why)
    return url


def with_schema(url: str, schema: str) -> str:
    return f"{url}{'&' if '?' in url else '?'}schema={schema}"


@contextlib.contextmanager
def fresh_schema() -> Iterator[str]:
    """A spool URL naming a schema no other test uses; the schema is dropped after."""
    import psycopg

    url = require()
    schema = f"t_{uuid.uuid4().hex[:16]}"
    try:
        yield with_schema(url, schema)
    finally:
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')
