"""The built-in handlers: `text` extractor, `calculator` solver, `gatekeeper` validator.

Adapters between the handler protocol (`handlers.Job` → dict) and the pure modules that
do the work: `textfacts`, `calculator`, `recheck`, `answers`, `numbers`.
"""

from __future__ import annotations

import struct
import sys
from fractions import Fraction
from typing import Any

import imagesize

from riddlectl.document import answers, datafiles, numbers
from riddlectl.document.numbers import format_number, parse_number
from riddlectl.errors import HandlerRefused, InvalidData
from riddlectl.handlers.base import Job, code_version
from riddlectl.handlers.builtin import calculator as calc
from riddlectl.handlers.builtin import numberphrases, numberwords, recheck, textfacts, wordboxes
from riddlectl.handlers.builtin.questions import CalcError
from riddlectl.handlers.builtin.textfacts import MAX_TEXT_BYTES, extract_facts

#: The text extractor's version, part of its cache key: "2" reads percentages, number
#: words beyond integers and one-letter names, and refuses what it cannot read exactly.
TEXT_VERSION = "2"


def text_version() -> str:
    """The `text` extractor's identity: its version and a digest of the code reading files."""
    modules = (sys.modules[__name__], numbers, numberwords, numberphrases, textfacts)
    return code_version(TEXT_VERSION, modules)


def text_extractor(job: Job) -> dict[str, Any]:
    """Variables, formulas and numbers found in a UTF-8 text file (read bounded)."""
    assert job.item_path is not None
    where = job.riddle.data[job.item_index or 0].file_plain
    try:
        content = datafiles.read(job.item_path, "text", MAX_TEXT_BYTES, where=where, field="")
        return extract_facts(content.decode("utf-8")).to_json()
    except InvalidData as exc:
        raise HandlerRefused(str(exc)) from None
    except ValueError as exc:
        raise HandlerRefused(f"{where}: {exc}") from None


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
    if job.riddle.riddle.answer is not None:
        problem = _check_form(job, answers.parse_answer_spec(job.riddle.riddle.answer))
        if problem:
            return {"accept": False, "review": problem}
    return _check_value(job, solution.solution)


def _check_form(job: Job, spec: answers.AnswerSpec) -> str | None:
    """The typed answer's check, given the data it needs: texts, image sizes, and the
    boxes of the words read in an image."""
    kind = spec.kind if isinstance(spec, answers.ExtractSpec) else None
    texts = _data_texts(job) if kind == "text" else []
    sizes: list[tuple[int, int] | None] = (
        _image_sizes(job) if kind == "coordinates" else [None] * len(job.riddle.data)
    )
    assert job.riddle.solution is not None
    solution = job.riddle.solution.solution
    problem = answers.check_answer(spec, solution, texts, sizes)
    if problem is None and isinstance(spec, answers.ExtractSpec) and kind == "coordinates":
        extraction = _extraction(job, spec.image - 1)
        problem = wordboxes.check_points(
            spec, solution.strip(), job.riddle.riddle.question, extraction
        )
    return problem


def _extraction(job: Job, index: int) -> dict[str, Any] | None:
    return job.extractions[index] if 0 <= index < len(job.extractions) else None


def _check_value(job: Job, given: str) -> dict[str, Any]:
    question = job.riddle.riddle.question
    defs = Definitions(job)
    try:
        # The recheck's own scan of the question: which data the answer depends on.
        defs.check(defs.closure(recheck.names(question)))
    except CalcError as exc:
        return {"accept": True, "review": f"form checked; not recomputed ({exc})"}
    except HandlerRefused as exc:
        return {
            "accept": False,
            "review": f"solution {given!r} cannot be right: the data give no answer ({exc})",
        }
    try:
        expected = recheck.recompute(question, defs.values)
    except CalcError as exc:
        return {"accept": True, "review": f"form checked; not recomputed ({exc})"}
    want = render(expected, job)
    if _same(given, want):
        return {"accept": True, "review": f"recomputed independently: {want}"}
    return {
        "accept": False,
        "review": f"solution {given!r} is wrong: recomputing "
        f"{question.strip()!r} from the data gives {want}",
    }


def _same(given: str, want: str) -> bool:
    if given.strip().lower() == want.lower():
        return True
    try:
        return parse_number(given.strip()) == parse_number(want)
    except ValueError:
        return False


def _data_texts(job: Job) -> list[str]:
    """The text of each text data item, read bounded, and of each image the text its
    extraction read in it (empty where there is none)."""
    texts = []
    for index, item in enumerate(job.riddle.data):
        text = ""
        if item.type == "image":  # the text read in it, when an extractor kept it
            read = (_extraction(job, index) or {}).get("text")
            text = read if isinstance(read, str) else ""
        elif item.type in datafiles.text_types():
            try:
                path = datafiles.resolve(job.data_dir, item.file_plain)
                text = datafiles.read(path, item.type, MAX_TEXT_BYTES).decode("utf-8")
            except (InvalidData, OSError):
                text = ""
        texts.append(text)
    return texts


# What imagesize may raise on a malformed header: the size is then unknown.
_HEADER_ERRORS = (InvalidData, OSError, ValueError, IndexError, TypeError, struct.error)


def _image_sizes(job: Job) -> list[tuple[int, int] | None]:
    """(width, height) of each image item, read from its header (or, for a format the
    header reader does not know, from its extraction); None where unknown.

    Paths go through the data directory's checks (`datafiles.resolve`): no absolute
    paths, no `..`, no links leading out, regular files only.
    """
    sizes: list[tuple[int, int] | None] = []
    for index, item in enumerate(job.riddle.data):
        size = None
        if item.type == "image":
            try:
                width, height = imagesize.get(datafiles.resolve(job.data_dir, item.file_plain))
                size = (width, height) if width > 0 and height > 0 else None
            except _HEADER_ERRORS:
                size = None
            size = size or _extracted_size(_extraction(job, index))
        sizes.append(size)
    return sizes


def _extracted_size(extraction: dict[str, Any] | None) -> tuple[int, int] | None:
    """The size an image extractor measured (`image.width`, `image.height`), if any."""
    image = (extraction or {}).get("image")
    if not isinstance(image, dict):
        return None
    width, height = image.get("width"), image.get("height")
    if type(width) is int and type(height) is int and width > 0 and height > 0:
        return width, height
    return None
