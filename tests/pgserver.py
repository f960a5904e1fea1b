"""A PostgreSQL server of a test module's own, and the faults it can be put through.

The shared server is never stopped, made read-only or filled up: other tests (and other
people) use it. A `Throwaway` runs initdb into a temporary directory and listens on a
Unix socket there alone; `SPELLS` are the faults a database spool meets in service, each
for a given number of seconds, after which the server is as it was.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import psycopg

from tests import pg


class Throwaway:
    """A server on a Unix socket, to stop, start as a standby that is still starting up,
    promote, or start again."""

    def __init__(self, home: Path) -> None:
        self.home = home
        self.data = home / "data"
        self.proc: subprocess.Popen[bytes] | None = None
        self.url = f"postgresql://postgres@/postgres?host={home}"
        self.state = "up"

    def first_start(self) -> None:
        self.proc = pg.start(self.home, self._options())
        self._wait_until_answering()

    def _options(self) -> list[str]:
        return ["-clisten_addresses=", f"-cunix_socket_directories={self.home}"]

    def _wait_until_answering(self) -> None:
        deadline = time.monotonic() + 60
        while not pg.answers(self.url):
            assert self.proc is not None and self.proc.poll() is None, "the server died"
            assert time.monotonic() < deadline, "the server did not start"
            time.sleep(0.1)

    def stop(self, immediate: bool = False) -> None:
        """A fast shutdown; `immediate`: as a crash (no checkpoint, recovery at start)."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGQUIT if immediate else signal.SIGINT)
            self.proc.wait(timeout=60)
        self.state = "down"

    def start(self, starting_up: bool = False, standby: bool = False) -> None:
        """Start again; `starting_up`: as a standby that lets no one in (no hot standby,
        no primary to follow), until `promote`; `standby`: as a hot standby, which
        answers reads and refuses writes."""
        self.stop()
        signal_file = self.data / "standby.signal"
        if starting_up or standby:
            signal_file.touch()
            os.chown(signal_file, self.data.stat().st_uid, self.data.stat().st_gid)
        else:
            signal_file.unlink(missing_ok=True)
        postgres = pg.binary("postgres")
        become = pg.as_postgres()
        assert postgres and become is not None
        options = [*self._options(), "-chot_standby=off"] if starting_up else self._options()
        self.proc = subprocess.Popen(
            [*become, postgres, "-D", str(self.data), "-cfsync=off", *options],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        if starting_up:
            self._wait_until_refusing()
            self.state = "starting up"
        else:
            self._wait_until_answering()
            self.state = "hot standby" if standby else "up"

    def _wait_until_refusing(self) -> None:
        deadline = time.monotonic() + 60
        while True:
            try:
                psycopg.connect(self.url, connect_timeout=3).close()
            except psycopg.OperationalError as exc:  # 57P03, not told on a connect
                if "not accepting connections" in str(exc) or "starting up" in str(exc):
                    return
            assert time.monotonic() < deadline, "the server did not come to starting up"
            time.sleep(0.1)

    def promote(self) -> None:
        pg_ctl, become = pg.binary("pg_ctl"), pg.as_postgres()
        assert pg_ctl and become is not None
        subprocess.run(
            [*become, pg_ctl, "promote", "-D", str(self.data)], check=True, capture_output=True
        )
        self._wait_until_answering()
        self.state = "up"

    @contextlib.contextmanager
    def admin(self) -> Iterator[psycopg.Connection[tuple[object, ...]]]:
        """A superuser session that writes whatever the server's defaults say, with no
        statement timeout."""
        with psycopg.connect(self.url, autocommit=True) as conn:
            conn.execute("SET default_transaction_read_only = off")
            conn.execute("SET statement_timeout = 0")
            yield conn

    def configure(self, setting: str, value: str | None) -> None:
        """`ALTER SYSTEM` and a reload: every session takes it at its next statement
        (None: back to the default)."""
        with self.admin() as conn:
            if value is None:
                conn.execute(f"ALTER SYSTEM RESET {setting}")
            else:
                conn.execute(f"ALTER SYSTEM SET {setting} = '{value}'")
            conn.execute("SELECT pg_reload_conf()")


@contextlib.contextmanager
def throwaway(prefix: str) -> Iterator[Throwaway]:
    """A server of a test module's own in a fresh directory, stopped and removed after;
    the module's tests skip where PostgreSQL's server programs are missing."""
    import shutil
    import tempfile

    import pytest

    if pg.as_postgres() is None or not pg.binary("initdb") or not pg.binary("pg_ctl"):
        pytest.skip("needs PostgreSQL's server (initdb, postgres, pg_ctl) and a postgres user")
    home = Path(tempfile.mkdtemp(prefix=prefix))
    home.chmod(0o755)
    made = Throwaway(home)
    try:
        made.first_start()
        yield made
    finally:
        made.stop()
        subprocess.run(["umount", str(home / TINY)], check=False, capture_output=True)
        shutil.rmtree(home, ignore_errors=True)


def read_only(server: Throwaway, seconds: float) -> None:
    """Every transaction read-only, as a hot standby or `default_transaction_read_only`
    makes them, then writable again."""
    server.configure("default_transaction_read_only", "on")
    try:
        time.sleep(seconds)
    finally:
        server.configure("default_transaction_read_only", None)


def terminated(server: Throwaway, seconds: float) -> None:
    """riddlectl's sessions ended by an administrator, again and again (each pass ends
    those made since the last)."""
    deadline = time.monotonic() + seconds
    with server.admin() as conn:
        while time.monotonic() < deadline:
            conn.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                "WHERE application_name LIKE 'riddlectl %' AND pid <> pg_backend_pid()"
            )
            time.sleep(0.5)


