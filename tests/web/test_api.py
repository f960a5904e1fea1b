"""The JSON API against a real server: the command line's verbs, their errors as HTTP
statuses, the actions recorded as the agent `web`, and the OpenAPI document."""

from __future__ import annotations

import time

import orjson

from tests.web.conftest import Served, example


def test_submit_then_status_show_result(served: Served) -> None:
    with served.client() as http:
        made = http.post("/api/submit", json=example(id="api-one", priority=3))
        assert made.status_code == 201, made.text
        assert made.json() == {"ids": ["api-one"]}
        status = http.get("/api/status", params={"id": "api-one"}).json()
        assert status["riddles"][0]["queue"] == "incoming"
        assert status["riddles"][0]["priority"] == 3
        assert status["counts"]["incoming"] >= 1
        shown = http.get("/api/show/api-one").json()
        assert shown["id"] == "api-one" and shown["riddle"]["question"] == "x * y ="
        result = http.get("/api/result/api-one").json()
        assert result == {
            "id": "api-one", "queue": "incoming", "final": False, "solved": False,
            "solution": None, "error": None,
        }  # fmt: skip
    # What the API stored, the command line sees.
    assert served.cli("show", "api-one").code == 0


def test_submit_refusals_name_the_field_and_store_nothing(served: Served) -> None:
    with served.client() as http:
        outside = http.post("/api/submit", json=example(data=[{"file_plain": "../etc/passwd"}]))
        assert outside.status_code == 400
        assert outside.json()["field"] == "data[0].file_plain"
        empty = http.post("/api/submit", json={"riddle": {"question": " "}})
        assert empty.status_code == 400 and empty.json()["field"] == "riddle.question"
        both = [example(id="api-pair-1"), example(id="api-pair-1")]
        assert http.post("/api/submit", json=both).status_code == 400
        assert http.get("/api/show/api-pair-1").status_code == 404
        assert http.post("/api/submit", json=example(id="api-dup")).status_code == 201
        again = http.post("/api/submit", json=example(id="api-dup"))
        assert again.status_code == 409 and "already" in again.json()["error"]


def test_actions_are_the_commands_and_are_logged_as_web(served: Served) -> None:
    with served.client() as http:
        http.post("/api/submit", json=example(id="act-1"))
        held = http.post("/api/hold", json={"ids": ["act-1"]})
        assert held.status_code == 200
        assert held.json()["done"] == [{"id": "act-1", "queue": "hold", "detail": "incoming"}]
        assert http.get("/api/result/act-1").json()["queue"] == "hold"
        # An unknown id among several: nothing is done (as on the command line).
        mixed = http.post("/api/release", json={"ids": ["act-1", "no-such"]})
        assert mixed.status_code == 404
        assert http.get("/api/result/act-1").json()["queue"] == "hold"
        assert http.post("/api/release", json={"ids": ["act-1"]}).status_code == 200
        cancelled = http.post("/api/cancel", json={"ids": ["act-1"]})
        assert cancelled.json()["done"] == [{"id": "act-1", "queue": "failed", "detail": "act-1"}]
        assert http.get("/api/result/act-1").json()["error"] == "cancelled"
        retried = http.post("/api/retry", json={"ids": ["act-1"], "from": "solve"})
        assert retried.json()["done"] == [
            {"id": "act-1", "queue": "extracted", "detail": "extracted"}
        ]
        events = http.get("/api/events", params={"id": "act-1"}).json()
    stages = [(e["stage"], e["agent"]) for e in events]
    assert stages[-4:] == [("hold", "web"), ("release", "web"), ("cancel", "web"), ("retry", "web")]
    logged = [orjson.loads(line) for line in served.cli("events").out.splitlines()]
    assert {e["agent"] for e in logged if e["id"] == "act-1" and e["stage"] == "retry"} == {"web"}


def test_refused_action_says_why(served: Served) -> None:
    with served.client() as http:
        http.post("/api/submit", json=example(id="act-2"))
        http.post("/api/cancel", json={"ids": ["act-2"]})
        refused = http.post("/api/hold", json={"ids": ["act-2"]})
        assert refused.status_code == 400
        assert (
            refused.json()["refused"][0]["error"] == "act-2: cannot hold: it is in failed/, final"
        )
        bad_step = http.post("/api/retry", json={"ids": ["act-2"], "from": "dance"})
        assert bad_step.status_code == 422  # refused by the schema before any action
        assert bad_step.json()["detail"][0]["loc"] == ["body", "from"]


