"""Exact numbers: parsing digit strings and number words, and canonical formatting.

Every value is a :class:`fractions.Fraction`, so ``1/3`` stays ``1/3`` and ``0.1 + 0.2``
is exactly ``0.3``.  The canonical text form is produced by :func:`format_number`:
``150``, ``1.5``, ``-0.25``, ``1/3`` (docs/reference.md#numbers-in-solutions).

Separator rule of :func:`parse_number` (``decimal_comma`` says which mark a lone
separator most likely is, e.g. True for German text):

* spaces (also no-break spaces) between digits are always thousands separators and
  must separate groups of exactly three digits (``1 234 567``);
* when both ``,`` and ``.`` occur, the one that occurs last is the decimal mark and the
  other one the thousands separator (``1,234.5`` and ``1.234,5`` are both 1234.5);
* a mark that occurs several times is a thousands separator (``1.234.567``,
  ``1,234,567``); the groups must then be valid;
* a single mark followed by exactly three digits, after a first group of 1-3 digits that
  does not start with ``0``, is a thousands separator when it is not the expected
  decimal mark (``1,234`` is 1234 by default but 1.234 with ``decimal_comma=True``;
  ``1.234`` is 1.234 by default but 1234 with ``decimal_comma=True``);
* any other single mark is a decimal mark (``3,5`` and ``3.5`` are both 3.5).
"""

from __future__ import annotations

import re
from fractions import Fraction
from functools import lru_cache

from text_to_num import text2num

__all__ = [
    "LANGUAGES",
    "MAX_EXPONENT",
    "MAX_NUMBER_CHARS",
    "MAX_WORDS_CHARS",
    "MINUS_CHARS",
    "format_number",
    "parse_number",
    "scale_word",
    "split_negative",
    "words_to_number",
]

#: Longest number string :func:`parse_number` accepts (characters).
MAX_NUMBER_CHARS = 1000
#: Largest ``|exponent|`` accepted in scientific notation (``1e1000``).
MAX_EXPONENT = 1000
#: Longest text :func:`words_to_number` tries to read (characters).
MAX_WORDS_CHARS = 1000

#: Languages :func:`words_to_number` understands (those of the text2num library).
LANGUAGES = ("en", "de", "fr", "es", "pt", "nl", "it", "da")

#: Characters read as a minus sign: ASCII hyphen-minus, Unicode minus, en dash, the
#: hyphens U+2010-2012, and the small and full-width hyphen-minus (U+FE63, U+FF0D).  The
#: em dash is not one of them: it is punctuation far more often than a sign.
MINUS_CHARS = "-\u2212\u2013\u2010\u2011\u2012\ufe63\uff0d"
_SPACES = " \u00a0\u202f\u2009"
_SIGN_RE = re.compile(rf"([+{re.escape(MINUS_CHARS)}]?)\s*(.*)", re.S)
_PLAIN_RE = re.compile(
    r"\d+|\d*[.,]\d+|\d+(?:[.,]\d{3})+(?:[.,]\d+)?|\d{1,3}(?:[ ]\d{3})+(?:[.,]\d+)?"
)
_SCI_RE = re.compile(r"(\d+(?:\.\d+)?|\.\d+)[eE]([+-]?\d{1,6})")
_GROUPED_RE = re.compile(r"[1-9]\d{0,2}(?:X\d{3})+")


