"""riddlectl.document.numbers: exact parsing and formatting, number words in eight languages."""

from __future__ import annotations

import random
from fractions import Fraction as F

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from num2words import num2words

from riddlectl.document.numbers import (
    LANGUAGES,
    MAX_NUMBER_CHARS,
    MINUS_CHARS,
    format_number,
    parse_number,
    words_to_number,
)
from riddlectl.handlers.builtin.words.numberwords import (
    multiplier,
    question_word_number,
    read_words,
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


@pytest.mark.parametrize("lang", LANGUAGES)
def test_a_single_letter_is_not_a_number_word(lang: str) -> None:
    # text2num reads English "o" as zero; a lone letter in a riddle is a name.
    for letter in "oOaAiIxyze":
        assert words_to_number(letter, lang) is None
        assert read_words(letter, lang) is None
    assert question_word_number("o") is None


@pytest.mark.parametrize("minus", list(MINUS_CHARS))
def test_every_minus_sign(minus: str) -> None:
    assert parse_number(f"{minus}3") == F(-3)
    assert parse_number(f"{minus}1/4") == F(-1, 4)


@pytest.mark.parametrize("text", ["\u20143", "--3", "-+3", "\u2212-3"])
def test_em_dash_and_two_signs_are_not_numbers(text: str) -> None:
    with pytest.raises(ValueError, match="not a number"):
        parse_number(text)


@pytest.mark.parametrize(
    ("text", "lang", "expected"),
    [
        ("two point five", "en", F(5, 2)),
        ("minus two point five", "en", F(-5, 2)),
        ("-two point five", "en", F(-5, 2)),
        ("two point oh five", "en", F(41, 20)),
        ("zwei Komma fünf", "de", F(5, 2)),
        ("null Komma null eins", "de", F(1, 100)),
        ("three quarters", "en", F(3, 4)),
        ("one half", "en", F(1, 2)),
        ("a half", "en", F(1, 2)),
        ("three halves", "en", F(3, 2)),
        ("one one hundredth", "en", F(1, 100)),
        ("twenty one hundredths", "en", F(21, 100)),  # the shorter fraction noun first
        ("seven twenty-fifths", "en", F(7, 25)),
        ("drei Viertel", "de", F(3, 4)),
        ("ein halb", "de", F(1, 2)),
        ("eineinhalb", "de", F(3, 2)),
        ("dreiundzwanzigeinhalb", "de", F(47, 2)),
        ("drei Vierteln", "de", F(3, 4)),
        ("zwei und drei Viertel", "de", F(11, 4)),
        ("two and a half", "en", F(5, 2)),
        ("ten per cent", "en", F(1, 10)),
        ("fünf Promille", "de", F(1, 200)),
        ("a dozen", "en", F(12)),
        ("deux virgule cinq", "fr", F(5, 2)),
        ("dos coma cinco", "es", F(5, 2)),
        ("dos punto cinco", "es", F(5, 2)),
        ("dois vírgula cinco", "pt", F(5, 2)),
        ("due virgola cinque", "it", F(5, 2)),
        ("twee komma vijf", "nl", F(5, 2)),
        ("to komma fem", "da", F(5, 2)),
        ("dix pour cent", "fr", F(1, 10)),
    ],
)
def test_read_words_beyond_integers(text: str, lang: str, expected: F) -> None:
    assert read_words(text, lang) == expected


@pytest.mark.parametrize(
    "text",
    [
        "minus minus five",
        "a point five",
        "two point",
        "point",
        "two point five point six",
        "two seconds",
        "three months",
        "two and five quarters",
        "and a half",
        "half",
        "quarters",
        "three quarters quarters",
        "x" * 2000,
    ],
)
def test_read_words_refuses(text: str) -> None:
    assert read_words(text, "en") is None


@pytest.mark.parametrize(
    ("word", "lang", "factor"),
    [
        ("quarters", "en", F(1, 4)),
        ("Viertel", "de", F(1, 4)),
        ("hundredths", "en", F(1, 100)),
        ("Zwanzigstel", "de", F(1, 20)),
        ("percent", "en", F(1, 100)),
        ("Prozent", "de", F(1, 100)),
        ("thousand", "en", F(1000)),
        ("Mio.", "de", F(10**6)),
        ("Milliarden", "de", F(10**9)),
        ("billion", "en", F(10**9)),
        ("Billionen", "de", F(10**12)),
        ("apples", "en", None),
        ("Mittel", "de", None),
        ("seconds", "en", None),
    ],
)
def test_multiplier(word: str, lang: str, factor: F | None) -> None:
    assert multiplier(word, lang) == factor


@settings(database=None, deadline=None, max_examples=300)
@given(
    whole=st.integers(0, 10**6),
    numerator=st.integers(1, 15),
    denominator=st.integers(2, 16),
    lang=st.sampled_from(["en", "de"]),
)
def test_mixed_numbers_in_words_property(
    whole: int, numerator: int, denominator: int, lang: str
) -> None:
    if numerator >= denominator:
        numerator = numerator % (denominator - 1) + 1
    part = F(numerator, denominator)
    if lang == "en":
        noun = {2: "half", 4: "quarter"}.get(denominator) or num2words(denominator, to="ordinal")
        noun += "" if numerator == 1 else ("ves" if denominator == 2 else "s")
        noun = noun.replace("halfves", "halves")
        text = f"{num2words(whole)} and {num2words(numerator)} {noun}"
    else:
        stem = num2words(denominator, lang="de")
        stem = {"drei": "drit", "sieben": "sieb", "acht": "ach"}.get(stem, stem)
        noun = "halb" if denominator == 2 else stem + "tel"
        text = f"{num2words(whole, lang='de')} und {num2words(numerator, lang='de')} {noun}"
    assert read_words(text, lang) == whole + part, text
