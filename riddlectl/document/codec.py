"""Reading and writing riddle documents: bytes ⇄ validated `Riddle`.

All parsing goes through orjson (which refuses nesting deeper than 1024 levels) after a
size check, so a hostile document costs bounded time and memory. The first request
format (docs/reference.md#the-first-request-format) is converted to the canonical one
before validation.
"""

from __future__ import annotations

import functools
import os
from dataclasses import dataclass
from stat import S_ISREG
from typing import TYPE_CHECKING, Any

import orjson

from riddlectl.errors import InvalidDocument, field_path, problem, problems_line

if TYPE_CHECKING:
    from pydantic import ValidationError

    from riddlectl.document.model import Riddle

MAX_DOCUMENT_BYTES = 4 * 1024 * 1024  # the default of the setting `max_document_bytes`
MIN_DOCUMENT_BYTES = 64 * 1024  # below this, a riddle's own history would crowd it out
FAILURE_ROOM = 16 * 1024  # kept free below the limit, so that a failure can always be stored
STAMP_ROOM = 64  # bytes a commit's stamp (rev, updated, created) may add to a document


@dataclass(frozen=True)
class Limits:
    """Every document size limit, derived from the one setting `max_document_bytes`.

    No document is stored over `document`. A new riddle (submitted, dropped in, or asked
    as a sub-riddle) may take a quarter of it, so that it has room to grow as it moves
    on. A riddle going on through the pipeline must leave `FAILURE_ROOM` free: room for
    the record of its failure, should its next step fail, whatever that step produced.
    Reading allows four times the limit, so that a limit lowered after documents were
    stored does not hide them. A submission of many documents (an array, JSON Lines) may
    take sixteen times it.
    """

    document: int = MAX_DOCUMENT_BYTES

    @property
    def new_riddle(self) -> int:
        return self.document // 4

    @property
    def on_its_way(self) -> int:
        return self.document - FAILURE_ROOM

    @property
    def readable(self) -> int:
        return self.document * 4

    @property
    def submission(self) -> int:
        return self.document * 16

    def too_large(self, size: int, limit: int, what: str = "") -> str:
        """The one-line reason a document of `size` bytes is refused."""
        return (
            f"document is {size} bytes, over the {limit}-byte limit{what} "
            f"(max_document_bytes is {self.document})"
        )

    def grown(self, size: int, limit: int) -> str:
        """The one-line reason a change that would make a document `size` bytes, over
        `limit`, was not stored."""
        kept = (
            ""
            if limit == self.document
            else f", less {FAILURE_ROOM} bytes kept to record a failure"
        )
        return (
            f"the document would grow to {size} bytes, over its limit of {limit} bytes "
            f"(max_document_bytes{kept})"
        )


def read_at_most(fd: int, limit: int, size: int) -> bytes:
    """Up to `limit` bytes of a regular file of about `size` bytes, read in pieces sized by
    `size`: os.read(fd, n) reserves n bytes first, and reserving the 4 MiB limit for a
    1 KiB document cost an mmap, an mremap and a munmap per read."""
    chunks, total = [], 0
    while total < limit:
        want = min(limit - total, max(size + 1 - total, 4096))
        chunk = os.read(fd, want)
        chunks.append(chunk)
        total += len(chunk)
        if len(chunk) < want:  # a regular file reads short only at its end
            break
    return b"".join(chunks)


def read_raw(path: str, limit: int = MAX_DOCUMENT_BYTES + 1) -> tuple[bytes | None, os.stat_result]:
    """At most `limit` bytes of the file at `path`, and its `fstat`; no bytes (None) when
    it is not a regular file. O_NONBLOCK: a FIFO put in the file's place is not waited on;
    O_NOFOLLOW: a symbolic link is refused (OSError), not read through."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | os.O_NOFOLLOW)
    try:
        info = os.fstat(fd)
        if not S_ISREG(info.st_mode):
            return None, info
        return read_at_most(fd, limit, info.st_size), info
    finally:
        os.close(fd)


BOM = b"\xef\xbb\xbf"  # editors on some systems start UTF-8 files with it; JSON has no use for it


def loads(
    raw: bytes,
    where: str,
    limit: int = MAX_DOCUMENT_BYTES,
    size: int | None = None,
    *,
    one_line: bool = False,
) -> Any:
    """Parse JSON bytes, refusing documents over `limit` bytes. `size` is the size of the
    whole file when `raw` was read only up to the limit, so the reason tells the truth.

    A syntax error names its place as `where:LINE:COLUMN`, both counted from 1, or as
    `where:COLUMN` for `one_line` (a line of JSON Lines, whose `where` names the line).
    """
    if len(raw) > limit:
        raise InvalidDocument(
            f"document is {max(len(raw), size or 0)} bytes, over the {limit}-byte limit",
            where=where,
        )
    try:
        return orjson.loads(raw.removeprefix(BOM))
    except orjson.JSONDecodeError as exc:
        place = f"{where}:{exc.colno}" if one_line else f"{where}:{exc.lineno}:{exc.colno}"
        raise InvalidDocument(f"not valid JSON: {exc.msg}", where=place) from exc


def dumps(riddle: Riddle) -> bytes:
    """The stored form of `riddle`: `Riddle.to_json` as JSON, written by pydantic's own
    serializer (a third faster than building the dict for orjson)."""
    return riddle.model_dump_json(**riddle.canonical()).encode()


def exact(data: bytes) -> bytes:
    """`data` in a bytes object of its own length, for output of orjson kept by the
    thousand: orjson hands back the buffer it wrote into, at least 8 KiB whatever the
    text's length (orjson 3.13), so that 100,000 documents of 700 bytes held for one bulk
    insert took 800 MB, and their page faults a quarter of the submit's CPU."""
    return bytes(memoryview(data))


