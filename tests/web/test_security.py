"""The server's safe defaults, checked as an attacker or a careless operator would meet
them: binding, tokens, host names, cross-site POSTs, methods, read-only, the CSP, and a
prompt stop with live streams open."""

from __future__ import annotations

import re
import signal
import threading
from pathlib import Path

import httpx
import pytest

from tests.web.conftest import Served, example, make_cli, start

TOKEN = "s3cret-token-for-tests"


def test_non_loopback_without_token_is_refused_in_one_line(tmp_path: Path) -> None:
    cli = make_cli(tmp_path)
    for host in ("0.0.0.0", "::", "192.0.2.1", "example.org"):
        done = cli("serve", "--host", host, "--port", "0", timeout=20)
        assert done.code == 2, host
        assert done.err.count("\n") == 1 and "--token" in done.err, done.err
        assert "Traceback" not in done.err


def test_a_taken_port_is_one_line(served: Served) -> None:
    port = served.url.rsplit(":", 1)[1]
    done = served.cli("serve", "--port", port, timeout=20)
    assert done.code == 2
    assert done.err.startswith(f"riddlectl: 127.0.0.1:{port}: cannot listen"), done.err


def test_every_request_needs_the_token(tmp_path: Path) -> None:
    server = start(make_cli(tmp_path), "--token", TOKEN, token=TOKEN)
    try:
        with httpx.Client(base_url=server.url, timeout=10) as bare:
            for path in (
                "/app/table",
                "/api/status",
                "/metrics",
                "/openapi.json",
                "/static/app.js",
            ):
                assert bare.get(path).status_code == 401, path
            assert (
                bare.get("/api/status", headers={"authorization": "Bearer wrong"}).status_code
                == 401
            )
            assert bare.get("/api/status", headers={"authorization": f"Bearer {TOKEN}"}).is_success
            # A browser opens a page once with ?token=…: a cookie, and the page without it.
            hop = bare.get("/app/table", params={"token": TOKEN, "queue": "done"})
            assert hop.status_code == 303 and hop.headers["location"] == "/app/table?queue=done"
            assert (
                "HttpOnly" in hop.headers["set-cookie"]
                and "SameSite=Strict" in hop.headers["set-cookie"]
            )
            assert bare.get("/app/table?queue=done").status_code == 200  # the cookie now
    finally:
        server.stop()


def test_unknown_host_names_are_refused(served: Served) -> None:
    with served.client(host="attacker.example") as http:
        assert http.get("/api/status").status_code == 421
    with served.client(host="localhost:1234") as http:
        assert http.get("/api/status").status_code == 200


@pytest.mark.parametrize(
    ("target", "headers"),
    [
        ("csrf-1", {"sec-fetch-site": "cross-site"}),
        ("csrf-2", {"sec-fetch-site": "same-site"}),
        ("csrf-3", {"origin": "http://attacker.example"}),
        ("csrf-4", {"origin": "null"}),
    ],
)
def test_cross_site_posts_change_nothing(
    served: Served, target: str, headers: dict[str, str]
) -> None:
    with served.client() as http:
        http.post("/api/submit", json=example(id=target)).raise_for_status()
        for path, body in (("/api/hold", {"ids": [target]}), ("/api/submit", example())):
            refused = http.post(path, json=body, headers=headers)
            assert refused.status_code == 403, (path, headers)
        form = http.post("/app/act", data={"action": "hold", "id": target}, headers=headers)
        assert form.status_code == 403
        assert http.get(f"/api/result/{target}").json()["queue"] == "incoming"


def test_same_origin_posts_from_the_pages_are_taken(served: Served) -> None:
    origin = {"origin": served.url, "sec-fetch-site": "same-origin"}
    with served.client(**origin) as http:
        http.post("/api/submit", json=example(id="same-origin")).raise_for_status()
        done = http.post("/app/act", data={"action": "hold", "id": "same-origin"})
        assert done.status_code == 200
        assert http.get("/api/result/same-origin").json()["queue"] == "hold"


