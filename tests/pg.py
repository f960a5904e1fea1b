"""The PostgreSQL server the tests use, and a schema of its own for each test.

The server is `RIDDLECTL_TEST_PG` (a libpq URL), else the local one at `DEFAULT` when it
answers, else a throwaway server this test run starts (initdb into a temporary
directory, listening on a Unix socket there alone, stopped when the run ends) where
PostgreSQL's server is installed. Without any, PostgreSQL tests are skipped, except
under `CI=true`, where a missing server is a failure: a green CI run must have run them.
`RIDDLECTL_TEST_PG=off` (set by `scripts/test --fast`) makes any use of PostgreSQL a
failure that names the marker: a test of the fast tier that reached for the server
without being marked `postgres` would otherwise pass on a machine that has one.
"""

from __future__ import annotations

import atexit
import contextlib
import functools
import os
import pwd
import shutil
import signal
import subprocess
import tempfile
import time
import uuid
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest

ENV = "RIDDLECTL_TEST_PG"
DEFAULT = "postgresql://postgres@127.0.0.1:5432/postgres"
# Read at import: the tests' own fixture clears RIDDLECTL_* variables before each test.
CONFIGURED = os.environ.get(ENV)
IN_CI = os.environ.get("CI") == "true"
OFF = CONFIGURED == "off"


def own_server(name: str) -> pytest.MarkDecorator:
    """Marks tests that use only servers they start themselves, never the shared one: they
    run beside its tests (which keep to one worker, as some end other sessions on it), the
    tests of one `name` on one worker, where they share a server per module."""
    return pytest.mark.xdist_group(f"own-server-{name}")


def refuse_when_off() -> None:
    if OFF:
        pytest.fail(
            f"this run uses no PostgreSQL ({ENV}=off): a test that needs the server must be "
            "marked `postgres` (tests/conftest.py marks those using the pg_* fixtures)",
            pytrace=False,
        )


def answers(url: str) -> bool:
    try:
        import psycopg
    except ImportError:
        return False
    try:
        psycopg.connect(url, connect_timeout=3).close()
    except psycopg.Error:
        return False
    return True


@functools.cache
def server() -> str | None:
    """The server's URL when one answers, else None."""
    if CONFIGURED:
        return CONFIGURED if answers(CONFIGURED) else None
    if answers(DEFAULT):
        return DEFAULT
    return throwaway()


def binary(tool: str) -> str | None:
    found = shutil.which(tool)
    if found:
        return found
    installed = sorted(Path("/usr/lib/postgresql").glob(f"*/bin/{tool}"))
    return str(installed[-1]) if installed else None


def as_postgres() -> list[str] | None:
    """How to run the server here: as root, by becoming the `postgres` user (setpriv
    execs, so signals reach the server); as anyone else, as oneself."""
    if os.geteuid() != 0:
        return []
    try:
        user = pwd.getpwnam("postgres")
    except KeyError:
        return None
    if shutil.which("setpriv") is None:
        return None
    return ["setpriv", f"--reuid={user.pw_uid}", f"--regid={user.pw_gid}", "--clear-groups"]


def start(
    home: Path, options: list[str], prefix: Sequence[str] = (), hba: str | None = None
) -> subprocess.Popen[bytes]:
    """initdb into `home/data` (trust; with `hba`, for that address's /24 over TCP too)
    and start the server with `options`, after `prefix` (`ip netns exec NS`)."""
    refuse_when_off()
    become = as_postgres()
    initdb, postgres = binary("initdb"), binary("postgres")
    assert become is not None and initdb and postgres
    data = home / "data"
    data.mkdir()
    if os.geteuid() == 0:
        user = pwd.getpwnam("postgres")
        for path in (home, data):
            os.chown(path, user.pw_uid, user.pw_gid)
    subprocess.run(
        [*become, initdb, "-D", str(data), "--auth=trust", "-U", "postgres"],
        check=True,
        capture_output=True,
        timeout=120,
    )
    if hba is not None:
        with open(data / "pg_hba.conf", "a") as rules:
            rules.write(f"host all all {hba.rsplit('.', 1)[0]}.0/24 trust\n")
    return subprocess.Popen(
        [*prefix, *become, postgres, "-D", str(data), "-cfsync=off", *options],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


def stop(proc: subprocess.Popen[bytes], home: Path) -> None:
    proc.send_signal(signal.SIGINT)  # a fast shutdown
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(timeout=20)
    if proc.poll() is None:
        proc.kill()
    shutil.rmtree(home, ignore_errors=True)


def throwaway() -> str | None:
    """A server of this test run's own, on a Unix socket; None when none can be made."""
    if as_postgres() is None or not binary("initdb") or not binary("postgres"):
        return None
    home = Path(tempfile.mkdtemp(prefix="riddlectl-pg-"))
    home.chmod(0o755)
    proc = start(home, ["-clisten_addresses=", f"-cunix_socket_directories={home}"])
    atexit.register(stop, proc, home)
    url = f"postgresql://postgres@/postgres?host={home}"
    deadline = time.monotonic() + 30
    while not answers(url):
        if time.monotonic() > deadline or proc.poll() is not None:
            return None
        time.sleep(0.2)
    return url


def require() -> str:
    refuse_when_off()
    url = server()
    if url is None:
        why = f"no PostgreSQL server (set {ENV}, run one at {DEFAULT}, or install one)"
        if IN_CI:
            pytest.fail(why)
        pytest.skip(why)
    return url


def with_schema(url: str, schema: str) -> str:
    return f"{url}{'&' if '?' in url else '?'}schema={schema}"


def without_schema(url: str) -> str:
    """The URL for psycopg: riddlectl's own `schema` parameter taken out."""
    from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

    parts = urlsplit(url)
    query = urlencode([(k, v) for k, v in parse_qsl(parts.query) if k != "schema"])
    return urlunsplit((parts.scheme, parts.netloc, parts.path, query, ""))


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
