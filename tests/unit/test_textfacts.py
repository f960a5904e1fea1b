"""The text extractor finds assignments, formulas and numbers."""

from __future__ import annotations

import random
import time
from fractions import Fraction as F

import pytest
from hypothesis import given
from hypothesis import settings as hyp_settings
from hypothesis import strategies as st
from num2words import num2words

from riddlectl.handlers.builtin.text.facts import MAX_TEXT_BYTES, extract_facts, guess_language
from tests.bounds import UNBOUNDED


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
    assert time.perf_counter() - started < UNBOUNDED


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


# -- every one-letter name, every assignment form ---------------------------------------

_LETTERS = [chr(c) for c in range(ord("a"), ord("z") + 1)] + [
    chr(c) for c in range(ord("A"), ord("Z") + 1)
]
_FORMS = (
    "{n} = {v}",
    "{n}={v}",
    "{n}: {v}",
    "{n} := {v}",
    "{n} is {v}",
    "{n} is equal to {v}",
    "{n} equals {v}",
    "Let {n} be {v}.",
    "let {n} be {v}",
    "{n} ist {v}",
    "{n} ist gleich {v}",
    "{n} sei {v}",
    "Sei {n} gleich {v}.",
    "{n} soll {v} sein",
    "{n} beträgt {v}",
)
_VALUES = (("10", F(10)), ("ten", F(10)), ("zehn", F(10)), ("-7", F(-7)), ("2.5", F(5, 2)))


@pytest.mark.parametrize("form", _FORMS)
@pytest.mark.parametrize("letter", _LETTERS)
def test_every_letter_with_every_form(letter: str, form: str) -> None:
    for text, value in _VALUES:
        line = form.format(n=letter, v=text)
        assert extract_facts(line).variables == {letter: value}, line


def test_the_issue_examples() -> None:
    for line in ("c is 10", "c ist zehn", "Let c be ten", "c equals ten", "c = 10"):
        assert extract_facts(line).variables == {"c": F(10)}, line


@given(
    letter=st.sampled_from(_LETTERS),
    form=st.sampled_from(_FORMS),
    n=st.integers(min_value=-(10**6), max_value=10**6),
    how=st.sampled_from(["digits", "en", "de"]),
)
@hyp_settings(max_examples=300, deadline=None)
def test_letters_forms_and_numbers_property(letter: str, form: str, n: int, how: str) -> None:
    text = str(n) if how == "digits" else num2words(n, lang=how)
    line = form.format(n=letter, v=text)
    assert extract_facts(line).variables == {letter: F(n)}, line


def test_a_single_letter_is_never_a_number_word() -> None:
    # text2num reads "o" as zero; after "=" a bare name is a formula.
    assert extract_facts("x = o").formulas == {"x": "o"}
    assert extract_facts("x is O").variables == {}
    assert extract_facts("x = O").variables == {}


def test_pronouns_before_words_are_still_prose() -> None:
    for line in ("es ist zwölf", "It is ten.", "Das ist zehn", "Es sei zehn", "Man soll 3 sein"):
        facts = extract_facts(line)
        assert facts.variables == {} and facts.unreadable == {}, line


