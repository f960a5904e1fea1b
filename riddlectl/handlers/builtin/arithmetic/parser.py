"""The ``calculator`` solver's evaluator: tokenizer, recursive-descent parser, exact evaluator.

User text is never given to ``eval``/``exec``/``ast``: :func:`parse_question` builds a
small tree of :class:`Num`, :class:`Var`, :class:`Neg`, :class:`BinOp` and
:class:`Compare` nodes, and :func:`evaluate` computes it exactly (``fractions.Fraction``).

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

import re
from collections.abc import Callable
from dataclasses import dataclass
from fractions import Fraction

from riddlectl.document.numbers import format_number, parse_number
from riddlectl.handlers.builtin.arithmetic.questions import (
    COMPARISONS,
    MAX_BITS,
    MAX_DEPTH,
    MAX_EXPONENT,
    MAX_NUMBER_WORDS,
    MAX_QUESTION_CHARS,
    MAX_TOKENS,
    PREFIXES,
    SYMBOL_ALIASES,
    TRAILERS,
    WORD_OPERATORS,
    BoundsError,
    CalcError,
    UnknownVariable,
)
from riddlectl.handlers.builtin.words.numberwords import (
    GERMAN_QUESTION_WORDS,
    question_word_number,
)

_LONGEST_OPERATOR = max(map(len, WORD_OPERATORS))
_OPERATOR_FIRST_WORDS = {phrase[0] for phrase in WORD_OPERATORS}
#: Raw lexer shared by nothing else: one alternative per token kind; ``bad`` catches the rest.
_LEX_RE = re.compile(
    r"(?P<space>\s+)"
    r"|(?P<num>\d+(?:[.,]\d+)*(?:[eE][+-]?\d+)?)"
    r"|(?P<word>[^\W\d]\w*(?:\.[^\W\d]\w*)*(?:'\w+)?(?:-[^\W\d]\w*(?:\.[^\W\d]\w*)*)*)"
    r"|(?P<sym>\*\*|>=|<=|==|!=|[-+*/^()<>=\u00d7\u00b7\u00f7\u2212\u2265\u2264\u2260?.!])"
    r"|(?P<bad>.)",
    re.S,
)


# Plain (not frozen) slotted dataclasses: building thousands of nodes must stay cheap.
@dataclass(slots=True)
class Num:
    """A number literal."""

    value: Fraction


@dataclass(slots=True)
class Var:
    """A variable, by name (case kept)."""

    name: str


@dataclass(slots=True)
class Neg:
    """Unary minus."""

    operand: Expr


@dataclass(slots=True)
class BinOp:
    """Arithmetic; ``op`` is one of ``+ - * / **``."""

    op: str
    left: Expr
    right: Expr


@dataclass(slots=True)
class Compare:
    """A comparison; ``op`` is one of :data:`COMPARISONS`.  Evaluates to a bool."""

    op: str
    left: Expr
    right: Expr


Expr = Num | Var | Neg | BinOp | Compare
_Token = tuple[str, str, Fraction | None]  # ("num" | "name" | "op", text, value)


# --- tokenizer -------------------------------------------------------------------------


def lex(question: str) -> list[tuple[str, str]]:
    """Raw ``(kind, text)`` pairs, kind ``num``/``word``/``sym``; phrasing not yet removed.

    Raises :class:`CalcError` at a character that belongs to no token (quotes,
    brackets, ``;`` …) and :class:`BoundsError` beyond the length and token bounds.
    """
    if len(question) > MAX_QUESTION_CHARS:
        raise BoundsError(f"question longer than {MAX_QUESTION_CHARS} characters")
    raw: list[tuple[str, str]] = []
    for match in _LEX_RE.finditer(question):
        kind, text = match.lastgroup or "", match.group()
        if kind == "bad":
            raise CalcError(f"unexpected character {text!r} at position {match.start()}")
        if kind == "word" and "-" in text and word_number(text) is None:
            # "thirty-four" is a number; "x-y" is x minus y.
            for i, part in enumerate(text.split("-")):
                raw.extend([("sym", "-"), ("word", part)] if i else [("word", part)])
        elif kind != "space":
            raw.append((kind, text))
        if len(raw) > MAX_TOKENS:
            raise BoundsError(f"question has more than {MAX_TOKENS} tokens")
    return raw


word_number = question_word_number  # number words in questions, shared with recheck


def strip_phrasing(raw: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """Drop a leading "What is"-style prefix and trailing ``=``/``?``/``.``/``!`` symbols.

    The prefix is dropped only when something is left after it.
    """
    end = len(raw)
    while end and raw[end - 1][0] == "sym" and raw[end - 1][1] in TRAILERS:
        end -= 1
    head = tuple(text.lower() if kind == "word" else "" for kind, text in raw[:6])
    for prefix in PREFIXES:
        if head[: len(prefix)] == prefix and len(prefix) < end:
            return raw[len(prefix) : end]
    return raw[:end]


def _tokenize(question: str) -> list[_Token]:
    lexed = lex(question)
    comma = any(k == "word" and t.lower() in GERMAN_QUESTION_WORDS for k, t in lexed)
    raw = strip_phrasing(lexed)
    tokens: list[_Token] = []
    i = 0
    while i < len(raw):
        kind, text = raw[i]
        if kind == "num":
            try:
                tokens.append(("num", text, parse_number(text, decimal_comma=comma)))
            except ValueError as exc:
                raise CalcError(str(exc)) from None
            i += 1
        elif kind == "sym":
            tokens.append(("op", SYMBOL_ALIASES.get(text, text), None))
            i += 1
        else:
            token, i = _word_token(raw, i)
            tokens.append(token)
    return tokens


def _word_token(raw: list[tuple[str, str]], i: int) -> tuple[_Token, int]:
    """A word operator, a number in words, or a name, starting at ``raw[i]``."""
    first = raw[i][1]
    if first.lower() not in _OPERATOR_FIRST_WORDS and word_number(first) is None:
        return ("name", first, None), i + 1  # the common case, kept cheap
    words: list[str] = []
    for kind, text in raw[i : i + max(_LONGEST_OPERATOR, MAX_NUMBER_WORDS)]:
        if kind != "word":
            break
        words.append(text.lower())
    for size in range(min(len(words), _LONGEST_OPERATOR), 0, -1):
        if tuple(words[:size]) in WORD_OPERATORS:
            return ("op", WORD_OPERATORS[tuple(words[:size])], None), i + size
    if word_number(first) is None:
        return ("name", first, None), i + 1
    # A number in words stops before the next word operator ("two plus three").
    stop = next((k for k in range(1, len(words)) if words[k] in _OPERATOR_FIRST_WORDS), len(words))
    for size in range(stop, 0, -1):
        text = " ".join(raw[j][1] for j in range(i, i + size))
        value = word_number(text)
        if value is not None:
            return ("num", text, value), i + size
    return ("name", first, None), i + 1


# --- parser ----------------------------------------------------------------------------


class _Parser:
    """Recursive descent over the grammar in the module docstring; loops for chains."""

    def __init__(self, tokens: list[_Token]) -> None:
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
    """
    tokens = _tokenize(question)
    if not tokens:
        raise CalcError("empty question: there is no expression to compute")
    parser = _Parser(tokens)
    expr = parser.comparison()
    if parser.pos < len(tokens):
        raise CalcError(f"unexpected {tokens[parser.pos][1]!r} after the expression")
    return expr


