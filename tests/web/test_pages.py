"""The pages over HTTP: the table with its counts and URL filters, a riddle's page, the
actions on one riddle, on ticked rows and on everything a filter matches (after its count
and a question), and the live stream."""

from __future__ import annotations

import re
from pathlib import Path

import httpx
import orjson

from tests.web.conftest import Served, example

SAME_ORIGIN = {"sec-fetch-site": "same-origin"}


def test_table_shows_counts_and_filters_from_the_url(served: Served) -> None:
    with served.client() as http:
        for n in range(3):
            http.post(
                "/api/submit", json=example(id=f"tbl-{n}", riddle={"question": f"tbl question {n}"})
            )
        http.post("/api/hold", json={"ids": ["tbl-1"]})
        page = http.get("/app/table", params={"q": "tbl question", "queue": "hold"}).text
        rows = http.get("/app/table/rows", params={"q": "tbl question"}).text
    for queue in ("incoming", "hold", "waiting", "corrupt", "done", "failed"):
        assert f'data-queue="{queue}"' in page
    assert 'href="/app/riddle/tbl-1"' in page and 'href="/app/riddle/tbl-0"' not in page
    assert 'value="tbl question"' in page  # the filter stays in the form (and the URL)
    assert rows.count('name="id"') == 3 and 'hx-swap-oob="true"' in rows


def test_bad_filter_is_a_page_saying_which(served: Served) -> None:
    with served.client() as http:
        page = http.get("/app/table", params={"queue": "nowhere"})
    assert page.status_code == 400 and "queue: unknown queue" in page.text


def test_action_on_one_riddle_returns_to_its_page(served: Served) -> None:
    with served.client(**SAME_ORIGIN) as http:
        http.post("/api/submit", json=example(id="one-act"))
        before = http.get("/app/riddle/one-act").text
        assert 'id="action-hold"' in before and 'id="action-retry"' not in before
        done = http.post(
            "/app/act", data={"action": "hold", "id": "one-act", "back": "/app/riddle/one-act"}
        )
        assert done.status_code == 303
        page = http.get(done.headers["location"]).text
    assert 'id="riddle-queue">hold<' in page and "now in hold/" in page
    assert 'id="action-release"' in page and 'id="action-hold"' not in page


def test_action_on_ticked_rows_acts_on_those_it_can(served: Served) -> None:
    with served.client(**SAME_ORIGIN) as http:
        http.post("/api/submit", json=[example(id="tick-1"), example(id="tick-2")])
        http.post("/api/cancel", json={"ids": ["tick-2"]})
        done = http.post(
            "/app/act",
            data={
                "action": "hold",
                "id": ["tick-1", "tick-2"],
                "scope": "selection",
                "confirmed": "2",
            },
        )
    assert done.status_code == 200
    assert "1 riddle held, 1 left as it was" in done.text
    assert "tick-2: cannot hold: it is in failed/, final" in done.text


def test_action_on_everything_matching_asks_first(served: Served) -> None:
    with served.client(**SAME_ORIGIN) as http:
        http.post(
            "/api/submit",
            json=[example(id=f"bulk-{n}", riddle={"question": "bulk me"}) for n in range(4)],
        )
        form = {"action": "cancel", "scope": "filter", "q": "bulk me", "queue": "incoming"}
        asked = http.post("/app/act", data=form)
        assert asked.status_code == 200 and 'id="confirm"' in asked.text
        assert "<strong>cancel</strong> 4 riddles" in asked.text
        assert http.get("/api/result/bulk-0").json()["queue"] == "incoming"  # not yet
        # A count that no longer holds (riddles came or went) asks again.
        assert 'id="confirm"' in http.post("/app/act", data={**form, "confirmed": "3"}).text
        done = http.post("/app/act", data={**form, "confirmed": "4"})
        assert "4 riddles cancelled" in done.text
        queues = {http.get(f"/api/result/bulk-{n}").json()["queue"] for n in range(4)}
    assert queues == {"failed"}


def test_cancel_and_actions_on_ticked_rows_ask_first(served: Served) -> None:
    with served.client(**SAME_ORIGIN) as http:
        http.post("/api/submit", json=[example(id="ask-1"), example(id="ask-2")])
        form = {"action": "hold", "id": ["ask-1", "ask-2"], "scope": "selection"}
        asked = http.post("/app/act", data=form)
        assert 'id="confirm"' in asked.text and "<strong>hold</strong> 2 riddles" in asked.text
        one = {"action": "cancel", "id": "ask-1", "back": "/app/riddle/ask-1"}
        asked = http.post("/app/act", data=one)
        assert 'id="confirm"' in asked.text and "<strong>cancel</strong> 1 riddle " in asked.text
        assert {http.get(f"/api/result/{i}").json()["queue"] for i in ("ask-1", "ask-2")} == {
            "incoming"
        }  # nothing changed yet
        done = http.post("/app/act", data={**one, "confirmed": "1"})
        assert done.status_code == 303
        assert http.get("/api/result/ask-1").json()["queue"] == "failed"


