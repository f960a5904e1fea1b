"""What an arithmetic question may say, shared by the calculator and its independent recheck.

Data only: the bounds on the work a question may ask for, the word operators, leading
phrasings, symbol aliases and trailers both parsers read, and the errors both raise. The
two parsers share these tables and nothing of their code (see `recheck`), so that a bug
in one parser shows up as a disagreement between them rather than twice.
"""

from __future__ import annotations

MAX_QUESTION_CHARS = 10_000
MAX_TOKENS = 5_000
MAX_DEPTH = 100
MAX_EXPONENT = 100_000
MAX_BITS = 100_000
MAX_NUMBER_WORDS = 24  #: the most words one number written in words may have
COMPARISONS = ("<", ">", "<=", ">=", "==", "!=")

_VOCABULARY = """
+  plus | added to
-  minus | weniger
*  times | multiplied by | mal | multipliziert mit
/  divided by | geteilt durch | dividiert durch | durch | over
** to the power of | raised to the power of | raised to | hoch
>= is greater than or equal to | greater than or equal to | is at least
>= ist größer oder gleich | größer oder gleich
<= is less than or equal to | less than or equal to | is at most
<= ist kleiner oder gleich | kleiner oder gleich
>  is greater than | greater than | is more than | more than | is larger than | larger than
>  is bigger than | bigger than | ist größer als | größer als
<  is less than | less than | is smaller than | smaller than | ist kleiner als | kleiner als
!= is not equal to | not equal to | ist ungleich | ungleich
== is equal to | equal to | equals | ist gleich | gleich
"""
#: Word operators (lower-cased word tuples) → the symbol each stands for.
WORD_OPERATORS: dict[tuple[str, ...], str] = {
    tuple(phrase.split()): line.split()[0]
    for line in _VOCABULARY.strip().splitlines()
    for phrase in line.split(None, 1)[1].split("|")
}
_PREFIX_TEXT = """what is the value of | what is | what's | whats | how much is | compute
calculate | evaluate | was ist | wie viel ist | wieviel ist | berechne | berechnen sie | rechne
is it true that | is | ist"""
#: Leading phrasings that are dropped ("What is x + y?"), longest first.
PREFIXES: tuple[tuple[str, ...], ...] = tuple(
    sorted(
        (tuple(p.split()) for p in _PREFIX_TEXT.replace("\n", "|").split("|")),
        key=len,
        reverse=True,
    )
)
#: Typographic and alternative symbols → the ASCII operator they stand for.
SYMBOL_ALIASES = {
    "^": "**",
    "\u00d7": "*",
    "\u00b7": "*",
    "\u00f7": "/",
    "\u2212": "-",
    "\u2265": ">=",
    "\u2264": "<=",
    "\u2260": "!=",
    "=": "==",
}
TRAILERS = frozenset("=?.!")


class CalcError(ValueError):
    """The question cannot be parsed or evaluated (syntax, division by zero, …)."""


class UnknownVariable(CalcError):
    """A variable of the question has no value; ``name`` says which."""

    def __init__(self, name: str) -> None:
        super().__init__(f"unknown variable {name!r}")
        self.name = name


class BoundsError(CalcError):
    """The question or its evaluation goes beyond one of the module's bounds."""
