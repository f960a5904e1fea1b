"""The reader of arithmetic questions: the grammar, and its recursive-descent parser.

User text is never given to ``eval``/``exec``/``ast``: :func:`parse_question` builds a
small tree of :class:`Num`, :class:`Var`, :class:`Neg`, :class:`BinOp` and
:class:`Compare` nodes (`nodes`, from the tokens of `tokens`), and
:func:`~riddlectl.handlers.builtin.arithmetic.evaluation.evaluate` computes it exactly
(``fractions.Fraction``).

Grammar, loosest first (``^`` is ``**``; both group from the right, as in Python)::

    question   := prefix? comparison trailer?
    comparison := sum (("<" | ">" | "<=" | ">=" | "==" | "!=") sum)?   # not chained
    sum        := term (("+" | "-") term)*
    term       := unary (("*" | "/") unary)*
    unary      := ("+" | "-")* power                 # -x ** 2 is -(x ** 2)
    power      := atom ("**" ("+" | "-")* atom)*     # folded from the right
    atom       := NUMBER | NAME | "(" comparison ")"

``prefix`` is a leading "What is", "Compute", "Calculate", "Was ist", "Is", …; ``trailer``
is any run of ``=``, ``?``, ``.``, ``!`` at the end.  A single ``=`` elsewhere means
``==``.  Word operators (``plus``, ``times``, ``divided by``, ``mal``, ``geteilt durch``,
``durch``, ``to the power of``, ``is greater than``, ``größer als``, …): the tables of
:mod:`riddlectl.handlers.builtin.arithmetic.questions`.  A run of words that reads as an
English or German number (``twelve``, ``one hundred and four``, ``zwölf``,
``thirty-four``, ``two point five``, ``three quarters``, ``zwei Komma fünf``: see
:mod:`riddlectl.handlers.builtin.words.numberwords`) is a number literal, so a variable cannot
be called ``one`` or ``null``; a single letter is always a name.  A number in digits is read as
:func:`riddlectl.document.numbers.parse_number` reads it, with a lone separator before three
digits read the German way in a German question (one with a word of
:data:`riddlectl.handlers.builtin.words.numberwords.GERMAN_QUESTION_WORDS`:
``Was ist 1,500 mal x?``).
Names are ``[^\\W\\d]\\w*`` (letters, digits, ``_``; non-ASCII letters too), case kept,
with dotted parts for nested keys of JSON data (``a.b``: a ``.`` between two letters
joins them into one name; ``x. y`` and ``x .y`` do not).

Bounds (constants of :mod:`riddlectl.handlers.builtin.arithmetic.questions`; work beyond them raises
:class:`BoundsError` before it is done): :data:`MAX_QUESTION_CHARS` = 10,000 characters;
:data:`MAX_TOKENS` = 5,000 tokens; :data:`MAX_DEPTH` = 100 nested parentheses (recursion
stays far from Python's limit: ``+``/``*``/``**`` chains are parsed with loops, trees walked
with stacks);
:data:`MAX_EXPONENT` = 100,000 (largest ``|exponent|``); :data:`MAX_BITS` = 100,000 (largest
numerator or denominator of any intermediate result, in bits).  The size of a power is
estimated *before* it is computed, so ``9**9**9**9`` is refused in microseconds.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import lru_cache

from riddlectl.handlers.builtin.arithmetic.nodes import BinOp, Compare, Expr, Neg, Num, Var
from riddlectl.handlers.builtin.arithmetic.questions import (
    COMPARISONS,
    MAX_DEPTH,
    BoundsError,
    CalcError,
)
from riddlectl.handlers.builtin.arithmetic.tokens import Token, tokenize


class _Parser:
    """Recursive descent over the grammar in the module docstring; loops for chains."""

    def __init__(self, tokens: list[Token]) -> None:
        self.tokens = tokens
        self.pos = 0
        self.depth = 0

    def peek(self) -> str | None:
        """The next operator symbol; None at a number, a name or the end."""
        if self.pos < len(self.tokens) and self.tokens[self.pos][0] == "op":
            return self.tokens[self.pos][1]
        return None

    def take(self) -> str:
        self.pos += 1
        return self.tokens[self.pos - 1][1]

    def comparison(self) -> Expr:
        left = self.sum()
        if self.peek() not in COMPARISONS:
            return left
        op = self.take()
        node = Compare(op, left, self.sum())
        if self.peek() in COMPARISONS:
            raise CalcError("chained comparisons are not supported; use parentheses")
        return node

    def sum(self) -> Expr:
        return self.chain(("+", "-"), self.term)

    def term(self) -> Expr:
        return self.chain(("*", "/"), self.unary)

    def chain(self, ops: tuple[str, ...], operand: Callable[[], Expr]) -> Expr:
        """A left-grouping chain ``a op b op c``, read with a loop, not recursion."""
        node = operand()
        while self.peek() in ops:
            op = self.take()
            node = BinOp(op, node, operand())
        return node

    def signs(self) -> list[str]:
        """A run of unary signs, read with a loop (``- - - x`` needs no recursion)."""
        found: list[str] = []
        while self.peek() in ("+", "-"):
            found.append(self.take())
        return found

    def unary(self) -> Expr:
        signs = self.signs()
        return _apply_signs(signs, self.power())

    def power(self) -> Expr:
        # a ** -b ** c is a ** (-(b ** c)): collect the chain, fold it from the right.
        chain: list[tuple[list[str], Expr]] = [([], self.atom())]
        while self.peek() == "**":
            self.take()
            signs = self.signs()
            chain.append((signs, self.atom()))
        node = chain[-1][1]
        for k in range(len(chain) - 1, 0, -1):
            node = _apply_signs(chain[k][0], node)
            node = BinOp("**", chain[k - 1][1], node)
        return node

    def atom(self) -> Expr:
        if self.pos >= len(self.tokens):
            raise CalcError("unexpected end of question: a number or variable is missing")
        kind, text, value = self.tokens[self.pos]
        self.pos += 1
        if kind == "num":
            assert value is not None
            return Num(value)
        if kind == "name":
            return Var(text)
        if text != "(":
            raise CalcError(f"unexpected {text!r} where a number or variable belongs")
        self.depth += 1
        if self.depth > MAX_DEPTH:
            raise BoundsError(f"parentheses nested deeper than {MAX_DEPTH}")
        node = self.comparison()
        if self.peek() != ")":
            raise CalcError("missing closing parenthesis")
        self.take()
        self.depth -= 1
        return node


def _apply_signs(signs: list[str], node: Expr) -> Expr:
    """One Neg per ``-`` (``+`` changes nothing)."""
    for sign in reversed(signs):
        if sign == "-":
            node = Neg(node)
    return node


def parse_question(question: str) -> Expr:
    """Parse ``x * y =``, ``What is x+y?``, ``Was ist x mal y?``, … into a tree.

    Raises :class:`CalcError` for a syntax error (including an empty question and
    anything not arithmetic, such as ``__import__('os')``), :class:`BoundsError` for
    an over-long question, too many tokens or too deep nesting.

    Trees are shared between callers asking for the same text (questions and formulas
    repeat from riddle to riddle): nothing may change a tree it is given.
    """
    return _parsed(question)


@lru_cache(maxsize=1024)
def _parsed(question: str) -> Expr:
    tokens = tokenize(question)
    if not tokens:
        raise CalcError("empty question: there is no expression to compute")
    parser = _Parser(tokens)
    expr = parser.comparison()
    if parser.pos < len(tokens):
        raise CalcError(f"unexpected {tokens[parser.pos][1]!r} after the expression")
    return expr
