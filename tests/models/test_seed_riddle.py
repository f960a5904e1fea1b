"""The seed riddle (`x * y =` over x.txt, y.txt, z.txt) put to a real model by the
`openai:` solver and checked by the built-in gatekeeper, through `riddlectl run`; and a
riddle the model cannot get right, rejected, re-posed with its review, failing after
`max_trials`. A logging proxy between riddlectl and the server shows what was asked.

A 270M model is often wrong; the tests hold either way: what must be true is that a
rejected answer comes back to the model with its review, and that the riddle ends
accepted (with the right number) or failed after its trials.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import Cli, example_doc, logged_events, write_json
from tests.endpoint import Proxy, proxying
from tests.models.conftest import MODEL

pytestmark = [pytest.mark.model, pytest.mark.timeout(900)]
HANDLER = f"openai:{MODEL}"


@pytest.fixture
def proxy(model_server: str) -> Iterator[Proxy]:
    with proxying(model_server.removesuffix("/v1")) as logged:
        yield logged


@pytest.fixture
def model_cli(cli: Cli, proxy: Proxy) -> Cli:
    (cli.spool / "config.toml").write_text(
        f'openai_base_url = "{proxy.url}/v1"\n'
        # llama-cpp-python's server takes the schema this way (see docs/models.md).
        'openai_response_format = "json_object"\n'
        "openai_max_tokens = 160\n"
        # Splitting is tested against a scripted endpoint; here one call per trial.
        "max_sub_depth = 0\n"
    )
    return cli


def run(cli: Cli, doc: dict[str, Any], *flags: str) -> dict[str, Any]:
    riddle_id = cli("submit", str(write_json(Path("r.json"), doc))).out.strip()
    done = cli(
        "run",
        "--once",
        "--quiet",
        "--timeout",
        "300",
        "--handler",
        f"solve={HANDLER}",
        *flags,
        timeout=850,
    )
    assert "Traceback" not in done.err, done.err
    shown = cli("show", riddle_id).json()
    assert isinstance(shown, dict)
    return shown


def assert_reviews_re_posed(doc: dict[str, Any], proxy: Proxy) -> None:
    """Each trial's prompt carries every solution rejected before it, with its review.

    Counted from what the server was asked, so that an attempt tried again (a timeout on
    a busy machine) only adds a prompt like the one before it."""
    rejected = doc["riddle"]["solutions_before"]
    lines = [f"- {earlier['solution']!r}: {earlier['review']}" for earlier in rejected]
    prompts = proxy.prompts()
    shown = [_rejected_block(prompt) for prompt in prompts]
    for block in shown:
        assert block == lines[: len(block)]  # the earliest ones, in order, with reviews
    assert [len(b) for b in shown] == sorted(len(b) for b in shown) and not shown[0]
    assert "rejected before" not in prompts[0]
    last_trial = len(rejected) if doc["solution"] is not None else len(rejected) - 1
    # Every trial was posed, each with the reviews of all the trials before it.
    assert {len(b) for b in shown} == set(range(last_trial + 1))


def _rejected_block(prompt: str) -> list[str]:
    """The lines listing earlier solutions in a solve prompt (see `prompts.rejected_lines`)."""
    lines = prompt.splitlines()
    if "Solutions rejected before (do not give them again):" not in lines:
        return []
    start = lines.index("Solutions rejected before (do not give them again):") + 1
    block = []
    for line in lines[start:]:
        if not line.startswith("- "):
            break
        block.append(line)
    return block


def assert_usage_recorded(doc: dict[str, Any], cli: Cli) -> None:
    solves = [e for e in doc["history"] if e["stage"] == "solve" and e["outcome"] == "ok"]
    assert solves
    logged = logged_events(cli)
    for entry in solves:
        usage = entry["usage"][HANDLER]
        assert usage["model"] == MODEL and usage["calls"] == 1
        assert usage["prompt_tokens"] > 0 and usage["completion_tokens"] > 0
        assert entry in logged


def test_the_seed_riddle_solved_by_a_model_checked_by_the_gatekeeper(
    model_cli: Cli, proxy: Proxy
) -> None:
    doc = run(model_cli, example_doc())
    assert "x * y =" in proxy.prompts()[0] and '"x":"10"' in proxy.prompts()[0]
    assert_usage_recorded(doc, model_cli)
    assert_reviews_re_posed(doc, proxy)
    if doc["status"]["solved"]:
        assert doc["solution"]["solution"] == "150"
        assert doc["solution"]["review"] == "recomputed independently: 150"
    else:
        assert doc["error"].startswith("rejected 3 times (max_trials 3)")
        assert all(r["review"] for r in doc["riddle"]["solutions_before"])


def test_a_wrong_answer_is_rejected_re_posed_and_fails_after_max_trials(
    model_cli: Cli, proxy: Proxy
) -> None:
    # No small model multiplies these in its head: every answer is wrong.
    doc = example_doc(riddle={"context": "[calc]", "question": "x * y * z * 7919 * 104729 ="})
    doc = run(model_cli, doc, "--max-trials", "2")
    assert doc["error"].startswith("rejected 2 times (max_trials 2)")
    first, second = doc["riddle"]["solutions_before"]
    assert second["review"]
    assert "wrong" in first["review"] or "already rejected" in first["review"]
    assert f"{first['solution']!r}: {first['review']}" in proxy.prompts()[-1]
    assert_reviews_re_posed(doc, proxy)
    assert_usage_recorded(doc, model_cli)
