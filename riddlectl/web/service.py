"""What the pages and the API do, in one place: the same library calls as the command
line (`ops.submit`, `ops.admin`, `ops.report`), acting as the agent `web`.
"""

from __future__ import annotations

import hashlib
import os
import sqlite3
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from riddlectl import runtime
from riddlectl.errors import ExitCode, InvalidDocument, RiddleError
from riddlectl.identity import Actor, scratch_dir
from riddlectl.ops import admin, corrupt, report
from riddlectl.ops import agents as roster
from riddlectl.ops import submit as submitting
from riddlectl.pipeline.jobs import Pipeline
from riddlectl.settings import Settings
from riddlectl.spool.contract import Spool
from riddlectl.spool.states import Queue
from riddlectl.web import index as indexing
from riddlectl.web.index import Index
from riddlectl.web.keeper import Keeper

AGENT = "web"  # who the event log says acted, for every action taken here
ACTIONS = ("retry", "hold", "release", "cancel")
INDEX_NAME = "web-index.sqlite"
COUNTS_TTL = 1.0  # seconds a count of the queues is shown again without a change


@dataclass(frozen=True)
class Done:
    """One riddle acted on: the queue it is in now, and what the command of the action
    prints for it (`hold`: where it was; `cancel`: the ids cancelled; else its queue)."""

    id: str
    queue: str
    detail: str


@dataclass
class Outcome:
    """What an action did to each riddle acted on, and why each other was left as it
    was."""

    done: list[Done] = field(default_factory=list)
    refused: list[RiddleError] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {
            "done": [{"id": d.id, "queue": d.queue, "detail": d.detail} for d in self.done],
            "refused": [error_body(e) for e in self.refused],
        }


@dataclass
class Service:
    settings: Settings
    spool: Spool
    index: Index
    keeper: Keeper
    read_only: bool = False
    _counts: tuple[int, float, dict[str, int]] | None = field(default=None, repr=False)

    @classmethod
    def open(cls, settings: Settings, read_only: bool = False) -> Service:
        """The spool of `settings` (which must exist) with its index beside it."""
        spool = runtime.open_spool(settings, Actor(AGENT), create=False, writable=not read_only)
        try:
            index = Index(index_path(spool))
        except (sqlite3.Error, OSError):
            # A spool this server may not write to (read-only, say): the index is
            # disposable, so it is kept for this run in a temporary directory instead.
            index = Index(Path(scratch_dir("web")) / INDEX_NAME)
        return cls(settings, spool, index, Keeper(spool, index), read_only)

    def pipeline(self) -> Pipeline:
        return runtime.pipeline(self.settings, self.spool, Actor(AGENT))

    # -- submitting ---------------------------------------------------------------------

    def check(self, doc: Any, where: str = "form") -> list[Any]:
        """The riddles `doc` (one document or a list) would become, validated by the same
        code as `submit`; `RiddleError` for the first problem. Nothing is stored."""
        docs = doc if isinstance(doc, list) else [doc]
        if not docs:
            raise InvalidDocument("nothing to submit", where=where)
        try:  # what came as JSON from a client may hold what a document cannot keep
            orjson.dumps(docs)
        except orjson.JSONEncodeError as exc:
            raise InvalidDocument(f"cannot be stored: {exc}", where=where) from None
        parsed = [(where if len(docs) == 1 else f"{where}[{i}]", d) for i, d in enumerate(docs)]
        riddles = submitting.prepare(parsed, self.settings)
        self.spool.refuse_duplicates(riddles)
        return riddles

    def submit(self, doc: Any, where: str = "request") -> list[str]:
        riddles = self.check(doc, where)
        ids = submitting.submit(self.pipeline(), riddles)
        indexing.refresh(self.index, self.spool, ids)
        return ids

    # -- acting -------------------------------------------------------------------------

    def act(
        self,
        action: str,
        ids: list[str],
        *,
        from_step: str | None = None,
        reset_trials: bool = False,
        all_or_none: bool = True,
    ) -> Outcome:
        """`action` on each of `ids`, as the command of that name does it. `all_or_none`
        (the API, like the command line): when any id is refused, none is acted on.
        Otherwise (the pages' bulk actions) the others are."""
        if action not in ACTIONS:
            raise InvalidDocument(f"unknown action {action!r}", where="action")
        if from_step is not None and from_step not in admin.RETRY_STEPS:
            raise InvalidDocument(f"expected one of {', '.join(admin.RETRY_STEPS)}", where="from")
        ids = list(dict.fromkeys(ids))
        outcome = Outcome(refused=admin.refusals(self.spool, action, ids))
        if outcome.refused and all_or_none:
            return outcome
        skip = {e.where for e in outcome.refused}
        pipeline = self.pipeline()
        step = self._step(pipeline, action, from_step, reset_trials)
        for riddle_id in ids:
            if riddle_id in skip:
                continue
            try:
                queue, detail = step(riddle_id)
                outcome.done.append(Done(riddle_id, queue, detail))
            except (RiddleError, TimeoutError) as exc:
                outcome.refused.append(_as_error(exc, riddle_id))
        indexing.refresh(self.index, self.spool, [d.id for d in outcome.done])
        return outcome

    @staticmethod
    def _step(
        pipeline: Pipeline, action: str, from_step: str | None, reset_trials: bool
    ) -> Callable[[str], tuple[str, str]]:
        """The action on one riddle: the queue it is in afterwards, and its detail."""
        if action == "retry":
            return lambda i: _twice(admin.retry(pipeline, i, from_step, reset_trials).value)
        if action == "hold":
            return lambda i: (Queue.HOLD.value, admin.hold(pipeline, i).value)
        if action == "release":
            return lambda i: _twice(admin.release(pipeline, i).value)
        return lambda i: _cancelled(pipeline, i)

    # -- the dashboard and the files set aside --------------------------------------------

    def trends(self, window: str) -> dict[str, Any]:
        """The trend series of `window` (`hour`, `day`, `week`), from the index."""
        from riddlectl.web import trends

        return trends.series(self.index, trends.WINDOWS[window], self.counts())

    def resubmit(self, name: str, raw: bytes | None = None) -> list[str]:
        """The set-aside file `name` (corrected: `raw`) submitted again, as `riddlectl
        corrupt resubmit` does."""
        ids = corrupt.resubmit(self.pipeline(), self.settings, name, raw)
        indexing.refresh(self.index, self.spool, ids)
        self._counts = None
        return ids

    def check_corrupt(self, name: str, raw: bytes) -> list[Any]:
        """The riddles the set-aside file `name`, corrected to `raw`, would become; the
        first problem as `RiddleError`. Nothing is stored."""
        return corrupt.check(self.spool, self.settings, name, raw)

    def drop_corrupt(self, names: list[str]) -> list[str]:
        dropped = corrupt.drop(self.spool, names)
        self._counts = None
        return dropped

    def failed_ids(self) -> list[str]:
        return admin.failed_ids(self.pipeline())

    # -- reading ------------------------------------------------------------------------

    def counts(self) -> dict[str, int]:
        """Riddles per queue, as the index holds them, and the files set aside: counted
        again only when the index changed, or the last count is over a second old (every
        page shows them; at 100,000 riddles a count costs more than the page)."""
        key = self.index.generation
        cached = self._counts
        if cached is None or cached[0] != key or time.monotonic() - cached[1] > COUNTS_TTL:
            counts = self.index.counts()
            counts[report.CORRUPT] = len(report.corrupt_files(self.spool))
            self._counts = cached = (key, time.monotonic(), counts)
        return dict(cached[2])

    def agents(self) -> dict[str, list[dict[str, Any]]]:
        """The agents alive and recently gone (`ops.agents`): read afresh each time,
        since the page must show an agent gone as soon as the spool can tell."""
        return roster.agents(self.spool)

    def agents_per_stage(self) -> dict[str, int]:
        return roster.alive_per_stage(self.spool)