def test_unknown_riddle_is_404_everywhere(served: Served) -> None:
    with served.client() as http:
        for path in ("/api/show/nope", "/api/result/nope", "/app/riddle/nope"):
            assert http.get(path).status_code == 404, path
        odd = http.get("/api/show/%E2%9C%93%20x")
        assert odd.status_code == 404 and "not a valid riddle id" in odd.json()["error"]


def test_table_rows_as_json_with_keyset_pages(served: Served) -> None:
    with served.client() as http:
        for n in range(7):
            http.post("/api/submit", json=example(id=f"page-{n}", priority=100 + n))
        seen, after = [], None
        while True:
            params = {"q": "page-", "limit": "3", **({"after": after} if after else {})}
            page = http.get("/api/riddles", params=params).json()
            seen += [r["id"] for r in page["riddles"]]
            after = page["next"]
            if after is None:
                break
    assert seen == [f"page-{n}" for n in reversed(range(7))]  # highest priority first
    with served.client() as http:
        bad = http.get("/api/riddles", params={"sort": "sideways"})
        assert bad.status_code == 422 and bad.json()["detail"][0]["loc"] == ["query", "sort"]
        cursor = http.get("/api/riddles", params={"after": "bm90LWEtY3Vyc29y"})
        assert cursor.status_code == 400 and cursor.json()["where"] == "after"


def test_openapi_document_lists_the_verbs(served: Served) -> None:
    with served.client() as http:
        spec = http.get("/openapi.json").json()
    paths = set(spec["paths"])
    for verb in ("submit", "status", "retry", "hold", "release", "cancel", "events"):
        assert f"/api/{verb}" in paths
    assert {"/api/show/{riddle_id}", "/api/result/{riddle_id}", "/metrics"} <= paths
    assert not any(p.startswith("/app") for p in paths)
    assert "/api/agents" in paths
    listed = spec["components"]["schemas"]["Agents"]["properties"]
    assert set(listed) == {"alive", "gone"}


def test_agents_alive_and_gone_as_json(served: Served) -> None:
    with served.client() as http:
        listed = http.get("/api/agents")
    assert listed.status_code == 200
    assert set(listed.json()) == {"alive", "gone"}
    assert listed.json() == orjson.loads(served.cli("agents", "--json").out)


def test_metrics_text_and_the_command_agree(served: Served) -> None:
    with served.client() as http:
        http.post("/api/submit", json=example(id="metric-1"))
        served.wait_for(lambda: 'stage="submit"' in http.get("/metrics").text)
        scraped = http.get("/metrics")
    assert scraped.headers["content-type"].startswith("text/plain; version=0.0.4")
    text = scraped.text
    assert "# TYPE riddlectl_riddles gauge" in text
    assert 'riddlectl_riddles{queue="corrupt"} 0' in text
    assert 'riddlectl_transitions_total{stage="submit",outcome="ok"}' in text
    printed = served.cli("metrics")
    assert printed.code == 0
    families = {line.split()[2] for line in printed.out.splitlines() if line.startswith("# TYPE")}
    assert families == {
        "riddlectl_riddles", "riddlectl_agents", "riddlectl_transitions_total",
        "riddlectl_failures_total", "riddlectl_handler_duration_seconds",
        "riddlectl_oldest_age_seconds",
    }  # fmt: skip
    assert 'riddlectl_agents{stage="solve"} 0' in text


def test_the_age_of_the_oldest_riddle_per_queue(fresh: Served) -> None:
    assert fresh.cli("submit", "--id", "old-1", "--question", "x =").code == 0
    time.sleep(2.2)
    assert fresh.cli("submit", "--id", "new-1", "--question", "x =").code == 0
    with fresh.client() as http:
        fresh.wait_for(lambda: 'riddlectl_riddles{queue="incoming"} 2' in http.get("/metrics").text)
        scraped = http.get("/metrics").text
    printed = fresh.cli("metrics").out
    for text in (scraped, printed):
        ages = {
            line.split('"')[1]: float(line.split()[-1])
            for line in text.splitlines()
            if line.startswith("riddlectl_oldest_age_seconds{")
        }
        assert ages["incoming"] >= 2.0 and ages["done"] == 0.0, text
        assert set(ages) == {"incoming", "extracted", "solved", "validated", "done", "failed",
                             "waiting", "hold"}  # fmt: skip
