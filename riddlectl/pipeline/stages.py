"""What each stage does to one riddle: a function from a document to an `Outcome`.

No claims, locks or retries here (that is `attempts`); a stage raises `HandlerRefused` or
`InvalidData` when the riddle must fail now, and any other exception for an error worth
trying again.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from riddlectl import inflight
from riddlectl.document import datafiles
from riddlectl.document.ids import sub_id
from riddlectl.document.model import DataItem, Riddle, Solution
from riddlectl.errors import (
    HandlerFailed,
    HandlerRefused,
    HandlerTimeout,
    InvalidData,
    problems_line,
)
from riddlectl.handlers.base import Job, NamedHandler
from riddlectl.spool.contract import DataPlace
from riddlectl.spool.extractions import ExtractionCache, envelope, seen_by
from riddlectl.spool.states import INBOX, Queue, route


@dataclass
class Outcome:
    riddle: Riddle
    to: Queue
    outcome: str = "ok"
    error: str | None = None
    children: list[Riddle] = field(default_factory=list)
    # Solve handlers that declined first, each with how long it took to decline (s).
    declined: list[tuple[str, float]] = field(default_factory=list)
    usage: dict[str, Any] = field(default_factory=dict)  # what each handler said it cost


class NobodyAnswered(HandlerRefused):
    """Every solve handler declined."""

    def __init__(self, declined: list[tuple[str, float]]) -> None:
        super().__init__("no solve handler answered")
        self.declined = declined


@dataclass
class StageContext:
    data_dir: Path
    spool_root: Path | None  # the spool's directory, None for one that is no directory
    store: ExtractionCache
    handlers: list[NamedHandler]
    timeout: float = 60.0
    max_trials: int = 3
    max_data_bytes: int = 10 * 1024 * 1024
    place: DataPlace | None = None  # the riddle's data files, while one is handled
    spool_name: str = ""

    def job(self, riddle: Riddle, stage: str, **extra: Any) -> Job:
        where = self.data_dir if self.place is None else self.place.path
        return Job(
            riddle, stage, where, self.spool_root, self.timeout, spool_name=self.spool_name, **extra
        )

    def data_path(self) -> Path:
        """The directory the riddle's data files are read from (made now, if need be)."""
        return self.data_dir if self.place is None else self.place.path()

    def digest(self, file_plain: str) -> str | None:
        """The SHA-256 of a data file's content, when the spool keeps it."""
        return None if self.place is None else self.place.digest(file_plain)


def call(handler: NamedHandler, job: Job) -> dict[str, Any] | None:
    """Run a handler; what a failed attempt cost (`usage`) is named after the handler."""
    try:
        return _call(handler, job)
    except (HandlerFailed, HandlerRefused) as exc:
        if exc.usage is not None:
            exc.usage = {handler.name: bounded_usage(exc.usage)}
        raise


def _call(handler: NamedHandler, job: Job) -> dict[str, Any] | None:
    """Run a handler; Python callables from outside run in a thread bounded by the timeout.

    Built-ins bound their own work and commands enforce their own timeout; a foreign
    callable that hangs is abandoned in its daemon thread so the agent can go on (and
    when the agent stops: see `inflight`). Handlers that wait on the network
    (`threaded`) run in a thread too, so that a slow endpoint lets the rest move on.
    """
    direct = handler.fn.__module__.startswith("riddlectl.") and not getattr(
        handler.fn, "threaded", False
    )
    if handler.name.startswith("cmd:") or direct:
        return handler(job)
    box: dict[str, Any] = {}
    with inflight.tracked(handler.name) as running:

        def target() -> None:
            try:
                box["result"] = handler(job)
            except BaseException as exc:  # handed over to the agent's thread
                box["error"] = exc
            finally:
                running.woken.set()

        thread = threading.Thread(target=target, name=f"handler-{handler.name}", daemon=True)
        thread.start()
        if not inflight.wait(running, running.woken.wait, job.timeout):
            raise HandlerTimeout(f"{handler.name} timed out after {job.timeout:g} s")
        if not box:  # woken by the agent stopping, not by the handler
            raise inflight.HandlerStopped(f"{handler.name} was abandoned: the agent is stopping")
    if "error" in box:
        raise box["error"]
    return box.get("result")


def _answer(result: Any, handler: NamedHandler) -> dict[str, Any]:
    if result is None:
        return {}
    if not isinstance(result, dict):
        raise HandlerFailed(f"{handler.name} returned {type(result).__name__}, not a dict")
    return result


MAX_USAGE_FIELDS = 16


def bounded_usage(usage: Any) -> dict[str, Any]:
    """A handler's `usage` (tokens, calls, model…) as kept in the history: scalar fields
    only, a few of them, short strings, so that no handler can grow a document with it."""
    if not isinstance(usage, dict):
        return {}
    kept: dict[str, Any] = {}
    for key, value in list(usage.items())[:MAX_USAGE_FIELDS]:
        if isinstance(value, str):
            kept[str(key)[:40]] = value[:200]
        elif value is None or isinstance(value, bool | int | float):
            kept[str(key)[:40]] = value
    return kept


