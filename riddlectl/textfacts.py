"""The ``text`` extractor's logic: variable assignments and numbers found in plain text.

:func:`extract_facts` reads text clause by clause (lines, split again at ``;`` and at
``.``/``!``/``?`` followed by a space) and finds assignment *heads*: a name followed
by ``=``, ``:=``, ``:`` or an assignment word — ``is``, ``equals``, ``is equal to``,
``be`` (``Let x be 10``), ``ist``, ``ist gleich``, ``vaut``, ``est``, ``es``, ``è``,
``é``, ``er``, ``is gelijk aan`` … (:data:`ASSIGNMENT_WORDS`), optionally after
``let``/``sei``/``soit``/``sea``/``seja``/``sia``/``laat``/``lad``.  The right-hand side
of a head runs to the next head of the clause, minus trailing punctuation and
connectors (``,``, ``and``, ``und``, ``et``, ``y``, ``e``, ``en``, ``og``), so ``x = 1,
y = 2`` and ``x = 1 and y = 2`` are two assignments.  A right-hand side is, in order:

1. a number in digits (:func:`riddlectl.numbers.parse_number`; ``3,5`` is 3.5; a lone
   ``,`` or ``.`` before three digits is read per the text's language, see below);
2. a number in words in any text2num language, the text's own language first
   (``twelve thousand three hundred and four``, ``minus five``, ``zwölf``);
3. an arithmetic formula over other variables (``x + y``, ``2 * x``, ``x plus y``),
   which goes to ``formulas`` as written; a formula without variables (``2 + 3``) is
   computed and goes to ``variables``.  A bare name (``z = x``) is a formula only after
   ``=``/``:=``; after a word such as ``is`` it must contain an operator, so prose like
   "the answer is yes" is not a formula;
4. a number in digits followed by other words (``10 apples`` → 10).

Anything else is ignored.  A later assignment of the same name replaces an earlier
one.  ``numbers`` lists every number in digits anywhere in the text (sign attached when
it is written right before the digits and not after a word) and every number in words
that was an assignment's value, in text order.

The language guess (counting common words) decides whether a lone ``,`` is a decimal
comma (German, French, … text: ``1,234`` is 1.234) or a thousands separator (English
text: 1234).  Not recognised: numbers in words outside assignments, decimals written
in words (``three point five``), units, assignments that span lines, and names that are
pronouns (``it``, ``es``, ``das``, … before a word operator: "es ist zwölf").
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from fractions import Fraction
from functools import lru_cache
from typing import Any

from riddlectl.calculator import CalcError, Compare, Var, evaluate, parse_question, variables_of
from riddlectl.numbers import LANGUAGES, format_number, parse_number, words_to_number

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
_NUMBER_RE = re.compile(
    rf"(?<![\w.,])(?:(?<![\w)])[-+\u2212])?(?:{_NUMBER_BODY})(?:/(?:{_NUMBER_BODY}))?"
)
_CONNECTORS = frozenset({"and", "und", "et", "y", "e", "en", "og", "sowie"})
_TAIL_PUNCTUATION = " \t,;:.!?"
_OPERATOR_START_RE = re.compile(
    r"[-+*/^\u00d7\u00f7\u00b7=<>]|(?:plus|minus|times|mal|durch|divided|over|hoch)(?!\w)",
    re.IGNORECASE,
)
_PRONOUN_TEXT = """it there this that what which who here es das dies er sie ce il elle cela
c lo esto eso dat dit het det den"""
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
    """What :func:`extract_facts` found: values, formulas and every number, in order."""

    variables: dict[str, Fraction] = field(default_factory=dict)
    formulas: dict[str, str] = field(default_factory=dict)
    numbers: list[Fraction] = field(default_factory=list)
    language: str = "en"

    def to_json(self) -> dict[str, Any]:
        """``{"variables": {name: "10"}, "formulas": {name: "x + y"}, "numbers": ["10"]}``."""
        return {
            "variables": {name: format_number(v) for name, v in self.variables.items()},
            "formulas": dict(self.formulas),
            "numbers": [format_number(n) for n in self.numbers],
        }


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


def _read_clause(clause: str, facts: Facts) -> None:
    """Record the clause's assignments and numbers, in order of position."""
    found: list[tuple[int, Fraction]] = list(_digit_numbers(clause, facts.language))
    heads = list(_HEAD_RE.finditer(clause))
    for k, head in enumerate(heads):
        end = heads[k + 1].start() if k + 1 < len(heads) else len(clause)
        name = head.group("name")
        strong = head.group("sym") in ("=", ":=")
        if not head.group("sym") and name.lower() in _PRONOUNS:
            continue
        kind, value = _interpret_rhs(clause[head.end() : end], strong, facts.language)
        if kind == "number":
            assert isinstance(value, Fraction)
            facts.formulas.pop(name, None)
            facts.variables[name] = value
            if not _NUMBER_RE.match(clause, head.end()):  # words: digits are in `found`
                found.append((head.end(), value))
        elif kind == "formula":
            assert isinstance(value, str)
            facts.variables.pop(name, None)
            facts.formulas[name] = value
    facts.numbers.extend(value for _, value in sorted(found, key=lambda item: item[0]))