def test_only_get_and_post(served: Served) -> None:
    with served.client() as http:
        for method in ("PUT", "DELETE", "PATCH"):
            assert http.request(method, "/api/hold").status_code == 405
        # No GET changes anything: the action routes answer GET with 405.
        assert http.get("/api/hold").status_code == 405
        assert http.get("/app/act").status_code == 405


def test_strict_csp_and_no_inline_script(served: Served) -> None:
    with served.client() as http:
        http.post("/api/submit", json=example(id="csp-page")).raise_for_status()
        for path in ("/app/table", "/app/new", "/app/riddle/csp-page"):
            page = http.get(path)
            csp = page.headers["content-security-policy"]
            assert "script-src 'self'" in csp and "unsafe-inline" not in csp
            assert "frame-ancestors 'none'" in csp
            assert page.headers["x-frame-options"] == "DENY"
            html = page.text
            scripts = re.findall(r"<script\b[^>]*>", html)
            assert scripts and all("src=" in tag for tag in scripts), path
            assert not re.search(r"\son[a-z]+\s*=", html), path  # no onclick= and the like
            assert "hx-on" not in html and "javascript:" not in html


def test_read_only_refuses_changes_and_says_so(tmp_path: Path) -> None:
    server = start(make_cli(tmp_path), "--read-only")
    try:
        with server.client() as http:
            assert "Read-only" in http.get("/app/table").text
            refused = http.post("/api/submit", json=example(id="ro"))
            assert refused.status_code == 403 and "read-only" in refused.text
            assert http.post("/app/act", data={"action": "hold", "id": "ro"}).status_code == 403
            # The preview changes nothing, so it still works.
            preview = http.post("/app/preview", data={"question": "x * y ="})
            assert preview.status_code == 200 and "preview-ok" in preview.text
        assert server.cli("status", "ro").code == 3
    finally:
        server.stop()


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_stops_within_two_seconds_with_live_streams_open(tmp_path: Path, sig: int) -> None:
    server = start(make_cli(tmp_path))
    opened = threading.Barrier(4, timeout=10)

    def listen() -> None:
        with httpx.stream("GET", f"{server.url}/app/live", timeout=30) as stream:
            opened.wait()
            for _ in stream.iter_lines():
                pass

    threads = [threading.Thread(target=listen, daemon=True) for _ in range(3)]
    for thread in threads:
        thread.start()
    opened.wait()
    took = server.stop(sig)
    assert took < 2.0, took
    assert server.proc.returncode == (130 if sig == signal.SIGINT else 0)  # Ctrl-C says so
    for thread in threads:
        thread.join(5)
        assert not thread.is_alive()  # every stream ended with the server


def test_a_spool_that_cannot_be_used_is_one_line(tmp_path: Path) -> None:
    cli = make_cli(tmp_path)
    for spool, says in (
        (tmp_path / "missing", "no spool"),
        (Path("/etc/passwd"), "not a directory"),
    ):
        cli.spool = spool
        done = cli("serve", "--port", "0", timeout=20)
        assert done.code == 5 and done.err.count("\n") == 1 and says in done.err, done.err


def test_refusals_under_api_are_json_errors(tmp_path: Path) -> None:
    server = start(make_cli(tmp_path), "--token", TOKEN, token=TOKEN)
    try:
        with httpx.Client(base_url=server.url, timeout=10) as bare:
            refusals = [
                bare.get("/api/status"),
                bare.get("/api/status", headers={"authorization": "Bearer wrong"}),
                bare.get("/api/status", headers={"host": "attacker.example"}),
                bare.post(
                    "/api/hold",
                    json={"ids": ["x"]},
                    headers={"authorization": f"Bearer {TOKEN}", "sec-fetch-site": "cross-site"},
                ),
            ]
        for refused, status in zip(refusals, (401, 401, 421, 403), strict=True):
            assert refused.status_code == status
            assert refused.headers["content-type"] == "application/json"
            body = refused.json()
            assert set(body) == {"error", "where", "field"} and body["error"], body
        assert refusals[0].headers["www-authenticate"] == "Bearer"
        assert "Authorization: Bearer" in refusals[0].json()["error"]
        assert "cross-site" in refusals[3].json()["error"]
    finally:
        server.stop()


