"""Schema-constrained output from a real model for each answer type: the `openai:`
solver's reply parses and fits the type (the gatekeeper's form check passes), and the
`openai:` validator's verdict is a boolean with a review."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from riddlectl.document import codec
from riddlectl.document.answers import check_answer, parse_answer_spec
from riddlectl.handlers.base import Job
from riddlectl.handlers.registry import load
from riddlectl.settings import Settings
from tests.models.conftest import MODEL

pytestmark = [pytest.mark.model, pytest.mark.timeout(900)]

TEXT = "The cat sat on the mat. The dog slept."
TYPES: list[tuple[str, dict[str, Any] | None, str]] = [
    ("number", None, "What is 2 + 3?"),
    ("fill-text", {"type": "fill", "kind": "text", "max_tokens": 8}, "Name an animal."),
    ("fill-int", {"type": "fill", "kind": "int"}, "How many legs has a dog?"),
    ("fill-number", {"type": "fill", "kind": "number"}, "What is half of 3?"),
    ("fill-list", {"type": "fill", "kind": "json_list"}, "List two colours."),
    ("noul", {"type": "noul"}, "The sky is green."),
    ("choice", {"type": "choice", "criteria": {"a": "a cat", "b": "a fish"}}, "What sat?"),
    ("score", {"type": "score", "criteria": ["low", "mid", "high"]}, "How tall is a tree?"),
    ("extract", {"type": "extract", "kind": "text"}, "Who slept?"),
    ("extract-many", {"type": "extract", "kind": "text", "many": True}, "Which animals?"),
    ("coordinates", {"type": "extract", "kind": "coordinates"}, "Where is the cat?"),
]


@pytest.fixture(scope="module")
def settings(model_server: str) -> Settings:
    return Settings(
        openai_base_url=model_server,
        openai_response_format="json_object",
        openai_max_tokens=200,
        max_sub_depth=0,
    )


def job(tmp_path: Path, question: str, answer: dict[str, Any] | None, stage: str) -> Job:
    (tmp_path / "story.txt").write_text(TEXT)
    doc: dict[str, Any] = {
        "id": "r1",
        "riddle": {"context": "A short story.", "question": question, "answer": answer},
        "data": [{"type": "text", "file_plain": "story.txt"}],
    }
    riddle = codec.to_riddle(doc, "r1")
    return Job(riddle, stage, tmp_path, tmp_path, 300.0, extractions=[{"text": TEXT}])


@pytest.mark.parametrize(("name", "answer", "question"), TYPES, ids=[t[0] for t in TYPES])
def test_the_solvers_reply_fits_the_answer_type(
    settings: Settings, tmp_path: Path, name: str, answer: dict[str, Any] | None, question: str
) -> None:
    solver = load(f"openai:{MODEL}", "solve", settings)
    result = solver(job(tmp_path, question, answer, "solve"))
    assert result is not None and result["usage"]["model"] == MODEL
    solution = result["solution"]
    if answer is None:
        float(solution)
        return
    spec = parse_answer_spec(answer)
    # Verbatim copying is the model's skill, not the schema's: the form is what must hold.
    texts = [TEXT, solution, *(_pieces(solution) if name == "extract-many" else [])]
    problem = check_answer(spec, solution, texts, [None])
    if name == "fill-text" and problem and "tokens" in problem:
        return  # max_tokens counts words, which a schema cannot bound
    assert problem is None, (solution, problem)


def _pieces(solution: str) -> list[str]:
    import json

    return [p for p in json.loads(solution) if isinstance(p, str)]


def test_the_validators_verdict_is_a_boolean_with_a_review(
    settings: Settings, tmp_path: Path
) -> None:
    validator = load(f"openai:{MODEL}", "validate", settings)
    checked = job(tmp_path, "What is 2 + 3?", None, "validate")
    checked.riddle.solution = codec.to_riddle(
        {"riddle": {"question": "q"}, "solution": {"solution": "5", "explanation": "2 + 3"}},
        "s",
    ).solution
    verdict = validator(checked)
    assert isinstance(verdict["accept"], bool)
    assert isinstance(verdict["review"], str) and verdict["review"]
    assert verdict["usage"]["calls"] == 1
