"""axe-core (the copy shipped inside `axe-playwright-python`, run in the page) over every
page of the web UI, in light and dark mode, at 1280 and 768 px: no serious or critical
violation anywhere."""

from __future__ import annotations

from typing import Any

import pytest

from tests.web.conftest import Served
from tests.web.dressing import Dressed
from tests.web.test_browser import browser  # noqa: F401 - the fixture

pytestmark = pytest.mark.browser

THEMES = ("light", "dark")
WIDTHS = (1280, 768)
# Reached by a click, as an operator reaches them: each a confirm page.
CONFIRMS = {
    "confirm: cancel one": ("/app/riddle/waiting", "#action-cancel"),
    "confirm: everything matching": ("/app/table", "#act-filter"),
    "confirm: delete a set-aside file": ("/app/corrupt", "form[action='/app/corrupt/drop'] button"),
}


def pages(made: Dressed) -> dict[str, str]:
    return {
        "dashboard": "/app",
        "table": "/app/table",
        "form": "/app/new",
        "a riddle": f"/app/riddle/{made.done[0]}",
        "agents": "/app/agents",
        "set aside": "/app/corrupt",
        "editor": f"/app/corrupt/edit?name={made.corrupt}",
        "404": "/app/riddle/no-such-riddle",
        "400": "/app/table?trial=many",
    }


@pytest.mark.timeout(600)  # 48 pages, each loaded and checked
def test_no_serious_or_critical_violation_on_any_page(
    dressed: tuple[Served, Dressed],
    browser: Any,  # noqa: F811 - the fixture imported above
) -> None:
    from axe_playwright_python.sync_playwright import Axe

    server, made = dressed
    axe = Axe()
    found: list[str] = []
    checked: list[tuple[str, str, int]] = []
    for theme in THEMES:
        for width in WIDTHS:
            context = browser.new_context(
                viewport={"width": width, "height": 900}, color_scheme=theme
            )
            page = context.new_page()
            page.set_default_timeout(15000)
            try:
                targets = [(name, path, None) for name, path in pages(made).items()]
                targets += [(name, path, click) for name, (path, click) in CONFIRMS.items()]
                for name, path, click in targets:
                    page.goto(f"{server.url}{path}")
                    if click:
                        page.click(click)
                        page.wait_for_selector("#confirm")
                    page.wait_for_load_state()
                    results = axe.run(page)
                    for v in results.response["violations"]:
                        if v["impact"] in ("serious", "critical"):
                            at = [n["target"] for n in v["nodes"]][:5]
                            found.append(f"{name} {theme} {width}: {v['id']} {v['impact']} {at}")
                    checked.append((name, theme, width))
            finally:
                context.close()
    # 12 pages (9 reached by address, 3 confirm pages by a click) x 2 themes x 2 widths
    assert len(checked) == 12 * len(THEMES) * len(WIDTHS) == 48, checked
    assert not found, "\n".join(found)
