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

1. a number in digits (:func:`riddlectl.document.numbers.parse_number`; ``3,5`` is 3.5; a lone
   ``,`` or ``.`` before three digits is read per the text's language, see below);
2. a number in words in any text2num language, the text's own language first
   (``twelve thousand three hundred and four``, ``minus five``, ``zwölf``), decimals,
   fractions and percentages included (``two point five``, ``drei Viertel``, ``a half``,
   ``ten percent``: :mod:`riddlectl.handlers.builtin.words.numberwords`);
3. an arithmetic formula over other variables (``x + y``, ``2 * x``, ``x plus y``),
   which goes to ``formulas`` as written; a formula without variables (``2 + 3``) is
   computed and goes to ``variables``.  A bare name (``z = x``) is a formula only after
   ``=``/``:=``; after a word such as ``is`` it must contain an operator, so prose like
   "the answer is yes" is not a formula;
4. a number in digits followed by words, read by
   :func:`riddlectl.handlers.builtin.words.numberphrases.read_digits`: ``10 apples`` is 10,
   ``10%`` and ``10 Prozent`` are 1/10, ``10 thousand`` is 10000, ``3 quarters`` 3/4, ``2 1/2`` and
   ``2½`` are 5/2, ``$10`` is 10.

A right-hand side that starts like a number but cannot be read exactly is *refused*: it
goes to ``unreadable`` (name → reason) instead of being read in part: ``0x10``,
``10abc``, ``10²``, ``--3``, ``1.2.3``, ``10 or 12`` …  A later assignment of the same
name replaces an earlier one, refused or not.  ``numbers`` lists every number in digits
standing on its own (nothing glued to it but ``%``) anywhere in the text, as its
assignment read it (``10%`` is 0.1, ``10 thousand`` 10000), and every number in words
that was an assignment's value, in text order.

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
from typing import Any

from riddlectl.document.numbers import format_number, parse_number
from riddlectl.handlers.builtin.arithmetic import (
    Compare,
    Var,
    evaluate,
    parse_question,
    variables_of,
)
from riddlectl.handlers.builtin.arithmetic.questions import CalcError
from riddlectl.handlers.builtin.words.numberphrases import (
    NUMBER_BODY,
    PER,
    SIGN,
    Reading,
    expand_vulgar,
    read_digits,
    sign_problem,
    words_value,
)

__all__ = ["ASSIGNMENT_WORDS", "MAX_TEXT_BYTES", "TextFacts", "extract_facts", "read_value"]

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


# A number standing on its own: nothing glued before it, no letter or digit group after.
_NUMBER_RE = re.compile(
    rf"(?<![\w.,])(?:(?<![\w)]){SIGN})?(?:{NUMBER_BODY})(?:/(?:{NUMBER_BODY}))?(?!\w)"
)
# A right-hand side that starts like a number, whatever follows it.
# Dropped from the end of a right-hand side that does not read as it is ("1 and",
# "zehn sein" of "x soll zehn sein").
_CONNECTORS = frozenset({"and", "und", "et", "y", "e", "en", "og", "sowie", "sein"})
_TAIL_PUNCTUATION = " \t,;:.!?"
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
class TextFacts:
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
        return shared_fields(self.variables, self.formulas, self.numbers, self.unreadable)


def shared_fields(
    variables: dict[str, Fraction],
    formulas: dict[str, str],
    numbers: list[Fraction],
    unreadable: dict[str, str],
) -> dict[str, Any]:
    """The fields every extractor's extraction has, numbers written exactly, and
    ``unreadable`` when some assignment was refused."""
    found: dict[str, Any] = {
        "variables": {name: format_number(v) for name, v in variables.items()},
        "formulas": dict(formulas),
        "numbers": [format_number(n) for n in numbers],
    }
    if unreadable:
        found["unreadable"] = dict(unreadable)
    return found


def extract_facts(text: str) -> TextFacts:
    """Find the variable assignments and numbers of ``text`` (see the module docstring).

    Raises ``ValueError`` when ``text`` is over :data:`MAX_TEXT_BYTES` (10 MiB) of UTF-8.
    Empty text gives empty facts.  Never raises for odd content.
    """
    if len(text) > MAX_TEXT_BYTES or len(text.encode("utf-8", "surrogatepass")) > MAX_TEXT_BYTES:
        raise ValueError(f"text is larger than {MAX_TEXT_BYTES} bytes")
    facts = TextFacts(language=guess_language(text))
    for line in text.splitlines():
        for clause in _CLAUSE_SPLIT_RE.split(line):
            _read_clause(clause, facts)
    return facts


def guess_language(text: str) -> str:
    """The language (of :data:`riddlectl.document.numbers.LANGUAGES`) whose common words occur most.

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


def _read_clause(clause: str, facts: TextFacts) -> None:
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


def _record(facts: TextFacts, name: str, reading: Reading) -> None:
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
        per = PER.get(clause[match.end() : match.end() + 1])
        out.append((match.start(), value * per if per else value))
    return out


def read_value(text: str, language: str = "en") -> Reading:
    """One value read as the right-hand side of ``name is …`` is (a table's cell, a JSON
    string): kind "number" or "digits" (a Fraction), "formula" (with an operator: a bare
    name such as ``Alice`` is no formula), "unreadable" (value: why), or "" (not a number
    at all)."""
    return _interpret_rhs(text, False, language)


def _interpret_rhs(rhs: str, strong: bool, language: str) -> Reading:
    """Interpret the text up to the next head: as written, then without a trailing
    connector ("1 and" → "1"; but "x + y" keeps its "y", a Spanish "and")."""
    rhs = expand_vulgar(rhs.rstrip(_TAIL_PUNCTUATION).lstrip())
    first = Reading("")
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


def _interpret(rhs: str, strong: bool, language: str) -> Reading:
    """Classify a right-hand side (see the module docstring for the order)."""
    decimal_comma = language != "en"
    try:
        return Reading("number", parse_number(rhs, decimal_comma=decimal_comma))
    except ValueError:
        pass
    problem = sign_problem(rhs)
    if problem is not None:
        return problem
    if len(rhs) > MAX_RHS_CHARS:
        return read_digits(rhs[:MAX_RHS_CHARS], language)
    if all(ch.isalpha() or ch in " -,'" for ch in rhs):  # only words can be number words
        value = words_value(rhs, language)
        if value is not None:
            return Reading("number", value)
    formula = _formula(rhs, strong)
    return formula if formula is not None else read_digits(rhs, language)


def _formula(rhs: str, strong: bool) -> Reading | None:
    """An arithmetic right-hand side: a formula over variables, or a computed number."""
    try:
        expr = parse_question(rhs)
        if isinstance(expr, Compare) or (isinstance(expr, Var) and not strong):
            return None
        if variables_of(expr):
            return Reading("formula", rhs)
        value = evaluate(expr, {})
    except CalcError:
        return None
    return None if isinstance(value, bool) else Reading("number", value)