def split_submission(
    raw: bytes, where: str, limit: int = MAX_DOCUMENT_BYTES
) -> list[tuple[str, Any]]:
    """The documents in a submission, each with the place that names it: one object
    (`where`), an array of them (`where[N]`), or JSON Lines (`where:LINE`); N and LINE
    count from 1. `InvalidDocument` when there is nothing to submit.
    """
    text = raw.removeprefix(BOM)
    if not text.strip():
        raise InvalidDocument("nothing to submit (no document given)", where=where)
    try:
        value = loads(text, where, Limits(limit).submission)
    except InvalidDocument:
        if not _looks_like_json_lines(text):
            raise
        return _json_lines(text, where, limit)
    if not isinstance(value, list):
        return [(where, value)]
    if not value:
        raise InvalidDocument("nothing to submit (an empty array)", where=where)
    return [(f"{where}[{number}]", doc) for number, doc in enumerate(value, start=1)]


def numbered_lines(text: bytes) -> list[tuple[int, bytes]]:
    """The non-blank lines of `text`, each with its number (from 1): JSON Lines' records."""
    return [
        (number, line) for number, line in enumerate(text.split(b"\n"), start=1) if line.strip()
    ]


def _looks_like_json_lines(text: bytes) -> bool:
    """True when the first non-blank line is a JSON value of its own and more follow: a
    pretty-printed document that does not parse is then reported as one, at its place."""
    lines = numbered_lines(text)
    if len(lines) < 2:
        return False
    try:
        orjson.loads(lines[0][1])
    except orjson.JSONDecodeError:
        return False
    return True


def _json_lines(text: bytes, where: str, limit: int) -> list[tuple[str, Any]]:
    places = [(f"{where}:{number}", line) for number, line in numbered_lines(text)]
    return [(place, loads(line, place, limit, one_line=True)) for place, line in places]


# The keys that tell the first design's request shape, where they stand in it: the
# document's, its `riddle`'s, and a data item's. Read by `is_legacy` from a dict and by
# `_legacy_fields` from a document the models read (where they are unknown fields).
LEGACY_TOP = frozenset({"steps", "trial"})
LEGACY_SPEC = frozenset({"solution_before", "review_before"})
LEGACY_ITEM = "file"


def is_legacy(obj: dict[str, Any]) -> bool:
    """True for the first design's request shape (docs/reference.md#the-first-request-format)."""
    spec = obj.get("riddle")
    legacy_spec = isinstance(spec, dict) and not LEGACY_SPEC.isdisjoint(spec)
    data = obj.get("data")
    legacy_data = isinstance(data, list) and any(
        isinstance(d, dict) and LEGACY_ITEM in d for d in data
    )
    return not LEGACY_TOP.isdisjoint(obj) or legacy_spec or legacy_data


def from_legacy(obj: dict[str, Any], where: str = "document") -> dict[str, Any]:
    """Convert the first request format to the canonical form; empty strings mean absent.

    Fields of the wrong type are left for validation to report, naming the field; only
    `steps`, which has no canonical counterpart to report on, is refused here.
    """
    doc = {k: v for k, v in obj.items() if k not in LEGACY_TOP}
    steps = obj.get("steps") or {}
    if not isinstance(steps, dict):
        raise InvalidDocument("must be an object of step: true/false", where=where, field="steps")
    status = doc.get("status") or {}
    if isinstance(status, dict):
        status = dict(status)
        for step, required in steps.items():
            found = status.get(step)
            current: dict[str, Any] = found if isinstance(found, dict) else {}
            status[step] = {**current, "required": required}
        if obj.get("trial") not in (None, ""):
            status["trial"] = obj["trial"]
    doc["status"] = status
    if isinstance(obj.get("riddle"), dict):
        doc["riddle"] = _legacy_spec(obj["riddle"])
    if isinstance(obj.get("data"), list):
        doc["data"] = [_legacy_item(d) if isinstance(d, dict) else d for d in obj["data"]]
    return doc


