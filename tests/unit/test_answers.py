"""riddlectl.answers: typed answer specs are parsed strictly and solutions checked."""

from __future__ import annotations

from typing import Any

import pytest

from riddlectl.answers import (
    AnswerSpecError,
    ChoiceSpec,
    ExtractSpec,
    FillSpec,
    NoulSpec,
    ScoreSpec,
    answer_schema,
    check_answer,
    parse_answer_spec,
)


def check(
    spec: dict[str, Any],
    solution: str,
    texts: list[str] | None = None,
    sizes: list[tuple[int, int] | None] | None = None,
) -> str | None:
    return check_answer(parse_answer_spec(spec), solution, texts or [], sizes or [])


@pytest.mark.parametrize(
    ("spec", "cls"),
    [
        ({"type": "fill"}, FillSpec),
        ({"type": "fill", "kind": "int", "max_tokens": 1}, FillSpec),
        ({"type": "fill", "pattern": "[a-z]+"}, FillSpec),
        ({"type": "noul"}, NoulSpec),
        ({"type": "noul", "criteria": {"true": "yes", "false": "no"}}, NoulSpec),
        ({"type": "choice", "criteria": {"a": "A", "b": "B"}}, ChoiceSpec),
        ({"type": "score", "criteria": ["low", "mid", "high"]}, ScoreSpec),
        ({"type": "score", "criteria": [1, 2, 3]}, ScoreSpec),
        ({"type": "extract"}, ExtractSpec),
        ({"type": "extract", "kind": "coordinates", "many": True, "image": 2}, ExtractSpec),
    ],
)
def test_valid_specs(spec: dict[str, Any], cls: type) -> None:
    assert isinstance(parse_answer_spec(spec), cls)


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ({"type": "riddle"}, "answer.type: must be one of"),
        ({}, "answer.type"),
        ({"type": "fill", "pattern": "("}, "answer.pattern: does not compile"),
        ({"type": "fill", "kind": "int", "pattern": "1"}, "answer.pattern: only allowed"),
        ({"type": "fill", "kind": "float"}, "answer.kind"),
        ({"type": "fill", "max_tokens": 0}, "answer.max_tokens"),
        ({"type": "fill", "max_tokens": 257}, "answer.max_tokens"),
        ({"type": "fill", "max_tokens": "5"}, "answer.max_tokens"),
        ({"type": "fill", "patern": "x"}, "answer.patern: unknown field"),
        ({"type": "noul", "criteria": {"yes": "1", "no": "0"}}, "answer.criteria: keys must"),
        ({"type": "noul", "criteria": {"true": "1"}}, "answer.criteria"),
        ({"type": "choice", "criteria": {"a": "A"}}, "answer.criteria"),
        ({"type": "choice"}, "answer.criteria"),
        ({"type": "choice", "criteria": {str(i): "" for i in range(257)}}, "answer.criteria"),
        ({"type": "score", "criteria": ["only"]}, "answer.criteria"),
        ({"type": "score", "criteria": ["a", "a"]}, "answer.criteria: levels must be distinct"),
        ({"type": "extract", "kind": "audio"}, "answer.kind"),
        ({"type": "extract", "image": 0}, "answer.image"),
        ({"type": "extract", "many": "yes"}, "answer.many"),
    ],
)
def test_malformed_specs(spec: dict[str, Any], message: str) -> None:
    with pytest.raises(AnswerSpecError) as info:
        parse_answer_spec(spec)
    assert str(info.value).startswith(message)
    assert "\n" not in str(info.value)
    assert isinstance(info.value, ValueError)


@pytest.mark.parametrize("obj", [None, [], "fill", 3])
def test_spec_must_be_an_object(obj: Any) -> None:
    with pytest.raises(AnswerSpecError, match="answer: must be an object"):
        parse_answer_spec(obj)


