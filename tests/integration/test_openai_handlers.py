"""`openai:MODEL` handlers through `riddlectl run`, against a real HTTP server that the
test scripts with chat-completion replies no model could be relied on to give: what is
sent, what is recorded, the bounds, and the key kept out of everything. (The same
handlers against a real model: tests/models/.)"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import Cli, example_doc, logged_events, write_json
from tests.endpoint import Endpoint, Scripted, completion, serving

KEY = "sk-test-5b1d8e0c2f-do-not-leak"
PATH = "/v1/chat/completions"


@pytest.fixture
def endpoint() -> Endpoint:
    with serving() as server:
        yield server


@pytest.fixture
def model_cli(cli: Cli, endpoint: Endpoint) -> Cli:
    (cli.spool / "config.toml").write_text(f'openai_base_url = "{endpoint.url}/v1"\n')
    return cli


def replies(endpoint: Endpoint, *contents: Any) -> None:
    endpoint.route(PATH, *(Scripted(200, completion(c)) for c in contents))


def run(cli: Cli, *flags: str, doc: dict[str, Any] | None = None) -> dict[str, Any]:
    """Submit a riddle, run until nothing moves; the riddle as stored."""
    riddle_id = cli("submit", str(write_json(Path("r.json"), doc or example_doc()))).out.strip()
    done = cli("run", "--once", "--quiet", *flags, env={"OPENAI_API_KEY": KEY}, timeout=90)
    assert KEY not in done.out + done.err
    assert "Traceback" not in done.err
    shown = cli("show", riddle_id).json()
    assert isinstance(shown, dict)
    return shown


def entries(doc: dict[str, Any], stage: str) -> list[dict[str, Any]]:
    return [e for e in doc["history"] if e["stage"] == stage]


def no_key_anywhere(spool: Path) -> None:
    for folder, _, files in os.walk(spool):
        for name in files:
            assert KEY.encode() not in (Path(folder) / name).read_bytes(), name


def test_a_solution_from_the_model_with_its_usage_in_history_and_events(
    model_cli: Cli, endpoint: Endpoint
) -> None:
    replies(endpoint, {"explanation": "10 * 15", "answer": "150"})
    doc = run(model_cli, "--handler", "solve=openai:tiny-1")
    assert doc["solution"]["solution"] == "150" and doc["solution"]["accepted"] is True
    [solved] = entries(doc, "solve")
    usage = {"model": "scripted", "calls": 1, "prompt_tokens": 11}
    assert usage.items() <= solved["usage"]["openai:tiny-1"].items()
    assert solved in logged_events(model_cli)
    [request] = endpoint.seen(PATH)
    assert request.headers["authorization"] == f"Bearer {KEY}"
    body = request.json()
    assert body["model"] == "tiny-1" and body["temperature"] == 0
    assert body["max_tokens"] == 512
    form = body["response_format"]
    assert form["type"] == "json_schema"
    assert form["json_schema"]["schema"]["anyOf"][0]["required"] == ["explanation", "answer"]
    prompt = body["messages"][-1]["content"]
    assert "x * y =" in prompt and '"variables":{"x":"10"}' in prompt
    no_key_anywhere(model_cli.spool)


def test_json_object_format_for_llama_cpp_python(model_cli: Cli, endpoint: Endpoint) -> None:
    with (model_cli.spool / "config.toml").open("a") as config:
        config.write('openai_response_format = "json_object"\nopenai_max_tokens = 64\n')
    replies(endpoint, {"explanation": "", "answer": "150"})
    run(model_cli, "--handler", "solve=openai:tiny")
    body = endpoint.seen(PATH)[0].json()
    assert body["response_format"]["type"] == "json_object"
    assert "anyOf" in body["response_format"]["schema"]
    assert body["max_tokens"] == 64


def test_a_model_validator_rejects_and_its_review_is_in_the_next_prompt(
    model_cli: Cli, endpoint: Endpoint
) -> None:
    replies(
        endpoint,
        {"explanation": "guess", "answer": "25"},
        {"review": "25 is x + y; the question multiplies", "accept": False},
        {"explanation": "10 * 15", "answer": "150"},
        {"review": "right", "accept": True},
    )
    doc = run(model_cli, "--handler", "solve=openai:m", "--handler", "validate=openai:m")
    assert doc["solution"]["solution"] == "150" and doc["solution"]["review"] == "right"
    assert doc["riddle"]["solutions_before"][0]["review"].startswith("25 is x + y")
    third = endpoint.seen(PATH)[2].json()["messages"][-1]["content"]
    assert "'25': 25 is x + y; the question multiplies" in third
    checked = endpoint.seen(PATH)[1].json()
    assert list(checked["response_format"]["json_schema"]["schema"]["properties"]) == [
        "review",
        "accept",
    ]
    assert all("usage" in e for e in entries(doc, "validate"))


def test_a_reply_that_does_not_fit_the_schema_is_retried_then_fails(
    model_cli: Cli, endpoint: Endpoint
) -> None:
    replies(endpoint, {"explanation": "", "answer": "a lot"})
    doc = run(model_cli, "--handler", "solve=openai:m", "--max-attempts", "2")
    assert "failed after 2 attempts" in doc["error"]
    assert "does not fit the answer's schema" in doc["error"]
    errors = entries(doc, "solve")
    assert [e["outcome"] for e in errors] == ["error", "error"]
    assert all(e["usage"]["openai:m"]["calls"] == 1 for e in errors)


def test_a_reply_cut_at_max_tokens_is_an_error(model_cli: Cli, endpoint: Endpoint) -> None:
    cut = completion('{"explanation": "10 times', finish="length")
    endpoint.route(PATH, Scripted(200, cut))
    doc = run(model_cli, "--handler", "solve=openai:m", "--max-attempts", "1")
    assert "cut at openai_max_tokens (512)" in doc["error"]


def test_model_calls_per_riddle_are_bounded(model_cli: Cli, endpoint: Endpoint) -> None:
    with (model_cli.spool / "config.toml").open("a") as config:
        config.write("openai_max_calls = 2\n")
    replies(endpoint, {"explanation": "", "answer": "7"})  # always wrong
    doc = run(model_cli, "--handler", "solve=openai:m", "--max-trials", "5")
    assert "2 model calls made for this riddle" in doc["error"]
    assert len(endpoint.seen(PATH)) == 2


def test_a_model_splits_the_question_into_bounded_sub_riddles(
    model_cli: Cli, endpoint: Endpoint
) -> None:
    replies(
        endpoint,
        {"sub_questions": ["What is x?", "What is y?"]},
        {"explanation": "x.txt", "answer": "10"},
        {"explanation": "y.txt", "answer": "15"},
        {"explanation": "10 * 15", "answer": "150"},
    )
    doc = run(model_cli, "--handler", "solve=openai:m")
    assert doc["solution"]["solution"] == "150" and len(doc["sub_ids"]) == 2
    child = model_cli("show", doc["sub_ids"][0]).json()
    assert isinstance(child, dict) and child["split_depth"] == 1
    sent = [r.json() for r in endpoint.seen(PATH)]
    # Children may not split again (max_sub_depth 1), nor may the parent once answered.
    for body in sent[1:]:
        assert "anyOf" not in body["response_format"]["json_schema"]["schema"]
    assert "What is x? 10" in sent[3]["messages"][-1]["content"]


def test_more_sub_questions_than_allowed_is_an_error(model_cli: Cli, endpoint: Endpoint) -> None:
    replies(endpoint, {"sub_questions": ["a", "b", "c", "d", "e"]})
    doc = run(model_cli, "--handler", "solve=openai:m", "--max-attempts", "1")
    assert "expected 1 to 4 sub-questions" in doc["error"]


@pytest.mark.parametrize("status", [401, 500])
def test_the_key_never_appears_in_an_error(model_cli: Cli, endpoint: Endpoint, status: int) -> None:
    endpoint.route(PATH, Scripted(status, f"Incorrect API key provided: {KEY}".encode()))
    doc = run(model_cli, "--handler", "solve=openai:m", "--max-attempts", "1")
    assert f"HTTP {status}" in doc["error"]
    no_key_anywhere(model_cli.spool)


def test_openai_cannot_extract(model_cli: Cli) -> None:
    done = model_cli("run", "--once", "--handler", "extract=openai:m")
    assert done.code == 2
    assert done.err.strip().count("\n") == 0
    assert "openai:m" in done.err and "solve and validate" in done.err


def test_prompts_from_a_file_replace_ours(model_cli: Cli, endpoint: Endpoint) -> None:
    prompts = model_cli.spool.parent / "prompts.toml"
    prompts.write_text(
        'solve_system = "You multiply."\nsolve = "Q: $question A: $answer_form. $rejected"\n'
    )
    with (model_cli.spool / "config.toml").open("a") as config:
        config.write(f'openai_prompts = "{prompts}"\n')
    replies(endpoint, {"explanation": "", "answer": "150"})
    run(model_cli, "--handler", "solve=openai:m")
    messages = endpoint.seen(PATH)[0].json()["messages"]
    assert messages == [
        {"role": "system", "content": "You multiply."},
        {"role": "user", "content": "Q: x * y = A: a number. "},
    ]


def test_a_bad_prompts_file_stops_the_run_in_one_line(model_cli: Cli) -> None:
    with (model_cli.spool / "config.toml").open("a") as config:
        config.write('openai_prompts = "missing.toml"\n')
    done = model_cli("run", "--once", "--handler", "solve=openai:m")
    assert done.code == 2 and done.err.count("\n") == 1
    assert "missing.toml: cannot read the prompts" in done.err
