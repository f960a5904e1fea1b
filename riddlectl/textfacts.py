"""The ``text`` extractor's logic: variable assignments and numbers found in plain text.

:func:`extract_facts` reads text clause by clause (lines, split again at ``;`` and at
``.``/``!``/``?`` followed by a space) and finds assignment *heads*: a name followed
by ``=``, ``:=``, ``:`` or an assignment word — ``is``, ``equals``, ``is equal to``,
``be`` (``Let x be 10``), ``ist``, ``ist gleich``, ``sei``, ``soll`` (``x soll 10 sein``),
``beträgt``, ``vaut``, ``est``, ``es``, ``è``, ``é``, ``er``, ``is gelijk aan`` …
(:data:`ASSIGNMENT_WORDS`), optionally after ``let``/``sei``/``soit``/``sea``/``seja``/
``sia``/``laat``/``lad``.  Any name works, one letter included (``c is 10``, ``I ist
zehn``); only pronouns before an assignment *word* are prose ("es ist zwölf", "it is
ten").  The right-hand side of a head runs to the next head of the clause, minus
trailing punctuation and connectors (``,``, ``and``, ``und``, ``et``, ``y``, ``e``,
``en``, ``og``; and ``sein``), so ``x = 1, y = 2`` and ``x = 1 and y = 2`` are two
assignments.  A right-hand side is, in order:

1. a number in digits (:func:`riddlectl.numbers.parse_number`; ``3,5`` is 3.5; a lone
   ``,`` or ``.`` before three digits is read per the text's language, see below);
2. a number in words in any text2num language, the text's own language first
   (``twelve thousand three hundred and four``, ``minus five``, ``zwölf``), decimals,
   fractions and percentages included (``two point five``, ``drei Viertel``, ``a half``,
   ``ten percent``: :mod:`riddlectl.numberwords`);
3. an arithmetic formula over other variables (``x + y``, ``2 * x``, ``x plus y``),
   which goes to ``formulas`` as written; a formula without variables (``2 + 3``) is
   computed and goes to ``variables``.  A bare name (``z = x``) is a formula only after
   ``=``/``:=``; after a word such as ``is`` it must contain an operator, so prose like
   "the answer is yes" is not a formula;
4. a number in digits followed by words: ``10 apples`` is 10; a percent sign or word
   divides by 100 (``10%``, ``10 %``, ``10 Prozent``: 1/10); a scale word or fraction
   noun multiplies (``10 thousand``, ``2.5 Mio.``, ``3 quarters``); ``and a half`` and
   `` 1/2`` make mixed numbers (``2 1/2``); a currency sign is skipped (``$10``, ``10 €``).

A right-hand side that starts like a number but cannot be read exactly is *refused*: it
goes to ``unreadable`` (name → reason) instead of being read in part.  So are
hexadecimal, octal and binary numbers (``0x10``), a number with letters or symbols
attached (``10abc``, ``10kg``, ``10²``, ``10:30``), two signs in a row (``--3``), a
dash that is not a minus sign (``—3``), digits that are not one number (``1.2.3``,
``5/0``), and a second number right after the first (``10 12``, ``10 or 12``,
``10 \u2013 12``).  A later assignment of the same name replaces an earlier one, refused or
not.  ``numbers`` lists every number in digits standing on its own (nothing glued to
it but ``%``) anywhere in the text, in the value its assignment read (``10%`` is 0.1,
``10 thousand`` 10000), and every number in words that was an assignment's value, in
text order.

The language guess (counting common words) decides whether a lone ``,`` is a decimal
comma (German, French, … text: ``1,234`` is 1.234) or a thousands separator (English
text: 1234).  Not recognised: numbers in words outside assignments, units (``10 m`` is
10), assignments that span lines, and names that are pronouns (``it``, ``es``, ``das``,
… before a word operator: "es ist zwölf").
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from fractions import Fraction
from functools import lru_cache
from typing import Any, NamedTuple

from riddlectl.calculator import CalcError, Compare, Var, evaluate, parse_question, variables_of
from riddlectl.numbers import LANGUAGES, MINUS_CHARS, format_number, parse_number
from riddlectl.numberwords import multiplier, read_words

__all__ = ["ASSIGNMENT_WORDS", "MAX_TEXT_BYTES", "Facts", "extract_facts"]

#: Largest text accepted, in UTF-8 bytes.
MAX_TEXT_BYTES = 10 * 1024 * 1024
#: Longest right-hand side tried as words or as a formula (longer ones: digits only).
MAX_RHS_CHARS = 1000

#: Assignment words after a name, longest first within each language.
ASSIGNMENT_WORDS = (
    "is equal to",
    "equals",
    "is",
    "be",
    "ist gleich",
    "ist",
    "gleich",
    "est égal à",
    "vaut",
    "est",
    "égal à",
    "es igual a",
    "es",
    "vale",
    "é igual a",
    "é",
    "è uguale a",
    "è",
    "vale",
    "sei gleich",
    "sei",
    "soll gleich",
    "soll",
    "beträgt",
    "is gelijk aan",
    "bedraagt",
    "er lig med",
    "er",
)
_WORD_OPS = "|".join(
    re.escape(w).replace(r"\ ", r"\s+")
    for w in sorted(set(ASSIGNMENT_WORDS), key=len, reverse=True)
)
# Each part is a plain alternation or a bounded character class: no nested
# quantifiers, so matching stays linear (no catastrophic backtracking).
_HEAD_RE = re.compile(
    r"(?:(?<!\w)(?:let|sei|soit|sea|seja|sia|laat|lad)\s+)?"
    r"(?<!\w)(?P<name>[^\W\d]\w*)"
    rf"(?:\s*(?P<sym>:=|=(?!=)|:(?![:=]))|\s+(?P<word>{_WORD_OPS})(?!\w))\s*",
    re.IGNORECASE,
)
_CLAUSE_SPLIT_RE = re.compile(r";|[.!?](?=\s|$)")
_NUMBER_BODY = (
    r"\d{1,3}(?:[ \u00a0\u202f]\d{3})+(?!\d)(?:[.,]\d+)?"  # 1 234 567
    r"|\d[\d.,]*\d(?:[eE][-+]?\d+)?"  # 1,234.5 / 3,5 / 1e3
    r"|\d(?:[eE][-+]?\d+)?"
)


_SIGN = rf"[+{re.escape(MINUS_CHARS)}]"
# A number standing on its own: nothing glued before it, no letter or digit group after.
_NUMBER_RE = re.compile(
    rf"(?<![\w.,])(?:(?<![\w)]){_SIGN})?(?:{_NUMBER_BODY})(?:/(?:{_NUMBER_BODY}))?(?!\w)"
)
# A right-hand side that starts like a number, whatever follows it.
_LEADING_RE = re.compile(
    rf"(?P<cur>[$\u20ac\u00a3\u00a5]\s?)?(?P<num>{_SIGN}?\s*(?:{_NUMBER_BODY})(?:/(?:{_NUMBER_BODY}))?)"
)
_TWO_SIGNS_RE = re.compile(rf"{_SIGN}\s*{_SIGN}")
_OTHER_BASES = {"x": "hexadecimal", "b": "binary", "o": "octal"}
_CURRENCY = "$\u20ac\u00a3\u00a5"
_PER = {"%": Fraction(1, 100), "\u2030": Fraction(1, 1000)}
_MIXED_RE = re.compile(r"\d+/\d+")


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
# Dropped from the end of a right-hand side that does not read as it is ("1 and",
# "zehn sein" of "x soll zehn sein").
_CONNECTORS = frozenset({"and", "und", "et", "y", "e", "en", "og", "sowie", "sein"})
_TAIL_PUNCTUATION = " \t,;:.!?"
_OPERATOR_START_RE = re.compile(
    r"[-+*/^\u00d7\u00f7\u00b7=<>]|(?:plus|minus|times|mal|durch|divided|over|hoch)(?!\w)",
    re.IGNORECASE,
)
# Never one letter: "c is 10" assigns c ("c'est" has no space, so it is no head anyway).
_PRONOUN_TEXT = """it there this that what which who here es das dies er sie man ce il elle
cela lo esto eso dat dit het det den"""
_PRONOUNS = frozenset(_PRONOUN_TEXT.split())
_MARKERS = {
    "en": "is and the let be equals of",
    "de": "ist und der die das sei gleich ein eine",
    "fr": "est et le la les vaut soit un une",
    "es": "es y el los las sea igual",
    "pt": "é e o os seja igual um uma",
    "it": "è e il lo sia uguale",
    "nl": "gelijk aan en de het een laat",
    "da": "er og den det lad lig med",
}


@dataclass
class Facts:
    """What :func:`extract_facts` found: values, formulas, every number in order, and
    the assignments refused (name → why)."""

    variables: dict[str, Fraction] = field(default_factory=dict)
    formulas: dict[str, str] = field(default_factory=dict)
    numbers: list[Fraction] = field(default_factory=list)
    language: str = "en"
    unreadable: dict[str, str] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        """``{"variables": {name: "10"}, "formulas": {name: "x + y"}, "numbers": ["10"]}``,
        and ``"unreadable": {name: reason}`` when some assignment was refused."""
        found: dict[str, Any] = {
            "variables": {name: format_number(v) for name, v in self.variables.items()},
            "formulas": dict(self.formulas),
            "numbers": [format_number(n) for n in self.numbers],
        }
        if self.unreadable:
            found["unreadable"] = dict(self.unreadable)
        return found


def extract_facts(text: str) -> Facts:
    """Find the variable assignments and numbers of ``text`` (see the module docstring).

    Raises ``ValueError`` when ``text`` is over :data:`MAX_TEXT_BYTES` (10 MiB) of UTF-8.
    Empty text gives empty facts.  Never raises for odd content.
    """
    if len(text) > MAX_TEXT_BYTES or len(text.encode("utf-8", "surrogatepass")) > MAX_TEXT_BYTES:
        raise ValueError(f"text is larger than {MAX_TEXT_BYTES} bytes")
    facts = Facts(language=guess_language(text))
    for line in text.splitlines():
        for clause in _CLAUSE_SPLIT_RE.split(line):
            _read_clause(clause, facts)
    return facts


def guess_language(text: str) -> str:
    """The language (of :data:`riddlectl.numbers.LANGUAGES`) whose common words occur most.

    Looks at the first 100,000 characters; English when nothing matches or on a tie.
    """
    # One-letter words are skipped: "y" and "e" are far more often variable names.
    words = re.findall(r"[^\W\d]{2,}", text[:100_000].lower())
    counts = {lang: 0 for lang in _MARKERS}
    markers = {lang: set(m.split()) for lang, m in _MARKERS.items()}
    for word in words:
        for lang, vocabulary in markers.items():
            if word in vocabulary:
                counts[lang] += 1
    best = max(counts, key=lambda lang: (counts[lang], lang == "en"))
    return best if counts[best] else "en"


class _Reading(NamedTuple):
    """How a right-hand side reads: kind "number", "digits" (a number in digits with
    words after it, found at offset ``at``), "formula", "unreadable" (value: why), or ""."""

    kind: str
    value: Fraction | str | None = None
    at: int = 0


def _read_clause(clause: str, facts: Facts) -> None:
    """Record the clause's assignments and numbers, in order of position."""
    found = dict(_digit_numbers(clause, facts.language))
    heads = list(_HEAD_RE.finditer(clause))
    for k, head in enumerate(heads):
        end = heads[k + 1].start() if k + 1 < len(heads) else len(clause)
        name = head.group("name")
        strong = head.group("sym") in ("=", ":=")
        if not head.group("sym") and name.lower() in _PRONOUNS:
            continue
        reading = _interpret_rhs(clause[head.end() : end], strong, facts.language)
        if reading.kind:
            _record(facts, name, reading)
        if reading.kind == "digits":
            assert isinstance(reading.value, Fraction)
            found[head.end() + reading.at] = reading.value
        elif reading.kind == "number" and not _NUMBER_RE.match(clause, head.end()):
            assert isinstance(reading.value, Fraction)
            found[head.end()] = reading.value  # words: digits are in `found` already
    facts.numbers.extend(value for _, value in sorted(found.items()))