# -- numbers read right, or refused with a reason ----------------------------------------


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("x = 10%", F(1, 10)),
        ("x = 10 %", F(1, 10)),
        ("x = 12.5%", F(1, 8)),
        ("x = -5%", F(-1, 20)),
        ("x = 3\u2030", F(3, 1000)),
        ("x = 10 percent", F(1, 10)),
        ("x = 10 per cent", F(1, 10)),
        ("x ist 10 Prozent", F(1, 10)),
        ("x = 1e3", F(1000)),
        ("x = 2.5E-2", F(1, 40)),
        ("x = 1,5", F(3, 2)),
        ("x = 1,000", F(1000)),
        ("x ist 1,000", F(1)),
        ("x = 1,000.5", F(2001, 2)),
        ("x = 1 000", F(1000)),
        ("x = \u22123", F(-3)),
        ("x = \u20133", F(-3)),
        ("x = \u20103", F(-3)),
        ("x = \u20113", F(-3)),
        ("x = \u20123", F(-3)),
        ("x = \ufe633", F(-3)),
        ("x = \uff0d3", F(-3)),
        ("x = - 3", F(-3)),
        ("x = +3", F(3)),
        ("x = -(-3)", F(3)),
        ("x = 10 thousand", F(10000)),
        ("x = 2.5 million", F(2_500_000)),
        ("x ist 1,5 Millionen", F(1_500_000)),
        ("x ist 2 Mio.", F(2_000_000)),
        ("x = 2 dozen", F(24)),
        ("x = 3 quarters", F(3, 4)),
        ("x = 2 thirds", F(2, 3)),
        ("x ist 3 Viertel", F(3, 4)),
        ("x = 10 and a half", F(21, 2)),
        ("x ist 2 und ein halb", F(5, 2)),
        ("x = 2 1/2", F(5, 2)),
        ("x = -2 1/2", F(-5, 2)),
        ("x = $10", F(10)),
        ("x = 10\u20ac", F(10)),
        ("x = 10 \u20ac", F(10)),
        ("x = 10 apples", F(10)),
        ("x = 10 apples and pears", F(10)),
        ("x is 10 (since 2020)", F(10)),
        ("x = 10 thousand of them", F(10_000)),
        ("x = 10 of them", F(10)),
        ("x = 3/4 and values 1,2,3", F(3, 4)),
        ("x = 007", F(7)),
        ("x = \u00bd", F(1, 2)),
        ("x = 2\u00be", F(11, 4)),
        ("x = -2 \u00bd cups", F(-5, 2)),
        ("x = \u2152", F(1, 10)),
    ],
)
def test_numbers_read_exactly(text: str, value: F) -> None:
    facts = extract_facts(text)
    assert facts.variables == {"x": value}, text
    assert facts.unreadable == {}


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("x = 0x10", "hexadecimal"),
        ("x = 0X1F", "hexadecimal"),
        ("x = 0b101", "binary"),
        ("x = 0o17", "octal"),
        ("x = 10abc", "letters attached"),
        ("x = 10kg", "letters attached"),
        ("x = 3rd", "letters attached"),
        ("x = 2x", "letters attached"),
        ("x = 1e", "letters attached"),
        ("x = 10\u00b2", "'\u00b2' attached"),
        ("x = 10:30", "':' attached"),
        ("x = --3", "two signs"),
        ("x = +-3", "two signs"),
        ("x = - -3", "two signs"),
        ("x = \u22123 - -", "not a number"),
        ("x = 1.2.3", "not a number"),
        ("x = 1,2,3", "not a number"),
        ("x = 5/0", "not a number"),
        ("x = 10 or 12", "more than one number"),
        ("x = 10 00", "more than one number"),
        ("x = 10 twelve", "more than one number"),
        ("x = 10 and 12", "more than one number"),
        ("x = 10 x 3", "more than one number"),
        ("x = 10 one hundred", "more than one number"),
        ("x is 10 (or 12)", "more than one number"),
        ("x = 10 \u2013 12", "more than one number"),
        ("x = 10 bis 12", "more than one number"),
        ("x = 2 3/2", "more than one number"),
        ("x = 2 * 10%", "not a number"),
        ("x = \u20143", "dash"),
        ("x = 10% of y", "a share of something"),
        ("x = 10 percent of y", "a share of something"),
        ("x ist 3 Viertel von y", "a share of something"),
    ],
)
def test_misreadings_are_refused(text: str, reason: str) -> None:
    facts = extract_facts(text)
    assert facts.variables == {} and facts.formulas == {}, text
    assert list(facts.unreadable) == ["x"], text
    assert reason in facts.unreadable["x"], facts.unreadable
    assert facts.to_json()["unreadable"] == facts.unreadable


def test_a_refusal_quotes_a_long_value_shortened() -> None:
    (reason,) = extract_facts("x = 0x10" + " and" * 50_000).unreadable.values()
    assert reason == "'0x10 and and and and and and and and ...': hexadecimal numbers are not read"


def test_refusal_and_reading_follow_the_later_assignment_wins_rule() -> None:
    facts = extract_facts("x = 5\nx = 0x10\ny = 0x10\ny = 16")
    assert facts.variables == {"y": F(16)}
    assert list(facts.unreadable) == ["x"]
    assert "unreadable" not in extract_facts("x = 1").to_json()


def test_numbers_list_takes_readings_not_pieces() -> None:
    assert extract_facts("x = 10%, y = 0x10").numbers == [F(1, 10)]
    assert extract_facts("a = 10 thousand and b = 3").numbers == [F(10000), F(3)]


