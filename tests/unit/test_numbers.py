"""riddlectl.numbers: exact parsing and formatting, number words in eight languages."""

from __future__ import annotations

import random
from fractions import Fraction as F

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from num2words import num2words

from riddlectl.numbers import (
    LANGUAGES,
    MAX_NUMBER_CHARS,
    format_bool,
    format_number,
    parse_number,
    words_to_number,
)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("10", F(10)),
        ("-3", F(-3)),
        ("+4", F(4)),
        ("3.5", F(7, 2)),
        ("-0.25", F(-1, 4)),
        ("3,5", F(7, 2)),
        ("3/4", F(3, 4)),
        ("-3/4", F(-3, 4)),
        ("1,234,567", F(1234567)),
        ("1.234.567", F(1234567)),
        ("1 234 567", F(1234567)),
        ("1\u00a0234", F(1234)),
        ("1e3", F(1000)),
        ("2.5E-2", F(1, 40)),
        ("1,234.5", F(2469, 2)),
        ("1.234,5", F(2469, 2)),
        (".5", F(1, 2)),
        ("\u22127", F(-7)),
        ("  42 ", F(42)),
        ("0,125", F(1, 8)),
        ("1,234", F(1234)),
        ("1.234", F(617, 500)),
    ],
)
def test_parse_number_accepts(text: str, expected: F) -> None:
    assert parse_number(text) == expected


def test_decimal_comma_decides_lone_separator_before_three_digits() -> None:
    assert parse_number("1,234", decimal_comma=True) == F(617, 500)
    assert parse_number("1.234", decimal_comma=True) == F(1234)
    # Several groups are thousands whatever the language.
    assert parse_number("1,234,567", decimal_comma=True) == F(1234567)
    assert parse_number("3,5", decimal_comma=True) == F(7, 2)


@pytest.mark.parametrize(
    "text", ["", "abc", "1,2,3", "3/0", "1..2", "1e99999", "- ", "1 23", "1.5,3", "x1", "1/2/3"]
)
def test_parse_number_refuses(text: str) -> None:
    with pytest.raises(ValueError, match="not a number"):
        parse_number(text)


def test_parse_number_is_bounded() -> None:
    with pytest.raises(ValueError, match="longer than"):
        parse_number("1" * (MAX_NUMBER_CHARS + 1))
    assert parse_number("1" * MAX_NUMBER_CHARS) == int("1" * MAX_NUMBER_CHARS)


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (F(150), "150"),
        (F(3, 2), "1.5"),
        (F(-1, 4), "-0.25"),
        (F(1, 3), "1/3"),
        (F(-2, 3), "-2/3"),
        (F(0), "0"),
        (F(1, 1024), "0.0009765625"),
        (F(-7, 20), "-0.35"),
        (5, "5"),
        (F(10**30), "1" + "0" * 30),
        (F(1, 6), "1/6"),
    ],
)
def test_format_number(value: F, text: str) -> None:
    assert format_number(value) == text


def test_format_number_refuses_bool_and_float() -> None:
    with pytest.raises(TypeError):
        format_number(True)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        format_number(1.5)  # type: ignore[arg-type]
    assert format_bool(True) == "true" and format_bool(False) == "false"


@settings(database=None)
@given(st.fractions(max_denominator=10**6))
def test_format_then_parse_round_trips(value: F) -> None:
    text = format_number(value)
    assert "e" not in text
    if "." in text:
        assert not text.endswith("0")
    assert parse_number(text) == value


@pytest.mark.parametrize(
    ("text", "lang", "expected"),
    [
        ("twelve thousand three hundred and four", "en", 12304),
        ("one hundred and four", "en", 104),
        ("minus five", "en", -5),
        ("negative twenty-one", "en", -21),
        ("Twelve", "en", 12),
        ("one million, two hundred thousand", "en", 1200000),
        ("zwölf", "de", 12),
        ("vierzehn", "de", 14),
        ("minus fünf", "de", -5),
        ("eine Million zweihunderteinstausend", "de", 1201000),
        ("moins cinq", "fr", -5),
        ("menos cinco", "es", -5),
        ("catorze", "pt", 14),
        ("veertien", "nl", 14),
        ("quattrocentottantuno", "it", 481),
        ("fjorten", "da", 14),
        ("tooghalvfjerdstusind", "da", 72000),
    ],
)
def test_words_to_number(text: str, lang: str, expected: int) -> None:
    assert words_to_number(text, lang) == expected


@pytest.mark.parametrize("text", ["", "apple", "minus", "one two", "x" * 2000, "12"])
def test_words_to_number_none_for_non_numbers(text: str) -> None:
    assert words_to_number(text, "en") is None


def test_words_to_number_unknown_language() -> None:
    with pytest.raises(ValueError, match="unsupported language"):
        words_to_number("one", "xx")


@pytest.mark.parametrize("lang", LANGUAGES)
def test_num2words_round_trip(lang: str) -> None:
    rng = random.Random(f"numbers-{lang}")
    for n in [0, 1, -1, 21, 101, 1001, 10**6, 10**6 + 1, 10**9] + [
        rng.randint(-(10**6), 10**9) for _ in range(150)
    ]:
        assert words_to_number(num2words(n, lang=lang), lang) == n, num2words(n, lang=lang)