def _digit_numbers(clause: str, language: str) -> list[tuple[int, Fraction]]:
    """Every number written in digits, with its position; unreadable ones are split."""
    decimal_comma = language != "en"
    out: list[tuple[int, Fraction]] = []
    for match in _NUMBER_RE.finditer(clause):
        try:
            out.append((match.start(), parse_number(match.group(), decimal_comma=decimal_comma)))
        except ValueError:
            # "1,2,3" or a date "1.5.2024": read the pieces one by one.
            for piece in re.finditer(r"\d+", match.group()):
                out.append((match.start() + piece.start(), Fraction(int(piece.group()))))
    return out


def _interpret_rhs(rhs: str, strong: bool, language: str) -> tuple[str, Fraction | str | None]:
    """Interpret the text up to the next head: as written, then without a trailing
    connector ("1 and" → "1"; but "x + y" keeps its "y", a Spanish "and")."""
    rhs = rhs.rstrip(_TAIL_PUNCTUATION).lstrip()
    while rhs:
        kind, value = _interpret(rhs, strong, language)
        if kind:
            return kind, value
        head, _, last = rhs.rpartition(" ")
        if not head or last.lower() not in _CONNECTORS:
            break
        rhs = head.rstrip(_TAIL_PUNCTUATION)
    return "", None


def _interpret(rhs: str, strong: bool, language: str) -> tuple[str, Fraction | str | None]:
    """Classify a right-hand side: ("number", value), ("formula", text) or ("", None)."""
    try:
        return "number", parse_number(rhs, decimal_comma=language != "en")
    except ValueError:
        pass
    if len(rhs) > MAX_RHS_CHARS:
        return "", None
    if all(ch.isalpha() or ch in " -,'" for ch in rhs):  # only words can be number words
        value = _words(rhs, language)
        if value is not None:
            return "number", value
    formula = _formula(rhs, strong)
    if formula is not None:
        return formula
    prefix = _NUMBER_RE.match(rhs)
    if prefix and not _OPERATOR_START_RE.match(rhs[prefix.end() :].lstrip()):
        try:
            return "number", parse_number(prefix.group(), decimal_comma=language != "en")
        except ValueError:
            return "", None
    return "", None


@lru_cache(maxsize=4096)  # files repeat their phrasings; text2num in 8 languages is not free
def _words(rhs: str, language: str) -> Fraction | None:
    """``rhs`` as a number in words, trying ``language`` first, then the others."""
    for lang in (language, *(lang for lang in LANGUAGES if lang != language)):
        value = words_to_number(rhs, lang)
        if value is not None:
            return value
    return None


def _formula(rhs: str, strong: bool) -> tuple[str, Fraction | str] | None:
    """An arithmetic right-hand side: a formula over variables, or a computed number."""
    try:
        expr = parse_question(rhs)
        if isinstance(expr, Compare) or (isinstance(expr, Var) and not strong):
            return None
        if variables_of(expr):
            return "formula", rhs
        value = evaluate(expr, {})
    except CalcError:
        return None
    return None if isinstance(value, bool) else ("number", value)