@pytest.mark.parametrize(
    ("spec", "solution"),
    [
        ({"type": "fill"}, "anything at all"),
        ({"type": "fill", "kind": "int"}, "150"),
        ({"type": "fill", "kind": "int"}, "-3"),
        ({"type": "fill", "kind": "number"}, "2/3"),
        ({"type": "fill", "kind": "number"}, "-0.25"),
        ({"type": "fill", "kind": "json_list"}, "[1, 2]"),
        ({"type": "fill", "pattern": "[a-z]+"}, "abc"),
        ({"type": "fill", "max_tokens": 2}, "two words"),
        ({"type": "noul"}, "0"),
        ({"type": "noul"}, "1"),
        ({"type": "noul"}, "0.75"),
        ({"type": "noul"}, "2/3"),
        ({"type": "choice", "criteria": {"a": "A", "b": "B"}}, "b"),
        ({"type": "score", "criteria": ["low", "high"]}, "high"),
        ({"type": "score", "criteria": [1, 2, 3]}, "2"),
    ],
)
def test_accepted_solutions(spec: dict[str, Any], solution: str) -> None:
    assert check(spec, solution) is None


@pytest.mark.parametrize(
    ("spec", "solution", "review"),
    [
        (
            {"type": "fill", "kind": "int"},
            "abc",
            "solution 'abc' is not an integer, as answer.kind 'int' requires",
        ),
        ({"type": "fill", "kind": "int"}, "1.5", "is not an integer"),
        ({"type": "fill", "kind": "number"}, "many", "is not a number"),
        ({"type": "fill", "kind": "json_list"}, '{"a": 1}', "is not a JSON array"),
        ({"type": "fill", "kind": "json_list"}, "[1, 2", "is not a JSON array"),
        ({"type": "fill", "pattern": "[a-z]+"}, "abc1", "does not match answer.pattern"),
        ({"type": "fill", "max_tokens": 2}, "three words here", "more than answer.max_tokens 2"),
        ({"type": "fill"}, "   ", "the solution is empty"),
        ({"type": "noul"}, "1.5", "outside [0, 1]"),
        ({"type": "noul"}, "-0.1", "outside [0, 1]"),
        ({"type": "noul"}, "yes", "is not a probability"),
        ({"type": "choice", "criteria": {"a": "A", "b": "B"}}, "c", "not one of the choice keys"),
        ({"type": "score", "criteria": ["low", "high"]}, "medium", "not one of the score levels"),
    ],
)
def test_rejected_solutions(spec: dict[str, Any], solution: str, review: str) -> None:
    problem = check(spec, solution)
    assert problem is not None and review in problem


def test_extract_text() -> None:
    texts = ["The treasure lies under the old oak.", "Second file"]
    spec = {"type": "extract"}
    assert check(spec, "under the old oak", texts) is None
    assert check(spec, "Second", texts) is None
    assert "does not occur verbatim" in (check(spec, "under the oak", texts) or "")
    many = {"type": "extract", "many": True}
    assert check(many, '["old oak", "Second file"]', texts) is None
    assert "does not occur verbatim" in (check(many, '["old oak", "third"]', texts) or "")
    assert "JSON list of non-empty strings" in (check(many, "old oak", texts) or "")
    assert "JSON list of non-empty strings" in (check(many, "[]", texts) or "")


def test_extract_coordinates() -> None:
    spec = {"type": "extract", "kind": "coordinates", "image": 2}
    sizes: list[tuple[int, int] | None] = [None, (640, 480)]
    assert check(spec, "[10, 20]", [], sizes) is None
    assert check(spec, "[639, 479.5]", [], sizes) is None
    assert "outside the 640x480 image" in (check(spec, "[640, 20]", [], sizes) or "")
    assert "outside" in (check(spec, "[-1, 20]", [], sizes) or "")
    assert "[x, y] pair" in (check(spec, "[1, 2, 3]", [], sizes) or "")
    assert "[x, y] pair" in (check(spec, "[true, 2]", [], sizes) or "")
    assert "does not have" in (check(spec, "[1, 2]", [], [(5, 5)]) or "")
    many = {"type": "extract", "kind": "coordinates", "many": True}
    assert check(many, "[[1, 2], [3, 4]]", [], [(5, 5)]) is None
    assert "outside" in (check(many, "[[1, 2], [5, 4]]", [], [(5, 5)]) or "")
    # An image of unknown size: only the form is checked.
    assert check({"type": "extract", "kind": "coordinates"}, "[9999, 1]", [], [None]) is None


def test_answer_schema_names_every_type() -> None:
    schema = str(answer_schema())
    for name in ("fill", "noul", "choice", "score", "extract"):
        assert f"'{name}'" in schema
