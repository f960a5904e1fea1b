"""The JSON schema an `openai:` handler asks for, derived from the answer type: every
reply that fits it gives a solution the gatekeeper's form check accepts, and replies that
do not fit are refused by `solution_of` too (for servers that ignore the schema)."""

from __future__ import annotations

import re
from pathlib import Path
from string import Template
from typing import Any

import jsonschema
import pytest

from riddlectl.document import codec
from riddlectl.document.answers import check_answer, parse_answer_spec
from riddlectl.errors import ConfigError
from riddlectl.handlers.models import prompts, schema

DATA_TEXT = "The cat sat on the mat."
# (answer spec, a value that fits, values that do not)
CASES: list[tuple[dict[str, Any] | None, Any, list[Any]]] = [
    (None, "150", ["many", "1e5", True]),
    ({"type": "fill", "kind": "number"}, "-2.5", ["two", None]),
    ({"type": "fill", "kind": "int"}, 42, ["42", 4.2, True]),
    ({"type": "fill", "kind": "text"}, "hello", ["", 5]),
    ({"type": "fill", "kind": "json_list"}, ["a", "b"], ["a,b"]),
    ({"type": "noul"}, "0.75", ["1.5", "-0.1", "maybe"]),
    ({"type": "choice", "criteria": {"a": "yes", "b": "no"}}, "b", ["c", True]),
    ({"type": "score", "criteria": [1, 2, 3]}, "2", ["4", [2]]),
    ({"type": "extract", "kind": "text"}, "the mat", ["", ["the mat"]]),
    ({"type": "extract", "kind": "text", "many": True}, ["cat", "mat"], [[], "cat", [1]]),
    ({"type": "extract", "kind": "coordinates"}, ["3", "4.5"], [[3], [-1, 2], ["-1", "2"]]),
    ({"type": "extract", "kind": "coordinates", "many": True}, [["1", "2"]], [["1", "2"], []]),
]


@pytest.mark.parametrize(("answer", "good", "bad"), CASES)
def test_a_fitting_value_passes_the_gatekeepers_form_check(
    answer: dict[str, Any] | None, good: Any, bad: list[Any]
) -> None:
    spec = schema.spec_of(answer)
    reply = {"explanation": "because", "answer": good}
    jsonschema.validate(reply, schema.solver_schema(spec, 0))
    solution = schema.solution_of(spec, good)
    if spec is not None:
        assert check_answer(spec, solution, [DATA_TEXT], [(10, 10)]) is None


@pytest.mark.parametrize(("answer", "good", "bad"), CASES)
def test_a_value_that_does_not_fit_is_refused(
    answer: dict[str, Any] | None, good: Any, bad: list[Any]
) -> None:
    spec = schema.spec_of(answer)
    for value in bad:
        with pytest.raises(ValueError):
            schema.solution_of(spec, value)


def test_patterns_use_no_backslash_escapes() -> None:
    # Some servers' schema-to-grammar converters fail on `\.` (and then crash).
    for pattern in (schema.NUMBER_PATTERN, schema.PROBABILITY_PATTERN):
        assert "\\" not in pattern


def test_coordinates_asked_as_digits_are_written_as_numbers() -> None:
    spec = schema.spec_of({"type": "extract", "kind": "coordinates", "many": True})
    assert schema.solution_of(spec, [["3", "4.5"], [1, 2]]) == "[[3, 4.5], [1, 2]]"


def test_splitting_is_offered_only_when_allowed() -> None:
    split = schema.solver_schema(None, 3)
    jsonschema.validate({"sub_questions": ["x =", "y ="]}, split)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({"sub_questions": ["a", "b", "c", "d"]}, split)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({"sub_questions": ["x ="]}, schema.solver_schema(None, 0))


def test_the_validator_answers_a_review_then_a_verdict() -> None:
    verdict_schema = schema.validator_schema()
    assert list(verdict_schema["properties"]) == ["review", "accept"]
    jsonschema.validate({"review": "right", "accept": True}, verdict_schema)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({"accept": "yes", "review": "?"}, verdict_schema)


# -- prompts ------------------------------------------------------------------------------


def riddle_with_rejections() -> Any:
    doc = {
        "id": "r1",
        "riddle": {
            "context": "[calc]",
            "question": "x * y =",
            "solutions_before": [
                {"solution": "25", "accepted": False, "review": "25 is x + y, not x * y"}
            ],
            "answer": {"type": "choice", "criteria": {"a": "150", "b": "25"}},
        },
        "data": [{"file_plain": "x.txt"}],
    }
    return codec.to_riddle(doc, "r1")


def test_the_solve_prompt_carries_everything_the_model_needs() -> None:
    riddle = riddle_with_rejections()
    spec = parse_answer_spec(riddle.riddle.answer)
    text = prompts.fill(
        prompts.Prompts().solve,
        riddle,
        {
            "data": prompts.data_lines(riddle, [{"source": "x.txt", "variables": {"x": "10"}}]),
            "answer_form": prompts.answer_form(spec),
            "rejected": prompts.rejected_lines(riddle),
            "sub_results": "",
            "split": prompts.split_line(2),
        },
    )
    assert "[calc]" in text and "x * y =" in text
    assert 'x.txt (text): {"variables":{"x":"10"}}' in text
    assert "'25': 25 is x + y, not x * y" in text
    assert "a: 150; b: 25" in text
    assert "at most 2 smaller questions" in text


def test_prompts_are_overridden_from_a_file(tmp_path: Path) -> None:
    path = tmp_path / "prompts.toml"
    path.write_text('solve = "Q: $question costs $$5"\nvalidate_system = "Be strict."\n')
    chosen = prompts.load(path)
    assert prompts.fill(chosen.solve, riddle_with_rejections(), {}) == "Q: x * y = costs $5"
    assert chosen.validate.template == prompts.VALIDATE
    assert isinstance(chosen.validate_system, Template)


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ('solve = "$questoin"', "unknown placeholder $questoin"),
        ('solve = "costs $5"', "a stray $"),
        ('extract = "x"', "unknown prompt"),
        ("solve = 3", "must be a string"),
        ("solve = ", "cannot read the prompts"),
    ],
)
def test_a_bad_prompts_file_is_one_clear_error(tmp_path: Path, text: str, problem: str) -> None:
    path = tmp_path / "prompts.toml"
    path.write_text(text)
    with pytest.raises(ConfigError, match=re.escape(problem)) as caught:
        prompts.load(path)
    assert str(path) in str(caught.value)
