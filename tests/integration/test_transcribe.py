"""`transcribe:MODEL` against a real recogniser behind a real endpoint (faster-whisper
with Whisper `tiny.en`, `scripts/transcribe-server`, started here and tied to the test
session), against stand-in servers that answer garbage, 500 or nothing, and the
`audio_policy` that makes a heard value need two recognisers."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import orjson
import pytest

from riddlectl.bench.extractors.speech import TOOLS, synthesise
from tests import tether
from tests.conftest import Cli, final, submit_documents
from tests.endpoint import Endpoint, Scripted, serving
from tests.integration.test_speech import seed_riddle

pytestmark = pytest.mark.skipif(
    any(shutil.which(tool) is None for tool in TOOLS),
    reason="espeak-ng and sox are needed (scripts/debian-packages installs them)",
)
ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "transcribe-server"
STARTUP = 120.0


@pytest.fixture(scope="session")
def transcribe_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The base URL (…/v1) of a running transcription server."""
    if subprocess.run([str(SCRIPT), "status"], capture_output=True).returncode != 0:
        if os.environ.get("CI") == "true":
            pytest.fail("transcribe server: not built")
        pytest.skip("transcribe server: not built (run scripts/transcribe-server build)")
    log_dir = tmp_path_factory.mktemp("transcribe-server")
    with tether.serving(SCRIPT, "transcribe server", log_dir, STARTUP) as base:
        yield base


@pytest.fixture
def endpoint() -> Iterator[Endpoint]:
    with serving() as server:
        yield server


def run(cli: Cli, base: str, *handlers: str, env: dict[str, str] | None = None) -> None:
    flags = [arg for name in handlers for arg in ("--handler", f"extract={name}")]
    done = cli(
        "run", "--once", "--max-attempts", "2", *flags, env={"OPENAI_BASE_URL": base, **(env or {})}
    )
    assert done.code in (0, 1), done.err


def verbose(text: str) -> dict:
    return {"task": "transcribe", "language": "en", "text": text,
            "segments": [{"text": text, "avg_logprob": -0.2, "no_speech_prob": 0.01}]}  # fmt: skip


def test_seed_riddle_heard_through_the_endpoint_answers_170(
    cli: Cli, transcribe_server: str
) -> None:
    synthesise("z equals twenty", cli.data / "z.wav", "en-us", rate=22050)
    submit_documents(cli, seed_riddle("heard"))
    run(cli, transcribe_server, "transcribe:tiny.en", "text")
    queue, doc = final(cli, "heard")
    assert queue == "done", (doc.get("error"), doc.get("history"), doc.get("rejected"))
    assert cli("result", "heard").out == "170\n"
    extraction = orjson.loads((cli.spool / doc["data"][2]["file_extracted"]).read_bytes())
    assert extraction["extractor"] == "transcribe:tiny.en"
    assert extraction["variables"] == {"z": "20"}
    assert 0 < extraction["confidence"] <= 1
    assert extraction["recogniser"]["segments"][0]["avg_logprob"] < 0
    assert "rests on heard values: z = 20 (z.wav: 'z equals 20." in doc["solution"]["review"]


@pytest.mark.parametrize(
    ("reply", "error"),
    [
        (Scripted(200, b"<html>gateway</html>"), "the reply is not JSON: '<html>gateway</html>'"),
        (Scripted(200, {"words": "z equals 20"}), 'the reply has no transcription (no "text")'),
        (Scripted(500, b"model crashed"), "transcribe:scripted answered HTTP 500: model crashed"),
        (
            Scripted(200, verbose("z equals 20."), delay=5),
            "transcribe:scripted timed out after 2 s",
        ),
    ],
)
def test_a_broken_endpoint_fails_the_riddle_in_one_line(
    cli: Cli, endpoint: Endpoint, reply: Scripted, error: str
) -> None:
    synthesise("z equals twenty", cli.data / "z.wav", "en-us")
    endpoint.route("/v1/audio/transcriptions", reply, reply)
    submit_documents(cli, seed_riddle("broken"))
    run(cli, f"{endpoint.url}/v1", "transcribe:scripted", "text", env={"RIDDLECTL_TIMEOUT": "2"})
    queue, doc = final(cli, "broken")
    assert queue == "failed"
    assert error in doc["error"] and "\n" not in doc["error"], doc["error"]
    [request, *_] = endpoint.seen("/v1/audio/transcriptions")
    assert request.headers["content-type"].startswith("multipart/form-data; boundary=")
    for field in (b'name="model"\r\n\r\nscripted', b"verbose_json", b'name="language"\r\n\r\nen'):
        assert field in request.body
    assert b'name="prompt"\r\n\r\nx equals 20. y is 15. z equals 3.' in request.body


