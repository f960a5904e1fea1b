"""`/api/status` lists every riddle that matches, as `status --json` does; with `limit`,
`more` says how many it left out."""

from __future__ import annotations

from tests.web.conftest import Served, example


def test_the_api_status_is_complete_unless_limited(served: Served) -> None:
    with served.client() as http:
        for n in range(25):
            assert http.post("/api/submit", json=example(id=f"l{n:02}")).status_code == 201
        whole = http.get("/api/status").json()
        assert len([r for r in whole["riddles"] if r["id"].startswith("l")]) == 25
        assert whole["more"] == 0
        cut = http.get("/api/status", params={"limit": 5}).json()
        assert len(cut["riddles"]) == 5 and cut["more"] == whole["counts"]["incoming"] - 5
        staged = http.get("/api/status", params={"stage": "incoming"}).json()
        assert len(staged["riddles"]) == whole["counts"]["incoming"]