def _take_usage(answer: dict[str, Any], handler: NamedHandler, into: dict[str, Any]) -> None:
    """Move a solve or validate answer's `usage` to the outcome's, by handler."""
    if "usage" in answer:
        into[handler.name] = bounded_usage(answer.pop("usage"))


# -- extract --------------------------------------------------------------------------------


def extract(riddle: Riddle, ctx: StageContext) -> Outcome:
    if riddle.status.extract.required:
        wanted = (
            _extraction_of(riddle, index, item, ctx) for index, item in enumerate(riddle.data)
        )
        references = ctx.store.get_or_make_many(wanted)
        for item, reference in zip(riddle.data, references, strict=True):
            item.file_extracted = reference
        riddle.status.extract.finished = True
    return Outcome(riddle, route(riddle, EXTRACT.name))


def _extraction_of(
    riddle: Riddle, index: int, item: DataItem, ctx: StageContext
) -> tuple[str, Callable[[], dict[str, Any]]]:
    """The cache key of one item's extraction, and how to make it when the cache lacks it."""
    where, field_name = riddle.id or "riddle", f"data[{index}].file_plain"
    # A file whose content the spool keeps was read by these same rules at submit: its
    # digest names the extraction, and the file is looked at only to make it.
    digest = ctx.digest(item.file_plain)
    at: tuple[str, os.stat_result] | None = None

    def located() -> tuple[str, os.stat_result]:
        nonlocal at
        if at is None:
            at = datafiles.resolve_stat(ctx.data_path(), item.file_plain, where, field_name)
        return at

    if digest is None:
        located()
    handler = next((h for h in ctx.handlers if h.supports(item.type)), None)
    if handler is None:
        raise InvalidData(
            f"no extractor for type {item.type!r}", where=where, field=f"data[{index}].type"
        )
    content: bytes | None = None

    def read() -> bytes:
        nonlocal content
        if content is None:
            path = located()[0]
            content = datafiles.read(path, item.type, ctx.max_data_bytes, where, field_name)
        return content

    version = handler.identity(riddle)  # a changed extractor extracts again
    if digest is not None:
        key = ctx.store.key_of_digest(digest, handler.name, version)
    else:
        info = located()[1]
        noted = ctx.store.file_key(info, handler.name, version)
        key = noted or ctx.store.key(read(), handler.name, version)
        if noted is None:
            ctx.store.note_file_key(info, handler.name, version, key)

    def make() -> dict[str, Any]:
        path = located()[0]
        job = ctx.job(riddle, EXTRACT.name, item_index=index, item_path=Path(path))
        found = _answer(call(handler, job), handler)
        return envelope(read(), handler.name, version, found)

    return key, make


def load_extractions(riddle: Riddle, ctx: StageContext) -> list[dict[str, Any] | None]:
    return [seen_by(ctx.store.load(item.file_extracted), item.file_plain) for item in riddle.data]


def extract_again(riddle: Riddle, ctx: StageContext) -> Outcome | None:
    """Send a riddle back to extract when extractions it names were dropped from the cache
    (`riddlectl cache clear` while it was on its way); None when nothing is missing.

    Not an error and no attempt is charged: the files are extracted again, and the riddle
    is solved again from them.
    """
    if not riddle.status.extract.required:
        return None  # nothing would make them again: handlers get None, as for any gap
    dropped = ctx.store.dropped_of([item.file_extracted for item in riddle.data])
    gone = [item for item, lost in zip(riddle.data, dropped, strict=True) if lost]
    if not gone:
        return None
    for item in gone:
        item.file_extracted = None
    riddle.status.extract.finished = False
    note = f"{len(gone)} extraction(s) dropped from the cache; extracting again"
    return Outcome(riddle, route(riddle), "ok", error=note)


# -- solve ----------------------------------------------------------------------------------


def solve(riddle: Riddle, ctx: StageContext) -> Outcome:
    if not riddle.status.solve.required:
        return Outcome(riddle, route(riddle, SOLVE.name))
    again = extract_again(riddle, ctx)
    if again is not None:
        return again
    job = ctx.job(riddle, SOLVE.name, extractions=load_extractions(riddle, ctx))
    declined: list[tuple[str, float]] = []
    usage: dict[str, Any] = {}
    for handler in ctx.handlers:
        started = time.monotonic()
        answer = _answer(call(handler, job), handler)
        _take_usage(answer, handler, usage)
        if answer.get("sub_riddles"):
            outcome = _spawn(riddle, answer["sub_riddles"], handler)
            outcome.declined, outcome.usage = declined, usage
            return outcome
        if answer.get("solution") is not None:
            riddle.solution = _solution(answer, handler)
            riddle.status.solve.finished = True
            return Outcome(riddle, route(riddle, SOLVE.name), declined=declined, usage=usage)
        declined.append((handler.name, time.monotonic() - started))
    raise NobodyAnswered(declined)


