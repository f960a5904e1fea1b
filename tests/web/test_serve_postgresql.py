"""`riddlectl serve` on a PostgreSQL spool: the same pages and API, the table's index in
the user's cache directory (a URL has no directory to keep it beside)."""

from __future__ import annotations

import os
from pathlib import Path

from tests.conftest import Cli
from tests.web.conftest import example, start


def test_serve_on_postgresql_keeps_its_index_in_the_cache(pg_cli: Cli, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    env = {"XDG_CACHE_HOME": str(cache)}
    assert pg_cli("submit", "-", input=b'{"id": "from-cli", "riddle": {"question": "1 + 1 ="}}')
    server = start(pg_cli, env=env)
    try:
        with server.client() as http:
            made = http.post("/api/submit", json=example(id="from-web"))
            assert made.status_code == 201, made.text
            server.wait_for(
                lambda: (
                    {r["id"] for r in http.get("/api/riddles").json()["riddles"]}
                    == {"from-cli", "from-web"}
                )
            )
            page = http.get("/app/table")
            assert page.status_code == 200 and "from-web" in page.text
    finally:
        server.stop()
    indexes = list((cache / "riddlectl" / "web").glob("*-web-index.sqlite"))
    assert len(indexes) == 1
    assert "postgres" not in indexes[0].name  # named by a digest: no host, user or password
    # What changed while no server ran is in the table of the next one.
    assert pg_cli("cancel", "from-cli").code == 0
    again = start(pg_cli, env=env)
    try:
        with again.client() as http:
            again.wait_for(
                lambda: (
                    {r["id"]: r["queue"] for r in http.get("/api/riddles").json()["riddles"]}
                    == {"from-cli": "failed", "from-web": "incoming"}
                )
            )
    finally:
        again.stop()
    assert list((cache / "riddlectl" / "web").glob("*-web-index.sqlite")) == indexes
    assert not [n for n in os.listdir(pg_cli.data) if n.endswith(".sqlite")]
