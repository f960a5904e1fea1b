"""`riddlectl bench --web` on a small spool: every figure is there and the riddles of
the live phase all flowed (the figures themselves are the bench's to report)."""

from __future__ import annotations

from tests.conftest import Cli


def test_bench_web_reports_every_page_and_the_live_phase(cli: Cli) -> None:
    done = cli(
        "bench", "--web", "--web-riddles", "300", "--web-events", "2000", "--riddles", "30",
        "--web-samples", "5",
        "--json", timeout=240,
    )  # fmt: skip
    assert done.code == 0, done.err
    outcome = done.json()
    assert isinstance(outcome, dict)
    assert set(outcome["pages"]) == {
        "first", "filtered", "search", "deep", "dashboard", "dashboard-week", "trends-json",
        "corrupt", "agents", "agents-json",
    }  # fmt: skip
    assert outcome["options"]["events"] == 2000 and outcome["folded_s"] >= 0
    assert outcome["options"]["samples"] == 5
    for name, page in outcome["pages"].items():
        assert page["server_p50_ms"] > 0 and page["server_p95_ms"] >= page["server_p50_ms"], name
    assert outcome["pages"]["first"]["rows"] == 50
    assert outcome["pages"]["search"]["rows"] == 1  # one in a thousand, from 300: b0000007
    # The agents pages are timed with an agent per stage alive, and the live phase's gone.
    assert outcome["agents_listed"] == {"alive": 4, "gone": 1}
    live = outcome["live"]
    assert live["tabs"] == 20 and live["riddles"] == 30 and live["agents_exit"] == 0
    assert live["refreshes"] >= 20  # each tab heard of the flow at least once