def _record(facts: Facts, name: str, reading: _Reading) -> None:
    """The name's latest assignment replaces what an earlier one said."""
    facts.variables.pop(name, None)
    facts.formulas.pop(name, None)
    facts.unreadable.pop(name, None)
    if reading.kind == "formula":
        facts.formulas[name] = str(reading.value)
    elif reading.kind == "unreadable":
        facts.unreadable[name] = str(reading.value)
    else:
        assert isinstance(reading.value, Fraction)
        facts.variables[name] = reading.value


def _digit_numbers(clause: str, language: str) -> list[tuple[int, Fraction]]:
    """Every number written in digits, with its position; unreadable ones are split."""
    decimal_comma = language != "en"
    out: list[tuple[int, Fraction]] = []
    for match in _NUMBER_RE.finditer(clause):
        try:
            value = parse_number(match.group(), decimal_comma=decimal_comma)
        except ValueError:
            # "1,2,3" or a date "1.5.2024": read the pieces one by one.
            for piece in re.finditer(r"\d+", match.group()):
                out.append((match.start() + piece.start(), Fraction(int(piece.group()))))
            continue
        out.append((match.start(), value * _PER.get(clause[match.end() : match.end() + 1], 1)))
    return out


def _interpret_rhs(rhs: str, strong: bool, language: str) -> _Reading:
    """Interpret the text up to the next head: as written, then without a trailing
    connector ("1 and" → "1"; but "x + y" keeps its "y", a Spanish "and")."""
    rhs = _VULGAR_RE.sub(_vulgar, rhs.rstrip(_TAIL_PUNCTUATION).lstrip())
    first = _Reading("")
    while rhs:
        reading = _interpret(rhs, strong, language)
        if reading.kind and reading.kind != "unreadable":
            return reading
        first = first if first.kind else reading
        head, _, last = rhs.rpartition(" ")
        if not head or last.lower() not in _CONNECTORS:
            break
        rhs = head.rstrip(_TAIL_PUNCTUATION)
    return first


