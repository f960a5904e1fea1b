"""A real headless Chromium (Debian's `chromium`, driven by Playwright) through the web UI:
pose the seed example with the form, watch it reach done on the live table while agents
run, open its page, retry it from there; and a cross-site form post refused."""

from __future__ import annotations

import http.server
import os
import shutil
import signal
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import ROOT
from tests.web.conftest import Served, make_cli, start

pytestmark = pytest.mark.browser

CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
# Where to keep screenshots of the pages (docs/screenshots for the README), when set.
SCREENSHOTS = os.environ.get("WEB_SCREENSHOTS")


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    chromium = shutil.which("chromium")
    if chromium is None:
        pytest.fail("Debian's chromium is not installed (bash scripts/debian-packages)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=chromium, args=CHROMIUM_ARGS)
        yield launched
        launched.close()


@pytest.fixture
def server(tmp_path: Path) -> Iterator[Served]:
    served = start(make_cli(tmp_path))
    yield served
    served.stop()


@pytest.fixture
def page(browser: Any) -> Iterator[Any]:
    context = browser.new_context(viewport={"width": 1280, "height": 860})
    opened = context.new_page()
    opened.set_default_timeout(15000)
    errors: list[str] = []
    opened.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    yield opened
    context.close()
    # A CSP violation (an inline script or style slipping in) shows up here.
    assert not [e for e in errors if "Content Security Policy" in e], errors


def test_pose_watch_open_retry(server: Served, page: Any) -> None:
    from playwright.sync_api import expect

    page.goto(f"{server.url}/app/new")
    page.fill("textarea[name=context]", "[Taschenrechner]")
    page.fill("#question", "x * y =")
    names = page.locator(".data-name")
    names.nth(0).focus()
    names.nth(0).type("exa")
    # (not `wait_for_function`: its string predicate is eval'd in the page, which the
    # page's Content-Security-Policy forbids once it has to poll)
    expect(page.locator("#datafiles-list option")).to_have_count(3)
    options = page.eval_on_selector_all("#datafiles-list option", "els => els.map(e => e.value)")
    assert options == ["example/x.txt", "example/y.txt", "example/z.txt"]
    names.nth(0).fill("example/x.txt")
    for name in ("example/y.txt", "example/z.txt"):
        page.click("#add-data")
        names.last.fill(name)
    expect(page.locator("#preview-json")).to_contain_text("example/z.txt")
    page.wait_for_selector("#preview-ok")
    preview = page.inner_text("#preview-json")
    assert '"file_plain": "example/z.txt"' in preview and '"question": "x * y ="' in preview
    # An error shows next to its field, and goes once mended.
    names.last.fill("../etc/passwd")
    page.wait_for_selector("#err-data .field-error")
    names.last.fill("example/z.txt")
    page.wait_for_selector("#preview-ok")
    _shoot(page, "new.png")
    page.click("#submit")
    page.wait_for_url("**/app/riddle/*")
    riddle_id = page.url.rsplit("/", 1)[1]
    assert page.inner_text("#riddle-queue") == "incoming"

    page.goto(f"{server.url}/app/table")
    row = page.locator(f"tr:has(a[href='/app/riddle/{riddle_id}'])")
    assert row.locator(".queue").inner_text() == "incoming"
    agents = _agents(server)
    try:
        # No reload: the live stream tells the tab, which fetches its rows again.
        page.wait_for_selector(f"tr:has(a[href='/app/riddle/{riddle_id}']) .queue.q-done")
        assert page.inner_text("#counts [data-queue=done] .n") == "1"
        page.click(f"a[href='/app/riddle/{riddle_id}']")
        assert page.inner_text("#solution").startswith("150")
        page.select_option("#riddle-actions select[name=from]", "validate")
        page.click("#action-retry")
        _wait_or_tell(page, "#note")
        assert "now in solved/" in page.inner_text("#note")
        timeline = page.inner_text("#timeline")
        assert "retry" in timeline and "web" in timeline
        _until_done(page, server, riddle_id)
        page.wait_for_timeout(1500)  # the counts at the top follow the index, a moment later
        page.reload()
        _shoot(page, "riddle.png")
    finally:
        agents.send_signal(signal.SIGTERM)
        agents.wait(15)


def test_cross_site_form_is_refused(server: Served, page: Any) -> None:
    assert server.cli("submit", "--id", "target", "--question", "x * y =").code == 0
    site = _attacker_site(server.url)
    try:
        page.goto(f"http://127.0.0.1:{site.server_address[1]}/")
        page.click("#go")
        page.wait_for_load_state()
        assert "cross-site request may not change anything" in page.content()
    finally:
        site.shutdown()
    assert server.cli("status", "--json", "target").json()["riddles"][0]["queue"] == "incoming"  # type: ignore[index]


def test_non_loopback_bind_without_token_is_refused(tmp_path: Path) -> None:
    done = make_cli(tmp_path)("serve", "--host", "0.0.0.0", "--port", "0", timeout=20)
    assert done.code == 2 and "--token" in done.err


def _wait_or_tell(page: Any, selector: str) -> None:
    """Wait for `selector`; when it never comes, fail with the page the browser holds
    (its URL, status line and text), which a timeout alone does not say."""
    from playwright.sync_api import Error

    try:
        page.wait_for_selector(selector)
    except Error as exc:
        text = page.locator("body").inner_text(timeout=2000)[:2000]
        raise AssertionError(f"{selector} not seen on {page.url}:\n{text}") from exc


def _agents(server: Served) -> subprocess.Popen[bytes]:
    return server.cli.popen("run", env={**os.environ, "RIDDLECTL_FSYNC": "0"})


def _until_done(page: Any, server: Served, riddle_id: str) -> None:
    """Reload the riddle's page until the agents have validated it again."""
    for _ in range(100):
        page.reload()
        if page.inner_text("#riddle-queue") == "done":
            return
        page.wait_for_timeout(200)
    raise AssertionError("not done again after the retry")


def _attacker_site(target: str) -> http.server.ThreadingHTTPServer:
    """Another origin (a port of its own) serving a form that posts to the server."""
    html = (
        f"<form method=post action='{target}/app/act'>"
        "<input type=hidden name=action value=cancel><input type=hidden name=id value=target>"
        "<button id=go>win a prize</button></form>"
    ).encode()

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(200)
            self.send_header("content-type", "text/html")
            self.end_headers()
            self.wfile.write(html)

        def log_message(self, *args: object) -> None:
            pass

    site = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=site.serve_forever, daemon=True).start()
    return site