# --- tree walks and evaluation (explicit stacks: no recursion on long chains) ----------


def _children(node: Expr) -> tuple[Expr, ...]:
    if isinstance(node, BinOp | Compare):
        return (node.left, node.right)
    return (node.operand,) if isinstance(node, Neg) else ()


def variables_of(expr: Expr) -> list[str]:
    """Names of the variables in ``expr``, each once, in order of first appearance."""
    seen: dict[str, None] = {}
    stack = [expr]
    while stack:
        node = stack.pop()
        if isinstance(node, Var):
            seen.setdefault(node.name, None)
        stack.extend(reversed(_children(node)))
    return list(seen)


_Q = int | Fraction  # integers stay ints while evaluating: much faster than Fraction


def _checked(value: _Q) -> _Q:
    if isinstance(value, Fraction):
        if value.denominator == 1:
            value = value.numerator
        elif max(value.numerator.bit_length(), value.denominator.bit_length()) > MAX_BITS:
            raise BoundsError(f"an intermediate result is larger than {MAX_BITS} bits")
    if isinstance(value, int) and value.bit_length() > MAX_BITS:
        raise BoundsError(f"an intermediate result is larger than {MAX_BITS} bits")
    return value


def _power(base: _Q, exponent: _Q) -> _Q:
    """Exact ``base ** exponent``; its size is estimated before it is computed."""
    if not isinstance(exponent, int):
        raise CalcError(f"exponent {format_number(exponent)} is not an integer")
    if abs(exponent) > MAX_EXPONENT:
        raise BoundsError(f"exponent {exponent} is beyond ±{MAX_EXPONENT}")
    if base == 0 and exponent < 0:
        raise CalcError("division by zero: 0 raised to a negative power")
    base = Fraction(base)
    size = max(base.numerator.bit_length(), base.denominator.bit_length())
    # (size - 1) * |exponent| bits is a lower bound of the result's size.
    if (size - 1) * abs(exponent) > MAX_BITS:
        raise BoundsError(f"a power would be larger than {MAX_BITS} bits")
    return _checked(base**exponent)