def index_path(spool: Spool) -> Path:
    """Where the table's index lives: in a directory spool, beside the queues; for a
    spool that is no directory (PostgreSQL), in the user's cache directory
    (`$XDG_CACHE_HOME/riddlectl/web/`, else `~/.cache/...`), named by a digest of the
    spool's name (its URL without the password), so that a restarted server finds it
    again and no password is shown."""
    if spool.local_root is not None:
        return spool.local_root / INDEX_NAME
    cache = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    digest = hashlib.sha256(spool.name.encode()).hexdigest()[:16]
    folder = Path(cache) / "riddlectl" / "web"
    folder.mkdir(parents=True, exist_ok=True, mode=0o700)
    return folder / f"{digest}-{INDEX_NAME}"


def error_body(exc: RiddleError) -> dict[str, Any]:
    return {"error": str(exc), "where": exc.where, "field": exc.field}


def http_status(exc: RiddleError) -> int:
    """The HTTP status of a library error: the exit codes, as a web client knows them."""
    from riddlectl.errors import DuplicateId

    if isinstance(exc, DuplicateId):
        return 409
    return {
        ExitCode.UNKNOWN_ID: 404,
        ExitCode.TIMEOUT: 504,
        ExitCode.SPOOL_UNUSABLE: 503,
    }.get(exc.exit_code, 400)


def _twice(queue: str) -> tuple[str, str]:
    return queue, queue


def _cancelled(pipeline: Pipeline, riddle_id: str) -> tuple[str, str]:
    """`cancel` on one riddle: `failed` and the ids cancelled, or, for a riddle already
    final (left as it was), the queue it is in and `already final`."""
    cancelled = admin.cancel(pipeline, riddle_id)
    if riddle_id in cancelled:
        return Queue.FAILED.value, " ".join(cancelled)
    found = pipeline.spool.find(riddle_id)
    return (found[0].value if found else Queue.FAILED.value), "already final"


def _as_error(exc: Exception, riddle_id: str) -> RiddleError:
    if isinstance(exc, RiddleError):
        return exc
    error = RiddleError(str(exc), where=riddle_id)
    error.exit_code = ExitCode.TIMEOUT
    return error