def _shoot(page: Any, name: str) -> None:
    """The screenshots shown in the README, taken as the test passes through (only when
    asked for: a test run leaves the checkout as it found it). The form and a riddle's
    page here; the dashboard, the table, the agents and the files set aside in light,
    dark and at 768 px in `test_browser_look`."""
    if SCREENSHOTS:
        Path(SCREENSHOTS).mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(Path(SCREENSHOTS) / name), full_page=True)


def test_live_toggle_is_remembered(server: Served, page: Any) -> None:
    page.goto(f"{server.url}/app/table")
    assert page.is_checked("#live-toggle")
    page.uncheck("#live-toggle")
    page.reload()
    assert not page.is_checked("#live-toggle")  # kept in the browser, across pages
    assert server.cli("submit", "--id", "quiet", "--question", "x * y =").code == 0
    page.wait_for_timeout(2500)
    assert page.locator("a[href='/app/riddle/quiet']").count() == 0  # not followed while off
    page.check("#live-toggle")
    page.wait_for_selector("a[href='/app/riddle/quiet']")  # caught up when switched on


def test_a_hidden_tab_stops_listening_and_catches_up(server: Served, browser: Any) -> None:
    # The page's own CSP forbids the script this test injects to fake a hidden tab.
    context = browser.new_context(bypass_csp=True)
    page = context.new_page()
    try:
        page.goto(f"{server.url}/app/table")
        page.wait_for_timeout(500)
        fetched: list[str] = []
        page.on("request", lambda r: fetched.append(r.url) if "/app/" in r.url else None)
        page.evaluate(
            "Object.defineProperty(document, 'hidden', {value: true, configurable: true});"
            "document.dispatchEvent(new Event('visibilitychange'))"
        )
        assert server.cli("submit", "--id", "unseen", "--question", "x * y =").code == 0
        page.wait_for_timeout(2500)
        assert fetched == []  # no stream, no refresh while hidden
        page.evaluate(
            "Object.defineProperty(document, 'hidden', {value: false, configurable: true});"
            "document.dispatchEvent(new Event('visibilitychange'))"
        )
        page.wait_for_selector("a[href='/app/riddle/unseen']")
        assert any("/app/live" in url for url in fetched)  # listening again
    finally:
        context.close()


