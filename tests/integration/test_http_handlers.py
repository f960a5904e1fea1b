"""`http:URL` handlers against a real HTTP server the test starts: what each status class
means, a server too slow, one that drops the connection, a 50 MB reply; then through the
`riddlectl run` command, with a bearer token that must not be written anywhere."""

from __future__ import annotations

import os
import threading
import tracemalloc
from pathlib import Path

import pytest

from riddlectl.document import codec
from riddlectl.errors import ConfigError, HandlerFailed, HandlerRefused, HandlerTimeout
from riddlectl.handlers.base import Job
from riddlectl.handlers.registry import load
from riddlectl.handlers.reply import MAX_REPLY_BYTES
from riddlectl.handlers.transport import parse_retry_after
from riddlectl.settings import Settings
from tests.conftest import Cli, example_doc, write_json
from tests.endpoint import Endpoint, Scripted, serving

ANSWER = {"solution": "150", "explanation": "10 * 15"}


@pytest.fixture
def endpoint() -> Endpoint:
    with serving() as server:
        yield server


def job(timeout: float = 5.0, tmp: Path = Path(".")) -> Job:
    riddle = codec.to_riddle({**example_doc(), "id": "r1"}, "r1")
    return Job(riddle, "solve", tmp, tmp, timeout)


def call(url: str, timeout: float = 5.0, settings: Settings | None = None) -> object:
    return load(f"http:{url}", "solve", settings or Settings())(job(timeout))


def test_a_2xx_reply_is_the_answer_and_the_document_is_posted(endpoint: Endpoint) -> None:
    url = endpoint.route("/solve", Scripted(200, ANSWER))
    assert call(url) == ANSWER
    [request] = endpoint.seen("/solve")
    assert request.json()["riddle"]["question"] == "x * y ="
    assert request.headers["content-type"] == "application/json"
    assert request.headers["x-riddle-id"] == "r1"
    assert request.headers["x-riddle-stage"] == "solve"


def test_an_empty_2xx_reply_declines(endpoint: Endpoint) -> None:
    assert call(endpoint.route("/quiet", Scripted(204, b""))) == {}


def test_a_2xx_reply_that_is_no_json_object_is_an_error(endpoint: Endpoint) -> None:
    with pytest.raises(HandlerFailed, match="not an object"):
        call(endpoint.route("/list", Scripted(200, b"[1, 2]")))


def test_422_refuses_the_riddle_now_quoting_the_reason(endpoint: Endpoint) -> None:
    url = endpoint.route("/no", Scripted(422, b"cannot read this riddle"))
    with pytest.raises(HandlerRefused, match=r"HTTP 422\): cannot read this riddle"):
        call(url)


def test_429_is_retried_after_what_retry_after_says(endpoint: Endpoint) -> None:
    url = endpoint.route("/busy", Scripted(429, b"slow down", {"Retry-After": "7"}))
    with pytest.raises(HandlerFailed, match="HTTP 429") as caught:
        call(url)
    assert not isinstance(caught.value, HandlerRefused)
    assert caught.value.retry_after == 7.0


@pytest.mark.parametrize("status", [500, 502, 503])
def test_5xx_is_an_error_tried_again(endpoint: Endpoint, status: int) -> None:
    with pytest.raises(HandlerFailed, match=f"HTTP {status}") as caught:
        call(endpoint.route("/broken", Scripted(status, b"oops")))
    assert caught.value.retry_after is None


@pytest.mark.parametrize("status", [301, 401, 404])
def test_other_statuses_are_errors_tried_again(endpoint: Endpoint, status: int) -> None:
    url = endpoint.route("/odd", Scripted(status, b"", {"Location": "http://127.0.0.1:9/"}))
    with pytest.raises(HandlerFailed, match=f"HTTP {status}"):
        call(url)


def test_a_server_slower_than_the_timeout_times_out(endpoint: Endpoint) -> None:
    url = endpoint.route("/slow", Scripted(200, ANSWER, delay=2.0))
    with pytest.raises(HandlerTimeout, match=r"timed out after 0\.3 s"):
        call(url, timeout=0.3)


