"""The form `/app/new`: its fields into the riddle document it submits, and the errors
of that document back onto the fields they name.

The document is checked by the same code as `riddlectl submit` (`Service.check`); this
module only builds it, so that the preview shows exactly what will be submitted.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from riddlectl.document.answers import ANSWER_TYPES as TYPED_ANSWERS
from riddlectl.document.answers import FILL_KINDS as FILL_WORDS
from riddlectl.errors import RiddleError

# The choices the form offers, from the document's own vocabularies ("" is no typed answer).
ANSWER_TYPES = ("", *TYPED_ANSWERS)
FILL_KINDS = tuple(FILL_WORDS)
Form = Mapping[str, Sequence[str]]


class FieldError(RiddleError):
    """A form field whose text cannot be put in the document (a priority that is no
    number); `field` names the form field."""


def one(form: Form, name: str) -> str:
    values = form.get(name) or [""]
    return values[-1].strip()


def build(form: Form) -> dict[str, Any]:
    """The riddle document the form describes; `FieldError` for a field that cannot be
    read. Empty optional fields are left out, as `submit --question` leaves them."""
    doc: dict[str, Any] = {"riddle": {"context": one(form, "context"), "question": ""}}
    doc["riddle"]["question"] = one(form, "question")
    answer = _answer(form)
    if answer is not None:
        doc["riddle"]["answer"] = answer
    names, types = form.get("data") or [], form.get("data_type") or []
    doc["data"] = [
        {"type": (types[i] if i < len(types) and types[i] else "text"), "file_plain": n.strip()}
        for i, n in enumerate(names)
        if n.strip()
    ]
    doc["status"] = {
        "extract": {"required": not one(form, "no_extract")},
        "validate": {"required": not one(form, "no_validate")},
    }
    if one(form, "id"):
        doc["id"] = one(form, "id")
    priority = one(form, "priority")
    if priority:
        doc["priority"] = _number(priority, "priority")
    return doc


def _answer(form: Form) -> dict[str, Any] | None:
    kind = one(form, "answer_type")
    if not kind:
        return None
    answer: dict[str, Any] = {"type": kind}
    if kind == "fill":
        answer["kind"] = one(form, "fill_kind") or "text"
        if one(form, "fill_pattern"):
            answer["pattern"] = one(form, "fill_pattern")
        if one(form, "fill_max_tokens"):
            answer["max_tokens"] = _number(one(form, "fill_max_tokens"), "fill_max_tokens")
    elif kind == "noul" and (one(form, "noul_true") or one(form, "noul_false")):
        answer["criteria"] = {"true": one(form, "noul_true"), "false": one(form, "noul_false")}
    elif kind == "choice":
        answer["criteria"] = dict(_pairs(one(form, "choices")))
    elif kind == "score":
        answer["criteria"] = [line.strip() for line in one(form, "levels").splitlines() if line]
    elif kind == "extract":
        answer["kind"] = one(form, "extract_kind") or "text"
        answer["many"] = bool(one(form, "extract_many"))
        if one(form, "extract_image"):
            answer["image"] = _number(one(form, "extract_image"), "extract_image")
    return answer


def _pairs(text: str) -> list[tuple[str, str]]:
    """`key: description` lines (a line without a colon is a key alone)."""
    out = []
    for line in text.splitlines():
        key, _, description = line.partition(":")
        if key.strip():
            out.append((key.strip(), description.strip()))
    return out


def _number(text: str, name: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise FieldError("expected a whole number", field=name) from None


# Which form field a document field's errors belong next to (the longest prefix wins).
_FIELD_OF = {
    "id": "id",
    "riddle.question": "question",
    "riddle.context": "context",
    "riddle.answer": "answer_type",
    "answer": "answer_type",
    "data": "data",
    "priority": "priority",
    "status": "steps",
}


def field_of(exc: RiddleError) -> str:
    """The form field an error of the document names; `form` when it names none."""
    if isinstance(exc, FieldError):
        return exc.field or "form"
    text = exc.field or ""
    if not text and "answer." in str(exc):
        text = "answer"
    best = max((k for k in _FIELD_OF if text.startswith(k)), key=len, default=None)
    return _FIELD_OF[best] if best else "form"
