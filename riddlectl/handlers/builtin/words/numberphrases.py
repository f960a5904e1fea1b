"""How a value written in a text reads: a number in digits and the words after it.

:func:`read_digits` reads the right-hand side of an assignment that starts with a number
in digits, exactly, or refuses it with the reason (see
:mod:`riddlectl.handlers.builtin.text.facts`):

* ``10 apples`` is 10 (units and other words are passed over);
* a percent sign or word divides by 100 (``10%``, ``10 %``, ``10 percent``), a per-mille
  sign by 1000; a scale word or fraction noun multiplies (``10 thousand``, ``2.5 Mio.``,
  ``3 quarters``), in the text's language, English or German;
* ``and a half`` and `` 1/2`` make mixed numbers (``10 and a half``, ``2 1/2``), and
  ``2½`` is 2 1/2 (:func:`expand_vulgar`); a currency sign is skipped (``$10``, ``10 €``);
* refused: ``0x10``/``0b101``/``0o17`` (other bases), a number with letters or symbols
  attached (``10abc``, ``10kg``, ``10²``, ``10:30``), digits that are not one number
  (``1.2.3``, ``5/0``), a second number right after the first (``10 12``, ``10 or 12``,
  ``10 x 3``, ``10 \u2013 12``: a range or a product is not one value), a share of
  something (``10% of y``, ``3 Viertel von y``: a formula, not a number), and an
  operator where no formula could be read (``2 * 10%``).

:func:`sign_problem` refuses two signs in a row (``--3``) and an em dash before digits,
which are not a minus sign.  Everything is exact (Fraction).
"""

from __future__ import annotations

import re
from fractions import Fraction
from functools import lru_cache
from typing import NamedTuple

from riddlectl.document.numbers import LANGUAGES, MINUS_CHARS, parse_number
from riddlectl.handlers.builtin.words.numberwords import multiplier, read_words

__all__ = [
    "NUMBER_BODY",
    "PER",
    "SIGN",
    "Reading",
    "expand_vulgar",
    "read_digits",
    "refused",
    "sign_problem",
    "words_value",
]

NUMBER_BODY = (
    r"\d{1,3}(?:[ \u00a0\u202f]\d{3})+(?!\d)(?:[.,]\d+)?"  # 1 234 567
    r"|\d[\d.,]*\d(?:[eE][-+]?\d+)?"  # 1,234.5 / 3,5 / 1e3
    r"|\d(?:[eE][-+]?\d+)?"
)
SIGN = rf"[+{re.escape(MINUS_CHARS)}]"
_OPERATOR_START_RE = re.compile(
    r"[-+*/^\u00d7\u00f7\u00b7=<>]|(?:plus|minus|times|mal|durch|divided|over|hoch)(?!\w)",
    re.IGNORECASE,
)
_LEADING_RE = re.compile(
    rf"(?P<cur>[$\u20ac\u00a3\u00a5]\s?)?(?P<num>{SIGN}?\s*(?:{NUMBER_BODY})(?:/(?:{NUMBER_BODY}))?)"
)
_TWO_SIGNS_RE = re.compile(rf"{SIGN}\s*{SIGN}")
_OTHER_BASES = {"x": "hexadecimal", "b": "binary", "o": "octal"}
_CURRENCY = "$\u20ac\u00a3\u00a5"
#: What a sign glued after a number multiplies it by.
PER = {"%": Fraction(1, 100), "\u2030": Fraction(1, 1000)}
_MIXED_RE = re.compile(r"\d+/\d+")
_DIGIT_RE = re.compile(r"\d")
# "10% of y", "3 quarters of y" are shares of y, not numbers.
_OF = frozenset({"of", "von", "vom", "de", "du", "des", "del", "di", "van", "af"})