def test_a_dropped_connection_is_an_error_tried_again(endpoint: Endpoint) -> None:
    with pytest.raises(HandlerFailed, match="connection failed"):
        call(endpoint.route("/drop", Scripted(drop=True)))


def test_a_50_mb_reply_is_refused_before_it_is_all_read(endpoint: Endpoint) -> None:
    huge = Scripted(200, b"", stream_bytes=50 * 1024 * 1024)
    url = endpoint.route("/huge", huge)
    tracemalloc.start()
    try:
        with pytest.raises(HandlerFailed, match=f"over {MAX_REPLY_BYTES} bytes"):
            call(url, timeout=30)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 2 * MAX_REPLY_BYTES  # what is kept is bounded, not the reply's size
    assert huge.sent < 40 * 1024 * 1024  # the rest was never asked for


def test_a_declared_50_mb_reply_is_refused_unread(endpoint: Endpoint) -> None:
    size = 50 * 1024 * 1024
    big = Scripted(200, b"", {"Content-Length": str(size)}, stream_bytes=size)
    with pytest.raises(HandlerFailed, match=f"replied with {size} bytes"):
        call(endpoint.route("/big", big), timeout=30)
    assert big.sent < 40 * 1024 * 1024


@pytest.mark.parametrize("slots", [1, 3])
def test_calls_in_flight_per_endpoint_are_bounded(endpoint: Endpoint, slots: int) -> None:
    # Each port is an endpoint of its own: a fresh server per case, so fresh slots.
    settings = Settings(endpoint_concurrency=slots)
    url = endpoint.route("/slow", Scripted(200, ANSWER, delay=0.3))
    handlers = [load(f"http:{url}", "solve", settings) for _ in range(2)]  # one endpoint
    threads = [threading.Thread(target=handlers[n % 2], args=(job(),)) for n in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(endpoint.seen("/slow")) == 6
    assert endpoint.most_in_flight == slots


def test_retry_after_as_seconds_or_as_a_date() -> None:
    assert parse_retry_after("120") == 120.0
    assert parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT", now=1445412470.0) == 10.0
    assert parse_retry_after("soon") is None


def test_a_header_naming_an_unset_variable_is_a_config_error() -> None:
    settings = Settings(http_headers={"Authorization": "Bearer ${NO_SUCH_TOKEN_VAR}"})
    with pytest.raises(ConfigError, match="NO_SUCH_TOKEN_VAR is not set"):
        load("http:http://127.0.0.1:9/", "solve", settings)


def test_extract_posts_the_item_with_its_text(endpoint: Endpoint, data_dir: Path) -> None:
    url = endpoint.route("/extract", Scripted(200, {"variables": {"x": "10"}}))
    handler = load(f"http:{url}", "extract", Settings())
    riddle = codec.to_riddle({**example_doc(), "id": "r1"}, "r1")
    item = data_dir / "example" / "x.txt"
    found = handler(Job(riddle, "extract", data_dir, data_dir, 5.0, 0, item))
    assert found == {"variables": {"x": "10"}}
    sent = endpoint.seen("/extract")[0].json()
    assert sent["item"]["text"] == "x = 10\n"
    assert sent["item"]["file_plain"] == "example/x.txt"
    assert sent["riddle"]["id"] == "r1"


# -- through the command line ---------------------------------------------------------------

TOKEN = "tok-3f9a1c-very-secret"


def run(cli: Cli, url: str, *extra: str) -> str:
    riddle_id = cli("submit", str(write_json(Path("r.json"), example_doc()))).out.strip()
    done = cli(
        "run",
        "--once",
        "--quiet",
        "--handler",
        f"solve=http:{url}",
        *extra,
        env={"MY_TOKEN": TOKEN},
        timeout=60,
    )
    assert TOKEN not in done.out + done.err
    return riddle_id


def shown(cli: Cli, riddle_id: str) -> dict[str, object]:
    doc = cli("show", riddle_id).json()
    assert isinstance(doc, dict)
    return doc


def no_token_anywhere(spool: Path) -> None:
    for folder, _, files in os.walk(spool):
        for name in files:
            assert TOKEN.encode() not in (Path(folder) / name).read_bytes(), name


@pytest.fixture
def with_token(cli: Cli) -> Cli:
    (cli.spool / "config.toml").write_text('[http_headers]\nAuthorization = "Bearer ${MY_TOKEN}"\n')
    return cli


def test_run_solves_with_an_endpoint_sending_the_token(with_token: Cli, endpoint: Endpoint) -> None:
    riddle_id = run(with_token, endpoint.route("/solve", Scripted(200, ANSWER)))
    doc = shown(with_token, riddle_id)
    assert doc["solution"]["solution"] == "150"  # type: ignore[index]
    assert doc["status"]["solved"] is True  # type: ignore[index]
    assert endpoint.seen("/solve")[0].headers["authorization"] == f"Bearer {TOKEN}"
    no_token_anywhere(with_token.spool)


def test_run_fails_a_refused_riddle_at_once(with_token: Cli, endpoint: Endpoint) -> None:
    riddle_id = run(with_token, endpoint.route("/no", Scripted(422, b"not my kind")))
    doc = shown(with_token, riddle_id)
    assert "HTTP 422" in str(doc["error"]) and "not my kind" in str(doc["error"])
    assert len(endpoint.seen("/no")) == 1


def test_run_waits_out_retry_after_then_solves(with_token: Cli, endpoint: Endpoint) -> None:
    url = endpoint.route("/busy", Scripted(429, b"", {"Retry-After": "2"}), Scripted(200, ANSWER))
    riddle_id = run(with_token, url)
    doc = shown(with_token, riddle_id)
    solves = [e for e in doc["history"] if e["stage"] == "solve"]  # type: ignore[union-attr]
    assert [e["outcome"] for e in solves] == ["error", "ok"]
    assert "HTTP 429" in solves[0]["error"]
    # The back-off alone would have waited 0.5 s; the server asked for 2.
    assert solves[1]["time"] - solves[0]["time"] >= 2.0


def test_run_fails_after_max_attempts_of_5xx_with_the_token_redacted(
    with_token: Cli, endpoint: Endpoint
) -> None:
    # A server that echoes the request's headers in its error page.
    url = endpoint.route("/down", Scripted(503, f"bad gateway; got Bearer {TOKEN}".encode()))
    riddle_id = run(with_token, url, "--max-attempts", "2")
    doc = shown(with_token, riddle_id)
    assert "failed after 2 attempts" in str(doc["error"])
    assert "HTTP 503" in str(doc["error"]) and "[redacted]" in str(doc["error"])
    assert len(endpoint.seen("/down")) == 2
    no_token_anywhere(with_token.spool)


def bare_url_solves(cli: Cli, riddle_id: str) -> None:
    doc = shown(cli, riddle_id)
    assert doc["solution"]["solution"] == "150", doc.get("error")  # type: ignore[index]


def test_a_bare_url_is_an_http_handler_in_run(cli: Cli, endpoint: Endpoint) -> None:
    url = endpoint.route("/bare", Scripted(200, ANSWER))
    riddle_id = cli("submit", str(write_json(Path("r.json"), example_doc()))).out.strip()
    done = cli("run", "--once", "--quiet", "--handler", f"solve={url}")
    assert done.code == 0, done.err
    bare_url_solves(cli, riddle_id)
    assert len(endpoint.seen("/bare")) == 1


def test_a_bare_url_is_an_http_handler_in_agent(cli: Cli, endpoint: Endpoint) -> None:
    url = endpoint.route("/bare", Scripted(200, ANSWER))
    riddle_id = cli("submit", "--no-extract", "--no-validate", "--question", "x * y =").out.strip()
    done = cli("agent", "solve", "--once", "--handler", url)
    assert done.code == 0, done.err
    bare_url_solves(cli, riddle_id)


def test_a_bare_url_is_an_http_handler_in_config(cli: Cli, endpoint: Endpoint) -> None:
    url = endpoint.route("/bare", Scripted(200, ANSWER))
    (cli.spool / "config.toml").write_text(f'[handlers]\nsolve = ["{url}"]\n')
    riddle_id = cli("submit", str(write_json(Path("r.json"), example_doc()))).out.strip()
    done = cli("run", "--once", "--quiet")
    assert done.code == 0, done.err
    bare_url_solves(cli, riddle_id)
