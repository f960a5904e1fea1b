"""The tree a question is parsed into: numbers, variables, negation, arithmetic and
comparisons, and the walks over it that need no evaluation."""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction


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


def children(node: Expr) -> tuple[Expr, ...]:
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
        stack.extend(reversed(children(node)))
    return list(seen)
