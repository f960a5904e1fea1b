"""The `calculator` family: the built-in solver and validator; reads no data file, only
what the extractors read from them.

`solver` holds the `calculator` solver (exact arithmetic over the extracted variables,
formulas as sub-riddles); `gatekeeper` the `gatekeeper` validator (the answer's form,
and an independent recomputation). The registry loads both from here.
"""

from __future__ import annotations

from riddlectl.handlers.builtin.calculator.gatekeeper import gatekeeper
from riddlectl.handlers.builtin.calculator.solver import calculator

__all__ = ["calculator", "gatekeeper"]
