"""Liveness under database faults: agents at work on a PostgreSQL spool while the server
is made read-only, ends their sessions, cancels their statements, runs out of disk, or
restarts; once it is itself again, every riddle reaches done/ or failed/ within a bound,
moved by the same agents, still running (not by a new `run --once` afterwards), and no
claim is left behind.

A server of this module's own (`tests.pgserver.Throwaway`): the shared one is never
made read-only, filled up or restarted.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests import pg, pgserver
from tests.conftest import ROOT, Cli, spool_findings, submit_products

pytestmark = [pytest.mark.postgres, pg.own_server("liveness")]

STAGES = ("extract", "solve", "validate", "manage")
RIDDLES = 80
SPELL = 8.0  # seconds each fault lasts
# Seconds after the fault for the rest to be final: the agents' back-off (0.5 s,
# doubling: 8 s at most after an 8 s fault) and the riddles left, about 10 a second.
BOUND = 60.0


@pytest.fixture(scope="module")
def server() -> Iterator[pgserver.Throwaway]:
    with pgserver.throwaway("riddlectl-liveness-") as made:
        why = pgserver.tiny_tablespace(made, "16m")
        if why is not None:
            pytest.skip(f"cannot mount a tmpfs here: {why}")
        yield made


def spool_on(server: pgserver.Throwaway, schema: str, tmp_path: Path) -> Cli:
    """A spool of its own on `server`, its tables in the small tablespace (which only the
    disk-full fault fills)."""
    data = tmp_path / "data"
    shutil.copytree(ROOT / "data" / "share", data)
    cli = Cli(pgserver.with_tiny(pg.with_schema(server.url, schema)), data)
    assert cli("init").code == 0
    return cli


class Agents:
    """One agent process per stage; solve takes a tenth of a second per riddle, so that
    riddles are in every stage when the fault comes."""

    def __init__(self, cli: Cli, helpers: Path, logs: Path) -> None:
        env = {**os.environ, "PYTHONPATH": str(helpers), "RIDDLECTL_MAX_ABANDONED": "1000"}
        self.logs = logs
        self.procs: list[subprocess.Popen[bytes]] = []
        for stage in STAGES:
            extra = ["--handler", "py_handlers:sluggish_calculator"] if stage == "solve" else []
            with (logs / f"{stage}.log").open("wb") as log:
                self.procs.append(
                    subprocess.Popen(
                        cli.argv("agent", stage, *extra),
                        env=env,
                        stdout=subprocess.DEVNULL,
                        stderr=log,
                    )
                )

    def running(self) -> bool:
        return all(proc.poll() is None for proc in self.procs)

    def stop(self) -> list[int | None]:
        for proc in self.procs:
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
        for proc in self.procs:
            try:
                proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        return [proc.returncode for proc in self.procs]

    def said(self) -> str:
        return "".join(
            f"--- {stage}\n{(self.logs / f'{stage}.log').read_text()[-1500:]}" for stage in STAGES
        )


def counts(server: pgserver.Throwaway, schema: str) -> dict[str, int]:
    """Riddles per queue, and claims held (`held`), read straight from the tables."""
    with server.admin() as conn:
        rows = conn.execute(f'SELECT queue, count(*) FROM "{schema}".riddles GROUP BY queue')
        found = {queue: count for queue, count in rows}
        held = conn.execute(f'SELECT count(*) FROM "{schema}".riddles WHERE holder IS NOT NULL')
        found["held"] = held.fetchone()[0]  # type: ignore[index]
    return found


def final(found: dict[str, int]) -> int:
    return found.get("done", 0) + found.get("failed", 0)


def wait_until(check: object, seconds: float, what: str, agents: Agents) -> float:
    """Poll `check()` until true; the seconds it took. Fails naming `what`."""
    started = time.monotonic()
    while not check():  # type: ignore[operator]
        if time.monotonic() - started > seconds:
            raise AssertionError(f"{what} not within {seconds:g} s\n{agents.said()}")
        assert agents.running(), f"an agent exited\n{agents.said()}"
        time.sleep(0.25)
    return time.monotonic() - started


FELT = ("the spool cannot be used", "the claim was given back")


@pytest.mark.parametrize("fault", sorted(pgserver.SPELLS))
def test_every_riddle_is_final_after_the_fault_while_the_same_agents_run(
    server: pgserver.Throwaway, helpers: Path, tmp_path: Path, fault: str
) -> None:
    schema = f"live_{fault.replace('-', '_')}"
    cli = spool_on(server, schema, tmp_path)
    docs = submit_products(cli, RIDDLES, "r{:03}", "live")
    agents = Agents(cli, helpers, tmp_path)
    try:
        wait_until(lambda: final(counts(server, schema)) >= 5, 60, "the first riddles", agents)
        before = counts(server, schema)
        pgserver.SPELLS[fault](server, SPELL)
        took = wait_until(
            lambda: final(counts(server, schema)) == RIDDLES,
            BOUND,
            f"every riddle final after {fault} (at its start: {before})",
            agents,
        )
        assert agents.running()
        left = counts(server, schema)
        # The fault met: an agent waited for the spool, or a commit was refused because
        # its claim was given back meanwhile (a session ended takes its claims with it).
        felt = sum(agents.said().count(sign) for sign in FELT)
        print(
            f"{fault}: {final(before)} final before, the rest {took:.1f} s after; "
            f"{felt} agent(s) told of it; {left}"
        )
    finally:
        codes = agents.stop()
    assert felt >= 1, agents.said()  # the fault was met, not slept through
    assert codes == [0] * len(STAGES), agents.said()
    assert "Traceback" not in agents.said(), agents.said()
    assert left["held"] == 0 and left.get("done") == RIDDLES, left
    results = cli("result", *(str(doc["id"]) for doc in docs)).out.splitlines()
    assert results == [f"r{i:03}\t{(i % 10) * (i % 10 + 2)}" for i in range(RIDDLES)]
    assert spool_findings(cli) == []
