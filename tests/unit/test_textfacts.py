"""riddlectl.textfacts: the text extractor finds assignments, formulas and numbers."""

from __future__ import annotations

import random
import time
from fractions import Fraction as F

import pytest
from num2words import num2words

from riddlectl.textfacts import MAX_TEXT_BYTES, extract_facts, guess_language


@pytest.mark.parametrize(
    ("text", "name", "value"),
    [
        ("x = 10", "x", F(10)),
        ("x=10", "x", F(10)),
        ("x: 10", "x", F(10)),
        ("x := 10", "x", F(10)),
        ("x is 10", "x", F(10)),
        ("x equals 10", "x", F(10)),
        ("Let x be 10.", "x", F(10)),
        ("let x be 10", "x", F(10)),
        ("x ist 10", "x", F(10)),
        ("x vaut 10", "x", F(10)),
        ("x es 10", "x", F(10)),
        ("x \u00e8 10", "x", F(10)),
        ("x is gelijk aan 10", "x", F(10)),
        ("x er 10", "x", F(10)),
        ("x = -3", "x", F(-3)),
        ("x = -0.25", "x", F(-1, 4)),
        ("x = 3.5", "x", F(7, 2)),
        ("x ist 3,5", "x", F(7, 2)),
        ("x vaut 3,5", "x", F(7, 2)),
        ("x = 3/4", "x", F(3, 4)),
        ("x = -3/4", "x", F(-3, 4)),
        ("x = 1,234,567", "x", F(1234567)),
        ("x = 1.234.567", "x", F(1234567)),
        ("x = 1 234 567", "x", F(1234567)),
        ("x = 1,234", "x", F(1234)),
        ("x ist 1,234", "x", F(617, 500)),
        ("x = twelve thousand three hundred and four", "x", F(12304)),
        ("y ist vierzehn", "y", F(14)),
        ("Let x be twelve.", "x", F(12)),
        ("y equals one hundred and four", "y", F(104)),
        ("x ist zw\u00f6lf", "x", F(12)),
        ("x = minus five", "x", F(-5)),
        ("x vaut moins cinq", "x", F(-5)),
        ("x = 10 apples", "x", F(10)),
        ("The value of x is 10.", "x", F(10)),
        ("Gr\u00f6\u00dfe = 5", "Gr\u00f6\u00dfe", F(5)),
        ("X = 7", "X", F(7)),
        ("x_1 = 2", "x_1", F(2)),
        ("x = 2 + 3", "x", F(5)),
        ("x = 1e3", "x", F(1000)),
    ],
)
def test_assignment_forms(text: str, name: str, value: F) -> None:
    facts = extract_facts(text)
    assert facts.variables == {name: value}
    assert facts.formulas == {}


@pytest.mark.parametrize(
    "text",
    [
        "x = 1, y = 2",
        "x = 1; y = 2",
        "x = 1 and y = 2",
        "x=1,y=2",
        "x = 1\ny = 2",
        "x ist eins und y ist zwei",
        "Let x be one. Let y be two.",
        "x = 1. y = 2",
    ],
)
def test_several_assignments(text: str) -> None:
    assert extract_facts(text).variables == {"x": F(1), "y": F(2)}


@pytest.mark.parametrize(
    ("text", "name", "formula"),
    [
        ("z = x + y", "z", "x + y"),
        ("z = 2 * x", "z", "2 * x"),
        ("z=x*y", "z", "x*y"),
        ("z ist x plus y", "z", "x plus y"),
        ("z = x", "z", "x"),
        ("z = (x + y) / 2", "z", "(x + y) / 2"),
    ],
)
def test_formulas(text: str, name: str, formula: str) -> None:
    facts = extract_facts(text)
    assert facts.formulas == {name: formula}
    assert name not in facts.variables


def test_prose_is_not_taken_for_assignments() -> None:
    text = "This is a riddle. The answer is yes. Das ist ein Test. es ist zw\u00f6lf"
    facts = extract_facts(text)
    assert facts.variables == {} and facts.formulas == {}


def test_numbers_in_order_and_to_json() -> None:
    facts = extract_facts("a = 1.5\nb is twelve; c = 3/4 and values 1,2,3\nz = a + b")
    assert facts.numbers == [F(3, 2), F(12), F(3, 4), F(1), F(2), F(3)]
    assert facts.to_json() == {
        "variables": {"a": "1.5", "b": "12", "c": "0.75"},
        "formulas": {"z": "a + b"},
        "numbers": ["1.5", "12", "0.75", "1", "2", "3"],
    }


def test_later_assignment_wins() -> None:
    facts = extract_facts("x = 1\nx = x + 1\ny = 2\ny = 3")
    assert facts.formulas == {"x": "x + 1"} and facts.variables == {"y": F(3)}


def test_language_guess() -> None:
    assert guess_language("x ist zw\u00f6lf und y ist drei") == "de"
    assert guess_language("x = 1, y = 2") == "en"
    assert guess_language("soit x, la valeur vaut 3") == "fr"


def test_empty_and_oversized_text() -> None:
    assert extract_facts("").to_json() == {"variables": {}, "formulas": {}, "numbers": []}
    with pytest.raises(ValueError, match="larger than"):
        extract_facts("x" * (MAX_TEXT_BYTES + 1))
    with pytest.raises(ValueError, match="larger than"):
        extract_facts("\u00e9" * (MAX_TEXT_BYTES // 2 + 1))  # 2 bytes each in UTF-8


def test_pathological_text_is_fast() -> None:
    started = time.perf_counter()
    extract_facts(" " * 200_000 + "x" + "," * 100_000 + "1" * 50_000 + ".5" * 20_000)
    extract_facts("x = " + "and " * 50_000)
    extract_facts("x is " * 20_000)
    assert time.perf_counter() - started < 5


_HEADS = {
    "en": ("x = ", "x is ", "Let x be "),
    "de": ("x = ", "x ist "),
    "fr": ("x = ", "x vaut "),
    "es": ("x = ", "x es "),
    "pt": ("x = ",),
    "nl": ("x = ",),
    "it": ("x = ",),
    "da": ("x = ",),
}


@pytest.mark.parametrize("lang", sorted(_HEADS))
def test_num2words_acceptance(lang: str) -> None:
    """200 random integers per language, written out by num2words, are recovered."""
    rng = random.Random(f"textfacts-{lang}")
    numbers = [rng.randint(-(10**6), 10**9) for _ in range(200)]
    for head in _HEADS[lang]:
        for n in numbers:
            text = f"{head}{num2words(n, lang=lang)}."
            assert extract_facts(text).variables == {"x": F(n)}, text