def _vulgar(match: re.Match[str]) -> str:
    """``½`` → ``1/2``, ``2½`` → ``2 1/2``."""
    fraction = _VULGAR[match[2]]
    return f"{match[1]} {fraction}" if match[1] else fraction


def _interpret(rhs: str, strong: bool, language: str) -> _Reading:
    """Classify a right-hand side (see the module docstring for the order)."""
    decimal_comma = language != "en"
    try:
        return _Reading("number", parse_number(rhs, decimal_comma=decimal_comma))
    except ValueError:
        pass
    if _TWO_SIGNS_RE.match(rhs):
        return _refused(rhs, "two signs in a row")
    if rhs[:1] == "\u2014" and rhs[1:].lstrip()[:1].isdigit():
        return _refused(rhs, "a dash is not a minus sign")
    if len(rhs) > MAX_RHS_CHARS:
        return _leading(rhs[:MAX_RHS_CHARS], language)
    if all(ch.isalpha() or ch in " -,'" for ch in rhs):  # only words can be number words
        value = _words(rhs, language)
        if value is not None:
            return _Reading("number", value)
    formula = _formula(rhs, strong)
    return formula if formula is not None else _leading(rhs, language)


def _leading(rhs: str, language: str) -> _Reading:
    """A number in digits and what follows it: read exactly, or refused with the reason."""
    match = _LEADING_RE.match(rhs)
    if match is None:
        return _Reading("")
    number, rest = match["num"], rhs[match.end() :]
    base = _OTHER_BASES.get(rest[:1].lower())
    if base and number.lstrip("+" + MINUS_CHARS).strip() == "0" and rest[1:2].isalnum():
        return _refused(rhs, f"{base} numbers are not read")
    try:
        value = parse_number(number, decimal_comma=language != "en")
    except ValueError:
        return _refused(rhs, "not a number")
    if rest[:1] in _PER:
        value, rest = value * _PER[rest[0]], rest[1:]
    elif rest[:1] and rest[0] in _CURRENCY:
        rest = rest[1:]
    elif rest[:1] and not rest[0].isspace() and rest[0] not in ",;)":
        what = "letters" if rest[0].isalpha() else repr(rest[0])
        return _refused(rhs, f"a number with {what} attached")
    return _words_after(rhs, value, rest.split(), language, match.start("num"))


