"""`/api/…`: the command line as JSON, one route per command (submit, status, show,
result, retry, hold, release, cancel, events), plus the table's rows and the data files.

Errors are `{"error", "where", "field"}` with the HTTP status of the exit code the
command would give: 400 bad input (2), 404 unknown riddle (3), 409 id taken, 503 spool
unusable (5). A command given several ids checks them all before acting on any, here
as there.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from fastapi import APIRouter, Body, Query, Request
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict, Field, StrictBool

from riddlectl.ops import report
from riddlectl.web import query as tables
from riddlectl.web.datafiles import complete
from riddlectl.web.service import Outcome, Service, error_body, http_status

router = APIRouter(prefix="/api", tags=["api"])


class ErrorBody(BaseModel):
    error: str
    where: str | None = None
    field: str | None = None
    # An action refused for several riddles: each one's error (the first is `error`).
    refused: list[dict[str, Any]] | None = None


ERRORS: dict[int | str, dict[str, Any]] = {
    code: {"model": ErrorBody} for code in (400, 403, 404, 409, 503, 504)
}


class Ids(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    ids: list[Annotated[str, Field(max_length=300)]] = Field(default_factory=list, max_length=10000)


class RetryRequest(Ids):
    failed: StrictBool = Field(False, description="Every failed riddle too (all if no ids).")
    from_step: Literal["extract", "solve", "validate"] | None = Field(
        None, alias="from", description="Start again at this step (default: where it failed)."
    )
    reset_trials: StrictBool = False


class Acted(BaseModel):
    done: list[dict[str, str]]
    refused: list[ErrorBody]


def service(request: Request) -> Service:
    found: Service = request.app.state.service
    return found


def _acted(outcome: Outcome) -> JSONResponse:
    """What was done; when nothing was, an error (the first refusal) listing every one."""
    if outcome.refused and not outcome.done:
        status = max(http_status(e) for e in outcome.refused)
        body = {**error_body(outcome.refused[0]), **outcome.as_dict()}
        return JSONResponse(body, status_code=status)
    return JSONResponse(outcome.as_dict())


@router.post("/submit", status_code=201, responses=ERRORS)
def submit(
    request: Request,
    document: Annotated[
        dict[str, Any] | Annotated[list[dict[str, Any]], Field(min_length=1)],
        Body(description="One riddle document, or a list of them (all or none are taken)."),
    ],
) -> dict[str, list[str]]:
    """Submit riddles, as `riddlectl submit`; their ids."""
    return {"ids": service(request).submit(document)}


Stages = Literal[
    "extract", "solve", "validate", "manage", "incoming", "extracted", "solved", "validated",
    "done", "failed", "waiting", "hold", "corrupt",
]  # fmt: skip


@router.get("/status", responses=ERRORS)
def status(
    request: Request,
    ids: Annotated[list[str] | None, Query(alias="id", description="Riddle ids.")] = None,
    stage: Annotated[Stages | None, Query(description="A stage's inbox or a queue.")] = None,
    limit: Annotated[
        int, Query(ge=0, description="At most this many riddles, newest first (0: all).")
    ] = 0,
) -> dict[str, Any]:
    """Counts per queue and every riddle (of `stage`), newest first, or each given
    riddle's state (`status --json`); with `limit`, `more` says how many were left out."""
    web = service(request)
    spool = web.spool
    if ids:
        riddles = report.by_ids(spool, list(dict.fromkeys(ids)))
    elif stage == report.CORRUPT:
        return {"counts": web.counts(), "corrupt": report.corrupt_files(spool)}
    else:
        found, more = report.listing(spool, stage, limit)
        riddles = report.summaries(spool, found)
        return {"counts": web.counts(), "riddles": riddles, "more": more}
    return {"counts": web.counts(), "riddles": riddles}


@router.get("/show/{riddle_id}", responses=ERRORS)
def show(request: Request, riddle_id: str) -> dict[str, Any]:
    """The whole document, wherever it is (`riddlectl show`)."""
    _, riddle = service(request).spool.require(riddle_id)
    return riddle.to_json()


@router.get("/result/{riddle_id}", responses=ERRORS)
def result(request: Request, riddle_id: str) -> dict[str, Any]:
    """A riddle's outcome (`riddlectl result`): final or not, the solution, the error."""
    found = report.results(service(request).spool, [riddle_id])[0]
    return {
        "id": riddle_id,
        "queue": found.queue.value,
        "final": found.final,
        "solved": found.riddle.status.solved,
        "solution": found.solution if found.queue.value == "done" else None,
        "error": found.riddle.error,
    }


class Held(BaseModel):
    id: str = Field(description="The riddle (its page: /app/riddle/ID).")
    stage: str | None
    since: float | None = Field(description="When its handling began (Unix time).")


class Agent(BaseModel):
    id: str = Field(description="The agent's record in the spool.")
    agent: str = Field(description="What the event log calls it: agent:STAGE, run:STAGES.")
    host: str
    pid: int
    stages: list[str]
    handlers: dict[str, list[str]]
    concurrency: int
    started: float = Field(description="Unix time.")
    seen: float = Field(description="When it last wrote its record (Unix time).")
    handled: int = Field(description="Hand-offs it committed since it started.")
    failed: int = Field(description="Riddles it moved to failed since it started.")


class AliveAgent(Agent):
    holds: list[Held] = Field(description="What it is handling now.")


