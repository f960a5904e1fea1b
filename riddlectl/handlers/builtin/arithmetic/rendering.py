"""A parsed question written back as canonical text (`describe`), for explanations and
for comparing two formulas that differ only in spacing."""

from __future__ import annotations

from riddlectl.document.numbers import format_number
from riddlectl.handlers.builtin.arithmetic.nodes import BinOp, Compare, Expr, Neg, Num, Var

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