@lru_cache(maxsize=4096)  # values repeat across riddles, and every stage reads them again
def parse_number(text: str, *, decimal_comma: bool = False) -> Fraction:
    """Parse a number written in digits into an exact Fraction.

    Accepts an optional sign (``+``, or a minus of :data:`MINUS_CHARS`), integers,
    decimals with ``.`` or ``,`` (see the module docstring for how separators are
    read), fractions ``a/b`` (each side an unsigned number, sign in front: ``-3/4``),
    and scientific notation ``1e3``/``2.5E-2`` (``|exponent|`` ≤ :data:`MAX_EXPONENT`).
    Surrounding whitespace is ignored.  Raises ``ValueError`` naming the input for
    anything else, for a zero denominator, and for strings longer than
    :data:`MAX_NUMBER_CHARS`.
    """
    if len(text) > MAX_NUMBER_CHARS:
        raise ValueError(f"number string longer than {MAX_NUMBER_CHARS} characters")
    sign_match = _SIGN_RE.fullmatch(text.strip())
    assert sign_match is not None  # the pattern matches any string
    sign, body = sign_match.groups()
    value = _parse_unsigned(body.strip(), text, decimal_comma)
    return -value if sign and sign != "+" else value


def _parse_unsigned(body: str, original: str, decimal_comma: bool) -> Fraction:
    """Parse ``body`` (no sign) as a fraction, scientific or plain number."""
    if "/" in body:
        num_text, _, den_text = body.partition("/")
        numerator = _parse_plain(num_text.strip(), original, decimal_comma)
        denominator = _parse_plain(den_text.strip(), original, decimal_comma)
        if denominator == 0:
            raise ValueError(f"not a number: {original!r} (zero denominator)")
        return numerator / denominator
    sci = _SCI_RE.fullmatch(body)
    if sci:
        exponent = int(sci.group(2))
        if abs(exponent) > MAX_EXPONENT:
            raise ValueError(f"not a number: {original!r} (exponent beyond ±{MAX_EXPONENT})")
        return Fraction(sci.group(1)) * Fraction(10) ** exponent
    return _parse_plain(body, original, decimal_comma)


def _parse_plain(body: str, original: str, decimal_comma: bool) -> Fraction:
    """Parse digits with optional thousands separators and decimal mark."""
    for space in _SPACES[1:]:
        body = body.replace(space, " ")
    if not _PLAIN_RE.fullmatch(body):
        raise ValueError(f"not a number: {original!r}")
    if " " in body:
        int_part, dec_part = _split_decimal(body.replace(" ", "X"), ".,")
        return _join(int_part.replace("X", ""), dec_part, original)
    commas, dots = body.count(","), body.count(".")
    if commas and dots:
        # The mark that comes last is the decimal mark: 1,234.5 and 1.234,5.
        dec = "." if body.rfind(".") > body.rfind(",") else ","
        thousands = "," if dec == "." else "."
        int_part, dec_part = _split_decimal(body.replace(thousands, "X"), dec)
        return _join(int_part.replace("X", ""), dec_part, original, grouped=int_part)
    if commas + dots == 0:
        return Fraction(int(body))
    mark = "," if commas else "."
    count = commas or dots
    expected_decimal = "," if decimal_comma else "."
    grouped = body.replace(mark, "X")
    if count > 1 or (mark != expected_decimal and _GROUPED_RE.fullmatch(grouped)):
        return _join(grouped.replace("X", ""), "", original, grouped=grouped)
    int_part, _, dec_part = body.partition(mark)
    return _join(int_part, dec_part, original)


def _split_decimal(body: str, marks: str) -> tuple[str, str]:
    """Split at the last decimal mark among ``marks``; no mark → empty decimals."""
    positions = [body.rfind(mark) for mark in marks]
    pos = max(positions)
    if pos < 0:
        return body, ""
    return body[:pos], body[pos + 1 :]


def _join(int_part: str, dec_part: str, original: str, grouped: str | None = None) -> Fraction:
    """Build the Fraction from digit strings, checking thousands groups if any."""
    if grouped is not None and "X" in grouped and not _GROUPED_RE.fullmatch(grouped):
        raise ValueError(f"not a number: {original!r} (bad thousands grouping)")
    if not (int_part + dec_part).isdigit() or not (int_part.isdigit() or not int_part):
        raise ValueError(f"not a number: {original!r}")
    whole = Fraction(int(int_part)) if int_part else Fraction(0)
    if dec_part:
        whole += Fraction(int(dec_part), 10 ** len(dec_part))
    return whole


