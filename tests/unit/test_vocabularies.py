"""Each vocabulary has one source: the fill kinds and answer types in `document.answers`,
the data types in `document.datatypes`; the form, `submit` and the prompts derive theirs."""

from __future__ import annotations

from typing import get_args

from riddlectl.document import answers, datatypes
from riddlectl.web import forms


def test_the_fill_kinds_of_the_model_are_the_vocabulary() -> None:
    assert set(get_args(answers.FillKind)) == set(answers.FILL_KINDS)
    assert tuple(answers.FILL_KINDS) == forms.FILL_KINDS


def test_the_form_offers_every_answer_type_the_document_knows() -> None:
    assert forms.ANSWER_TYPES == ("", "fill", "noul", "choice", "score", "extract")
    for kind in forms.ANSWER_TYPES[1:]:
        answers.parse_answer_spec(
            {"type": kind, **({"criteria": {"a": "A", "b": "B"}} if kind == "choice" else {})}
            | ({"criteria": ["low", "high"]} if kind == "score" else {})
        )


def test_a_file_names_type_comes_from_the_table() -> None:
    assert [datatypes.type_for(n) for n in ("a.CSV", "b.json", "c.png", "d.wav", "e.txt", "f")] == [
        "csv",
        "json",
        "image",
        "audio",
        "text",
        "text",
    ]
    assert datatypes.text_types() == {"text", "csv", "json"}
    assert datatypes.builtin_types() == ("text", "csv", "json", "image", "audio")
