"""Typed answers: parse a ``riddle.answer`` spec, check a solution against it.

The forms are described in docs/reference.md#typed-answers.

:func:`parse_answer_spec` turns the JSON object into one of :class:`FillSpec`,
:class:`NoulSpec`, :class:`ChoiceSpec`, :class:`ScoreSpec`, :class:`ExtractSpec`
(a pydantic discriminated union on ``type``), or raises :class:`AnswerSpecError` with one
line naming the field (``answer.pattern: does not compile: …``).  Unknown fields are
refused too, so a typo such as ``patern`` does not silently switch a check off.

:func:`check_answer` returns None when a solution has the required form, else one
sentence saying what is wrong, fit for a gatekeeper review.
"""

from __future__ import annotations

import json
import re
from typing import Annotated, Any, Literal, get_args

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    StrictBool,
    StrictInt,
    StrictStr,
    TypeAdapter,
    ValidationError,
    model_validator,
)

from riddlectl.document.numbers import parse_number
from riddlectl.errors import problem

__all__ = [
    "AnswerSpec",
    "AnswerSpecError",
    "ChoiceSpec",
    "ExtractSpec",
    "FillSpec",
    "NoulSpec",
    "ScoreSpec",
    "answer_schema",
    "check_answer",
    "parse_answer_spec",
]

#: Longest solution a ``pattern`` is matched against (bounds the regex's work).
MAX_PATTERN_SUBJECT = 10_000
_INT_RE = re.compile(r"[+-]?\d+")


class AnswerSpecError(ValueError):
    """The answer spec itself is malformed; the message is one line naming the field."""


#: The kinds of a `fill` answer, each as a prompt or a form says it: the one vocabulary
#: that `FillSpec`, the web form, `submit --answer-kind` and the model prompts use
#: (`FillKind` below spells the same keys for the type checker; a test keeps them equal).
FILL_KINDS: dict[str, str] = {
    "text": "a short text",
    "int": "an integer",
    "number": "a number",
    "json_list": "a list",
}
FillKind = Literal["text", "int", "number", "json_list"]


