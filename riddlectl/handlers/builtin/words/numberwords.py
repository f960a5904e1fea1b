"""Numbers in words beyond integers: decimals, fractions, percentages, mixed numbers.

:func:`read_words` reads one number written in words in one language of
:data:`riddlectl.document.numbers.LANGUAGES`, exactly:

* an integer (:func:`riddlectl.document.numbers.words_to_number`): ``twelve``, ``minus five``;
* a decimal, with the language's decimal word (``point``, ``Komma``, ``virgule``,
  ``coma``/``punto``, ``vírgula``, ``virgola``, ``komma``): ``two point five``, ``zwei
  Komma fünf``, ``point five``.  The words after it are digits read one by one (``three
  point one four``, ``zero point zero five``) or, when they are not all single digits,
  one number (``zwei Komma fünfundzwanzig`` is 2.25);
* a number and a *multiplier word* (:func:`multiplier`): a fraction noun (``three
  quarters``, ``two thirds``, ``five eighths``, ``one half``; German ``drei Viertel``,
  ``ein halb``, ``zwei Drittel``, ``fünf Hundertstel``), a percent word (``ten percent``,
  ``zehn Prozent``) or a scale word (``two point five million``); ``a``/``an`` and
  ``ein``/``eine`` count as one (``a half``, ``a thousand``);
* a mixed number: ``two and a half``, ``one and three quarters``, ``zwei und ein halb``
  (what follows "and" must be a fraction below one), and the German compounds
  ``zweieinhalb``, ``eineinhalb``, ``anderthalb``, ``dreiviertel``.

A leading negative word (``minus``) or minus sign negates any of them.  Fraction nouns
and mixed numbers are English and German; decimal, percent and scale words exist in
every language.  Text that is not wholly one number gives None: nothing is guessed.
"""

from __future__ import annotations

import re
from fractions import Fraction
from functools import lru_cache

from riddlectl.document.numbers import MAX_WORDS_CHARS, scale_word, split_negative, words_to_number

__all__ = [
    "GERMAN_QUESTION_WORDS",
    "QUESTION_LANGS",
    "multiplier",
    "question_word_number",
    "read_words",
]

#: Languages of number words in questions.
QUESTION_LANGS = ("en", "de")
#: Words that make a question German, so that its lone separators are read as German
#: data files' are (``Was ist 1,500 mal x?``: 1,500 is one and a half).
GERMAN_QUESTION_WORDS = frozenset(
    [
        "was",
        "ist",
        "mal",
        "durch",
        "geteilt",
        "dividiert",
        "multipliziert",
        "hoch",
        "größer",
        "kleiner",
        "gleich",
        "ungleich",
        "berechne",
        "berechnen",
        "rechne",
        "wieviel",
        "weniger",
    ]
)
#: Most words a fraction noun may take ("one hundredth", "one one-thousandth").
_MAX_PHRASE = 3
#: Longest single word split into a German number and fraction noun ("dreiviertel").
_MAX_COMPOUND = 60

_DECIMAL_WORDS = {
    "en": ("point",),
    "de": ("komma",),
    "fr": ("virgule",),
    "es": ("coma", "punto"),
    "pt": ("vírgula",),
    "it": ("virgola",),
    "nl": ("komma",),
    "da": ("komma",),
}
_PERCENT_WORDS = frozenset(
    {"percent", "prozent", "pourcent", "porciento", "porcento", "percento", "procent"}
)
_PERMILLE_WORDS = frozenset({"permille", "promille", "permil"})
# Two-word spellings joined before reading ("per cent" is read as "percent").
_JOINED = {
    ("per", "cent"): "percent",
    ("pour", "cent"): "pourcent",
    ("por", "ciento"): "porciento",
    ("por", "cento"): "porcento",
    ("per", "cento"): "percento",
    ("per", "mille"): "permille",
}
_ONE_WORDS = {"en": ("a", "an"), "de": ("ein", "eine", "einen", "einem", "einer")}
_AND_WORDS = {"en": "and", "de": "und"}
_EXTRA_SCALES = {
    "en": {"hundred": 100, "dozen": 12},
    "de": {"hundert": 100, "dutzend": 12, "tsd": 10**3, "mio": 10**6, "mrd": 10**9},
}
_EN_FRACTIONS = {"half": 2, "halves": 2, "third": 3, "thirds": 3, "quarter": 4, "quarters": 4}
# English ordinals whose stem is not the cardinal: fifth, eighth, ninth, twelfth; -ieth.
_EN_STEMS = {"fif": "five", "eigh": "eight", "nin": "nine", "twelf": "twelve"}
_DE_HALVES = frozenset({"halb", "halbe", "halben", "halber", "halbes", "hälfte", "hälften"})
# German fraction nouns: the cardinal + "tel" below 20 (with these changes), + "stel" above.
_DE_STEMS = {"drit": "drei", "sieb": "sieben", "ach": "acht"}
_DE_TEL_RE = re.compile(r"(?P<stem>\w+?)tel[ns]?")