def run_under_agree(
    cli: Cli, endpoint: Endpoint, riddle_id: str, said: str, transcribed: str
) -> None:
    """The seed riddle with `z` from a recording that says `said`, heard by the built-in
    recogniser and by an endpoint that transcribes it as `transcribed`, under `agree`."""
    synthesise(said, cli.data / "z.wav", "en-us")
    endpoint.route("/v1/audio/transcriptions", Scripted(200, verbose(transcribed)))
    submit_documents(cli, seed_riddle(riddle_id))
    env = {"RIDDLECTL_AUDIO_POLICY": "agree"}
    run(cli, f"{endpoint.url}/v1", "speech", "transcribe:scripted", "text", env=env)


def test_agree_fails_now_when_the_recognisers_differ(cli: Cli, endpoint: Endpoint) -> None:
    run_under_agree(cli, endpoint, "unsure", "z equals fifty", "Z equals 60.")
    queue, doc = final(cli, "unsure")
    assert queue == "failed"
    assert doc["error"].startswith("unsure: heard 'z equals fifty' and 'Z equals 60.'"), doc[
        "error"
    ]
    assert len(endpoint.seen("/v1/audio/transcriptions")) == 1  # failed now, not retried


def test_agree_accepts_what_both_heard_and_the_review_says_so(cli: Cli, endpoint: Endpoint) -> None:
    run_under_agree(cli, endpoint, "sure", "z equals twenty", "z equals 20.")
    assert cli("result", "sure").out == "170\n"
    _, doc = final(cli, "sure")
    review = doc["solution"]["review"]
    assert "z = 20 (z.wav: speech: 'z equals twenty', confidence 1.0 and " in review, review
    assert "transcribe:scripted: 'z equals 20.', confidence 0.81" in review, review


def test_agree_with_one_recogniser_is_refused_at_start(cli: Cli) -> None:
    done = cli("run", "--once", env={"RIDDLECTL_AUDIO_POLICY": "agree"})
    assert done.code == 2
    assert "agree needs two extract handlers of different kinds reading audio" in done.err
    assert len(done.err.strip().splitlines()) == 1, done.err
    wrong = cli("run", "--once", env={"RIDDLECTL_AUDIO_POLICY": "sure"})
    assert wrong.code == 2 and "audio_policy" in wrong.err and "best, agree" in wrong.err


def test_the_bench_reports_each_recogniser_and_agree(
    endpoint: Endpoint, monkeypatch: pytest.MonkeyPatch
) -> None:
    from riddlectl.bench.extractors.runner import run_extractor_bench

    endpoint.route("/v1/audio/transcriptions", *[Scripted(200, verbose("q is 1."))] * 6)
    monkeypatch.setenv("OPENAI_BASE_URL", f"{endpoint.url}/v1")
    monkeypatch.setenv("RIDDLECTL_BENCH_TRANSCRIBE", "scripted")
    rows = run_extractor_bench(3, seed=1, types=["audio"])["extractors"]
    names = [row["extractor"] for row in rows]
    assert names == ["speech", "transcribe:scripted", "agree:speech+transcribe:scripted"]
    for row in rows:
        assert row["exact"] + row["wrong"] + row["refused"] == row["cases"] == 3
    assert rows[1]["refused"] == rows[2]["refused"] == 3  # `q is 1` names no variable