def _words_after(rhs: str, value: Fraction, words: list[str], language: str, at: int) -> _Reading:
    """``value`` as changed by the words after it, or refused when a second number follows."""
    if words and (words[0] in _PER or words[0] in _CURRENCY):
        value, words = value * _PER.get(words[0], 1), words[1:]
    factor, used = _multiplier(words, language)
    if factor is not None:
        value, words = value * factor, words[used:]
    elif words and value.denominator == 1 and _MIXED_RE.fullmatch(words[0].rstrip(",;")):
        part = parse_number(words[0].rstrip(",;"))
        if 0 < part < 1:
            value, words = value + part if value >= 0 else value - part, words[1:]
    elif len(words) > 1 and words[0].lower() in ("and", "und") and value.denominator == 1:
        part, used = _fraction_words(words[1:], language)
        if part is not None:
            value, words = value + part if value >= 0 else value - part, words[1 + used :]
    if words and _OPERATOR_START_RE.match(words[0]):
        return _refused(rhs, "not a number, nor a formula that can be read")
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
        return _refused(rhs, "more than one number")
    return _Reading("digits", value, at)


def _refused(rhs: str, why: str) -> _Reading:
    """An unreadable right-hand side, quoted (shortened) with the reason."""
    quoted = repr(rhs if len(rhs) <= 40 else rhs[:37] + "...")
    return _Reading("unreadable", f"{quoted}: {why}")