def test_upload_fills_a_data_field(server: Served, page: Any, tmp_path: Path) -> None:
    from playwright.sync_api import expect

    made = tmp_path / "my facts.txt"
    made.write_text("x = 3\ny = 4\n")
    page.goto(f"{server.url}/app/new")
    page.fill("#question", "x * y =")
    page.set_input_files("#upload-file", str(made))
    page.click("#upload-form button")
    expect(page.locator(".data-name").first).to_have_value("uploads/my_facts.txt")
    expect(page.locator("#preview-json")).to_contain_text("uploads/my_facts.txt")
    page.wait_for_selector("#preview-ok")
    assert (server.cli.data / "uploads" / "my_facts.txt").read_text() == "x = 3\ny = 4\n"


def test_long_texts_fit_the_table_at_1280_px(server: Served, page: Any) -> None:
    """Long questions and errors are cut with an ellipsis, whole on hover; the table
    stays within the window, `created` in sight."""
    question = "How many " + "very " * 120 + "long words are in this question?"
    with server.client() as http:
        for n in range(3):
            doc = {"id": f"long-{n}-" + "x" * 60, "riddle": {"question": f"{n} {question}"}}
            http.post("/api/submit", json=doc).raise_for_status()
        http.post("/api/cancel", json={"ids": ["long-0-" + "x" * 60]}).raise_for_status()
    page.goto(f"{server.url}/app/table")
    table = _drawn_box(page, "table.riddles")
    created = _drawn_box(page, "table.riddles th:has-text('created')")
    width = page.evaluate("document.documentElement.scrollWidth")
    assert table["x"] + table["width"] <= 1280 and width <= 1280, (table, width)
    assert created["x"] + created["width"] <= 1280, created
    cell = page.locator("tr:has(a[href='/app/riddle/long-1-" + "x" * 60 + "']) td.text").nth(0)
    assert cell.get_attribute("title") == f"1 {question}"
    cut = cell.evaluate("el => el.scrollWidth > el.clientWidth")
    style = cell.evaluate("el => getComputedStyle(el).textOverflow")
    assert cut and style == "ellipsis"


@pytest.fixture(params=["fs", pytest.param("postgres", marks=pytest.mark.postgres)])
def any_server(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Served]:
    """A server over a directory spool, then over a PostgreSQL one (its index in a cache
    directory of the test's own)."""
    if request.param == "fs":
        served = start(make_cli(tmp_path))
    else:
        pg_cli = request.getfixturevalue("pg_cli")
        shutil.copytree(ROOT / "data" / "share", pg_cli.data, dirs_exist_ok=True)
        served = start(pg_cli, env={"XDG_CACHE_HOME": str(tmp_path / "cache")})
    yield served
    served.stop()