def format_number(value: Fraction | int) -> str:
    """Format exactly: ``150``, ``1.5``, ``-0.25`` (no trailing zeros, no exponent), ``1/3``.

    A fraction whose denominator has prime factors other than 2 and 5 has no finite
    decimal expansion and is written ``p/q`` in lowest terms (``-2/3``).  ``bool`` is
    refused with ``TypeError`` (``True`` is not the number 1 here).
    """
    if isinstance(value, bool) or not isinstance(value, int | Fraction):
        raise TypeError(f"format_number needs a Fraction or int, not {type(value).__name__}")
    value = Fraction(value)
    if value.denominator == 1:
        return str(value.numerator)
    den = value.denominator
    twos = _multiplicity(den, 2)
    fives = _multiplicity(den, 5)
    if den != 2**twos * 5**fives:
        return f"{value.numerator}/{den}"
    digits = max(twos, fives)
    scaled = abs(value.numerator) * (10**digits // den)
    int_part, frac_part = divmod(scaled, 10**digits)
    frac_text = str(frac_part).rjust(digits, "0").rstrip("0")
    sign = "-" if value < 0 else ""
    return f"{sign}{int_part}.{frac_text}"


def _multiplicity(n: int, p: int) -> int:
    """How many times the prime ``p`` divides ``n`` (n > 0)."""
    count = 0
    while n % p == 0:
        n //= p
        count += 1
    return count


# --- numbers written as words ---------------------------------------------------------

_NEGATIVE_WORDS = {
    "en": ("minus", "negative"),
    "de": ("minus", "negativ"),
    "fr": ("moins", "négatif"),
    "es": ("menos", "negativo"),
    "pt": ("menos", "negativo"),
    "nl": ("min", "minus", "negatief"),
    "it": ("meno", "negativo"),
    "da": ("minus", "negativ"),
}

# Scale words, largest first, as regex alternatives (longest form first so that
# "millionen" is not cut to "million").  They are searched as substrings because
# German, Dutch, Italian and Danish write "zweihunderttausend" as one word.
_SCALES = {
    "en": ((10**12, "trillion"), (10**9, "billion"), (10**6, "million"), (10**3, "thousand")),
    "de": (
        (10**12, "billionen|billion"),
        (10**9, "milliarden|milliarde"),
        (10**6, "millionen|million"),
        (10**3, "tausend"),
    ),
    "fr": ((10**9, "milliards|milliard"), (10**6, "millions|million"), (10**3, "mille")),
    "es": ((10**6, "millones|millón|millon"), (10**3, "mil")),
    "pt": ((10**9, "bilhões|bilhão"), (10**6, "milhões|milhão"), (10**3, "mil")),
    "nl": ((10**9, "miljard"), (10**6, "miljoen"), (10**3, "duizend")),
    "it": ((10**9, "miliardi|miliardo"), (10**6, "milioni|milione"), (10**3, "mila|mille")),
    "da": (
        (10**9, "milliarder|milliard"),
        (10**6, "millioner|million"),
        (10**3, r"tusinde(?![a-zæøå])|tusind"),
    ),
}
_SCALE_RES = {
    lang: tuple((value, re.compile(forms, re.I)) for value, forms in scales)
    for lang, scales in _SCALES.items()
}
_CONNECTORS = {
    "en": ("and",),
    "de": ("und",),
    "fr": ("et",),
    "es": ("y",),
    "pt": ("e",),
    "nl": ("en",),
    "it": ("e",),
    "da": ("og",),
}
# Spellings num2words and people use that text2num does not read, mapped to ones it does.
_FIXES: dict[str, tuple[tuple[re.Pattern[str], str], ...]] = {
    "de": (
        (re.compile(r"\beine[nrs]?\b", re.I), "ein"),
        (re.compile(r"eins(?=tausend)", re.I), "ein"),
    ),
    # Italian elides the o of "cento" before "otto"/"ottanta": "centottanta".
    "it": (
        (re.compile(r"cent(?=ott)", re.I), "cento"),
        (re.compile(r"dicotto", re.I), "diciotto"),  # num2words' spelling of 18
    ),
    # Danish 60 is "tres" to text2num but also "treds"; "halvtreds" (50) stays.
    "da": ((re.compile(r"(?<!halv)treds", re.I), "tres"),),
}


def words_to_number(text: str, lang: str) -> Fraction | None:
    """Read an integer written in words in ``lang`` (one of :data:`LANGUAGES`).

    Handles a leading negative word (``minus``, ``negative``, ``moins``, ``menos``,
    ``min``, ``meno``), English ``and`` and commas (``one million, two hundred and
    four``), hyphens, capitalised nouns (``eine Million``) and compound scale words
    (``einhunderteinstausend``).  Returns None when the text is not a number in that
    language, is empty, is one letter (text2num reads "o" as zero, but a lone letter
    is a name), or is longer than :data:`MAX_WORDS_CHARS`; an unknown language raises
    ``ValueError``.  Never raises for odd text.  Decimals, fractions and percentages in
    words are :mod:`riddlectl.handlers.builtin.words.numberwords`'s.
    """
    if lang not in _NEGATIVE_WORDS:
        raise ValueError(f"unsupported language {lang!r}; expected one of {', '.join(LANGUAGES)}")
    if len(text) > MAX_WORDS_CHARS:
        return None
    negative, cleaned = split_negative(" ".join(text.replace(",", " ").split()), lang)
    if len(cleaned) < 2:
        return None
    for pattern, replacement in _FIXES.get(lang, ()):
        cleaned = pattern.sub(replacement, cleaned)
    value = _words_value(cleaned, lang)
    if value is None:
        return None
    return Fraction(-value if negative else value)


def split_negative(text: str, lang: str) -> tuple[bool, str]:
    """(True, rest) when ``text`` starts with a negative word of ``lang`` or a minus sign
    glued to a word ("-five"); else (False, text)."""
    first, _, rest = text.partition(" ")
    if first.casefold() in _NEGATIVE_WORDS[lang] and rest:
        return True, rest
    if text[:1] in MINUS_CHARS and text[1:2].isalpha():
        return True, text[1:]
    return False, text


def scale_word(word: str, lang: str) -> int | None:
    """The value of one scale word of ``lang`` ("thousand", "Millionen"), else None."""
    for value, pattern in _SCALE_RES[lang]:
        if pattern.fullmatch(word):
            return value
    return None


def _words_value(text: str, lang: str) -> int | None:
    """Non-negative integer from words, splitting at scale words when text2num fails."""
    text = _strip_connectors(text, lang)
    if not text or not any(ch.isalpha() for ch in text):
        return None
    direct = _text2num(text, lang)
    if direct is not None:
        return direct
    # text2num rejects some compounds ("zweihunderteinstausend", Danish
    # "tooghalvfjerdstusind"): split at the largest scale word and recurse.
    for scale, pattern in _SCALE_RES[lang]:
        match = pattern.search(text)
        if match is None:
            continue
        left_text, right_text = text[: match.start()], text[match.end() :]
        left = _words_value(left_text, lang) if left_text.strip() else 1
        right = _words_value(right_text, lang) if right_text.strip() else 0
        if left is None or right is None or left == 0 or right >= scale:
            return None
        return left * scale + right
    return None


def _strip_connectors(text: str, lang: str) -> str:
    """Drop connector words ("and", "og") and hyphens at both ends of a chunk."""
    words = text.strip(" -").split()
    connectors = _CONNECTORS[lang]
    while words and words[0].casefold() in connectors:
        words.pop(0)
    while words and words[-1].casefold() in connectors:
        words.pop()
    return " ".join(words)


def _text2num(text: str, lang: str) -> int | None:
    """text2num, with None instead of an exception for non-numbers."""
    try:
        value = text2num(text, lang)
    except (ValueError, TypeError):
        return None
    return value if isinstance(value, int) else None