def test_a_page_without_the_token_says_how_a_browser_gives_it(tmp_path: Path) -> None:
    server = start(make_cli(tmp_path), "--token", TOKEN, token=TOKEN)
    try:
        with httpx.Client(base_url=server.url, timeout=10) as bare:
            page = bare.get("/app/table")
    finally:
        server.stop()
    assert page.status_code == 401
    assert "?token=" in page.text


def test_read_only_offers_no_action_it_would_refuse(tmp_path: Path) -> None:
    cli = make_cli(tmp_path)
    assert cli("submit", "--id", "ro-seen", "--question", "x * y =").code == 0
    server = start(cli, "--read-only")
    try:
        with server.client() as http:
            pages = {p: http.get(p).text for p in ("/app/new", "/app/table", "/app/riddle/ro-seen")}
            refused_api = http.post("/api/submit", json=example(id="ro"))
            refused_page = http.post("/app/new", data={"question": "x * y ="})
    finally:
        server.stop()
    new = pages["/app/new"]
    assert 'id="read-only"' in new and "read-only" in new.lower()
    assert 'id="submit"' not in new and 'id="upload-form"' not in new
    assert 'action="/app/new"' not in new and "/app/upload" not in new
    assert 'id="preview"' in new  # the preview changes nothing: it stays
    for path, page in pages.items():
        ticks = ('type="checkbox" name="id"', 'type="hidden" name="id"')
        for offered in ('action="/app/act"', 'name="action"', *ticks, 'href="/app/new"'):
            assert offered not in page, (path, offered)
    # What is refused anyway says so, in the form each side reads.
    assert refused_api.status_code == 403 and "read-only" in refused_api.json()["error"]
    assert refused_page.status_code == 403 and "read-only" in refused_page.text


@pytest.mark.parametrize("scheme", ["Bearer", "bearer", "BEARER", "bEaReR"])
def test_the_authorization_scheme_is_any_case(tmp_path: Path, scheme: str) -> None:
    """RFC 9110 (11.1): the scheme name is case-insensitive, so `bearer T` is `Bearer T`."""
    server = start(make_cli(tmp_path), "--token", TOKEN, token=TOKEN)
    try:
        with httpx.Client(base_url=server.url, timeout=10) as bare:
            given = bare.get("/api/status", headers={"authorization": f"{scheme} {TOKEN}"})
            wrong = bare.get("/api/status", headers={"authorization": f"{scheme} nope{TOKEN}"})
            other = bare.get("/api/status", headers={"authorization": f"Basic {TOKEN}"})
    finally:
        server.stop()
    assert given.status_code == 200, given.text
    assert wrong.status_code == 401 and other.status_code == 401


@pytest.mark.parametrize("site", ["same-origin", "none", "same-site", "cross-site"])
@pytest.mark.parametrize(
    "origin", ["http://evil.example", "null", "https://127.0.0.1", "http://127.0.0.1:1"]
)
def test_a_foreign_origin_is_refused_whatever_sec_fetch_site_says(
    served: Served, site: str, origin: str
) -> None:
    target = f"origin-{abs(hash((site, origin)))}"
    with served.client() as http:
        http.post("/api/submit", json=example(id=target)).raise_for_status()
        headers = {"sec-fetch-site": site, "origin": origin}
        refused = http.post("/api/hold", json={"ids": [target]}, headers=headers)
        form = http.post("/app/act", data={"action": "hold", "id": target}, headers=headers)
        assert refused.status_code == 403 and form.status_code == 403, (site, origin)
        assert http.get(f"/api/result/{target}").json()["queue"] == "incoming"
        # The server's own origin with the same header is taken.
        own = {"sec-fetch-site": "same-origin", "origin": served.url}
        assert http.post("/api/hold", json={"ids": [target]}, headers=own).status_code == 200