# The characters Unicode decomposes as fractions ("½" is 1/2).
_VULGAR = {
    "\u00bc": "1/4",
    "\u00bd": "1/2",
    "\u00be": "3/4",
    "\u2150": "1/7",
    "\u2151": "1/9",
    "\u2152": "1/10",
    "\u2153": "1/3",
    "\u2154": "2/3",
    "\u2155": "1/5",
    "\u2156": "2/5",
    "\u2157": "3/5",
    "\u2158": "4/5",
    "\u2159": "1/6",
    "\u215a": "5/6",
    "\u215b": "1/8",
    "\u215c": "3/8",
    "\u215d": "5/8",
    "\u215e": "7/8",
    "\u2189": "0/3",
}
_VULGAR_RE = re.compile(rf"(\d?)([{''.join(_VULGAR)}])")
# Words that put a second number in question after the first: "10 or 12", "10 bis 12",
# "10 x 12".
_ALTERNATIVES = frozenset(
    {
        "or",
        "to",
        "and",
        "by",
        "x",
        "oder",
        "bis",
        "und",
        "ou",
        "à",
        "et",
        "o",
        "y",
        "a",
        "e",
        "of",
        "tot",
        "til",
        "eller",
    }
)
# Words that read as one but are articles far more often ("10 apples, one of them").
_ARTICLES = frozenset(
    {"a", "an", "one", "ein", "eine", "einen", "einem", "einer", "un", "une", "uno", "una"}
)
_EDGE_PUNCTUATION = "()[]{},;:.!?\"'"
_WORD_LANGS = ("en", "de")  # besides the text's own: words any text may use


class Reading(NamedTuple):
    """How a right-hand side reads: kind "number", "digits" (a number in digits with
    words after it, found at offset ``at``), "formula", "unreadable" (value: why), or ""."""

    kind: str
    value: Fraction | str | None = None
    at: int = 0


def expand_vulgar(rhs: str) -> str:
    """``½`` → ``1/2``, ``2½`` → ``2 1/2``: vulgar fraction characters as digits."""
    return _VULGAR_RE.sub(_vulgar, rhs)


def _vulgar(match: re.Match[str]) -> str:
    """``½`` → ``1/2``, ``2½`` → ``2 1/2``."""
    fraction = _VULGAR[match[2]]
    return f"{match[1]} {fraction}" if match[1] else fraction


def sign_problem(rhs: str) -> Reading | None:
    """A refusal for two signs in a row (``--3``, ``+-3``) or an em dash before digits."""
    if _TWO_SIGNS_RE.match(rhs):
        return refused(rhs, "two signs in a row")
    if rhs[:1] == "\u2014" and rhs[1:].lstrip()[:1].isdigit():
        return refused(rhs, "a dash is not a minus sign")
    return None


def read_digits(rhs: str, language: str) -> Reading:
    """A number in digits and what follows it: read exactly, or refused with the reason.

    Kind "digits" (``at``: where the number starts), "unreadable", or "" when ``rhs``
    does not start with a number in digits."""
    match = _LEADING_RE.match(rhs)
    if match is None:
        return Reading("")
    number, rest = match["num"], rhs[match.end() :]
    base = _OTHER_BASES.get(rest[:1].lower())
    if base and number.lstrip("+" + MINUS_CHARS).strip() == "0" and rest[1:2].isalnum():
        return refused(rhs, f"{base} numbers are not read")
    try:
        value = parse_number(number, decimal_comma=language != "en")
    except ValueError:
        return refused(rhs, "not a number")
    shared = rest[:1] in PER
    if shared:
        value, rest = value * PER[rest[0]], rest[1:]
    elif rest[:1] and rest[0] in _CURRENCY:
        rest = rest[1:]
    elif rest[:1] and not rest[0].isspace() and rest[0] not in ",;)":
        what = "letters" if rest[0].isalpha() else repr(rest[0])
        return refused(rhs, f"a number with {what} attached")
    return _words_after(rhs, value, rest.split(), language, match.start("num"), shared)


