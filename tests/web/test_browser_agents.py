"""The agents page in a real Chromium, on the directory spool and on PostgreSQL: an agent
started appears with the riddle it handles (linked, and the riddle's page names it);
killed with SIGKILL, it is shown gone with its abandoned claim within 5 s."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from tests.cli.test_agents import SKIP_TO_SOLVE, hanging_agent
from tests.conftest import ON_POSTGRES, Cli, example_doc, submit_documents
from tests.web.conftest import start
from tests.web.test_browser import browser, page  # noqa: F401 - fixtures

pytestmark = pytest.mark.browser


@pytest.fixture(params=["fs", ON_POSTGRES])
def spool_cli(request: pytest.FixtureRequest) -> Cli:
    cli: Cli = request.getfixturevalue("cli" if request.param == "fs" else "pg_cli")
    return cli


def test_the_agents_page_shows_who_holds_what_and_who_died(
    spool_cli: Cli,
    page: Any,  # noqa: F811 - the fixture imported above
    helpers: Path,
    tmp_path: Path,
) -> None:
    from playwright.sync_api import expect

    cli = spool_cli
    server = start(cli, env={"XDG_CACHE_HOME": str(tmp_path / "cache")})
    idle = cli.popen("agent", "validate")  # alive throughout, holding nothing
    try:
        submit_documents(cli, example_doc(id="hang", status=SKIP_TO_SOLVE))
        with hanging_agent(cli, helpers, tmp_path / "pids") as agent:
            page.goto(f"{server.url}/app/table")
            page.click("header nav a[href='/app/agents']")
            row = page.locator(f"#agents-alive tr[data-pid='{agent.pid}']")
            held = row.locator("a.held[href='/app/riddle/hang']")
            expect(held).to_be_visible(timeout=60_000)  # the list refreshes by itself
            expect(row).to_contain_text("solve")
            expect(page.locator(f"#agents-alive tr[data-pid='{idle.pid}']")).to_contain_text("idle")

            held.click()
            page.wait_for_url("**/app/riddle/hang")
            expect(page.locator("#holder")).to_contain_text(f"pid {agent.pid}")
            expect(page.locator("#holder")).to_contain_text("agent:solve")
            page.go_back()

            agent.kill()  # SIGKILL
            killed = time.monotonic()
            died = page.locator(f"#agents-gone tr.agent-died[data-pid='{agent.pid}']")
            expect(died.locator("a.abandoned-claim[href='/app/riddle/hang']")).to_be_visible(
                timeout=5_000
            )
            assert time.monotonic() - killed < 5.0
            expect(page.locator(f"#agents-alive tr[data-pid='{agent.pid}']")).to_have_count(0)
    finally:
        idle.kill()
        idle.wait(30)
        server.stop()
