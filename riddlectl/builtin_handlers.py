"""The built-in handlers: `text` extractor, `calculator` solver, `gatekeeper` validator.

Adapters between the handler protocol (`handlers.Job` → dict) and the pure modules that
do the work: `textfacts`, `calculator`, `recheck`, `answers`, `numbers`.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any

import imagesize

from riddlectl import answers, datafiles, recheck
from riddlectl import calculator as calc
from riddlectl.errors import HandlerRefused, InvalidData
from riddlectl.handlers import Job
from riddlectl.numbers import format_number, parse_number
from riddlectl.textfacts import extract_facts

TEXT_VERSION = "1"


def text_extractor(job: Job) -> dict[str, Any]:
    """Variables, formulas and numbers found in a UTF-8 text file."""
    assert job.item_path is not None
    try:
        return extract_facts(job.item_path.read_text("utf-8")).to_json()
    except ValueError as exc:
        raise HandlerRefused(f"{job.riddle.data[job.item_index or 0].file_plain}: {exc}") from None


# -- facts gathered from the extractions ------------------------------------------------------


class Facts:
    """Every variable and formula of a riddle's extractions, with the item defining it."""

    def __init__(self, job: Job) -> None:
        self.values: dict[str, Fraction] = {}
        self.formulas: dict[str, str] = {}
        self.source: dict[str, int] = {}
        for index, extraction in enumerate(job.extractions):
            for name, text in ((extraction or {}).get("variables") or {}).items():
                if name not in self.values and name not in self.formulas:
                    self.values[name] = parse_number(str(text))
                    self.source[name] = index
            for name, text in ((extraction or {}).get("formulas") or {}).items():
                if name not in self.values and name not in self.formulas:
                    self.formulas[name] = str(text)
                    self.source[name] = index
        self._bind_sub_results(job.riddle.sub_results or [])

    def _bind_sub_results(self, results: list[dict[str, Any]]) -> None:
        for name, formula in list(self.formulas.items()):
            for result in reversed(results):
                if result.get("question") == sub_question(formula) and result.get("solved"):
                    self.values[name] = parse_number(str(result["solution"]))
                    break

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


def sub_question(formula: str) -> str:
    return f"{formula} ="


# -- calculator -------------------------------------------------------------------------------


def calculator(job: Job) -> dict[str, Any] | None:
    """Exact arithmetic over the extracted variables; formulas become sub-riddles."""
    question = job.riddle.riddle.question
    try:
        expr = calc.parse_question(question)
        facts = Facts(job)
        needed = calc.variables_of(expr)
        facts.closure(needed)
        pending = [n for n in needed if n not in facts.values and n in facts.formulas]
        if pending:
            return {"sub_riddles": [_sub_riddle(job, facts, name) for name in pending]}
        value = calc.evaluate(expr, facts.values)
        answer = render(value, job)
    except calc.CalcError as exc:
        raise HandlerRefused(f"calculator: {exc}") from None
    except ValueError as exc:  # e.g. a result too long to write out (Python's digit limit)
        raise HandlerRefused(f"calculator: result cannot be written: {exc}") from None
    used = sorted({facts.source[n] for n in needed if n in facts.source})
    return {
        "solution": answer,
        "explanation": _explain(expr, needed, facts, job, answer),
        "used_data": [job.riddle.data[i].model_dump(mode="json") for i in used],
    }


def _sub_riddle(job: Job, facts: Facts, name: str) -> dict[str, Any]:
    names = facts.closure(facts.dependencies(name))
    items = sorted({facts.source[n] for n in names if n in facts.source})
    return {
        "riddle": {
            "context": job.riddle.riddle.context,
            "question": sub_question(facts.formulas[name]),
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


def _explain(expr: Any, needed: list[str], facts: Facts, job: Job, answer: str) -> str:
    givens = []
    for name in needed:
        where = job.riddle.data[facts.source[name]].file_plain if name in facts.source else "?"
        givens.append(f"{name} = {format_number(facts.values[name])} ({where})")
    prefix = ", ".join(givens)
    sentence = f"{calc.describe(expr)} = {answer}"
    return f"{prefix}; {sentence}" if prefix else sentence


# -- gatekeeper -------------------------------------------------------------------------------


def gatekeeper(job: Job) -> dict[str, Any]:
    """Accept only a solution that was not rejected before, has the typed answer's form,
    and matches an independent recomputation (when the question is arithmetic)."""
    solution = job.riddle.solution
    if solution is None:
        return {"accept": False, "review": "there is no solution"}
    for earlier in job.riddle.riddle.solutions_before:
        if earlier.solution.strip() == solution.solution.strip():
            review = earlier.review or "no review"
            return {
                "accept": False,
                "review": f"solution {solution.solution!r} was already "
                f"rejected for this riddle ({review})",
            }
    spec = job.riddle.riddle.answer
    if spec is not None:
        problem = answers.check_answer(
            answers.parse_answer_spec(spec),
            solution.solution,
            _data_texts(job),
            [None] * len(job.riddle.data),
        )
        if problem:
            return {"accept": False, "review": problem}
    return _check_value(job, solution.solution)


def _check_value(job: Job, given: str) -> dict[str, Any]:
    try:
        facts = Facts(job)
        expected = recheck.recompute(job.riddle.riddle.question, facts.values)
    except (calc.CalcError, ValueError, HandlerRefused) as exc:
        return {"accept": True, "review": f"form checked; not recomputed ({exc})"}
    want = render(expected, job)
    if _same(given, want):
        return {"accept": True, "review": f"recomputed independently: {want}"}
    return {
        "accept": False,
        "review": f"solution {given!r} is wrong: recomputing "
        f"{job.riddle.riddle.question.strip()!r} from the data gives {want}",
    }


def _same(given: str, want: str) -> bool:
    if given.strip().lower() == want.lower():
        return True
    try:
        return parse_number(given.strip()) == parse_number(want)
    except ValueError:
        return False


def _data_texts(job: Job) -> list[str]:
    """The text of each data item (empty for items that are not readable UTF-8 text)."""
    texts = []
    for item in job.riddle.data:
        try:
            path = datafiles.resolve(job.data_dir, item.file_plain)
            texts.append(path.read_text("utf-8"))
        except (InvalidData, OSError, UnicodeDecodeError):
            texts.append("")
    return texts


def _image_sizes(job: Job) -> list[tuple[int, int] | None]:
    """(width, height) of each image item, read from its header; None where unknown."""
    sizes: list[tuple[int, int] | None] = []
    for item in job.riddle.data:
        size = None
        if item.type == "image":
            try:
                width, height = imagesize.get(datafiles.resolve(job.data_dir, item.file_plain))
                size = (width, height) if width > 0 and height > 0 else None
            except (InvalidData, OSError, ValueError):
                size = None
        sizes.append(size)
    return sizes
