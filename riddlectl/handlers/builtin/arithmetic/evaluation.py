"""Exact evaluation of a parsed question, within bounds: integers and fractions,
never floats; an explicit stack, so long chains need no recursion."""

from __future__ import annotations

from fractions import Fraction

from riddlectl.document.numbers import format_number
from riddlectl.handlers.builtin.arithmetic.nodes import Compare, Expr, Neg, Num, Var, children
from riddlectl.handlers.builtin.arithmetic.questions import (
    MAX_BITS,
    MAX_EXPONENT,
    BoundsError,
    CalcError,
    UnknownVariable,
)

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
            todo.extend((child, False) for child in reversed(children(node)))
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