def statement_timeout(server: Throwaway, seconds: float) -> None:
    """Statements cancelled after 100 ms, while a session of our own holds the riddles of
    every spool locked: each statement on them waits, and is cancelled."""
    server.configure("statement_timeout", "100ms")
    try:
        with server.admin() as conn, conn.transaction():
            tables = conn.execute(
                "SELECT format('%I.%I', schemaname, tablename) FROM pg_tables "
                "WHERE tablename = 'riddles'"
            ).fetchall()
            for (table,) in tables:
                conn.execute(f"LOCK TABLE {table} IN ACCESS EXCLUSIVE MODE")
            time.sleep(seconds)
    finally:
        server.configure("statement_timeout", None)


def restart(server: Throwaway, seconds: float, immediate: bool = False) -> None:
    """Down for `seconds`, then up: a fast shutdown, or an immediate one (a crash)."""
    server.stop(immediate=immediate)
    time.sleep(seconds)
    server.start()


def crash(server: Throwaway, seconds: float) -> None:
    restart(server, seconds, immediate=True)


TINY = "tiny"  # the tablespace of `disk_full`


def tiny_tablespace(server: Throwaway, size: str = "4m") -> str | None:
    """A tablespace on a tmpfs of `size`, for a spool made with `default_tablespace`
    set to it (`with_tiny`); why not, when no tmpfs can be mounted here."""
    place = server.home / TINY
    place.mkdir(exist_ok=True)
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(place)], capture_output=True
    )
    if mounted.returncode != 0:
        return mounted.stderr.decode().strip() or "mount failed"
    os.chown(place, server.data.stat().st_uid, server.data.stat().st_gid)
    with server.admin() as conn:
        conn.execute(f"CREATE TABLESPACE {TINY} LOCATION '{place}'")
    return None


def with_tiny(url: str) -> str:
    """The spool's URL, its tables made in the tablespace `TINY`."""
    return f"{url}&options=-c%20default_tablespace%3D{TINY}"


def disk_full(server: Throwaway, seconds: float) -> None:
    """The tablespace `TINY` filled to the last byte, then emptied again."""
    with server.admin() as conn:
        conn.execute(f"CREATE TABLE public.filler (pad text) TABLESPACE {TINY}")
        try:
            for rows in (1000, 100, 10, 1):
                with contextlib.suppress(psycopg.errors.DiskFull):
                    while True:
                        conn.execute(
                            "INSERT INTO public.filler "
                            "SELECT repeat(md5(random()::text), 30) FROM generate_series(1, %s)",
                            (rows,),
                        )
            time.sleep(seconds)
        finally:
            conn.execute("DROP TABLE public.filler")


SPELLS: dict[str, Callable[[Throwaway, float], None]] = {
    "read-only": read_only,
    "terminated": terminated,
    "statement-timeout": statement_timeout,
    "disk-full": disk_full,
    "restart": restart,
    "crash": crash,
}