def test_dashboard_draws_its_charts(any_server: Served, page: Any) -> None:
    with any_server.client() as http:
        for n in range(3):
            made = http.post("/api/submit", json={"id": f"d{n}", "riddle": {"question": "x ="}})
            assert made.status_code == 201, made.text
        cancelled = http.post("/api/cancel", json={"ids": ["d0"]})
        assert cancelled.status_code == 200, cancelled.text
    page.goto(f"{any_server.url}/app")
    for chart in ("#chart-throughput", "#chart-depth", "svg[id^='chart-handlers']"):
        box = _drawn_box(page, chart)
        assert box["width"] > 300 and box["height"] > 100, (chart, box)
    # No legend runs past its chart's edge.
    cut = page.locator("svg.chart text.legend").evaluate_all(
        "els => els.filter(e => { const b = e.getBBox(); "
        "return b.x + b.width > e.ownerSVGElement.viewBox.baseVal.width; })"
        ".map(e => e.textContent)"
    )
    assert cut == [], cut
    page.wait_for_selector("#chart-depth text.legend")
    _until_text(page, "#totals", "1 failed")
    # Live: a riddle failed while the page is open shows without a reload.
    assert any_server.cli("cancel", "d1").code == 0
    _until_text(page, "#totals", "2 failed")
    assert "incoming" in page.text_content("#chart-depth")
    page.click("#window-week")
    page.wait_for_url("**/app?window=week")
    assert page.locator("#chart-throughput").count() == 1


def test_a_corrupt_file_fixed_in_the_editor_reaches_done(any_server: Served, page: Any) -> None:
    from riddlectl.spool import open_spool
    from riddlectl.spool.states import Queue

    spool = open_spool(any_server.cli.spool, drop_in_grace=0.0)
    try:
        broken = b'{"riddle": {"context": "[Taschenrechner]", "question": "x * y ="},\n'
        spool.drop_in(Queue.INCOMING, "typo.json", broken)
        assert spool.claim(Queue.INCOMING) == []
    finally:
        spool.close()
    page.goto(f"{any_server.url}/app/corrupt")
    assert "typo.json" in page.inner_text("main")
    page.click("text=Edit and submit again")
    page.wait_for_selector("#bad-line")  # why it was set aside, before anything is typed
    page.fill("#corrupt-text", '{"riddle": {"question": "x * y ="},\n "data": [}')
    # Checked as it is typed: the error beside its line before anything is submitted.
    page.wait_for_selector("#bad-line:has-text('not valid JSON')")
    assert page.url.endswith("/app/corrupt/edit?name=typo.json")
    page.click("#corrupt-submit")
    assert "not valid JSON" in page.inner_text("#bad-line")
    fixed = (
        '{"riddle": {"context": "[Taschenrechner]", "question": "x * y ="},\n'
        ' "data": [{"type": "text", "file_plain": "example/x.txt"},\n'
        '          {"type": "text", "file_plain": "example/y.txt"}]}'
    )
    page.fill("#corrupt-text", fixed)
    page.click("#corrupt-submit")
    page.wait_for_url("**/app/riddle/typo")
    assert any_server.cli("run", "--once", timeout=120).code == 0
    page.reload()
    assert page.inner_text("#riddle-queue") == "done"
    assert page.inner_text("#solution").startswith("150")


def test_cancel_asks_first(any_server: Served, page: Any) -> None:
    assert any_server.cli("submit", "--id", "keep-me", "--question", "x =").code == 0
    page.goto(f"{any_server.url}/app/riddle/keep-me")
    page.click("#action-cancel")
    page.wait_for_selector("#confirm")
    assert "cancel 1 riddle" in page.inner_text("#confirm")
    page.click("#confirm-back")
    page.wait_for_url("**/app/riddle/keep-me")
    assert page.inner_text("#riddle-queue") == "incoming"
    page.click("#action-cancel")
    page.click("#confirm-button")
    page.wait_for_selector("#note")
    assert page.inner_text("#riddle-queue") == "failed"


def test_dark_mode_and_768_px(server: Served, browser: Any) -> None:
    context = browser.new_context(viewport={"width": 768, "height": 900}, color_scheme="dark")
    page = context.new_page()
    try:
        assert server.cli("submit", "--id", "dark", "--question", "x " * 200).code == 0
        for path in ("/app", "/app/table", "/app/corrupt"):
            page.goto(f"{server.url}{path}")
            width = page.evaluate("document.documentElement.scrollWidth")
            assert width <= 768, (path, width)
        page.goto(f"{server.url}/app/table")
        background = page.evaluate("getComputedStyle(document.body).backgroundColor")
        assert background == "rgb(20, 24, 29)"
    finally:
        context.close()