def _arith(op: str, a: _Q, b: _Q) -> _Q:
    if op == "+":
        return _checked(a + b)
    if op == "-":
        return _checked(a - b)
    if op == "*":
        return _checked(a * b)
    if op == "**":
        return _power(a, b)
    if b == 0:
        raise CalcError("division by zero")
    return _checked(Fraction(a) / b)


_COMPARE = {
    "<": lambda a, b: a < b,
    ">": lambda a, b: a > b,
    "<=": lambda a, b: a <= b,
    ">=": lambda a, b: a >= b,
    "==": lambda a, b: a == b,
    "!=": lambda a, b: a != b,
}


def evaluate(expr: Expr, values: dict[str, Fraction]) -> Fraction | bool:
    """Compute ``expr`` exactly, with ``values`` for its variables.

    Returns a Fraction, or a bool for a comparison.  Raises :class:`UnknownVariable`
    for a variable missing from ``values``; :class:`CalcError` for division by zero, a
    non-integer exponent, or a comparison's result used as a number;
    :class:`BoundsError` for an exponent or intermediate result beyond the bounds.
    """
    todo: list[tuple[Expr, bool]] = [(expr, False)]
    results: list[_Q | bool] = []
    while todo:
        node, expanded = todo.pop()
        if isinstance(node, Num):
            results.append(_checked(node.value))
        elif isinstance(node, Var):
            if node.name not in values:
                raise UnknownVariable(node.name)
            results.append(_checked(Fraction(values[node.name])))
        elif not expanded:
            todo.append((node, True))
            todo.extend((child, False) for child in reversed(_children(node)))
        elif isinstance(node, Neg):
            results.append(-_number(results.pop()))
        else:
            b, a = _number(results.pop()), _number(results.pop())
            result = _COMPARE[node.op](a, b) if isinstance(node, Compare) else _arith(node.op, a, b)
            results.append(result)
    value = results[0]
    return value if isinstance(value, bool) else Fraction(value)


def _number(value: _Q | bool) -> _Q:
    if isinstance(value, bool):
        raise CalcError("a comparison's true/false result cannot be used as a number")
    return value


# --- rendering -------------------------------------------------------------------------

_PREC = {"cmp": 0, "+": 1, "-": 1, "*": 2, "/": 2, "neg": 3, "**": 4, "atom": 5}


def _prec(node: Expr) -> int:
    if isinstance(node, Compare):
        return _PREC["cmp"]
    if isinstance(node, BinOp):
        return _PREC[node.op]
    if isinstance(node, Neg) or (isinstance(node, Num) and node.value < 0):
        return _PREC["neg"]
    if isinstance(node, Num) and "/" in format_number(node.value):
        return _PREC["/"]  # a "1/3" literal reads as a division
    return _PREC["atom"]


def describe(expr: Expr) -> str:
    """Canonical text: ``(x + y) * z``, ``x ** 2``, ``-(x + 1)``, ``x / y > 1``.

    Writes only the parentheses the grammar needs, plus some for readability around
    a negated compound (``-(x ** 2)``) and a negative exponent (``2 ** (-1)``).
    Parsing the text gives the same tree back.  Linear time, no recursion.
    """
    out: list[str] = []
    stack: list[Expr | str] = [expr]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            out.append(item)
        elif isinstance(item, Var):
            out.append(item.name)
        elif isinstance(item, Num):
            out.append(format_number(item.value))
        elif isinstance(item, Neg):
            stack.extend(reversed(_wrap(item.operand, _prec(item.operand) < _PREC["atom"])))
            stack.append("-")
        else:
            stack.extend(reversed(_binary_pieces(item)))
    return "".join(out)


def _wrap(node: Expr, paren: bool) -> list[Expr | str]:
    return ["(", node, ")"] if paren else [node]


def _binary_pieces(node: BinOp | Compare) -> list[Expr | str]:
    """Left operand, operator, right operand, wrapped where precedence needs it."""
    prec, left, right = _prec(node), _prec(node.left), _prec(node.right)
    if node.op == "**":  # groups from the right
        left_paren, right_paren = left <= prec, right < prec
    elif isinstance(node, Compare):  # does not chain
        left_paren, right_paren = left <= prec, right <= prec
    else:  # groups from the left
        left_paren, right_paren = left < prec, right <= prec
    return [*_wrap(node.left, left_paren), f" {node.op} ", *_wrap(node.right, right_paren)]