def _solution(answer: dict[str, Any], handler: NamedHandler) -> Solution:
    fields = {k: v for k, v in answer.items() if k not in ("accepted", "review")}
    try:
        return Solution.model_validate(fields)
    except ValidationError as exc:
        raise HandlerFailed(f"{handler.name}: reply: {problems_line(exc.errors())}") from None


def _spawn(parent: Riddle, specs: Any, handler: NamedHandler) -> Outcome:
    if not isinstance(specs, list):
        raise HandlerFailed(f"{handler.name}: sub_riddles must be a list")
    children = []
    # Ids go on from those of earlier attempts (see `retired_sub_ids`): an id once used
    # stays taken by the riddle that had it.
    first = len(parent.extensions().get("retired_sub_ids") or []) + len(parent.sub_ids) + 1
    for offset, spec in enumerate(specs):
        if not isinstance(spec, dict):
            raise HandlerFailed(f"{handler.name}: each sub-riddle must be an object")
        child_id = sub_id(parent.id or "", first + offset)
        body = {"status": {"validate": {"required": False}}, "priority": parent.priority, **spec}
        try:
            child = Riddle.model_validate({**body, "id": child_id, "parent_id": parent.id})
        except ValidationError as exc:
            raise HandlerFailed(
                f"{handler.name}: invalid sub-riddle: {problems_line(exc.errors())}"
            ) from None
        children.append(child)
    parent.sub_ids = [*parent.sub_ids, *(c.id or "" for c in children)]
    parent.sub_results = None
    return Outcome(parent, Queue.WAITING, "ok", children=children)


# -- validate -------------------------------------------------------------------------------


def validate(riddle: Riddle, ctx: StageContext) -> Outcome:
    if not riddle.status.validate_.required:
        return Outcome(riddle, route(riddle, VALIDATE.name))
    if riddle.solution is None:
        raise HandlerRefused("there is no solution to validate")
    again = extract_again(riddle, ctx)
    if again is not None:
        return again
    job = ctx.job(riddle, VALIDATE.name, extractions=load_extractions(riddle, ctx))
    reviews = []
    accepted = True
    usage: dict[str, Any] = {}
    for handler in ctx.handlers:
        verdict = _answer(call(handler, job), handler)
        _take_usage(verdict, handler, usage)
        if "accept" not in verdict:
            raise HandlerFailed(f"{handler.name} gave no verdict (expected {{'accept', 'review'}})")
        if verdict.get("review"):
            reviews.append(str(verdict["review"]))
        if not verdict["accept"]:
            accepted = False
            reviews = [str(verdict.get("review") or f"rejected by {handler.name}")]
            break
    riddle.solution.accepted = accepted
    riddle.solution.review = "; ".join(reviews) or None
    riddle.status.validate_.finished = True
    outcome = "accepted" if accepted else "rejected"
    return Outcome(riddle, Queue.VALIDATED, outcome, usage=usage)


# -- manage ---------------------------------------------------------------------------------


def manage(riddle: Riddle, ctx: StageContext) -> Outcome:
    solution = riddle.solution
    if solution is not None and (solution.accepted or not riddle.status.validate_.required):
        return Outcome(riddle, Queue.DONE, "accepted")
    if solution is None:
        raise HandlerRefused("there is no solution to manage")
    return repose(riddle, solution, ctx.max_trials)


def repose(riddle: Riddle, rejected: Solution, max_trials: int) -> Outcome:
    """Pose a rejected riddle again (trial + 1), or fail it when its trials are used up."""
    riddle.riddle.solutions_before = [*riddle.riddle.solutions_before, rejected]
    riddle.solution = None
    riddle.status.trial += 1
    riddle.status.solve.finished = False
    riddle.status.validate_.finished = False
    if riddle.status.trial >= max_trials:
        review = rejected.review or "no review"
        error = (
            f"rejected {riddle.status.trial} times (max_trials {max_trials}); last review: {review}"
        )
        return Outcome(riddle, Queue.FAILED, "failed", error)
    return Outcome(riddle, route(riddle, EXTRACT.name), "rejected")


# -- the stages -----------------------------------------------------------------------------


@dataclass(frozen=True)
class Stage:
    """A stage of the pipeline: its name, what it does to one riddle, and whether it runs
    handlers (manage decides alone); it takes its riddles from its `inbox`."""

    name: str
    run: Callable[[Riddle, StageContext], Outcome]
    takes_handlers: bool = True

    @property
    def inbox(self) -> Queue:
        return INBOX[self.name]


EXTRACT = Stage("extract", extract)
SOLVE = Stage("solve", solve)
VALIDATE = Stage("validate", validate)
MANAGE = Stage("manage", manage, takes_handlers=False)
_BY_NAME = {stage.name: stage for stage in (EXTRACT, SOLVE, VALIDATE, MANAGE)}


def stage_named(name: str) -> Stage:
    """The stage called `name` (one of `states.STAGES`); `KeyError` for any other."""
    return _BY_NAME[name]
