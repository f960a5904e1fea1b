"""The `gatekeeper` validator: a solution is accepted only when it was not rejected
before, has the form of the riddle's typed answer (`document.answers`, with the words
read in an image for coordinates: `images.wordboxes`), and matches an independent
recomputation (`arithmetic.recheck`) from the same definitions the solver used.
"""

from __future__ import annotations

import struct
from typing import Any

import imagesize

from riddlectl.document import answers, datafiles
from riddlectl.document.numbers import parse_number
from riddlectl.errors import HandlerRefused, InvalidData
from riddlectl.handlers.base import Job
from riddlectl.handlers.builtin.arithmetic import recheck
from riddlectl.handlers.builtin.arithmetic.questions import CalcError
from riddlectl.handlers.builtin.calculator.solver import Definitions, render
from riddlectl.handlers.builtin.images import wordboxes
from riddlectl.handlers.builtin.text.facts import MAX_TEXT_BYTES


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
        return {"accept": True, "review": f"recomputed independently: {want}{heard_note(job)}"}
    return {
        "accept": False,
        "review": f"solution {given!r} is wrong: recomputing "
        f"{question.strip()!r} from the data gives {want}",
    }


def heard_note(job: Job) -> str:
    """`; rests on heard values: z = 20 (z.wav: 'z equals twenty', confidence 1.0)` when
    some of the data were heard in recordings, whose values nothing here can check; the
    confidence of each recogniser when two had to agree. Empty otherwise."""
    notes = []
    for index, item in enumerate(job.riddle.data):
        found = _extraction(job, index) or {}
        if "heard" not in found or not isinstance(found.get("variables"), dict):
            continue
        values = ", ".join(f"{n} = {v}" for n, v in found["variables"].items())
        agreed = found.get("agreed")
        if isinstance(agreed, list) and agreed:
            how = " and ".join(
                f"{a.get('by')}: {a.get('heard')!r}, confidence {a.get('confidence')}"
                for a in agreed
                if isinstance(a, dict)
            )
        else:
            how = f"{found.get('heard')!r}, confidence {found.get('confidence')}"
        notes.append(f"{values} ({item.file_plain}: {how})")
    return f"; rests on heard values: {'; '.join(notes)}" if notes else ""


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