def test_riddle_page_shows_history_and_the_command(served: Served) -> None:
    with served.client() as http:
        http.post("/api/submit", json=example(id="page-riddle", priority=2))
        page = http.get("/app/riddle/page-riddle").text
    assert 'id="timeline"' in page and "<td>submit</td>" in page
    assert (
        "riddlectl submit --question &#39;x * y =&#39; --context &#39;[Taschenrechner]&#39;" in page
    )
    assert "--priority 2" in page
    assert "&#34;id&#34;: &#34;page-riddle&#34;" in page  # the raw JSON


def test_live_stream_sends_counts_on_change(served: Served) -> None:
    with httpx.stream("GET", f"{served.url}/app/live", timeout=5) as stream:
        lines = stream.iter_lines()
        first = _next_data(lines)
        with served.client() as http:
            http.post("/api/submit", json=example(id="live-1"))
        second = _next_data(lines)
    assert '"counts"' in first and second != first


def _next_data(lines: object) -> str:
    for line in lines:  # type: ignore[attr-defined]
        if line.startswith("data:"):
            return str(line)
    raise AssertionError("stream ended")


def test_bulk_actions_report_where_each_riddle_now_is(served: Served) -> None:
    ids = ["where-1", "where-2"]
    with served.client(**SAME_ORIGIN) as http:
        http.post("/api/submit", json=[example(id=i) for i in ids])
        for action in ("hold", "release", "cancel", "retry"):
            form = {"action": action, "id": ids, "scope": "selection", "confirmed": "2"}
            done = http.post("/app/act", data=form)
            assert done.status_code == 200, done.text
            for riddle_id in ids:
                now = http.get(f"/api/result/{riddle_id}").json()["queue"]
                said = f'<a href="/app/riddle/{riddle_id}">{riddle_id}</a> → {now}/'
                assert said in done.text, (action, now, done.text)
    # Said as what happened, not as a queue's name with a count.
    assert "2 riddles put back to retry" in done.text and "retry: 2 done" not in done.text


def test_an_action_on_a_riddles_page_says_where_it_now_is(served: Served) -> None:
    with served.client(**SAME_ORIGIN) as http:
        http.post("/api/submit", json=example(id="note-hold"))
        done = http.post(
            "/app/act", data={"action": "hold", "id": "note-hold", "back": "/app/riddle/note-hold"}
        )
        assert done.status_code == 303
        page = http.get(done.headers["location"]).text
    assert 'id="note"' in page and "now in hold/" in page and "incoming" not in _note(page)


def test_the_notice_box_shows_no_text_from_the_url(served: Served) -> None:
    lure = "Your session expired, log in at http://evil.example"
    with served.client() as http:
        http.post("/api/submit", json=example(id="lured"))
        for query in (
            {"note": lure},
            {"notice": lure},
            {"done": lure},
            {"done": "hold", "to": lure},
            {"done": "release", "to": "<b>elsewhere</b>"},
        ):
            page = http.get("/app/riddle/lured", params=query)
            assert page.status_code == 200
            assert "evil.example" not in page.text and "elsewhere" not in page.text, query
            assert 'id="note"' not in page.text, query


def _note(page: str) -> str:
    start = page.index('id="note"')
    return page[start : page.index("</p>", start)]


def test_an_action_refused_on_a_riddles_page_says_why_there(served: Served) -> None:
    with served.client(**SAME_ORIGIN) as http:
        http.post("/api/submit", json=example(id="note-refused"))
        http.post("/api/cancel", json={"ids": ["note-refused"]})
        back = "/app/riddle/note-refused"
        refused = http.post("/app/act", data={"action": "hold", "id": "note-refused", "back": back})
    assert refused.status_code == 400
    assert "cannot hold: it is in failed/, final" in _note(refused.text)


