"""Values for the generated tables: exact numbers, and the ways files write them."""

from __future__ import annotations

import random
from fractions import Fraction

from riddlectl.document.numbers import format_number
from riddlectl.handlers.builtin.tables.cells import decimal_mark

_NAMES_TEXT = "x y z a b c w n1 price qty total_sum Umsatz höhe Breite rate_2 k m p"
_ONES_TEXT = """zero one two three four five six seven eight nine ten eleven twelve thirteen
fourteen fifteen sixteen seventeen eighteen nineteen"""
_TENS_TEXT = "_ _ twenty thirty forty fifty sixty seventy eighty ninety"
NAMES = tuple(_NAMES_TEXT.split())
_ONES = _ONES_TEXT.split()
_TENS = _TENS_TEXT.split()


def names(rng: random.Random, count: int) -> list[str]:
    return rng.sample(NAMES, count)


def value(rng: random.Random) -> tuple[Fraction, str]:
    """A value and its kind: int, negative, decimal, thousands, words, fraction."""
    kind = rng.choice(("int", "negative", "decimal", "thousands", "words", "fraction"))
    if kind == "int":
        return Fraction(rng.randint(0, 999)), kind
    if kind == "negative":
        return -Fraction(rng.randint(1, 9999), 10 ** rng.randint(0, 2)), kind
    if kind == "decimal":
        return Fraction(rng.randint(1, 99999), 10 ** rng.randint(1, 3)), kind
    if kind == "thousands":
        return Fraction(rng.randint(1000, 9_999_999), 10 ** rng.randint(0, 2)), kind
    if kind == "words":
        return Fraction(rng.randint(0, 99)), kind
    return Fraction(rng.randint(1, 9), rng.choice((2, 3, 4, 7))), kind


def english(number: Fraction, grouped: bool = False) -> str:
    """``1234.5``, or ``1,234.5`` when grouped; fractions as ``p/q``."""
    text = format_number(number)
    if not grouped or "/" in text:
        return text
    sign, digits = ("-", text[1:]) if text.startswith("-") else ("", text)
    whole, _, decimals = digits.partition(".")
    return sign + f"{int(whole):,}" + (f".{decimals}" if decimals else "")


def german(number: Fraction, grouped: bool = False) -> str:
    """``1234,5``, or ``1.234,5`` when grouped."""
    text = english(number, grouped)
    if "/" in text:
        return text
    return text.replace(",", "\0").replace(".", ",").replace("\0", ".")


def words(number: Fraction) -> str:
    """English words for 0-99."""
    n = int(number)
    if n < 20:
        return _ONES[n]
    tens, ones = divmod(n, 10)
    return _TENS[tens] + (f"-{_ONES[ones]}" if ones else "")


def written(values: list[tuple[Fraction, str]], rng: random.Random, default_mark: str) -> list[str]:
    """The values as one file writes them: number words, or digits with one decimal mark
    throughout (thousands grouped at random). A file whose digits would not show a mark
    other than the reader's `default_mark` is written with that one: ``8,884`` alone in a
    ``,``-table is ambiguous, and no reader could know what its author meant."""
    mark = rng.choice((",", "."))
    grouped = [kind == "thousands" and rng.random() < 0.5 for _, kind in values]
    texts = _in_style(values, mark, grouped)
    if (decimal_mark(texts) or default_mark) != mark:
        texts = _in_style(values, default_mark, grouped)
    return texts


def _in_style(values: list[tuple[Fraction, str]], mark: str, grouped: list[bool]) -> list[str]:
    out = []
    for (number, kind), group in zip(values, grouped, strict=True):
        if kind == "words":
            out.append(words(number))
        else:
            out.append(german(number, group) if mark == "," else english(number, group))
    return out
