"""The JSON schema a model answers in, derived from the riddle's answer type, and the
solution read back from a reply that fits it.

A riddle without an answer spec asks for a number (what the built-in calculator
answers). Patterns are written with character classes only (`[.]`, not `\\.`): servers
turn the schema into a grammar, and some grammar converters choke on escapes.

`solution_of` checks what the grammar should have ensured: a server that ignores the
schema (or a model with no grammar at all) gets a `ValueError`, which the handler turns
into an error tried again.
"""

from __future__ import annotations

import json
import re
from typing import Any

from riddlectl.document.answers import (
    ChoiceSpec,
    ExtractSpec,
    FillSpec,
    NoulSpec,
    ScoreSpec,
    parse_answer_spec,
)
from riddlectl.document.numbers import parse_number

Spec = FillSpec | NoulSpec | ChoiceSpec | ScoreSpec | ExtractSpec
NUMBER_PATTERN = "^-?[0-9]+([.][0-9]+)?(/[0-9]+)?$"
_NUMBER = re.compile(NUMBER_PATTERN.strip("^$"))
MAX_TEXT = 500  # characters of a free-text answer (a fill's max_tokens bounds it more)
CHARS_PER_WORD = 16
MAX_EXPLANATION = 160
MAX_REVIEW = 240
# Bounds on numbers (`minimum`) are not enforced by every grammar converter; patterns are.
# So a coordinate (never negative) and a probability (0 to 1) are asked for as digits.
_COORDINATE = {"type": "string", "pattern": "^[0-9]+([.][0-9]+)?$"}
_POINT = {"type": "array", "items": _COORDINATE, "minItems": 2, "maxItems": 2}
PROBABILITY_PATTERN = "^(0([.][0-9]+)?|1([.]0+)?)$"
_COORDINATE_RE = re.compile(str(_COORDINATE["pattern"]).strip("^$"))


def spec_of(answer: dict[str, Any] | None) -> Spec | None:
    return None if answer is None else parse_answer_spec(answer)


def answer_schema(spec: Spec | None) -> dict[str, Any]:
    """The schema of the answer value alone."""
    if spec is None:
        return {"type": "string", "pattern": NUMBER_PATTERN}
    if isinstance(spec, FillSpec):
        return _fill(spec)
    if isinstance(spec, NoulSpec):
        return {"type": "string", "pattern": PROBABILITY_PATTERN}
    if isinstance(spec, ChoiceSpec | ScoreSpec):
        return {"type": "string", "enum": [str(c) for c in spec.criteria]}
    if spec.kind == "coordinates":
        return {"type": "array", "items": _POINT, "minItems": 1} if spec.many else _POINT
    text = {"type": "string", "minLength": 1, "maxLength": MAX_TEXT}
    return {"type": "array", "items": text, "minItems": 1} if spec.many else text


def _fill(spec: FillSpec) -> dict[str, Any]:
    if spec.kind == "int":
        return {"type": "integer"}
    if spec.kind == "number":
        return {"type": "string", "pattern": NUMBER_PATTERN}
    if spec.kind == "json_list":
        return {"type": "array", "items": {"type": "string"}}
    longest = MAX_TEXT
    if spec.max_tokens is not None:
        longest = min(MAX_TEXT, CHARS_PER_WORD * spec.max_tokens)
    return {"type": "string", "minLength": 1, "maxLength": longest}


def solver_schema(spec: Spec | None, may_split: int) -> dict[str, Any]:
    """The solver's reply: an explanation then the answer (so the model reasons before it
    commits); with `may_split` > 0, or else up to that many sub-questions."""
    answer = _object(
        explanation={"type": "string", "maxLength": MAX_EXPLANATION},
        answer=answer_schema(spec),
    )
    if may_split <= 0:
        return answer
    questions = {
        "type": "array",
        "items": {"type": "string", "minLength": 1, "maxLength": 500},
        "minItems": 1,
        "maxItems": may_split,
    }
    return {"anyOf": [answer, _object(sub_questions=questions)]}


def validator_schema() -> dict[str, Any]:
    """The validator's reply: the review first, then the verdict it leads to."""
    return _object(review={"type": "string", "maxLength": MAX_REVIEW}, accept={"type": "boolean"})


def _object(**properties: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": properties,
        "required": list(properties),
        "additionalProperties": False,
    }


def solution_of(spec: Spec | None, value: Any) -> str:
    """The solution text of an answer value, as the document holds it; `ValueError` when
    the value does not fit the schema."""
    if spec is None or (isinstance(spec, FillSpec) and spec.kind == "number"):
        return _number(value)
    if isinstance(spec, FillSpec):
        return _filled(spec, value)
    if isinstance(spec, NoulSpec):
        number = _number(value)
        if not 0 <= parse_number(number) <= 1:
            raise ValueError(f"{number} is not a probability")
        return number
    if isinstance(spec, ChoiceSpec | ScoreSpec):
        allowed = [str(c) for c in spec.criteria]
        if str(value) not in allowed or isinstance(value, bool | dict | list):
            raise ValueError(f"{value!r} is not one of {allowed}")
        return str(value)
    if spec.kind == "coordinates":
        points = value if spec.many else [value]
        if not isinstance(points, list) or not points:
            raise ValueError(f"{value!r} is not [x, y] points")
        numbers = [_point(p) for p in points]
        return json.dumps(numbers if spec.many else numbers[0])
    return _extracted(spec, value)


def _filled(spec: FillSpec, value: Any) -> str:
    if spec.kind == "int":
        if isinstance(value, bool) or not isinstance(value, int):
            raise ValueError(f"{value!r} is not an integer")
        return str(value)
    if spec.kind == "json_list":
        if not isinstance(value, list):
            raise ValueError(f"{value!r} is not a list")
        return json.dumps(value)
    return _text(value)


def _extracted(spec: ExtractSpec, value: Any) -> str:
    if not spec.many:
        return _text(value)
    if not isinstance(value, list) or not value or not all(isinstance(v, str) for v in value):
        raise ValueError(f"{value!r} is not a list of strings")
    return json.dumps(value)


def _text(value: Any) -> str:
    if not isinstance(value, str) or not value.strip():
        raise ValueError(f"{value!r} is not a non-empty string")
    return value


def _number(value: Any) -> str:
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        raise ValueError(f"{value!r} is not a number")
    text = str(value).strip()
    if not _NUMBER.fullmatch(text):
        raise ValueError(f"{text!r} is not a number")
    parse_number(text)  # raises ValueError (a zero denominator)
    return text


def _point(point: Any) -> list[int | float]:
    """[x, y] as numbers, from digits (as asked) or numbers (from a lenient server)."""
    if not isinstance(point, list) or len(point) != 2:
        raise ValueError(f"{point!r} is not an [x, y] point")
    out: list[int | float] = []
    for coordinate in point:
        if isinstance(coordinate, str) and _COORDINATE_RE.fullmatch(coordinate):
            number = float(coordinate)
            out.append(int(number) if number.is_integer() else number)
        elif isinstance(coordinate, int | float) and not isinstance(coordinate, bool):
            if coordinate < 0:
                raise ValueError(f"{point!r} has a negative coordinate")
            out.append(coordinate)
        else:
            raise ValueError(f"{point!r} is not an [x, y] point")
    return out
