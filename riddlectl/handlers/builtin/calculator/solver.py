"""The `calculator` solver: exact arithmetic over what the extractors read.

The question is parsed by the arithmetic family's parser; the variables come from the
riddle's extractions (`Definitions`: every value and formula, with the item defining it,
and why a name is unusable when items disagree); a formula becomes a sub-riddle; the
answer is written exactly (`render`) with an explanation naming the data used.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any

from riddlectl.document.numbers import format_number, parse_number
from riddlectl.errors import HandlerRefused
from riddlectl.handlers.base import Job
from riddlectl.handlers.builtin import arithmetic as calc
from riddlectl.handlers.builtin.arithmetic.questions import CalcError

# -- definitions gathered from the extractions ------------------------------------------------


class Definitions:
    """Every variable and formula of a riddle's extractions, with the item defining it.

    A name defined alike in several items is fine (the first is its source).  A name
    defined differently in two items (two values, a value and a formula), or whose
    value an extractor could not read (``unreadable``, or a value that is not a
    number), is left undefined and `problems` says why: `check` refuses a riddle that
    needs it, rather than taking the first definition and answering wrongly.
    """

    def __init__(self, job: Job) -> None:
        self.values: dict[str, Fraction] = {}
        self.formulas: dict[str, str] = {}
        self.source: dict[str, int] = {}
        self.problems: dict[str, str] = {}
        found: dict[str, list[_Definition]] = {}
        for index, extraction in enumerate(job.extractions):
            for name, kind, value in _definitions(extraction):
                found.setdefault(name, []).append((index, kind, value))
        files = [item.file_plain for item in job.riddle.data]
        for name, definitions in found.items():
            self._settle(name, definitions, files)
        self._bind_sub_results(job.riddle.sub_results or [])

    def _settle(self, name: str, definitions: list[_Definition], files: list[str]) -> None:
        for index, kind, value in definitions:
            if kind == "unreadable":
                self.problems[name] = f"{name!r} in {files[index]} cannot be read: {value}"
                return
        first = definitions[0]
        for other in definitions[1:]:
            if _meaning(other) != _meaning(first):
                self.problems[name] = (
                    f"conflicting values for {name!r}: {_shown(first)} in {files[first[0]]}, "
                    f"{_shown(other)} in {files[other[0]]}"
                )
                return
        index, kind, value = first
        if kind == "value":
            assert isinstance(value, Fraction)
            self.values[name] = value
        else:
            self.formulas[name] = str(value)
        self.source[name] = index

    def _bind_sub_results(self, results: list[dict[str, Any]]) -> None:
        for name, formula in list(self.formulas.items()):
            for result in reversed(results):
                if result.get("question") == sub_question(formula) and result.get("solved"):
                    try:
                        self.values[name] = parse_number(str(result.get("solution")))
                    except ValueError:
                        answer = str(result.get("solution"))[:40]
                        self.problems[name] = f"the sub-riddle for {name!r} answered {answer!r}"
                    break

    def check(self, names: list[str]) -> None:
        """Refuse (`HandlerRefused`) when one of `names` has a problem."""
        for name in names:
            if name in self.problems:
                raise HandlerRefused(self.problems[name])

    def dependencies(self, name: str) -> list[str]:
        return calc.variables_of(calc.parse_question(self.formulas[name]))

    def closure(self, names: list[str]) -> list[str]:
        """`names` and every variable their formulas use, refusing cyclic definitions."""
        seen: list[str] = []

        def visit(name: str, path: tuple[str, ...]) -> None:
            if name in path:
                cycle = " → ".join((*path[path.index(name) :], name))
                raise HandlerRefused(f"cyclic definition: {cycle}")
            if name in seen:
                return
            seen.append(name)
            if name in self.formulas:
                for dependency in self.dependencies(name):
                    visit(dependency, (*path, name))

        for name in names:
            visit(name, ())
        return seen


# (item index, "value" | "formula" | "unreadable", the value, formula text or reason)
_Definition = tuple[int, str, Fraction | str]


def _definitions(extraction: Any) -> list[tuple[str, str, Fraction | str]]:
    """(name, kind, value) for each definition in one extraction, any extractor's."""
    out: list[tuple[str, str, Fraction | str]] = []
    for field, kind in (("variables", "value"), ("formulas", "formula"), ("unreadable", "")):
        entries = extraction.get(field) if isinstance(extraction, dict) else None
        for name, text in (entries if isinstance(entries, dict) else {}).items():
            if kind != "value":
                out.append((str(name), kind or "unreadable", str(text)))
                continue
            try:
                out.append((str(name), "value", parse_number(str(text))))
            except ValueError:
                out.append((str(name), "unreadable", f"{str(text)[:40]!r} is not a number"))
    return out


def _meaning(definition: _Definition) -> tuple[str, Fraction | str]:
    """What a definition says, so that "x+y" and "x + y" in two files agree."""
    _, kind, value = definition
    if kind == "formula":
        try:
            return kind, calc.describe(calc.parse_question(str(value)))
        except CalcError:
            return kind, str(value).strip()
    return kind, value


def _shown(definition: _Definition) -> str:
    value = definition[2]
    return format_number(value) if isinstance(value, Fraction) else repr(value)


def sub_question(formula: str) -> str:
    return f"{formula} ="


# -- calculator -------------------------------------------------------------------------------


def calculator(job: Job) -> dict[str, Any] | None:
    """Exact arithmetic over the extracted variables; formulas become sub-riddles."""
    question = job.riddle.riddle.question
    try:
        expr = calc.parse_question(question)
        defs = Definitions(job)
        needed = calc.variables_of(expr)
        defs.check(defs.closure(needed))
        pending = [n for n in needed if n not in defs.values and n in defs.formulas]
        if pending:
            return {"sub_riddles": [_sub_riddle(job, defs, name) for name in pending]}
        value = calc.evaluate(expr, defs.values)
        answer = render(value, job)
    except CalcError as exc:
        raise HandlerRefused(f"calculator: {exc}") from None
    except ValueError as exc:  # e.g. a result too long to write out (Python's digit limit)
        raise HandlerRefused(f"calculator: result cannot be written: {exc}") from None
    used = sorted({defs.source[n] for n in needed if n in defs.source})
    return {
        "solution": answer,
        "explanation": _explain(expr, needed, defs, job, answer),
        "used_data": [job.riddle.data[i].model_dump(mode="json") for i in used],
    }


def _sub_riddle(job: Job, defs: Definitions, name: str) -> dict[str, Any]:
    names = defs.closure(defs.dependencies(name))
    items = sorted({defs.source[n] for n in names if n in defs.source})
    return {
        "riddle": {
            "context": job.riddle.riddle.context,
            "question": sub_question(defs.formulas[name]),
        },
        "data": [job.riddle.data[i].model_dump(mode="json") for i in items],
    }


def render(value: Fraction | bool, job: Job) -> str:
    """Booleans as probabilities for `noul` answers, else `true`/`false`; numbers exactly."""
    if isinstance(value, bool):
        spec = job.riddle.riddle.answer or {}
        if spec.get("type") == "noul":
            return "1" if value else "0"
        return "true" if value else "false"
    return format_number(value)


def _explain(expr: Any, needed: list[str], defs: Definitions, job: Job, answer: str) -> str:
    givens = []
    for name in needed:
        where = job.riddle.data[defs.source[name]].file_plain if name in defs.source else "?"
        givens.append(f"{name} = {format_number(defs.values[name])} ({where})")
    prefix = ", ".join(givens)
    sentence = f"{calc.describe(expr)} = {answer}"
    return f"{prefix}; {sentence}" if prefix else sentence