def read_words(text: str, lang: str) -> Fraction | None:
    """The number ``text`` writes in words in ``lang`` (see the module docstring), or None.

    None for text longer than :data:`riddlectl.document.numbers.MAX_WORDS_CHARS`; an unknown
    language raises ``ValueError`` (as :func:`riddlectl.document.numbers.words_to_number` does).
    """
    if len(text) > MAX_WORDS_CHARS:
        return None
    integer = words_to_number(text, lang)
    if integer is not None:
        return integer
    negative, rest = split_negative(" ".join(text.replace(",", " ").split()), lang)
    value = _unsigned(_tokens(rest, lang), lang)
    if value is None:
        return None
    return -value if negative else value


@lru_cache(maxsize=4096)  # asked of every word after a number in a text
def multiplier(word: str, lang: str) -> Fraction | None:
    """What ``word`` after a number multiplies it by, else None.

    A fraction noun gives one over its denominator (``quarters`` 1/4, ``Viertel`` 1/4,
    ``half`` 1/2, ``one hundredth`` 1/100), a percent word 1/100 (``per cent``; ``Promille``
    1/1000), a scale word its value (``thousand``, ``Millionen``, ``Mio``, ``dozen``).  A
    trailing ``.`` is ignored.
    """
    w = word.lower().rstrip(".")
    parts = w.split()
    if len(parts) == 2:
        w = _JOINED.get((parts[0], parts[1]), w)
    if w in _PERCENT_WORDS:
        return Fraction(1, 100)
    if w in _PERMILLE_WORDS:
        return Fraction(1, 1000)
    denominator = _denominator(w, lang)
    if denominator is not None:
        return Fraction(1, denominator)
    scale = _EXTRA_SCALES.get(lang, {}).get(w) or scale_word(w, lang)
    return Fraction(scale) if scale else None


@lru_cache(maxsize=4096)
def question_word_number(text: str) -> Fraction | None:
    """``text`` as English or German number words, else None (one letter: never)."""
    if len(text) < 2:
        return None
    for lang in QUESTION_LANGS:
        value = read_words(text, lang)
        if value is not None:
            return value
    return None


# --- the readings ----------------------------------------------------------------------


def _unsigned(words: list[str], lang: str) -> Fraction | None:
    """A number without sign: integer, mixed, number times a multiplier word, or decimal."""
    if not words or split_negative(" ".join(words), lang)[0]:
        return None  # empty, or a second sign ("minus minus five")
    integer = words_to_number(" ".join(words), lang)
    if integer is not None:
        return integer
    mixed = _mixed(words, lang)
    if mixed is not None:
        return mixed
    # The multiplier may take several words ("one one hundredth"): shortest first.
    for cut in range(len(words) - 1, max(len(words) - 1 - _MAX_PHRASE, 0), -1):
        factor = multiplier(" ".join(words[cut:]), lang)
        numerator = _numerator(words[:cut], lang) if factor is not None else None
        if factor is not None and numerator is not None:
            return numerator * factor
    return _decimal(words, lang)


def _numerator(words: list[str], lang: str) -> Fraction | None:
    """What stands before a multiplier word: "a"/"ein", an integer, or a decimal."""
    if len(words) == 1 and words[0] in _ONE_WORDS.get(lang, ()):
        return Fraction(1)
    natural = _natural(words, lang)
    return natural if natural is not None else _decimal(words, lang)


def _natural(words: list[str], lang: str) -> Fraction | None:
    """A non-negative integer in words, without sign."""
    if not words or split_negative(" ".join(words), lang)[0]:
        return None
    return words_to_number(" ".join(words), lang)


