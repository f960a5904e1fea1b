"""The riddle document (docs/reference.md#the-riddle-document) as pydantic models.

Every model keeps unknown fields (`extra="allow"`), so a document round-trips through
any stage unchanged except for what that stage sets. Documents are read and written
with orjson (see `codec`).
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

from riddlectl.document.ids import ID_PATTERN, ID_RE


class _Open(BaseModel):
    model_config = ConfigDict(extra="allow", validate_assignment=False)


class DataItem(_Open):
    type: str = "text"
    file_plain: str
    file_extracted: str | None = None


class Solution(_Open):
    solution: str
    explanation: str = ""
    used_data: list[Any] = Field(default_factory=list)
    accepted: bool | None = None
    review: str | None = None

    @field_validator("solution", mode="before")
    @classmethod
    def _numbers_are_text(cls, value: Any) -> Any:
        # External solvers often answer `150` rather than `"150"`; the document holds text.
        if isinstance(value, bool):
            return "true" if value else "false"
        if isinstance(value, int | float):
            return str(value)
        return value


class RiddleSpec(_Open):
    context: str = ""
    question: str
    solutions_before: list[Solution] = Field(default_factory=list)
    answer: dict[str, Any] | None = None

    @field_validator("answer")
    @classmethod
    def _answer_spec_parses(cls, value: dict[str, Any] | None) -> dict[str, Any] | None:
        if value is not None:
            from riddlectl.document.answers import parse_answer_spec

            parse_answer_spec(value)
        return value


class Step(_Open):
    required: bool = True
    finished: bool = False


class Status(_Open):
    extract: Step = Field(default_factory=Step)
    solve: Step = Field(default_factory=Step)
    validate_: Step = Field(default_factory=Step, alias="validate")
    trial: int = Field(default=0, ge=0)
    solved: bool = False

    model_config = ConfigDict(extra="allow", populate_by_name=True)

    def step(self, name: str) -> Step:
        return self.validate_ if name == "validate" else getattr(self, name)


class Riddle(_Open):
    """One riddle document: the `AgentMessage` of the original platform plus extensions."""

    id: str | None = None
    sub_ids: list[str] = Field(default_factory=list)
    riddle: RiddleSpec
    solution: Solution | None = None
    data: list[DataItem] = Field(default_factory=list)
    status: Status = Field(default_factory=Status)
    contacts: int = Field(default=0, ge=0)
    # Fields riddlectl adds (docs/reference.md#fields-riddlectl-adds): all optional, kept.
    parent_id: str | None = None
    priority: int = 0
    history: list[dict[str, Any]] = Field(default_factory=list)
    error: str | None = None
    sub_results: list[dict[str, Any]] | None = None
    rev: int = Field(default=0, ge=0)
    created: float | None = None
    updated: float | None = None

    @field_validator("id", "parent_id")
    @classmethod
    def _valid_id(cls, value: str | None) -> str | None:
        if value is not None and not ID_RE.fullmatch(value):
            raise ValueError(f"must match {ID_PATTERN} (got {value[:60]!r})")
        return value

    @field_validator("sub_ids")
    @classmethod
    def _valid_sub_ids(cls, value: list[str]) -> list[str]:
        for sub_id in value:
            cls._valid_id(sub_id)
        return value

    def extensions(self) -> dict[str, Any]:
        """The document's fields beyond the model (`attempts`, `retry_at`, `held_from`, and
        whatever a user added), as a dict that changes the document when changed."""
        if self.__pydantic_extra__ is None:
            self.__pydantic_extra__ = {}
        return self.__pydantic_extra__

    def to_json(self) -> dict[str, Any]:
        return self.model_dump(mode="json", **self.canonical())

    def canonical(self) -> dict[str, Any]:
        """The options of pydantic's dump that give the canonical document: fields by
        their aliases, and no `answer: null` (a riddle without a typed answer has none)."""
        return _CANONICAL if self.riddle.answer is not None else _CANONICAL_NO_ANSWER


_CANONICAL: dict[str, Any] = {"by_alias": True}
_CANONICAL_NO_ANSWER: dict[str, Any] = {"by_alias": True, "exclude": {"riddle": {"answer"}}}


def riddle_json_schema() -> dict[str, Any]:
    """The JSON Schema of the canonical document, as `riddlectl schema` prints it.

    It carries every constraint the validator enforces, so that a tool validating with
    it agrees with `submit`: the id pattern (also for `parent_id` and `sub_ids`) and the
    shapes of the typed answer specs.
    """
    from riddlectl.document.answers import answer_schema

    schema = Riddle.model_json_schema(by_alias=True)
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["title"] = "riddle"
    props = schema["properties"]
    for name in ("id", "parent_id"):
        props[name]["anyOf"] = [ID_SCHEMA, {"type": "null"}]
    props["sub_ids"]["items"] = ID_SCHEMA
    answer = answer_schema()
    schema["$defs"].update(answer.pop("$defs", {}))
    spec = schema["$defs"]["RiddleSpec"]["properties"]["answer"]
    spec["anyOf"] = [answer, {"type": "null"}]
    return schema


# `(?![\s\S])` rather than `$`: validators written in Python match patterns with
# `re.search`, where `$` also matches before a final newline ("a\n" would pass).
ID_SCHEMA = {"type": "string", "pattern": f"^{ID_PATTERN}(?![\\s\\S])"}