def test_dashboard_draws_its_charts_and_the_series_are_json(served: Served) -> None:
    with served.client() as http:
        http.post("/api/submit", json=example(id="dash-1"))
        http.post("/api/cancel", json={"ids": ["dash-1"]})
        served.wait_for(lambda: http.get("/api/trends").json()["per_minute"]["failed"][-1] > 0)
        for window in ("hour", "day", "week"):
            page = http.get("/app", params={"window": window})
            assert page.status_code == 200
            for chart in ("chart-throughput", "chart-depth", "chart-handlers-"):
                assert f'<svg id="{chart}' in page.text
            assert "riddles per minute" in page.text and "milliseconds" in page.text
        series = http.get("/api/trends", params={"window": "day"}).json()
        spec = http.get("/openapi.json").json()
    assert series["step_seconds"] == 900 and len(series["starts"]) in (96, 97)
    assert set(series["depth"]) >= {"incoming", "hold"}
    assert "/api/trends" in spec["paths"] and "/api/corrupt" in spec["paths"]


def test_corrupt_page_lists_edits_and_resubmits(served: Served) -> None:
    spool_dir = Path(str(served.cli.spool))
    (spool_dir / "corrupt" / "broken.json").write_bytes(b'{"riddle": {"question": "x =" <b>')
    (spool_dir / "corrupt" / "broken.json.reason").write_text("incoming/broken.json: bad\n")
    with served.client(**SAME_ORIGIN) as http:
        page = http.get("/app/corrupt").text
        assert "incoming/broken.json: bad" in page and "&lt;b&gt;" in page and "<b>" not in page
        editor = http.get("/app/corrupt/edit", params={"name": "broken.json"}).text
        assert 'id="corrupt-text"' in editor
        wrong = http.post(
            "/app/corrupt/resubmit",
            data={"name": "broken.json", "text": '{\n"riddle": {"question": "x ="\n'},
        )
        assert wrong.status_code == 400 and 'id="bad-line"' in wrong.text
        done = http.post(
            "/app/corrupt/resubmit",
            data={"name": "broken.json", "text": '{"riddle": {"question": "x * y ="}}'},
        )
        assert done.status_code == 303 and done.headers["location"] == "/app/riddle/broken"
        assert http.get("/api/corrupt").json() == []


def test_a_page_says_which_version_it_shows_so_a_late_stream_still_redraws_it(
    served: Served,
) -> None:
    """A tab whose stream opens after a change it did not show must still redraw: the page
    carries the index version it was drawn from, and the stream's first event differs."""
    with served.client() as http:
        for page in ("/app", "/app/table"):
            drawn = _drawn_version(http.get(page).text)
            http.post("/api/submit", json=example(id=f"late-{page.count('/')}"))
            with httpx.stream("GET", f"{served.url}/app/live", timeout=5) as stream:
                lines = stream.iter_lines()
                first = orjson.loads(_next_data(lines).removeprefix("data:"))
                while first["version"] == drawn:  # the change is told within a batch or two
                    first = orjson.loads(_next_data(lines).removeprefix("data:"))
            assert first["version"] > drawn


def _drawn_version(page: str) -> int:
    found = re.search(r'data-live="/app/live" data-version="(\d+)"', page)
    assert found, "the live part of the page names no version"
    return int(found.group(1))


def test_the_count_bar_agrees_with_the_riddles_badge(fresh: Served) -> None:
    """A riddle moved where the server's watcher has not looked yet (by hand: no event
    tells it, and the listing is compared every ten seconds): its page's count bar counts
    it where its badge says it is."""
    with fresh.client() as http:
        http.post("/api/submit", json=example(id="moved")).raise_for_status()
        assert _count(http.get("/app/table").text, "incoming") == 1
        assert isinstance(fresh.cli.spool, Path)
        spool = fresh.cli.spool
        (spool / "incoming" / "moved.json").rename(spool / "extracted" / "moved.json")
        page = http.get("/app/riddle/moved").text
    assert 'id="riddle-queue">extracted<' in page
    assert _count(page, "extracted") == 1 and _count(page, "incoming") == 0


def _count(page: str, queue: str) -> int:
    found = re.search(rf'data-queue="{queue}"[^>]*>.*?<span class="n">(\d+)</span>', page)
    assert found, queue
    return int(found.group(1))


def test_a_riddle_offers_only_the_retries_that_apply(fresh: Served) -> None:
    """A riddle done did not fail: no *retry from where it failed* on its page; one that
    failed has it."""
    done, failed = "offers-done", "offers-failed"
    with fresh.client() as http:
        http.post("/api/submit", json=example(id=done)).raise_for_status()
        http.post("/api/submit", json=example(id=failed)).raise_for_status()
        http.post("/api/cancel", json={"ids": [failed]}).raise_for_status()
    assert fresh.cli("run", "--once", timeout=120).code == 0
    with fresh.client() as http:
        assert http.get(f"/api/result/{done}").json()["queue"] == "done"
        pages = {i: http.get(f"/app/riddle/{i}").text for i in (done, failed)}
    assert 'id="action-retry"' in pages[done] and "where it failed" not in pages[done]
    assert '<option value="solve" selected>' in pages[done]
    assert 'id="action-retry"' in pages[failed] and "where it failed" in pages[failed]


