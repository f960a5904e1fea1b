"""Submitting riddles: parse, validate everything, then store all or nothing."""

from __future__ import annotations

import time
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import orjson

from riddlectl.document import codec as documents
from riddlectl.document import datafiles
from riddlectl.document.datatypes import type_for
from riddlectl.document.ids import new_id
from riddlectl.document.model import Riddle
from riddlectl.errors import InvalidDocument
from riddlectl.pipeline.jobs import Pipeline
from riddlectl.settings import Settings


@dataclass(frozen=True)
class Source:
    """Raw submission bytes and the name errors should use for them (a file, `<stdin>`)."""

    name: str
    raw: bytes


def from_flags(
    question: str,
    *,
    context: str = "",
    data: Iterable[str] = (),
    answer_kind: str | None = None,
    extract: bool = True,
    validate: bool = True,
    riddle_id: str | None = None,
    priority: int | None = None,
) -> dict[str, Any]:
    """The document `submit --question …` builds; each data item's type is the one its
    file name's extension suggests (`datatypes.type_for`: `t.csv` is csv, `t.txt` text)."""
    doc: dict[str, Any] = {
        "riddle": {"context": context, "question": question},
        "data": [{"type": type_for(path), "file_plain": path} for path in data],
        "status": {"extract": {"required": extract}, "validate": {"required": validate}},
    }
    if answer_kind is not None:
        doc["riddle"]["answer"] = (
            {"type": "noul"} if answer_kind == "noul" else {"type": "fill", "kind": answer_kind}
        )
    if riddle_id:
        doc["id"] = riddle_id
    if priority is not None:
        doc["priority"] = priority
    return doc


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
    parsed: Iterable[tuple[str, Any]], settings: Settings, priority: int | None = None
) -> list[Riddle]:
    """Validated riddles with ids and timestamps; `InvalidDocument`/`InvalidData` on the first
    problem, before anything is written."""
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
        if riddle.id is None:
            riddle.id = new_id()
        if riddle.id in seen:
            raise InvalidDocument(f"id {riddle.id!r} is given twice", where=where, field="id")
        seen.add(riddle.id)
        check(riddle, where, settings, checked)
        if priority is not None:
            riddle.priority = priority
        riddle.created = now
        riddles.append(riddle)
    return riddles


def check(
    riddle: Riddle, where: str, settings: Settings, checked: set[tuple[str, str]] | None = None
) -> None:
    """What a parsed riddle must hold besides its shape: a question, and data files present,
    readable, inside the data directory and within the size limit (`InvalidDocument`,
    `InvalidData`). `checked`: data files already found good, by (path, type); added to."""
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
            where,
            f"data[{index}].file_plain",
        )
        checked.add((item.file_plain, item.type))


def submit(pipeline: Pipeline, riddles: list[Riddle]) -> list[str]:
    """Store the riddles, each in the inbox of its first required step; all or none.

    `DuplicateId` when any id is already in the spool (nothing is stored then).
    """
    pipeline.add(riddles)
    return [riddle.id or "" for riddle in riddles]
