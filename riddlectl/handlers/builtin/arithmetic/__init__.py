"""Arithmetic questions, read exactly and within bounds: reads no data file itself.

`questions` is the vocabulary both readers of a question share (word operators,
phrasings, bounds, errors). The exact reader is split by what it does: `tokens` reads
the words and symbols, `parser` builds the tree of `nodes`, `evaluation` computes it
with fractions, `rendering` writes it back as text; what the other families use of it
is exported here. `recheck` computes a question a second, independent way, for the
gatekeeper.
"""

from __future__ import annotations

from riddlectl.handlers.builtin.arithmetic.evaluation import evaluate
from riddlectl.handlers.builtin.arithmetic.nodes import (
    BinOp,
    Compare,
    Expr,
    Neg,
    Num,
    Var,
    variables_of,
)
from riddlectl.handlers.builtin.arithmetic.parser import parse_question
from riddlectl.handlers.builtin.arithmetic.rendering import describe

__all__ = [
    "BinOp",
    "Compare",
    "Expr",
    "Neg",
    "Num",
    "Var",
    "describe",
    "evaluate",
    "parse_question",
    "variables_of",
]