def test_handler_times_are_one_small_chart_per_stage(fresh: Served) -> None:
    """Each stage's p50 and p95 in a chart of its own (no legend of eight series to cut),
    each with its latest values in words; the failed total says what it counts."""
    with fresh.client() as http:
        http.post("/api/submit", json=example(id="timed")).raise_for_status()
    assert fresh.cli("run", "--once", timeout=120).code == 0
    with fresh.client() as http:
        fresh.wait_for(lambda: "validate" in http.get("/api/trends").json()["handler_ms"])
        page = http.get("/app").text
    for stage in ("extract", "solve", "validate"):
        chart = re.search(rf'<svg id="chart-handlers-{stage}".*?</svg>', page, re.S)
        assert chart, stage
        legends = re.findall(r'<text class="legend"[^>]*>([^<]*)</text>', chart.group(0))
        assert [legend.split()[-1] for legend in legends] == ["p50", "p95"], legends
        assert re.search(r"<desc [^>]*>[^<]*latest: p50 [\d.]+, p95 [\d.]+</desc>", chart.group(0))
    assert "counts each time" in page


def test_the_table_says_which_rows_of_how_many_it_shows_and_pages_through_them(
    fresh: Served,
) -> None:
    """ "1\N{EN DASH}3 of 7" over the rows the filter matches, and each next page goes on from
    where the last ended, to the last row and no further."""
    with fresh.client() as http:
        docs = [example(id=f"span-{n}", riddle={"question": f"span {n}"}) for n in range(7)]
        http.post("/api/submit", json=docs).raise_for_status()
        http.post("/api/submit", json=example(id="other")).raise_for_status()
        url, seen, said = "/app/table?q=span+&limit=3&sort=oldest", [], []
        while url:
            page = http.get(url).text
            said.append(re.search(r'<span id="span"[^>]*>([^<]*)<', page).group(1))  # type: ignore[union-attr]
            seen += re.findall(r'href="/app/riddle/(span-\d)"', page)
            more = re.search(r'id="next-page" href="([^"]+)"', page)
            url = more.group(1).replace("&amp;", "&") if more else ""
        nothing = http.get("/app/table/rows", params={"q": "no such words"}).text
    assert said == [f"{a}\N{EN DASH}{b} of 7" for a, b in ((1, 3), (4, 6), (7, 7))]
    assert seen == [f"span-{n}" for n in range(7)]
    assert '<span id="span" aria-live="polite">0 of 0</span>' in nothing


def test_the_corrupt_editor_checks_the_text_without_storing_it(fresh: Served) -> None:
    """What the editor asks as it is typed: the error beside the line it names, or how
    many riddles the text would become; the set-aside file stays where it is either way."""
    spool_dir = Path(str(fresh.cli.spool))
    (spool_dir / "corrupt" / "typo.json").write_bytes(b'{"riddle": {"question": "x =" ')
    (spool_dir / "corrupt" / "typo.json.reason").write_text("incoming/typo.json: bad\n")
    with fresh.client(**SAME_ORIGIN) as http:
        editor = http.get("/app/corrupt/edit", params={"name": "typo.json"}).text
        wrong = http.post(
            "/app/corrupt/check",
            data={"name": "typo.json", "text": '{\n"riddle": {"question": "x ="\n,,\n}'},
        )
        right = http.post(
            "/app/corrupt/check",
            data={"name": "typo.json", "text": '{"riddle": {"question": "x * y ="}}'},
        )
        listed = http.get("/api/corrupt").json()
        missing = http.post("/app/corrupt/check", data={"name": "nothing.json", "text": "{}"})
    assert 'hx-post="/app/corrupt/check"' in editor
    assert wrong.status_code == 200
    bad = re.search(r'<li class="bad" id="bad-line"><code>([^<]*)</code>', wrong.text)
    assert bad and bad.group(1) == ",,", wrong.text
    assert 'id="corrupt-ok">Can be submitted: 1 riddle.' in right.text
    assert [entry["name"] for entry in listed] == ["typo.json"]
    assert missing.status_code == 404