def _mixed(words: list[str], lang: str) -> Fraction | None:
    """``two and a half``: an integer, "and", a fraction below one."""
    conjunction = _AND_WORDS.get(lang)
    if conjunction not in words or _denominator(words[-1], lang) is None:
        return None
    k = len(words) - 1 - words[::-1].index(conjunction)
    whole = _natural(words[:k], lang)
    part = _unsigned(words[k + 1 :], lang)
    if whole is None or part is None or not 0 < part < 1:
        return None
    return whole + part


def _decimal(words: list[str], lang: str) -> Fraction | None:
    """``two point five``: an integer (or nothing), the decimal word, digits."""
    marks = [k for k, w in enumerate(words) if w in _DECIMAL_WORDS[lang]]
    if len(marks) != 1 or marks[0] == len(words) - 1:
        return None
    k = marks[0]
    whole = _natural(words[:k], lang) if k else Fraction(0)
    if whole is None:
        return None
    digits = _digits(words[k + 1 :], lang)
    if digits is None:
        return None
    return whole + Fraction(int(digits), 10 ** len(digits))


def _digits(words: list[str], lang: str) -> str | None:
    """The digits the words after a decimal word stand for, as a string."""
    singles = [_digit(w, lang) for w in words]
    if all(d is not None for d in singles):
        return "".join(str(d) for d in singles)
    value = words_to_number(" ".join(words), lang)
    if value is None or value < 0:
        return None
    return str(value)


def _digit(word: str, lang: str) -> int | None:
    if lang == "en" and word == "oh":  # "two point oh five"
        return 0
    value = words_to_number(word, lang)
    return int(value) if value is not None and 0 <= value <= 9 else None


def _denominator(word: str, lang: str) -> int | None:
    """The denominator a fraction noun stands for (English and German), else None."""
    if lang == "en":
        return _EN_FRACTIONS.get(word) or _en_ordinal(word)
    if lang == "de":
        return 2 if word in _DE_HALVES else _de_tel(word)
    return None


def _en_ordinal(word: str) -> int | None:
    """``fifths`` → 5, ``twenty-fifth`` → 25, ``hundredths`` → 100; "second" is not one."""
    word = word.removesuffix("s")
    if not word.endswith("th"):
        return None
    head, _, last = word[:-2].rpartition("-")
    last = _EN_STEMS.get(last, last[:-2] + "y" if last.endswith("ie") else last)
    value = words_to_number(f"{head}-{last}" if head else last, "en")
    return int(value) if value is not None and value >= 2 else None


def _de_tel(word: str) -> int | None:
    """``Viertel`` → 4, ``Siebtel`` → 7, ``Zwanzigstel`` → 20, ``Hundertsteln`` → 100."""
    match = _DE_TEL_RE.fullmatch(word)
    if match is None:
        return None
    stem = _DE_STEMS.get(match["stem"], match["stem"])
    value = words_to_number(stem, "de")
    if value is None and stem.endswith("s"):
        value = words_to_number(stem[:-1], "de")
    return int(value) if value is not None and value >= 2 else None


# --- words as read ---------------------------------------------------------------------


def _tokens(text: str, lang: str) -> list[str]:
    """Lower-cased words, with two-word percent spellings joined, hyphenated fraction
    nouns split (``three-quarters``) and German compounds taken apart."""
    words: list[str] = []
    for word in text.lower().split():
        if words and (words[-1], word) in _JOINED:
            words[-1] = _JOINED[(words[-1], word)]
        elif lang == "de":
            words.extend(_german_parts(word))
        elif "-" in word and multiplier(word, lang) is None:
            head, _, last = word.rpartition("-")
            words.extend([head, last] if multiplier(last, lang) else [word])
        else:
            words.append(word)
    return words


def _german_parts(word: str) -> list[str]:
    """``zweieinhalb`` → zwei und ein halb; ``anderthalb`` → ein und ein halb;
    ``dreiviertel`` → drei viertel; other words unchanged."""
    if word == "anderthalb":
        return ["ein", "und", "ein", "halb"]
    if word.endswith("einhalb"):
        head = word.removesuffix("einhalb")
        return [head, "und", "ein", "halb"] if head else ["ein", "halb"]
    if _de_tel(word) is None and word.endswith(("tel", "teln")) and len(word) <= _MAX_COMPOUND:
        for cut in range(2, len(word) - 4):
            if _de_tel(word[cut:]) and words_to_number(word[:cut], "de") is not None:
                return [word[:cut], word[cut:]]
    return [word]