def _drawn_box(page: Any, selector: str) -> dict[str, float]:
    """The box of an element the live page may be swapping for a fresh copy: a box
    measured while the old copy is being replaced reads as none, so measure again."""
    for _ in range(50):
        box = page.locator(selector).bounding_box()
        if box is not None:
            return box
        page.wait_for_timeout(100)
    raise AssertionError(f"{selector}: never drawn")


def _until_text(page: Any, selector: str, text: str) -> None:
    """Wait until the live page shows `text` (no reload, and no predicate eval'd in a page
    whose CSP forbids it)."""
    for _ in range(150):
        if text in page.inner_text(selector):
            return
        page.wait_for_timeout(200)
    raise AssertionError(f"{selector}: {text!r} never shown: {page.inner_text(selector)!r}")


def test_the_form_removes_a_data_row_it_added(server: Served, page: Any) -> None:
    from playwright.sync_api import expect

    page.goto(f"{server.url}/app/new")
    page.fill("#question", "x * y =")
    names = page.locator(".data-name")
    names.nth(0).fill("example/x.txt")
    page.click("#add-data")
    names.last.fill("example/nothing-here.txt")
    page.wait_for_selector("#err-data .field-error")
    page.click(".data-row:nth-of-type(2) .remove-data")
    expect(names).to_have_count(1)
    expect(page.locator("#preview-ok")).to_be_visible()  # the preview follows
    assert "nothing-here" not in page.inner_text("#preview")
    # Each row's controls are named by its place.
    page.click("#add-data")
    labels = page.locator(".data-row .data-name").evaluate_all(
        "els => els.map(e => e.getAttribute('aria-label'))"
    )
    assert [label.split(",")[0] for label in labels] == ["data file 1", "data file 2"]
    page.click(".data-row:nth-of-type(1) .remove-data")
    expect(names).to_have_count(1)
    assert names.first.get_attribute("aria-label").startswith("data file 1")


def test_absolute_times_and_the_id_copied(server: Served, browser: Any) -> None:
    """The table's *Absolute times* setting shows each time as the browser's local time,
    kept across pages and live updates; the hover always carries ISO 8601, local and UTC;
    the riddle page's button puts its id on the clipboard."""
    import re

    context = browser.new_context(viewport={"width": 1280, "height": 860})
    context.grant_permissions(["clipboard-read", "clipboard-write"])
    page = context.new_page()
    page.set_default_timeout(15000)
    assert server.cli("submit", "--id", "timed", "--question", "x * y =").code == 0
    page.goto(f"{server.url}/app/table")
    cell = page.locator("time.ago").first
    assert re.fullmatch(r"\d+s ago", cell.inner_text())
    hover = cell.get_attribute("title") or ""
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d[+-]\d\d:\d\d local · \S+Z UTC", hover)
    page.check("#times-toggle")
    assert re.fullmatch(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d", cell.inner_text())
    assert server.cli("submit", "--id", "timed-later", "--question", "x * y =").code == 0
    later = page.locator("a[href='/app/riddle/timed-later']")
    later.wait_for()  # a live update redraws the rows: still absolute
    assert all(re.fullmatch(r"[\d:\- ]{19}", t) for t in page.locator("time.ago").all_inner_texts())
    page.reload()
    assert page.is_checked("#times-toggle")  # kept in the browser
    page.uncheck("#times-toggle")
    assert page.locator("time.ago").first.inner_text().endswith("ago")
    page.goto(f"{server.url}/app/riddle/timed")
    page.click("#copy-id")
    page.wait_for_selector("#copy-id:has-text('Copied')")
    assert page.evaluate("navigator.clipboard.readText()") == "timed"
    context.close()
