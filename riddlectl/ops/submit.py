"""Submitting riddles: parse, validate everything, then store all or nothing."""

from __future__ import annotations

import time
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import orjson

from riddlectl.document import codec as documents
from riddlectl.document import datafiles
from riddlectl.document.answers import FILL_KINDS
from riddlectl.document.datatypes import type_for
from riddlectl.document.ids import ID_RE, new_id
from riddlectl.document.model import DataItem, Riddle
from riddlectl.errors import InvalidDocument
from riddlectl.pipeline.jobs import Pipeline
from riddlectl.settings import Settings


@dataclass(frozen=True)
class Source:
    """Raw submission bytes and the name errors should use for them (a file, `<stdin>`)."""

    name: str
    raw: bytes


@dataclass(frozen=True)
class Overrides:
    """What `submit`'s options say of every riddle submitted, over what each document
    says; None (or False for `--no-…`): the option was not given, the document decides.
    A riddle built from `--question` is a document that says nothing else."""

    riddle_id: str | None = None
    context: str | None = None
    data: tuple[str, ...] | None = None
    answer_kind: str | None = None
    no_extract: bool = False
    no_validate: bool = False
    priority: int | None = None

    def check(self, riddles: int) -> None:
        """Refuse what cannot apply to `riddles` documents (`InvalidDocument`, exit 2)."""
        if self.riddle_id is not None:
            if riddles > 1:
                raise InvalidDocument(
                    f"names one riddle, but the input holds {riddles}", where="--id"
                )
            if not ID_RE.fullmatch(self.riddle_id):
                raise InvalidDocument(f"{self.riddle_id!r} is not a valid id", where="--id")
        kinds = (*FILL_KINDS, "noul")
        if self.answer_kind is not None and self.answer_kind not in kinds:
            raise InvalidDocument(
                f"expected one of {', '.join(kinds)}, got {self.answer_kind!r}",
                where="--answer-kind",
            )

    def apply(self, riddle: Riddle) -> None:
        """Set every field an option was given for (each data item's type is the one its
        file name's extension suggests, `datatypes.type_for`: `t.csv` is csv)."""
        if self.riddle_id is not None:
            riddle.id = self.riddle_id
        if self.context is not None:
            riddle.riddle.context = self.context
        if self.data is not None:
            riddle.data = [DataItem(type=type_for(path), file_plain=path) for path in self.data]
        if self.answer_kind == "noul":
            riddle.riddle.answer = {"type": "noul"}
        elif self.answer_kind is not None:
            riddle.riddle.answer = {"type": "fill", "kind": self.answer_kind}
        if self.no_extract:
            riddle.status.extract.required = False
        if self.no_validate:
            riddle.status.validate_.required = False
        if self.priority is not None:
            riddle.priority = self.priority


def from_question(question: str) -> tuple[str, Any]:
    """The document `submit --question …` starts from (its other options are overrides),
    and the name errors give its place."""
    return "--question", {"riddle": {"question": question}}


def parse_sources(
    sources: Iterable[Source], limit: int = documents.MAX_DOCUMENT_BYTES
) -> list[tuple[str, Any]]:
    """(where, parsed JSON) for every document in every source; JSON errors raise.

    `limit` is `max_document_bytes`: no document over it is parsed (nor a submission over
    16 times it); `prepare` holds each to the smaller limit of a new riddle."""
    parsed = []
    for source in sources:
        parsed += documents.split_submission(source.raw, source.name, limit)
    return parsed


def prepare(
    parsed: Iterable[tuple[str, Any]],
    settings: Settings,
    overrides: Overrides | None = None,
) -> list[Riddle]:
    """Validated riddles with ids and timestamps, `overrides` applied to each;
    `InvalidDocument`/`InvalidData` on the first problem, before anything is written."""
    overrides = overrides or Overrides()
    parsed = list(parsed)
    overrides.check(len(parsed))
    riddles, seen = [], set()
    checked: set[tuple[str, str]] = set()  # data files already found good, by (path, type)
    now = time.time()
    limits = settings.limits
    for where, obj in parsed:
        # A quarter of the limit, so that history, solutions and reviews fit as it moves on.
        try:
            size = len(orjson.dumps(obj))
        except TypeError:  # text from the command line (a path, a question) that is no UTF-8
            raise InvalidDocument("holds text that is no UTF-8", where=where) from None
        if size > limits.new_riddle:
            reason = limits.too_large(size, limits.new_riddle, " for a new riddle")
            raise InvalidDocument(reason, where=where)
        riddle = documents.to_riddle(obj, where)
        overrides.apply(riddle)
        if riddle.id is None:
            riddle.id = new_id()
        if riddle.id in seen:
            raise InvalidDocument(f"id {riddle.id!r} is given twice", where=where, field="id")
        seen.add(riddle.id)
        check(riddle, where, settings, checked, data_from="--data" if overrides.data else None)
        riddle.created = now
        riddles.append(riddle)
    return riddles


def check(
    riddle: Riddle,
    where: str,
    settings: Settings,
    checked: set[tuple[str, str]] | None = None,
    data_from: str | None = None,
) -> None:
    """What a parsed riddle must hold besides its shape: a question, and data files present,
    readable, inside the data directory and within the size limit (`InvalidDocument`,
    `InvalidData`). `checked`: data files already found good, by (path, type); added to.
    `data_from`: the option the data items came from, which errors then name instead of
    the document's field (`--data`)."""
    checked = set() if checked is None else checked
    if not riddle.riddle.question.strip():
        raise InvalidDocument("must not be empty", where=where, field="riddle.question")
    for index, item in enumerate(riddle.data):
        if (item.file_plain, item.type) in checked:
            continue
        datafiles.check(
            settings.data_dir,
            item.file_plain,
            item.type,
            settings.max_data_bytes,
            data_from or where,
            None if data_from else f"data[{index}].file_plain",
        )
        checked.add((item.file_plain, item.type))


def submit(pipeline: Pipeline, riddles: list[Riddle]) -> list[str]:
    """Store the riddles, each in the inbox of its first required step; all or none.

    `DuplicateId` when any id is already in the spool (nothing is stored then).
    """
    pipeline.add(riddles)
    return [riddle.id or "" for riddle in riddles]