def _words_after(
    rhs: str, value: Fraction, words: list[str], language: str, at: int, shared: bool
) -> Reading:
    """``value`` as changed by the words after it, or refused when a second number
    follows; ``shared``: a percent sign came right after the number."""
    if words and (words[0] in PER or words[0] in _CURRENCY):
        shared = shared or words[0] in PER
        value, words = value * PER.get(words[0], 1), words[1:]
    factor, used = _multiplier(words, language)
    if factor is not None:
        value, words = value * factor, words[used:]
    if words and words[0].lower() in _OF and (shared or (factor is not None and factor < 1)):
        return refused(rhs, "a share of something is not a number; write it as a formula")
    elif words and value.denominator == 1 and _MIXED_RE.fullmatch(words[0].rstrip(",;")):
        part = parse_number(words[0].rstrip(",;"))
        if 0 < part < 1:
            value, words = value + part if value >= 0 else value - part, words[1:]
    elif len(words) > 1 and words[0].lower() in ("and", "und") and value.denominator == 1:
        fraction, used = _fraction_words(words[1:], language)
        if fraction is not None:
            value = value + fraction if value >= 0 else value - fraction
            words = words[1 + used :]
    if words and _OPERATOR_START_RE.match(words[0]):
        return refused(rhs, "not a number, nor a formula that can be read")
    first, second = (_bare(w) for w in [*words, "", ""][:2])
    pair = f"{first} {second}"
    if (
        _is_number(first, language)
        or (pair.replace(" ", "").isalpha() and _is_number(pair, language))
        or (
            _is_number(second, language)
            and (first.lower() in _ALTERNATIVES or not any(ch.isalpha() for ch in first))
        )
    ):
        return refused(rhs, "more than one number")
    return Reading("digits", value, at)


def refused(rhs: str, why: str) -> Reading:
    """An unreadable right-hand side, quoted (shortened) with the reason."""
    quoted = repr(rhs if len(rhs) <= 40 else rhs[:37] + "...")
    return Reading("unreadable", f"{quoted}: {why}")


def _bare(word: str) -> str:
    return word.strip(_EDGE_PUNCTUATION)


def _is_number(word: str, language: str) -> bool:
    """A number in digits, or a number word that is not also an article."""
    if _DIGIT_RE.search(word):
        return True
    letters = word.replace("-", "").replace(" ", "")
    if len(word) < 2 or word.lower() in _ARTICLES or not letters.isalpha():
        return False
    return _near_words(word, language) is not None


def _multiplier(words: list[str], language: str) -> tuple[Fraction | None, int]:
    """A fraction noun, percent or scale word (one or two words) after digits, in the
    text's language or English or German ("10 thousand", "3 Viertel", "10 per cent"),
    and how many words it took."""
    for size in (2, 1):
        if len(words) < size:
            continue
        phrase = " ".join(_bare(w) for w in words[:size])
        phrase += "." if words[size - 1].endswith(".") else ""
        for lang in dict.fromkeys((language, *_WORD_LANGS)):
            factor = multiplier(phrase, lang)
            if factor is not None:
                return factor, size
    return None, 0


def _fraction_words(words: list[str], language: str) -> tuple[Fraction | None, int]:
    """The longest run of ``words`` that is a fraction below one ("a half"), and its length."""
    for size in range(min(len(words), 6), 0, -1):
        text = " ".join(_bare(w) for w in words[:size])
        part = _near_words(text, language) if text.replace(" ", "").isalpha() else None
        if part is not None and 0 < part < 1:
            return part, size
    return None, 0


@lru_cache(maxsize=4096)
def _near_words(text: str, language: str) -> Fraction | None:
    """``text`` as number words of the text's language, English or German; not the other
    languages, whose short words are everyday words here ("to" is Danish for two)."""
    for lang in dict.fromkeys((language, *_WORD_LANGS)):
        value = read_words(text, lang)
        if value is not None:
            return value
    return None


@lru_cache(maxsize=4096)  # files repeat their phrasings; text2num in 8 languages is not free
def words_value(rhs: str, language: str) -> Fraction | None:
    """``rhs`` as a number in words (integer, decimal, fraction …), trying ``language``
    first, then the others of :data:`riddlectl.document.numbers.LANGUAGES`."""
    for lang in (language, *(lang for lang in LANGUAGES if lang != language)):
        value = read_words(rhs, lang)
        if value is not None:
            return value
    return None