# -- numbers in words beyond integers -------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("x = two point five", F(5, 2)),
        ("x ist zwei Komma fünf", F(5, 2)),
        ("x = three quarters", F(3, 4)),
        ("x = three-quarters", F(3, 4)),
        ("x = one half", F(1, 2)),
        ("x = a half", F(1, 2)),
        ("x = an eighth", F(1, 8)),
        ("x = a quarter", F(1, 4)),
        ("x = minus two point five", F(-5, 2)),
        ("x = minus three quarters", F(-3, 4)),
        ("x ist drei Viertel", F(3, 4)),
        ("x ist dreiviertel", F(3, 4)),
        ("x ist ein halb", F(1, 2)),
        ("x ist einhalb", F(1, 2)),
        ("x ist eine Hälfte", F(1, 2)),
        ("x ist zweieinhalb", F(5, 2)),
        ("x ist anderthalb", F(3, 2)),
        ("x ist minus zwei Komma fünf", F(-5, 2)),
        ("x = two and a half", F(5, 2)),
        ("x = one and three quarters", F(7, 4)),
        ("x = one hundred and three quarters", F(403, 4)),
        ("x = two thirds", F(2, 3)),
        ("x = five eighths", F(5, 8)),
        ("x = three tenths", F(3, 10)),
        ("x = seven hundredths", F(7, 100)),
        ("x = twenty-five hundredths", F(1, 4)),
        ("x = one twentieth", F(1, 20)),
        ("x = three halves", F(3, 2)),
        ("x ist zwei Drittel", F(2, 3)),
        ("x ist drei Achtel", F(3, 8)),
        ("x ist ein Siebtel", F(1, 7)),
        ("x ist fünf Hundertstel", F(1, 20)),
        ("x ist ein Zwanzigstel", F(1, 20)),
        ("Let x be zero point zero five", F(1, 20)),
        ("x = three point one four", F(157, 50)),
        ("x = point five", F(1, 2)),
        ("x ist drei Komma eins vier", F(157, 50)),
        ("x ist zwei Komma fünfundzwanzig", F(9, 4)),
        ("x = ten percent", F(1, 10)),
        ("x ist zehn Prozent", F(1, 10)),
        ("x = two point five million", F(2_500_000)),
        ("x = a thousand", F(1000)),
        ("x vaut deux virgule cinq", F(5, 2)),
        ("x es dos coma cinco", F(5, 2)),
    ],
)
def test_number_words_beyond_integers(text: str, value: F) -> None:
    assert extract_facts(text).variables == {"x": value}, text


@given(
    numerator=st.integers(min_value=1, max_value=99),
    denominator=st.sampled_from([2, 3, 4, 5, 6, 7, 8, 9, 10, 12, 16, 20, 100]),
    negative=st.booleans(),
)
@hyp_settings(max_examples=200, deadline=None)
def test_english_fractions_property(numerator: int, denominator: int, negative: bool) -> None:
    if denominator == 2:
        noun = "half" if numerator == 1 else "halves"
    elif denominator == 4:
        noun = "quarter" if numerator == 1 else "quarters"
    else:
        # "one hundredth": after "twenty" that would read as twenty-one hundredths.
        ordinal = num2words(denominator, to="ordinal").removeprefix("one ")
        noun = ordinal + ("" if numerator == 1 else "s")
    words = f"{'minus ' if negative else ''}{num2words(numerator)} {noun}"
    value = F(numerator, denominator) * (-1 if negative else 1)
    assert extract_facts(f"Let v be {words}.").variables == {"v": value}, words


def _german_denominator(q: int) -> str:
    if q == 2:
        return "Halbe"
    word = num2words(q, lang="de")
    fixes = {"drei": "drit", "sieben": "sieb", "acht": "ach"}
    return (fixes.get(word, word) + ("tel" if q < 20 else "stel")).capitalize()


@given(
    numerator=st.integers(min_value=2, max_value=99),
    denominator=st.sampled_from([2, 3, 4, 5, 6, 7, 8, 9, 10, 12, 16, 20, 100]),
)
@hyp_settings(max_examples=200, deadline=None)
def test_german_fractions_property(numerator: int, denominator: int) -> None:
    words = f"{num2words(numerator, lang='de')} {_german_denominator(denominator)}"
    assert extract_facts(f"v ist {words}").variables == {"v": F(numerator, denominator)}, words


@given(
    whole=st.integers(min_value=-10_000, max_value=10_000),
    digits=st.text(alphabet="0123456789", min_size=1, max_size=6),
    lang=st.sampled_from(["en", "de"]),
)
@hyp_settings(max_examples=200, deadline=None)
def test_decimals_in_words_property(whole: int, digits: str, lang: str) -> None:
    mark = {"en": "point", "de": "Komma"}[lang]
    minus = "minus " if whole < 0 else ""
    spoken = " ".join(num2words(int(d), lang=lang) for d in digits)
    words = f"{minus}{num2words(abs(whole), lang=lang)} {mark} {spoken}"
    magnitude = abs(whole) + F(int(digits), 10 ** len(digits))
    value = -magnitude if whole < 0 else magnitude
    head = "v = " if lang == "en" else "v ist "
    assert extract_facts(head + words).variables == {"v": value}, words