def _bare(word: str) -> str:
    return word.strip(_EDGE_PUNCTUATION)


def _is_number(word: str, language: str) -> bool:
    """A number in digits, or a number word that is not also an article."""
    if any(ch.isdigit() for ch in word):
        return True
    letters = word.replace("-", "").replace(" ", "")
    if len(word) < 2 or word.lower() in _ARTICLES or not letters.isalpha():
        return False
    return any(_words(word, lang) is not None for lang in dict.fromkeys((language, *_WORD_LANGS)))


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
        for lang in dict.fromkeys((language, *_WORD_LANGS)):
            part = _words(text, lang) if text.replace(" ", "").isalpha() else None
            if part is not None and 0 < part < 1:
                return part, size
    return None, 0


@lru_cache(maxsize=4096)  # files repeat their phrasings; text2num in 8 languages is not free
def _words(rhs: str, language: str) -> Fraction | None:
    """``rhs`` as a number in words, trying ``language`` first, then the others."""
    for lang in (language, *(lang for lang in LANGUAGES if lang != language)):
        value = read_words(rhs, lang)
        if value is not None:
            return value
    return None


def _formula(rhs: str, strong: bool) -> _Reading | None:
    """An arithmetic right-hand side: a formula over variables, or a computed number."""
    try:
        expr = parse_question(rhs)
        if isinstance(expr, Compare) or (isinstance(expr, Var) and not strong):
            return None
        if variables_of(expr):
            return _Reading("formula", rhs)
        value = evaluate(expr, {})
    except CalcError:
        return None
    return None if isinstance(value, bool) else _Reading("number", value)