class GoneAgent(Agent):
    how: str = Field(description="died (its process ended unasked) or stopped.")
    gone: float | None = Field(description="When it stopped, or was last seen alive.")
    abandoned: list[Held] = Field(description="What it was handling when it died.")


class Agents(BaseModel):
    alive: list[AliveAgent]
    gone: list[GoneAgent] = Field(description="Agents gone within the last hour.")


@router.get("/agents", response_model=Agents, responses=ERRORS)
def agents(request: Request) -> dict[str, Any]:
    """The agents alive now, what each is handling, and those gone within the last hour
    with what they abandoned (`riddlectl agents --json`)."""
    return service(request).agents()


@router.post("/retry", response_model=Acted, responses=ERRORS)
def retry(request: Request, body: RetryRequest) -> JSONResponse:
    """Put final riddles back into the pipeline (`riddlectl retry`); no ids: every failed one."""
    web = service(request)
    ids = list(body.ids)
    if body.failed or not ids:
        ids += [i for i in web.failed_ids() if i not in ids]
    outcome = web.act("retry", ids, from_step=body.from_step, reset_trials=body.reset_trials)
    return _acted(outcome)


@router.post("/hold", response_model=Acted, responses=ERRORS)
def hold(request: Request, body: Ids) -> JSONResponse:
    """Park riddles in hold/ (`riddlectl hold`)."""
    return _acted(service(request).act("hold", body.ids))


@router.post("/release", response_model=Acted, responses=ERRORS)
def release(request: Request, body: Ids) -> JSONResponse:
    """Put held riddles back where they were (`riddlectl release`)."""
    return _acted(service(request).act("release", body.ids))


@router.post("/cancel", response_model=Acted, responses=ERRORS)
def cancel(request: Request, body: Ids) -> JSONResponse:
    """Move riddles and their sub-riddles to failed/ as cancelled (`riddlectl cancel`)."""
    return _acted(service(request).act("cancel", body.ids))


@router.get("/events", responses=ERRORS)
def events(
    request: Request,
    riddle_id: Annotated[str | None, Query(alias="id", description="Only this riddle's.")] = None,
    limit: Annotated[int, Query(ge=1, le=5000)] = 100,
) -> list[dict[str, Any]]:
    """The latest events of the log (`riddlectl events`), oldest first: at most `limit`,
    from the log's last 256 KiB (the whole log is `riddlectl events`)."""
    found = [e for e in service(request).spool.events.tail() if riddle_id in (None, e.get("id"))]
    return list(reversed(found[:limit]))


Queues = Literal[
    "incoming", "extracted", "solved", "validated", "done", "failed", "waiting", "hold"
]
Duration = Annotated[str, Query(pattern=r"^[0-9]{1,9}(\.[0-9]{1,6})?[smhdw]?$")]


@router.get("/riddles", responses=ERRORS)
def riddles(
    request: Request,
    queue: Queues | None = None,
    q: Annotated[
        str | None, Query(max_length=200, description="Text in id, question, context, error.")
    ] = None,
    trial: Annotated[int | None, Query(ge=0, le=10**6)] = None,
    solved: bool | None = None,
    parent: Annotated[str | None, Query(max_length=300)] = None,
    min_age: Duration | None = None,
    max_age: Duration | None = None,
    sort: Literal["priority", "newest", "oldest"] = "priority",
    after: Annotated[
        str | None,
        Query(pattern="^[A-Za-z0-9_-]{1,400}$", description="`next` of the page before."),
    ] = None,
    limit: Annotated[int, Query(ge=1, le=tables.MAX_PAGE)] = tables.PAGE,
) -> dict[str, Any]:
    """One page of the table, with the filters of `/app/table`; `next` is the `after` of
    the next page (null on the last)."""
    given = {
        "queue": queue, "q": q, "trial": trial, "parent": parent, "min_age": min_age,
        "max_age": max_age, "sort": sort, "after": after, "limit": limit,
        "solved": None if solved is None else str(solved).lower(),
    }  # fmt: skip
    chosen = tables.parse({k: str(v) for k, v in given.items() if v is not None})
    rows, cursor = tables.page(service(request).index, chosen)
    return {"riddles": rows, "next": cursor, "counts": service(request).counts()}


@router.get("/trends", responses=ERRORS)
def trend_series(
    request: Request, window: Literal["hour", "day", "week"] = "hour"
) -> dict[str, Any]:
    """The dashboard's series over the last hour (a point per minute), day (per 15
    minutes) or week (per hour): `starts` (each point's start, seconds since the epoch),
    `per_minute.finished`/`failed` (riddles moved to done/ and failed/, per minute on
    average over the point), `depth` (riddles in each waiting queue at the point's end;
    null before the spool's first event), `handler_ms` (handler time p50/p95 per stage,
    in milliseconds; null without an attempt)."""
    return service(request).trends(window)


@router.get("/corrupt", responses=ERRORS)
def corrupt_files(request: Request) -> list[dict[str, Any]]:
    """The files set aside as no riddle: `name`, `reason`, `bytes` (`riddlectl corrupt
    list --json`)."""
    from riddlectl.ops import corrupt

    return corrupt.listing(service(request).spool)


@router.get("/datafiles")
def datafiles(
    request: Request,
    prefix: Annotated[str, Query(max_length=1000)] = "",
) -> list[str]:
    """Data files under the data directory whose names start with `prefix` (at most 50)."""
    return complete(service(request).settings.data_dir, prefix)


def error_response(exc: Any) -> JSONResponse:
    return JSONResponse(error_body(exc), status_code=http_status(exc))
