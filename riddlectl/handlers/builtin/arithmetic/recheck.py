"""A second, independent way to compute a calculator question, for the gatekeeper.

:func:`recompute` shares no parsing code with :mod:`riddlectl.handlers.builtin.arithmetic.parser`:
it scans the question character by character, turns it into reverse Polish notation with
Dijkstra's shunting-yard algorithm, and runs the RPN on a value stack with its own checked
arithmetic.  What it shares is data, not code: the bounds, the vocabulary tables and the
exception classes of :mod:`riddlectl.handlers.builtin.arithmetic.questions`, and
:mod:`riddlectl.document.numbers` and :mod:`riddlectl.handlers.builtin.words.numberwords` for
literals.  A bug in one parser's precedence or grouping therefore shows up as a
disagreement instead of being repeated.

Semantics are the calculator's: ``^``/``**`` group from the right, unary minus binds
looser than ``**`` (``-x ** 2`` is ``-(x ** 2)``) and tighter than ``*``, comparisons
do not chain, and the same bounds apply (``9**9**9**9`` is refused before any work).
"""

from __future__ import annotations

from collections.abc import Sequence
from fractions import Fraction
from functools import lru_cache

from riddlectl.document.numbers import parse_number
from riddlectl.handlers.builtin.arithmetic.questions import (
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
from riddlectl.handlers.builtin.words.numberwords import GERMAN_QUESTION_WORDS, question_word_number

__all__ = ["names", "recompute"]

# Binding strength and grouping of each operator in the RPN conversion.
_BINARY = {"+": 1, "-": 1, "*": 2, "/": 2, "**": 4}
_UNARY_PREC = 3  # between * and **: -x ** 2 is -(x ** 2), -x * 2 is (-x) * 2
_COMPARISONS = {"<", ">", "<=", ">=", "==", "!="}
_TWO_CHAR = {"**", ">=", "<=", "==", "!="}
_ONE_CHAR = set("+-*/()<>=?.!^") | set(SYMBOL_ALIASES)
_FIRST_WORDS = {phrase[0] for phrase in WORD_OPERATORS}


def recompute(question: str, values: dict[str, Fraction]) -> Fraction | bool:
    """Compute ``question`` with ``values``; a Fraction, or a bool for a comparison.

    Raises ``UnknownVariable`` for a missing variable, ``CalcError`` for syntax errors
    and division by zero, ``BoundsError`` beyond the calculator's bounds (all three are
    the calculator's exception classes, so callers catch one family).
    """
    tokens = _tokens(question)
    if not tokens:
        raise CalcError("empty question: there is no expression to compute")
    return _run(_to_rpn(tokens), values)


def names(question: str) -> list[str]:
    """The variable names in ``question``, each once, in order of first appearance.

    Raises ``CalcError``/``BoundsError`` where :func:`recompute` would on scanning.
    """
    return list(dict.fromkeys(str(value) for kind, value in _tokens(question) if kind == "name"))


@lru_cache(maxsize=1024)  # a question is scanned twice per check (names, then recompute)
def _tokens(question: str) -> tuple[tuple[str, object], ...]:
    items = _scan(question)
    german = any(k == "word" and t.lower() in GERMAN_QUESTION_WORDS for k, t in items)
    return tuple(_words_to_tokens(_strip(items), german))


# --- scanning --------------------------------------------------------------------------


def _scan(text: str) -> list[tuple[str, str]]:
    """Character scanner: ("num" | "word" | "sym", text) items."""
    if len(text) > MAX_QUESTION_CHARS:
        raise BoundsError(f"question longer than {MAX_QUESTION_CHARS} characters")
    items: list[tuple[str, str]] = []
    i, n = 0, len(text)
    while i < n:
        ch = text[i]
        if ch.isspace():
            i += 1
            continue
        if ch.isdecimal():
            j = _scan_number(text, i)
            items.append(("num", text[i:j]))
        elif ch.isalpha() or ch == "_":
            j = _scan_word(text, i)
            items.extend(_split_word(text[i:j]))
        elif text[i : i + 2] in _TWO_CHAR:
            j = i + 2
            items.append(("sym", text[i:j]))
        elif ch in _ONE_CHAR:
            j = i + 1
            items.append(("sym", ch))
        else:
            raise CalcError(f"unexpected character {ch!r} at position {i}")
        i = j
        if len(items) > MAX_TOKENS:
            raise BoundsError(f"question has more than {MAX_TOKENS} tokens")
    return items


def _digits_end(text: str, i: int) -> int:
    while i < len(text) and text[i].isdecimal():
        i += 1
    return i


def _scan_number(text: str, i: int) -> int:
    """End of digits, ``[.,]digits`` groups and an ``e[+-]digits`` exponent from ``i``."""
    j = _digits_end(text, i)
    while j + 1 < len(text) and text[j] in ".," and text[j + 1].isdecimal():
        j = _digits_end(text, j + 1)
    if j < len(text) and text[j] in "eE":
        k = j + 1 + (j + 1 < len(text) and text[j + 1] in "+-")
        if k < len(text) and text[k].isdecimal():
            j = _digits_end(text, k)
    return j


def _scan_word(text: str, i: int) -> int:
    """End of a word: letters, digits, ``_``, dotted parts (``a.b``), an ``'s``-like tail,
    hyphenated parts."""

    def run(k: int) -> int:
        while k < len(text) and (text[k].isalnum() or text[k] == "_"):
            k += 1
        return k

    j = run(i)
    while j + 1 < len(text) and text[j] == "." and (text[j + 1].isalpha() or text[j + 1] == "_"):
        j = run(j + 1)  # a dotted name, a.b
    if j + 1 < len(text) and text[j] == "'" and (text[j + 1].isalnum() or text[j + 1] == "_"):
        j = run(j + 1)
    while j + 1 < len(text) and text[j] in "-." and (text[j + 1].isalpha() or text[j + 1] == "_"):
        j = run(j + 1)
    return j


def _split_word(word: str) -> list[tuple[str, str]]:
    """A hyphenated word is one number (``twenty-one``) or names and minus signs."""
    if "-" not in word or question_word_number(word) is not None:
        return [("word", word)]
    items: list[tuple[str, str]] = []
    for part in word.split("-"):
        items += [("sym", "-"), ("word", part)]
    return items[1:]


def _strip(items: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """Remove trailing ``= ? . !`` and one leading phrase such as "What is"."""
    while items and items[-1][0] == "sym" and items[-1][1] in TRAILERS:
        items = items[:-1]
    lowered = [text.lower() if kind == "word" else None for kind, text in items]
    for prefix in PREFIXES:  # longest first
        size = len(prefix)
        if size < len(items) and tuple(lowered[:size]) == prefix:
            return items[size:]
    return items


def _words_to_tokens(items: list[tuple[str, str]], german: bool) -> list[tuple[str, object]]:
    """Final tokens: ("num", Fraction), ("name", str), ("op", symbol); ``german``: a
    lone separator before three digits is a decimal comma (German questions)."""
    out: list[tuple[str, object]] = []
    i = 0
    while i < len(items):
        kind, text = items[i]
        if kind == "num":
            try:
                out.append(("num", parse_number(text, decimal_comma=german)))
            except ValueError as exc:
                raise CalcError(str(exc)) from None
            i += 1
        elif kind == "sym":
            out.append(("op", SYMBOL_ALIASES.get(text, text)))
            i += 1
        else:
            token, used = _read_words(items[i:])
            out.append(token)
            i += used
    return out


def _read_words(items: list[tuple[str, str]]) -> tuple[tuple[str, object], int]:
    """Longest word operator, else longest number in words, else one name."""
    words: list[str] = []
    for kind, text in items[: max(MAX_NUMBER_WORDS, 8)]:
        if kind != "word":
            break
        words.append(text)
    lowered = tuple(w.lower() for w in words)
    for size in range(len(lowered), 0, -1):
        if lowered[:size] in WORD_OPERATORS:
            return ("op", WORD_OPERATORS[lowered[:size]]), size
    if question_word_number(words[0]) is not None:
        limit = 1
        while limit < len(words) and lowered[limit] not in _FIRST_WORDS:
            limit += 1
        for size in range(limit, 0, -1):
            value = question_word_number(" ".join(words[:size]))
            if value is not None:
                return ("num", value), size
    return ("name", words[0]), 1


# --- shunting-yard ---------------------------------------------------------------------


def _to_rpn(tokens: Sequence[tuple[str, object]]) -> list[tuple[str, object]]:
    """Reverse Polish notation; checks operand/operator alternation and the bounds."""
    output: list[tuple[str, object]] = []
    stack: list[str] = []  # operators and "(" ; unary ops are "neg" / "pos"
    comparisons = [0]  # per parenthesis level, to refuse chains like a < b < c
    want_operand = True
    for kind, value in tokens:
        if kind in ("num", "name"):
            if not want_operand:
                raise CalcError(f"unexpected {value!r} after the expression")
            output.append((kind, value))
            want_operand = False
        elif value == "(":
            if not want_operand:
                raise CalcError("unexpected '(' after the expression")
            stack.append("(")
            comparisons.append(0)
            if len(comparisons) - 1 > MAX_DEPTH:
                raise BoundsError(f"parentheses nested deeper than {MAX_DEPTH}")
        elif value == ")":
            if want_operand:
                raise CalcError("unexpected ')' where a number or variable belongs")
            while stack and stack[-1] != "(":
                output.append(("op", stack.pop()))
            if not stack:
                raise CalcError("unexpected ')' without an opening parenthesis")
            stack.pop()
            comparisons.pop()
        elif want_operand and value in ("+", "-"):
            stack.append("neg" if value == "-" else "pos")  # prefix: pops nothing
        elif not want_operand and (value in _BINARY or value in _COMPARISONS):
            op = str(value)
            if op in _COMPARISONS:
                comparisons[-1] += 1
                if comparisons[-1] > 1:
                    raise CalcError("chained comparisons are not supported; use parentheses")
            _pop_for(op, stack, output)
            stack.append(op)
            want_operand = True
        else:
            raise CalcError(f"unexpected {value!r}")
    if want_operand:
        raise CalcError("unexpected end of question: a number or variable is missing")
    while stack:
        op = stack.pop()
        if op == "(":
            raise CalcError("missing closing parenthesis")
        output.append(("op", op))
    return output


def _prec(op: str) -> int:
    if op in ("neg", "pos"):
        return _UNARY_PREC
    return _BINARY.get(op, 0)  # comparisons bind loosest


def _pop_for(op: str, stack: list[str], output: list[tuple[str, object]]) -> None:
    """Move stacked operators that bind at least as tightly as ``op`` to the output."""
    prec = _prec(op)
    while stack and stack[-1] != "(":
        top = _prec(stack[-1])
        if top > prec or (top == prec and op != "**"):  # ** groups from the right
            output.append(("op", stack.pop()))
        else:
            break


# --- RPN evaluation --------------------------------------------------------------------


def _run(rpn: list[tuple[str, object]], values: dict[str, Fraction]) -> Fraction | bool:
    stack: list[Fraction | bool] = []
    for kind, item in rpn:
        if kind == "num":
            assert isinstance(item, Fraction | int | str)  # what the scanner puts there
            stack.append(_sized(Fraction(item)))
        elif kind == "name":
            if item not in values:
                raise UnknownVariable(str(item))
            stack.append(_sized(Fraction(values[str(item)])))
        elif item == "pos":  # unary plus changes nothing, not even a comparison
            continue
        elif item == "neg":
            stack.append(-_as_number(stack.pop()))
        else:
            right, left = _as_number(stack.pop()), _as_number(stack.pop())
            stack.append(_apply(str(item), left, right))
    return stack[0]


def _as_number(value: Fraction | bool) -> Fraction:
    if isinstance(value, bool):
        raise CalcError("a comparison's true/false result cannot be used as a number")
    return value


def _sized(value: Fraction) -> Fraction:
    if max(abs(value.numerator).bit_length(), value.denominator.bit_length()) > MAX_BITS:
        raise BoundsError(f"an intermediate result is larger than {MAX_BITS} bits")
    return value


def _apply(op: str, a: Fraction, b: Fraction) -> Fraction | bool:
    if op in _COMPARISONS:
        return {"<": a < b, ">": a > b, "<=": a <= b, ">=": a >= b, "==": a == b, "!=": a != b}[op]
    if op == "/":
        if b == 0:
            raise CalcError("division by zero")
        return _sized(a / b)
    if op == "**":
        return _checked_power(a, b)
    return _sized(a + b if op == "+" else a - b if op == "-" else a * b)


def _checked_power(base: Fraction, exponent: Fraction) -> Fraction:
    """``base ** exponent`` after checking the exponent and the result's estimated size."""
    if exponent.denominator != 1:
        raise CalcError(f"exponent {exponent} is not an integer")
    n = exponent.numerator
    if not -MAX_EXPONENT <= n <= MAX_EXPONENT:
        raise BoundsError(f"exponent {n} is beyond ±{MAX_EXPONENT}")
    if n < 0 and base == 0:
        raise CalcError("division by zero: 0 raised to a negative power")
    widest = max(abs(base.numerator).bit_length(), base.denominator.bit_length())
    if abs(n) * max(widest - 1, 0) > MAX_BITS:  # lower bound of the result's bits
        raise BoundsError(f"a power would be larger than {MAX_BITS} bits")
    return _sized(base**n)