class _Spec(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class FillSpec(_Spec):
    """A value of a kind; ``pattern`` (text only, full match) and ``max_tokens`` bound it."""

    type: Literal["fill"]
    kind: FillKind = "text"
    pattern: StrictStr | None = None
    max_tokens: Annotated[StrictInt, Field(ge=1, le=256)] | None = None
    _compiled: re.Pattern[str] | None = PrivateAttr(default=None)

    @model_validator(mode="after")
    def _compile(self) -> FillSpec:
        if self.pattern is None:
            return self
        if self.kind != "text":
            raise ValueError(f"pattern: only allowed with kind 'text', not {self.kind!r}")
        try:
            self._compiled = re.compile(self.pattern)
        except re.error as exc:
            raise ValueError(f"pattern: does not compile: {exc}") from None
        return self


class NoulSpec(_Spec):
    """A probability in [0, 1] that the statement is true."""

    type: Literal["noul"]
    criteria: dict[StrictStr, StrictStr] | None = None

    @model_validator(mode="after")
    def _true_false(self) -> NoulSpec:
        if self.criteria is not None and set(self.criteria) != {"true", "false"}:
            raise ValueError(
                f"criteria: keys must be exactly 'true' and 'false', not {sorted(self.criteria)}"
            )
        return self


class ChoiceSpec(_Spec):
    """One of the keys of ``criteria`` (2 to 256 of them)."""

    type: Literal["choice"]
    criteria: Annotated[dict[StrictStr, StrictStr], Field(min_length=2, max_length=256)]


class ScoreSpec(_Spec):
    """One of the levels, listed lowest first (at least two, no repeats)."""

    type: Literal["score"]
    criteria: Annotated[list[StrictStr | StrictInt], Field(min_length=2, max_length=256)]

    @model_validator(mode="after")
    def _distinct(self) -> ScoreSpec:
        levels = [str(level) for level in self.criteria]
        if len(set(levels)) != len(levels):
            raise ValueError("criteria: levels must be distinct")
        return self


class ExtractSpec(_Spec):
    """Text copied verbatim from the data, or ``[x, y]`` pixels inside image ``image``."""

    type: Literal["extract"]
    kind: Literal["text", "coordinates"] = "text"
    many: StrictBool = False
    image: Annotated[StrictInt, Field(ge=1)] = 1


AnswerSpec = Annotated[
    FillSpec | NoulSpec | ChoiceSpec | ScoreSpec | ExtractSpec, Field(discriminator="type")
]
_ADAPTER: TypeAdapter[Any] = TypeAdapter(AnswerSpec)
#: The types of a typed answer (`riddle.answer.type`), in the order forms offer them.
ANSWER_TYPES: tuple[str, ...] = tuple(
    get_args(spec.model_fields["type"].annotation)[0]
    for spec in (FillSpec, NoulSpec, ChoiceSpec, ScoreSpec, ExtractSpec)
)


def parse_answer_spec(obj: Any) -> FillSpec | NoulSpec | ChoiceSpec | ScoreSpec | ExtractSpec:
    """Validate a ``riddle.answer`` object; :class:`AnswerSpecError` (one line) if malformed."""
    if not isinstance(obj, dict):
        raise AnswerSpecError(f"answer: must be an object, not {type(obj).__name__}")
    try:
        spec: AnswerSpec = _ADAPTER.validate_python(obj)
        return spec
    except ValidationError as exc:
        raise AnswerSpecError(_one_line(exc, obj)) from None


def _one_line(exc: ValidationError, obj: dict[str, Any]) -> str:
    """``answer.<field>: <problem>`` for the first error pydantic found."""
    error = exc.errors()[0]
    if error["type"] in ("union_tag_invalid", "union_tag_not_found"):
        return (
            f"answer.type: must be one of 'fill', 'noul', 'choice', 'score', 'extract' "
            f"(got {obj.get('type')!r})"
        )
    loc = [str(part) for part in error["loc"][1:]]  # [0] is the union tag
    message = problem(error)
    if ":" in message and not loc and message.split(":")[0].isidentifier():
        return f"answer.{message}"  # our own validators name their field
    if error["type"] == "extra_forbidden":
        message = "unknown field"
    return f"answer.{'.'.join(loc) or 'type'}: {message}"


def answer_schema() -> dict[str, Any]:
    """JSON Schema of the answer spec (for ``riddlectl schema``)."""
    return _ADAPTER.json_schema()


# --- checking solutions ----------------------------------------------------------------


def check_answer(
    spec: FillSpec | NoulSpec | ChoiceSpec | ScoreSpec | ExtractSpec,
    solution: str,
    data_texts: list[str],
    image_sizes: list[tuple[int, int] | None],
) -> str | None:
    """None when ``solution`` has the form ``spec`` asks for, else why not (one sentence).

    ``data_texts`` are the texts of the riddle's data items (for ``extract`` text),
    ``image_sizes`` their ``(width, height)`` where known (for ``extract`` coordinates;
    with an unknown size only the form ``[x, y]`` with ``x, y >= 0`` is checked).
    Leading and trailing whitespace of the solution is ignored, except for ``extract``
    text, which must occur exactly as given.
    """
    if not solution.strip():
        return "the solution is empty"
    if isinstance(spec, FillSpec):
        return _check_fill(spec, solution.strip())
    if isinstance(spec, NoulSpec):
        return _check_noul(solution.strip())
    if isinstance(spec, ChoiceSpec | ScoreSpec):
        allowed = [str(c) for c in spec.criteria]
        if solution.strip() in allowed:
            return None
        what = "choice keys" if isinstance(spec, ChoiceSpec) else "score levels"
        return f"solution {_short(solution)} is not one of the {what} {allowed}"
    if spec.kind == "text":
        return _check_extract_text(spec, solution, data_texts)
    return _check_coordinates(spec, solution.strip(), image_sizes)


def _short(text: str) -> str:
    return repr(text if len(text) <= 60 else text[:57] + "...")


def _check_fill(spec: FillSpec, solution: str) -> str | None:
    if spec.max_tokens is not None and len(solution.split()) > spec.max_tokens:
        return (
            f"solution has {len(solution.split())} tokens, more than answer.max_tokens "
            f"{spec.max_tokens} allows"
        )
    if spec.kind == "int" and not _INT_RE.fullmatch(solution):
        return f"solution {_short(solution)} is not an integer, as answer.kind 'int' requires"
    if spec.kind == "number":
        try:
            parse_number(solution)
        except ValueError:
            return f"solution {_short(solution)} is not a number, as answer.kind 'number' requires"
    if spec.kind == "json_list" and not isinstance(_json(solution), list):
        return (
            f"solution {_short(solution)} is not a JSON array, as answer.kind 'json_list' requires"
        )
    if spec._compiled is not None:
        if len(solution) > MAX_PATTERN_SUBJECT:
            return f"solution is longer than {MAX_PATTERN_SUBJECT} characters"
        if not spec._compiled.fullmatch(solution):
            return f"solution {_short(solution)} does not match answer.pattern {spec.pattern!r}"
    return None


def _json(text: str) -> Any:
    """Parsed JSON, or None when the text is not JSON."""
    try:
        return json.loads(text)
    except (ValueError, RecursionError):
        return None


def _check_noul(solution: str) -> str | None:
    try:
        value = parse_number(solution)
    except ValueError:
        return f"solution {_short(solution)} is not a probability (a number from 0 to 1)"
    if not 0 <= value <= 1:
        return f"solution {_short(solution)} is not a probability: it is outside [0, 1]"
    return None


def _check_extract_text(spec: ExtractSpec, solution: str, data_texts: list[str]) -> str | None:
    if not spec.many:
        pieces: Any = [solution]
    else:
        pieces = _json(solution)
        if (
            not isinstance(pieces, list)
            or not pieces
            or not all(isinstance(p, str) and p for p in pieces)
        ):
            return (
                f"solution {_short(solution)} is not a JSON list of non-empty strings, "
                f"as answer.many requires"
            )
    for piece in pieces:
        if not any(piece in text for text in data_texts):
            return f"{_short(piece)} does not occur verbatim in the riddle's data"
    return None


def _check_coordinates(
    spec: ExtractSpec, solution: str, image_sizes: list[tuple[int, int] | None]
) -> str | None:
    if spec.image > len(image_sizes):
        return (
            f"answer.image {spec.image} names a data item the riddle does not have "
            f"(it has {len(image_sizes)})"
        )
    size = image_sizes[spec.image - 1]
    parsed = _json(solution)
    points = parsed if spec.many else [parsed]
    if not isinstance(points, list) or not points:
        return f"solution {_short(solution)} is not a JSON list of [x, y] points"
    for point in points:
        if not (
            isinstance(point, list)
            and len(point) == 2
            and all(isinstance(c, int | float) and not isinstance(c, bool) for c in point)
        ):
            return f"solution {_short(solution)} is not an [x, y] pair of numbers"
        x, y = point
        width, height = size if size is not None else (float("inf"), float("inf"))
        if not (0 <= x < width and 0 <= y < height):
            where = f"{width}x{height} image" if size is not None else "image"
            return f"point [{x}, {y}] lies outside the {where} (data item {spec.image})"
    return None
