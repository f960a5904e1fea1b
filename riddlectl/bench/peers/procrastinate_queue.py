"""procrastinate: a PostgreSQL job queue, one task per stage, each deferring the next.

The same server as `riddlectl --spool URL bench` (the URL in `RIDDLECTL_BENCH_PG`, else
the local server), in a schema of its own (`procrastinate_bench_PID`, made and dropped
by the submitter). Each worker runs procrastinate's worker on its stage's queue, woken by
its LISTEN/NOTIFY, one job at a time; a job's document is its JSON arguments. Every
defer and every job's end is a transaction with the server's synchronous commit.
"""

from __future__ import annotations

import os
from typing import Any

from riddlectl.bench.peers.workload import StageRun

ENV = "RIDDLECTL_BENCH_PG"
DEFAULT = "postgresql://postgres@127.0.0.1:5432/postgres"


def _where(base: str) -> tuple[str, str]:
    with open(os.path.join(base, "url")) as saved:
        url, schema = saved.read().split("\n")[:2]
    return url, schema


def _options(schema: str) -> dict[str, Any]:
    return {"options": f"-c search_path={schema}"}


class Submitter:
    def __init__(self, base: str, fsync: bool) -> None:
        import procrastinate
        import psycopg

        url = os.environ.get(ENV) or DEFAULT
        self.url, self.schema = url, f"procrastinate_bench_{os.getpid()}"
        with open(os.path.join(base, "url"), "w") as saved:
            saved.write(f"{url}\n{self.schema}\n")
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute(f'DROP SCHEMA IF EXISTS "{self.schema}" CASCADE')
            conn.execute(f'CREATE SCHEMA "{self.schema}"')
        connector = procrastinate.SyncPsycopgConnector(conninfo=url, kwargs=_options(self.schema))
        self.app = procrastinate.App(connector=connector)
        self.app.open()
        self.app.schema_manager.apply_schema()
        self.extract = self.app.configure_task(name="extract", queue="extract")

    def submit(self, doc: dict[str, Any]) -> None:
        self.extract.defer(doc=doc)

    def close(self) -> None:
        import psycopg

        self.app.close()
        with psycopg.connect(self.url, autocommit=True) as conn:
            conn.execute(f'DROP SCHEMA IF EXISTS "{self.schema}" CASCADE')


def work(run: StageRun) -> None:
    """Run the stage until SIGTERM (procrastinate's worker stops on it by itself)."""
    import procrastinate

    url, schema = _where(run.base)
    connector = procrastinate.PsycopgConnector(conninfo=url, kwargs=_options(schema))
    app = procrastinate.App(connector=connector)
    following = run.following
    forward = (
        None
        if following is None
        else lambda doc: app.configure_task(name=following, queue=following).defer(doc=doc)
    )

    @app.task(name=run.stage, queue=run.stage)
    def handle(doc: dict[str, Any]) -> None:
        run.advance(doc, forward)

    with app.open():
        app.run_worker(queues=[run.stage], concurrency=1, wait=True, delete_jobs="successful")
