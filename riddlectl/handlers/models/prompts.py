"""The prompts of `openai:` handlers: `string.Template` texts filled from the riddle.

Ours are below; the setting `openai_prompts` names a TOML file whose keys replace them
(`solve`, `validate`: the user message; `solve_system`, `validate_system`: a system
message, none by default since some chat formats have no system role). A template may
use these placeholders (`$name` or `${name}`; `$$` is a dollar sign):

- `$context`, `$question`: the riddle's;
- `$data`: one line per data item: its file, type and extraction (as JSON);
- `$answer_form`: what the answer must be, from the riddle's answer type;
- `$rejected`: every solution rejected before, with its review (empty when none);
- `$sub_results`: the answers of the sub-questions asked before (empty when none);
- `$split`: how to ask sub-questions instead, when allowed (empty when not);
- `$solution`, `$explanation`: the solution to check (validate only).
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from string import Template
from typing import Any

import orjson

from riddlectl.document.answers import (
    FILL_KINDS,
    ChoiceSpec,
    ExtractSpec,
    FillSpec,
    NoulSpec,
    ScoreSpec,
)
from riddlectl.document.model import Riddle
from riddlectl.errors import ConfigError
from riddlectl.handlers.models.schema import Spec

SOLVE = """\
You solve riddles from their data. Reply with JSON only.

Context: $context
Question: $question

Data:
$data
$sub_results$rejected
The answer must be $answer_form.
$split
Reply with "explanation" (one short sentence: how you got the answer) and "answer".
"""

VALIDATE = """\
You check a proposed solution to a riddle. Reply with JSON only.

Context: $context
Question: $question

Data:
$data
$rejected
The answer must be $answer_form.
Proposed solution: $solution
Its explanation: $explanation

Reply with "review" (one short sentence: what is right or wrong) and "accept" (true or false).
"""

KEYS = ("solve", "validate", "solve_system", "validate_system")
PLACEHOLDERS = frozenset(
    {
        "context",
        "question",
        "data",
        "answer_form",
        "rejected",
        "sub_results",
        "split",
        "solution",
        "explanation",
    }
)
MAX_EXTRACTION_CHARS = 1000  # of one item's extraction in a prompt
_ENVELOPE = ("schema", "source", "sha256", "extractor", "version")


@dataclass(frozen=True)
class Prompts:
    solve: Template = field(default_factory=lambda: Template(SOLVE))
    validate: Template = field(default_factory=lambda: Template(VALIDATE))
    solve_system: Template | None = None
    validate_system: Template | None = None


def load(path: Path | None) -> Prompts:
    """Our prompts, with those of the TOML file at `path` in their place."""
    if path is None:
        return Prompts()
    try:
        raw = tomllib.loads(path.read_text("utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError(f"cannot read the prompts: {exc}", where=str(path)) from None
    chosen: dict[str, Template] = {}
    for key, text in raw.items():
        if key not in KEYS:
            known = ", ".join(KEYS)
            raise ConfigError(f"unknown prompt (one of {known})", where=str(path), field=key)
        if not isinstance(text, str):
            raise ConfigError("must be a string", where=str(path), field=key)
        template = Template(text)
        unknown = set(template.get_identifiers()) - PLACEHOLDERS
        if unknown or not template.is_valid():
            what = f"unknown placeholder ${sorted(unknown)[0]}" if unknown else "a stray $"
            raise ConfigError(f"{what} (write $$ for a dollar sign)", where=str(path), field=key)
        chosen[key] = template
    return Prompts(**chosen)


def fill(template: Template, riddle: Riddle, values: dict[str, str]) -> str:
    return template.safe_substitute(
        context=riddle.riddle.context, question=riddle.riddle.question, **values
    )


def data_lines(riddle: Riddle, extractions: list[dict[str, Any] | None]) -> str:
    lines = []
    for index, item in enumerate(riddle.data):
        found = extractions[index] if index < len(extractions) else None
        shown = "(not extracted)"
        if isinstance(found, dict):
            kept = {k: v for k, v in found.items() if k not in _ENVELOPE and v not in ({}, [])}
            shown = orjson.dumps(kept).decode()[:MAX_EXTRACTION_CHARS]
        lines.append(f"- {item.file_plain} ({item.type}): {shown}")
    return "\n".join(lines) or "(none)"


def rejected_lines(riddle: Riddle) -> str:
    """Every earlier solution that was rejected, and why (the model must not repeat it)."""
    before = riddle.riddle.solutions_before
    if not before:
        return ""
    lines = ["Solutions rejected before (do not give them again):"]
    for earlier in before:
        lines.append(f"- {earlier.solution!r}: {earlier.review or 'rejected, no review'}")
    return "\n".join(lines) + "\n"


def sub_result_lines(riddle: Riddle) -> str:
    results = riddle.sub_results or []
    if not results:
        return ""
    lines = ["Answers to the sub-questions asked before:"]
    for result in results:
        answer = result.get("solution") if result.get("solved") else "(not solved)"
        lines.append(f"- {result.get('question')} {answer}")
    return "\n".join(lines) + "\n"


def split_line(may_split: int) -> str:
    if may_split <= 0:
        return ""
    return (
        f'If the question is too big to answer at once, reply instead with "sub_questions": '
        f"a list of at most {may_split} smaller questions; their answers come back to you.\n"
    )


def answer_form(spec: Spec | None) -> str:
    """What the answer must be, in words."""
    if spec is None:
        return "a number"
    if isinstance(spec, FillSpec):
        return FILL_KINDS[spec.kind]
    if isinstance(spec, NoulSpec):
        meaning = ""
        if spec.criteria:
            meaning = f" (true: {spec.criteria['true']}; false: {spec.criteria['false']})"
        return f"the probability, from 0 to 1, that the statement is true{meaning}"
    if isinstance(spec, ChoiceSpec):
        options = "; ".join(f"{key}: {text}" for key, text in spec.criteria.items())
        return f"the key of one option ({options})"
    if isinstance(spec, ScoreSpec):
        return f"one of the levels {[str(c) for c in spec.criteria]} (lowest first)"
    return _extract_form(spec)


def _extract_form(spec: ExtractSpec) -> str:
    if spec.kind == "coordinates":
        one = f"an [x, y] pixel position in data item {spec.image}"
        return f"a list of {one}s" if spec.many else one
    one = "text copied exactly from the data"
    return f"a list of pieces of {one}" if spec.many else one
