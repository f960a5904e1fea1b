"""riddlectl.document.answers: typed answer specs are parsed strictly and solutions checked."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from riddlectl.document.answers import (
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
from riddlectl.document.model import Riddle
from riddlectl.handlers.base import Job
from riddlectl.handlers.builtin.calculator import gatekeeper
from tests.images import png


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


# -- the gatekeeper checks points against the image itself -------------------------------------


def point_job(data_dir: Path, solution: str, data: list[dict[str, str]], image: int = 1) -> Job:
    answer = {"type": "extract", "kind": "coordinates", "image": image}
    doc = {
        "id": "p1",
        "riddle": {"question": "Where is the dot?", "answer": answer},
        "solution": {"solution": solution},
        "data": data,
    }
    return Job(Riddle.model_validate(doc), "validate", data_dir, data_dir)


@pytest.fixture
def pictures(tmp_path: Path) -> Path:
    (tmp_path / "img").mkdir()
    (tmp_path / "img" / "dot.png").write_bytes(png(10, 8))
    (tmp_path / "notes.txt").write_text("the dot is red\n")
    return tmp_path


@pytest.mark.parametrize("point", ["[10, 3]", "[3, 8]", "[-1, 0]", "[100, 100]"])
def test_gatekeeper_rejects_a_point_outside_the_image(pictures: Path, point: str) -> None:
    job = point_job(pictures, point, [{"type": "image", "file_plain": "img/dot.png"}])
    verdict = gatekeeper(job)
    assert verdict["accept"] is False
    assert "outside the 10x8 image" in verdict["review"], verdict


@pytest.mark.parametrize("point", ["[0, 0]", "[9, 7]", "[9.5, 7.5]"])
def test_gatekeeper_accepts_a_point_inside_the_image(pictures: Path, point: str) -> None:
    job = point_job(pictures, point, [{"type": "image", "file_plain": "img/dot.png"}])
    assert gatekeeper(job)["accept"] is True


def test_the_image_is_the_data_item_named(pictures: Path) -> None:
    data = [
        {"type": "text", "file_plain": "notes.txt"},
        {"type": "image", "file_plain": "./img/dot.png"},
    ]
    assert gatekeeper(point_job(pictures, "[9, 7]", data, image=2))["accept"] is True
    verdict = gatekeeper(point_job(pictures, "[9, 8]", data, image=2))
    assert verdict["accept"] is False and "data item 2" in verdict["review"]


def test_an_image_outside_the_data_directory_is_not_read(pictures: Path, tmp_path: Path) -> None:
    outside = tmp_path.parent / f"{tmp_path.name}-outside.png"
    outside.write_bytes(png(1000, 1000))
    (pictures / "img" / "link.png").symlink_to(outside)
    data = [{"type": "image", "file_plain": "img/link.png"}]
    # Its size stays unknown: only the form is checked, and nothing outside is opened.
    assert gatekeeper(point_job(pictures, "[500, 500]", data))["accept"] is True
    assert "outside" in gatekeeper(point_job(pictures, "[-5, 0]", data))["review"]
