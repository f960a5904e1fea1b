"""What an operator sees in a real Chromium, measured as the browser draws it: text that
can be read against its background, pages that fit a 768 px window, numbers under
headers aligned as they are, ids shown whole."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.web.conftest import Served
from tests.web.dressing import Dressed
from tests.web.test_browser import _shoot, browser  # noqa: F401 - the fixture

pytestmark = pytest.mark.browser

# The contrast of a colour pair as WCAG 2 defines it, computed in the page: the text's
# colour against the first ancestor that paints a background.
CONTRAST = """el => {
  const rgb = c => c.match(/[\\d.]+/g).map(Number);
  const lum = c => {
    const [r, g, b] = rgb(c).slice(0, 3).map(v => {
      v /= 255; return v <= 0.03928 ? v / 12.92 : Math.pow((v + 0.055) / 1.055, 2.4); });
    return 0.2126 * r + 0.7152 * g + 0.0722 * b;
  };
  let bg = el;
  while (bg && (getComputedStyle(bg).backgroundColor === "rgba(0, 0, 0, 0)"))
    bg = bg.parentElement;
  const back = bg ? getComputedStyle(bg).backgroundColor : "rgb(255, 255, 255)";
  const [a, b] = [lum(getComputedStyle(el).color), lum(back)].sort((x, y) => y - x);
  return (a + 0.05) / (b + 0.05);
}"""
# Per table of a page: the columns whose cells hold numbers (`td.num`), each with the
# alignment of its header and of its cells.
NUMBER_COLUMNS = """() => [...document.querySelectorAll("table")].flatMap(t => {
  const heads = [...t.querySelectorAll("thead th")];
  const out = [];
  for (const row of t.querySelectorAll("tbody tr")) {
    [...row.children].forEach((td, i) => {
      if (td.classList.contains("num") && td.textContent.trim() && heads[i])
        out.push({table: t.id || t.className, head: heads[i].textContent,
                  th: getComputedStyle(heads[i]).textAlign,
                  td: getComputedStyle(td).textAlign});
    });
  }
  return out;
})"""


@pytest.fixture(params=[("light", 1280), ("dark", 768)], ids=["light-1280", "dark-768"])
def look(request: pytest.FixtureRequest, browser: Any) -> Iterator[Any]:  # noqa: F811
    theme, width = request.param
    context = browser.new_context(viewport={"width": width, "height": 900}, color_scheme=theme)
    page = context.new_page()
    page.set_default_timeout(15000)
    yield page
    context.close()


def _pages(made: Dressed) -> list[str]:
    return [
        "/app",
        "/app/table",
        "/app/new",
        f"/app/riddle/{made.done[0]}",
        f"/app/riddle/{made.cancelled}",
        "/app/riddle/hang",
        "/app/agents",
        "/app/corrupt",
        f"/app/corrupt/edit?name={made.corrupt}",
        "/app/riddle/no-such-riddle",
    ]


def test_file_names_on_the_set_aside_page_can_be_read(
    dressed: tuple[Served, Dressed], look: Any
) -> None:
    server, made = dressed
    look.goto(f"{server.url}/app/corrupt")
    name = look.locator(".corrupt-file .card-head code").first
    assert name.inner_text() == made.corrupt
    assert name.evaluate(CONTRAST) >= 4.5  # WCAG AA for text of this size
    # The count bar says what the page says.
    assert look.inner_text("#counts [data-queue=corrupt] .n") == "1"
    assert "(1 file)" in look.inner_text("main h1")


def test_no_page_is_wider_than_a_768_px_window(dressed: tuple[Served, Dressed], look: Any) -> None:
    server, made = dressed
    width = look.viewport_size["width"]
    wider = {}
    for path in _pages(made):
        look.goto(f"{server.url}{path}")
        drawn = look.evaluate("document.documentElement.scrollWidth")
        if drawn > width:
            wider[path] = drawn
    assert not wider, wider
    # A long error keeps a readable width (not one word a line): at least 12 em.
    look.goto(f"{server.url}/app/riddle/{made.cancelled}")
    errors = look.locator("#timeline td.error").evaluate_all(
        "els => els.filter(e => e.textContent.trim()).map(e => e.getBoundingClientRect().width)"
    )
    assert errors and min(errors) >= 12 * 14, errors


def test_numbers_align_right_under_right_aligned_headers(
    dressed: tuple[Served, Dressed], look: Any
) -> None:
    server, made = dressed
    seen: set[str] = set()
    for path in ("/app/table", f"/app/riddle/{made.done[0]}", "/app/agents"):
        look.goto(f"{server.url}{path}")
        for column in look.evaluate(NUMBER_COLUMNS):
            seen.add(f"{column['table']}: {column['head']}")
            assert column["td"] == "right" and column["th"] == "right", (path, column)
    # pid and duration in a timeline, pid/handled/failed among the agents, at least.
    assert {"timeline: pid", "timeline: duration", "agents-alive: pid"} <= seen or {
        "timeline: pid",
        "timeline: duration",
        "agents-gone: pid",
    } <= seen, seen


def test_ids_of_one_batch_show_whole(dressed: tuple[Served, Dressed], look: Any) -> None:
    server, made = dressed
    look.goto(f"{server.url}/app/table")
    for riddle_id in made.done:
        link = look.locator(f"table.riddles a[href='/app/riddle/{riddle_id}']")
        assert link.inner_text() == riddle_id and link.get_attribute("title") == riddle_id
        cell = link.locator("xpath=..")
        clipped = cell.evaluate("el => el.scrollWidth > el.clientWidth")
        assert not clipped, riddle_id
        # Drawn whole on one line, in a monospace font.
        assert len(link.evaluate("el => [...el.getClientRects()]")) == 1, riddle_id
        assert "mono" in cell.evaluate("el => getComputedStyle(el).fontFamily")


def test_the_agent_that_died_comes_first_of_the_gone_and_stands_out(
    dressed: tuple[Served, Dressed], look: Any
) -> None:
    """An agent stopped after it, yet the agent killed with SIGKILL heads the agents
    gone, marked; the one-shot runs (`run --once`) are one line."""
    server, made = dressed
    look.goto(f"{server.url}/app/agents")
    gone = look.locator("#agents-gone tbody tr")
    first = gone.first
    assert first.get_attribute("data-pid") == str(made.killed_pid)
    assert "agent-died" in (first.get_attribute("class") or "")
    mark = first.locator("td").first.evaluate("el => getComputedStyle(el).boxShadow")
    assert mark != "none", mark
    assert look.locator("#agents-gone tr.agent-stopped").count() == 1  # `agent validate`
    assert look.inner_text("#agents-folded").startswith(f"{made.once_runs} one-shot runs")
    # Times in one line each, with the absolute time on hover.
    for when in look.locator("#agents-gone time").all():
        assert len(when.evaluate("el => [...el.getClientRects()]")) == 1
        assert " UTC" in (when.get_attribute("title") or "")
    look.click("#agents-folded a")
    look.wait_for_url("**/app/agents?all=true")
    assert look.locator("#agents-gone tr.agent-stopped").count() == made.once_runs + 1
    assert look.locator("#agents-gone tbody tr").first.get_attribute("data-pid") == str(
        made.killed_pid
    )


SHOTS = {"dashboard": "/app", "table": "/app/table", "agents": "/app/agents"}
SHOTS["corrupt"] = "/app/corrupt"
VIEWS = {"": ("light", 1280), "-dark": ("dark", 1280), "-768": ("light", 768)}


def test_the_pages_an_operator_opens_first(
    dressed: tuple[Served, Dressed],
    browser: Any,  # noqa: F811
) -> None:
    """The dashboard, the table, the agents after a `kill -9` and the files set aside, in
    light and dark mode and at 768 px, each drawn whole (the README's screenshots, when
    WEB_SCREENSHOTS names where to keep them)."""
    server, made = dressed
    for suffix, (theme, width) in VIEWS.items():
        context = browser.new_context(viewport={"width": width, "height": 900}, color_scheme=theme)
        page = context.new_page()
        try:
            for name, path in SHOTS.items():
                page.goto(f"{server.url}{path}")
                page.wait_for_selector("main")
                assert page.evaluate("document.documentElement.scrollWidth") <= width
                _shoot(page, f"{name}{suffix}.png")
        finally:
            context.close()
    assert made.killed_pid