def _legacy_spec(spec: dict[str, Any]) -> dict[str, Any]:
    out = {k: v for k, v in spec.items() if k not in ("solution_before", "review_before")}
    before = spec.get("solution_before")
    earlier_ones = spec.get("solutions_before") or []
    if before not in (None, "") and isinstance(earlier_ones, list):
        review = spec.get("review_before") or None
        earlier = {"solution": before, "accepted": False, "review": review}
        out["solutions_before"] = [*earlier_ones, earlier]
    return out


def _legacy_item(item: dict[str, Any]) -> dict[str, Any]:
    out = {k: v for k, v in item.items() if k not in ("file", "extraction")}
    if item.get("file") not in (None, ""):
        out.setdefault("file_plain", item["file"])
    if item.get("extraction") not in (None, ""):
        out.setdefault("file_extracted", item["extraction"])
    return out


@functools.cache
def _models() -> tuple[type[Riddle], type[ValidationError]]:
    """The document model and its error, imported on first use: building the pydantic
    models is most of a short command's start, and a command that reads no document
    (`status` on an empty spool) never needs them. Cached: `from pydantic import …` goes
    through pydantic's lazy `__getattr__` every time."""
    from pydantic import ValidationError

    from riddlectl.document.model import Riddle

    return Riddle, ValidationError


def to_riddle(obj: Any, where: str, default_id: str | None = None) -> Riddle:
    """Validate one parsed document; the first problem is reported with its field path."""
    Riddle, ValidationError = _models()
    if not isinstance(obj, dict):
        raise InvalidDocument(f"expected a JSON object, got {type(obj).__name__}", where=where)
    if is_legacy(obj):
        obj = from_legacy(obj, where)
    if obj.get("id") in (None, "") and default_id is not None:
        obj = {**obj, "id": default_id}
    try:
        return Riddle.model_validate(obj)
    except ValidationError as exc:
        # The first field is the error's own (a form puts the message beside it); the
        # others follow in the same line, each naming its field.
        first, *others = exc.errors()
        field, head = field_path(first["loc"]), problem(first)
        if field and field.endswith("answer") and head.startswith("answer."):
            # The answer spec's checks name their own field: one path, not two halves
            # (`riddle.answer.criteria: …`, not `riddle.answer: answer.criteria: …`).
            sub, _, head = head.partition(": ")
            field += sub.removeprefix("answer")
        message = "; ".join([head, *([problems_line(others)] if others else [])])
        raise InvalidDocument(message, where=where, field=field) from None


def parse(
    raw: bytes,
    where: str,
    default_id: str | None = None,
    limit: int = MAX_DOCUMENT_BYTES,
    size: int | None = None,
) -> Riddle:
    """Bytes of one document → `Riddle`, or `InvalidDocument` naming `where` and the field."""
    if len(raw) <= limit and not raw.startswith(BOM):
        # Most documents are stored ones, read at every stage: pydantic's own JSON reader
        # validates them in three quarters of the time of orjson's dict and
        # `model_validate`. What does not pass, or is in the first format, is read again
        # the long way, whose errors name line, column and field.
        Riddle, ValidationError = _models()
        try:
            riddle = Riddle.model_validate_json(raw)
        except ValidationError:
            pass
        else:
            if riddle.id not in (None, "") and not _legacy_fields(riddle):
                return riddle
    return to_riddle(loads(raw, where, limit, size), where, default_id)


def _legacy_fields(riddle: Riddle) -> bool:
    """`is_legacy` of a document read as it is: its first-format keys are the models'
    unknown fields."""
    return (
        not LEGACY_TOP.isdisjoint(riddle.__pydantic_extra__ or ())
        or not LEGACY_SPEC.isdisjoint(riddle.riddle.__pydantic_extra__ or ())
        or any(LEGACY_ITEM in (item.__pydantic_extra__ or ()) for item in riddle.data)
    )


def size_of(riddle: Riddle) -> int:
    """How many bytes `riddle` takes stored, and what a commit's stamp may add."""
    return len(dumps(riddle)) + STAMP_ROOM


def make_room(riddle: Riddle, limit: int, keep: int = 0) -> int:
    """Drop the oldest history entries of `riddle`, never its newest `keep`, until it fits
    in `limit` bytes or nothing is left to drop (the event log keeps them all); its size
    after, as `size_of` gives it."""
    size = size_of(riddle)
    while size > limit and len(riddle.history) > keep:
        freed, dropped = 0, 0
        while freed < size - limit and dropped < len(riddle.history) - keep:
            freed += len(orjson.dumps(riddle.history[dropped])) + 1
            dropped += 1
        riddle.history = riddle.history[dropped:]
        size = size_of(riddle)
    return size
