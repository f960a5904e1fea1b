"""`riddlectl schema` carries every constraint the validator enforces, so that a tool
validating with the schema agrees with `submit` on every document below."""

from __future__ import annotations

from typing import Any

import jsonschema
import pytest

from riddlectl.document.codec import to_riddle
from riddlectl.document.model import riddle_json_schema
from riddlectl.errors import InvalidDocument

VALIDATOR = jsonschema.Draft202012Validator(riddle_json_schema())


def _doc(**fields: Any) -> dict[str, Any]:
    return {"riddle": {"question": "x * y ="}, **fields}


def _answer(spec: dict[str, Any]) -> dict[str, Any]:
    return {"riddle": {"question": "x * y =", "answer": spec}}


DOCUMENTS = [
    _doc(),
    _doc(id="ex1"),
    _doc(id="A.b_c-9"),
    _doc(id="x" * 128),
    _doc(id="x" * 129),
    _doc(id="../evil"),
    _doc(id="-a"),
    _doc(id=".hidden"),
    _doc(id="a b"),
    _doc(id="a\n"),
    _doc(id=""),
    _doc(id=7),
    _doc(parent_id="../up"),
    _doc(parent_id="p1"),
    _doc(sub_ids=["p1-1", "p1-2"]),
    _doc(sub_ids=["ok", "../bad"]),
    _doc(priority=3),
    _doc(priority="high"),
    _doc(contacts=-1),
    _doc(status={"trial": -1}),
    _doc(rev=-2),
    _answer({"type": "fill", "kind": "int"}),
    _answer({"type": "fill", "kind": "float"}),
    _answer({"type": "fill", "patern": "x"}),
    _answer({"type": "fill", "max_tokens": 0}),
    _answer({"type": "fill", "max_tokens": 257}),
    _answer({"type": "noul"}),
    _answer({"type": "choice", "criteria": {"a": "A", "b": "B"}}),
    _answer({"type": "choice", "criteria": {"a": "A"}}),
    _answer({"type": "score", "criteria": ["low", "mid", "high"]}),
    _answer({"type": "extract", "kind": "coordinates", "image": 1}),
    _answer({"type": "extract", "image": 0}),
    _answer({"type": "unknown"}),
    _answer({"kind": "int"}),
]


def _submit_accepts(doc: dict[str, Any]) -> bool:
    try:
        to_riddle(doc, "test")
    except InvalidDocument:
        return False
    return True


@pytest.mark.parametrize("doc", DOCUMENTS, ids=lambda d: repr(d)[:70])
def test_schema_agrees_with_the_validator(doc: dict[str, Any]) -> None:
    assert VALIDATOR.is_valid(doc) == _submit_accepts(doc)


def test_schema_is_a_valid_draft_2020_12_schema() -> None:
    jsonschema.Draft202012Validator.check_schema(riddle_json_schema())
