"""`/app/…`: the table, a riddle's page, the actions, the form, and the live stream.

Pages are server-rendered (Jinja2); htmx (shipped in `static/`) swaps the parts that
change, and `static/app.js` does the rest. No page holds inline script.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any
from urllib.parse import quote, urlencode

import orjson
from fastapi import APIRouter, Query, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from fastapi.templating import Jinja2Templates
from markupsafe import Markup
from sse_starlette.sse import EventSourceResponse
from starlette.datastructures import UploadFile

from riddlectl.document.datatypes import builtin_types
from riddlectl.errors import InvalidData, InvalidDocument, RiddleError
from riddlectl.ops import admin
from riddlectl.ops import agents as roster
from riddlectl.web import datafiles, forms, views
from riddlectl.web import index as indexing
from riddlectl.web import query as tables
from riddlectl.web.live import Hub
from riddlectl.web.service import ACTIONS, Done, Outcome, Service, http_status

router = APIRouter(prefix="/app", include_in_schema=False)
AGENTS_REFRESH = 2  # seconds between refreshes of the agents page's list
SHOW_ALL = Query(False, alias="all")  # `?all=true`: every one-shot run, not folded
templates = Jinja2Templates(directory=Path(__file__).parent / "templates")
templates.env.filters["ago"] = views.when_tag


def _web(request: Request) -> Service:
    found: Service = request.app.state.service
    return found


def render(request: Request, template: str, status: int = 200, **values: Any) -> HTMLResponse:
    web = _web(request)
    values.setdefault("counts", web.counts())
    values |= {"read_only": web.read_only, "actions": ACTIONS, "steps": admin.RETRY_STEPS}
    return templates.TemplateResponse(request, template, values, status_code=status)


def error_page(request: Request, exc: RiddleError, status: int) -> HTMLResponse:
    return render(request, "error.html", status, error=str(exc))


# -- the table ---------------------------------------------------------------------------


def _table(request: Request) -> dict[str, Any]:
    web = _web(request)
    chosen = tables.parse(dict(request.query_params))
    rows, cursor = tables.page(web.index, chosen)
    span = tables.span(web.index, chosen, len(rows))
    return {"filter": chosen, "rows": rows, "next": cursor, "span": span, "counts": web.counts()}


@router.get("/table", response_class=HTMLResponse)
def table(request: Request) -> HTMLResponse:
    drawn = _live_version(request)
    return render(request, "table.html", **_table(request), sorts=tables.SORTS, live_version=drawn)


@router.get("/table/rows", response_class=HTMLResponse)
def table_rows(request: Request) -> HTMLResponse:
    """The part of the table a live update swaps: counts, rows, the next-page link."""
    return render(request, "rows.html", **_table(request))


def _live_version(request: Request) -> int:
    """The index version a live page is drawn from, read before its rows are: the tab's
    stream may open after the next change is told, and its first event must then still
    differ from what the page shows (else the tab would wait for yet another change)."""
    hub: Hub = request.app.state.hub
    return hub.version


@router.get("/live")
async def live(request: Request) -> EventSourceResponse:
    hub: Hub = request.app.state.hub
    return EventSourceResponse(hub.changes(), ping=None, send_timeout=5)


# -- a riddle ------------------------------------------------------------------------------


@router.get("/riddle/{riddle_id}", response_class=HTMLResponse)
def riddle(
    request: Request, riddle_id: str, done: str = "", to: str = "", subs: str = ""
) -> HTMLResponse:
    """A riddle's page; after an action on it, the notice of that action (by key)."""
    return _riddle_page(request, riddle_id, views.notice(done, to, subs))


def _riddle_page(request: Request, riddle_id: str, note: str, status: int = 200) -> HTMLResponse:
    web = _web(request)
    queue, found = web.spool.require(riddle_id)
    # The count bar and the riddle's badge from one source: the index is told where the
    # riddle is now before the counts are read from it (its watcher may be a moment
    # behind, or not told at all of a file moved by hand).
    if web.index.placed([riddle_id]).get(riddle_id) != (queue.value, found.rev):
        web.index.put([indexing.row_of(queue, found)])
    view = views.riddle_view(web.spool, queue, found)
    holder = roster.holder_of(web.agents(), riddle_id)
    return render(request, "riddle.html", status, **view, note=note, holder=holder)


# -- agents --------------------------------------------------------------------------------


@router.get("/agents", response_class=HTMLResponse)
def agents(request: Request, everything: bool = SHOW_ALL) -> HTMLResponse:
    """Who is working: the agents alive, what each handles, those gone and what they
    abandoned; the list refreshes itself (`/app/agents/list`)."""
    shown = _roster(request, everything)
    return render(request, "agents.html", **shown, refresh=AGENTS_REFRESH)


@router.get("/agents/list", response_class=HTMLResponse)
def agents_list(request: Request, everything: bool = SHOW_ALL) -> HTMLResponse:
    return render(request, "agents_list.html", **_roster(request, everything), counts=None)


def _roster(request: Request, everything: bool) -> dict[str, Any]:
    """The agents in the order `riddlectl agents` shows them: the alive newest first,
    then the dead before the stopped (newest gone first), one-shot runs that stopped
    folded into one line unless all were asked for."""
    shown = roster.arranged(_web(request).agents(), everything)
    return {
        "alive": [a for a in shown.rows if a["state"] == "alive"],
        "gone": [a for a in shown.rows if a["state"] != "alive"],
        "folded": shown.folded,
        "everything": everything,
    }


# -- actions -------------------------------------------------------------------------------


@router.post("/act", response_class=HTMLResponse)
async def act(request: Request) -> Response:
    """An action on one riddle, on the rows ticked, or on everything the filter matches
    (`scope=filter`: first the count and a question, then, once confirmed, the action)."""
    web = _web(request)
    form = await request.form()
    action = str(form.get("action") or "")
    options = {
        "from_step": str(form.get("from") or "") or None,
        "reset_trials": bool(form.get("reset_trials")),
    }
    if form.get("scope") == "filter":
        fields = {k: str(form.get(k)) for k in _FILTER_FIELDS if form.get(k)}
        chosen = tables.parse(fields)
        ids = tables.matching_ids(web.index, chosen)
        if str(form.get("confirmed") or "") != str(len(ids)):
            return render(
                request, "confirm.html", action=action, matching=len(ids),
                filter=chosen, filter_fields=fields, options=options,
            )  # fmt: skip
    else:
        ids = list(dict.fromkeys(str(v) for v in form.getlist("id")))
    if not ids:
        raise InvalidDocument("no riddle chosen: tick rows first", where=action or "action")
    asks = action == "cancel" or form.get("scope") == "selection"
    if asks and form.get("scope") != "filter" and str(form.get("confirmed") or "") != str(len(ids)):
        # Cancelling, and any action on ticked rows, asks first, saying how many riddles
        # it changes: a page of its own, so that it asks without script too.
        return render(
            request, "confirm.html", action=action, matching=len(ids), ids=ids,
            options=options, back=_local(str(form.get("back") or "/app/table")),
            scope=str(form.get("scope") or ""),
        )  # fmt: skip
    outcome = web.act(action, ids, all_or_none=False, **options)  # type: ignore[arg-type]
    back = str(form.get("back") or "/app/table")
    if len(ids) == 1 and back == f"/app/riddle/{ids[0]}":
        return _back_to_riddle(request, action, ids[0], outcome)
    acted = [(d.id, d.queue, _remark(action, d)) for d in outcome.done]
    return render(
        request, "acted.html", action=action, said=ACTED[action], acted=acted,
        refused=outcome.refused, back=_local(back),
    )  # fmt: skip


_FILTER_FIELDS = ("queue", "q", "trial", "solved", "parent", "min_age", "max_age", "sort")
# What the page after a bulk action says was done, as "N riddles …".
ACTED = {"retry": "put back to retry", "hold": "held", "release": "released", "cancel": "cancelled"}


def _back_to_riddle(request: Request, action: str, riddle_id: str, outcome: Outcome) -> Response:
    """Back to the riddle's page: done, by a redirect naming the notice by key; refused,
    its page with the reason (the server's own words, never carried in the URL)."""
    if not outcome.done:
        error = outcome.refused[0]
        return _riddle_page(request, riddle_id, str(error), http_status(error))
    done = outcome.done[0]
    key = "final" if action == "cancel" and done.detail == "already final" else action
    subs = len(done.detail.split()) - 1 if key == "cancel" else 0
    query = urlencode({"done": key, "to": done.queue, **({"subs": subs} if subs else {})})
    return RedirectResponse(f"/app/riddle/{quote(riddle_id)}?{query}", status_code=303)


def _remark(action: str, done: Done) -> str:
    """What a bulk action's page adds to `ID → QUEUE/`."""
    if action == "cancel":
        if done.detail == "already final":
            return "already final, left as it was"
        subs = len(done.detail.split()) - 1
        return f"with {views.plural(subs, 'sub-riddle')}" if subs else ""
    return f"was in {done.detail}/" if action == "hold" else ""


def _local(url: str) -> str:
    """Only a path of this server: a form cannot send the user elsewhere."""
    return url if url.startswith("/app/") and "//" not in url else "/app/table"


# -- the form ------------------------------------------------------------------------------


@router.get("/new", response_class=HTMLResponse)
def new(request: Request) -> HTMLResponse:
    return render(request, "new.html", **_form_values(request, {}))


def _form_values(request: Request, form: forms.Form) -> dict[str, Any]:
    return {
        "form": {k: list(v) for k, v in form.items()},
        "answer_types": forms.ANSWER_TYPES,
        "fill_kinds": forms.FILL_KINDS,
        "data_types": builtin_types(),
    }


def _checked(request: Request, form: forms.Form) -> tuple[dict[str, Any] | None, dict[str, str]]:
    """The document of the form and the errors by form field (empty when it is valid)."""
    try:
        doc = forms.build(form)
    except RiddleError as exc:
        return None, {forms.field_of(exc): str(exc)}
    try:
        _web(request).check(doc)
    except RiddleError as exc:
        return doc, {forms.field_of(exc): str(exc)}
    return doc, {}


async def _form(request: Request) -> dict[str, list[str]]:
    data = await request.form()
    return {k: [str(v) for v in data.getlist(k)] for k in data}


@router.post("/preview", response_class=HTMLResponse)
async def preview(request: Request) -> HTMLResponse:
    """The document the form would submit, checked as `submit` checks it."""
    doc, errors = _checked(request, await _form(request))
    text = orjson.dumps(doc, option=orjson.OPT_INDENT_2).decode() if doc else ""
    return render(request, "preview.html", document=text, errors=errors, counts={})


@router.post("/new", response_class=HTMLResponse)
async def create(request: Request) -> Response:
    form = await _form(request)
    doc, errors = _checked(request, form)
    if errors or doc is None:
        values = _form_values(request, form)
        text = orjson.dumps(doc, option=orjson.OPT_INDENT_2).decode() if doc else ""
        return render(request, "new.html", 400, **values, errors=errors, document=text)
    riddle_id = _web(request).submit(doc, where="form")[0]
    return RedirectResponse(f"/app/riddle/{riddle_id}", status_code=303)


@router.get("/datafiles", response_class=HTMLResponse)
def datafile_options(request: Request, data: str = "", prefix: str = "") -> HTMLResponse:
    """`<option>`s for the data file names starting with what was typed."""
    names = datafiles.complete(_web(request).settings.data_dir, prefix or data)
    return render(request, "options.html", names=names, counts={})


@router.post("/upload", response_class=HTMLResponse)
async def upload(request: Request) -> HTMLResponse:
    """A file into the data directory (`uploads/`), its name sanitised; refused over the
    data size limit, before the body is read when its length says so."""
    web = _web(request)
    limit = web.settings.max_data_bytes
    if int(request.headers.get("content-length") or 0) > limit + 64 * 1024:
        raise InvalidData(f"over the size limit of {limit} bytes", where="upload")
    form = await request.form(max_files=1, max_fields=10)
    file = form.get("file")
    if not isinstance(file, UploadFile):
        raise InvalidDocument("no file given", where="upload", field="file")
    chunks = [await file.read(limit + 1)]
    name = datafiles.store(web.settings.data_dir, file.filename or "upload", iter(chunks), limit)
    return render(request, "uploaded.html", name=name, counts={})


# -- the dashboard -------------------------------------------------------------------------


@router.get("", response_class=HTMLResponse)
def dashboard(request: Request, window: str = "hour") -> HTMLResponse:
    """Trends over the last hour, day or week, redrawn while the page is open."""
    drawn = _live_version(request)
    return render(request, "dashboard.html", **_charts(request, window), live_version=drawn)


@router.get("/dashboard/charts", response_class=HTMLResponse)
def dashboard_charts(request: Request, window: str = "hour") -> HTMLResponse:
    """The part of the dashboard a live update swaps: the charts, and the counts."""
    return render(request, "charts.html", **_charts(request, window), oob=True)


def _charts(request: Request, window: str) -> dict[str, Any]:
    from riddlectl.web import charts, trends

    chosen = trends.WINDOWS.get(window, trends.WINDOWS["hour"])
    data = _web(request).trends(chosen.name)
    starts, step = data["starts"], data["step_seconds"]
    drawn = [
        charts.bars(
            "chart-throughput", f"Riddles finished and failed, {chosen.label}",
            "riddles per minute", starts, step,
            {"finished": data["per_minute"]["finished"], "failed": data["per_minute"]["failed"]},
        ),
        charts.lines(
            "chart-depth", f"Queue depths, {chosen.label}", "riddles waiting", starts, step,
            _drawn_depths(data["depth"]),
        ),
    ]  # fmt: skip
    # Handler times as small multiples: one chart per stage (p50 and p95), on the same
    # time axis, rather than every stage's lines crammed into one with a cut legend.
    for stage, values in data["handler_ms"].items() or [("", {"p50": [], "p95": []})]:
        drawn.append(
            charts.lines(
                f"chart-handlers-{stage}" if stage else "chart-handlers-none",
                f"Handler time of {stage or 'each stage'}, {chosen.label}",
                f"{stage or 'handler'} time, milliseconds", starts, step,
                {q: values[q] for q in ("p50", "p95")},
            )
        )  # fmt: skip
    totals = {name: round(sum(v) * chosen.step) for name, v in data["per_minute"].items()}
    return {
        "window": chosen,
        "windows": trends.WINDOWS,
        "charts": [Markup(svg) for svg in drawn],
        "totals": totals,
    }


def _drawn_depths(depth: dict[str, list[int | None]]) -> dict[str, list[int | None]]:
    """The queues that held a riddle in the range (incoming at least, for an empty chart)."""
    return {q: v for q, v in depth.items() if any(v)} or {"incoming": depth["incoming"]}


# -- the files set aside -------------------------------------------------------------------

SHOWN_BYTES = 4096  # of a set-aside file's content, on the list


@router.get("/corrupt", response_class=HTMLResponse)
def corrupt_list(request: Request, done: str = "") -> HTMLResponse:
    """Each file set aside, with its reason and the start of its content; of an entry
    that is no regular file (a FIFO, a link), what it is: that is never opened."""
    from riddlectl.ops import corrupt

    spool = _web(request).spool
    files = []
    for entry in corrupt.listing(spool):
        try:
            raw = corrupt.content(spool, entry["name"])
        except RiddleError as exc:  # no regular file, or gone meanwhile: say so
            files.append({**entry, "text": f"({exc.message})", "more": 0})
            continue
        text = raw[:SHOWN_BYTES].decode("utf-8", "replace")
        files.append({**entry, "text": text, "more": max(0, len(raw) - SHOWN_BYTES)})
    note = {"dropped": "Deleted.", "resubmitted": "Submitted again."}.get(done, "")
    # The count bar says what the page lists, from the same listing.
    counts = _web(request).counts() | {"corrupt": len(files)}
    return render(request, "corrupt.html", files=files, note=note, counts=counts)


@router.get("/corrupt/edit", response_class=HTMLResponse)
def corrupt_edit(request: Request, name: str) -> HTMLResponse:
    """A set-aside file in an editor, to correct and submit again."""
    from riddlectl.ops import corrupt

    spool = _web(request).spool
    raw = corrupt.content(spool, name)
    text = raw.decode("utf-8", "replace")
    return render(
        request, "corrupt_edit.html", name=name, reason=corrupt.reason_of(spool, name),
        text=text, error="", lines=[],
    )  # fmt: skip


@router.post("/corrupt/check", response_class=HTMLResponse)
async def corrupt_check(request: Request) -> HTMLResponse:
    """The editor's text checked as `resubmit` would check it, nothing stored: the error
    beside its line, or how many riddles it would become (the editor asks as it is typed)."""
    form = await request.form()
    name, text = str(form.get("name") or ""), str(form.get("text") or "")
    try:
        checked, error = len(_web(request).check_corrupt(name, text.encode())), ""
    except RiddleError as exc:
        if http_status(exc) == 404:
            raise
        checked, error = 0, str(exc)
    lines = _lines_with_error(text, error) if error else []
    return render(
        request, "corrupt_check.html", error=error, lines=lines, checked=checked, counts={}
    )


@router.post("/corrupt/resubmit", response_class=HTMLResponse)
async def corrupt_resubmit(request: Request) -> Response:
    """Submit the text of the editor in place of the set-aside file (checked as `submit`
    checks); the editor again with the error beside its line when it is refused."""
    from riddlectl.ops import corrupt

    form = await request.form()
    name, text = str(form.get("name") or ""), str(form.get("text") or "")
    web = _web(request)
    try:
        ids = web.resubmit(name, text.encode())
    except RiddleError as exc:
        if http_status(exc) == 404:
            raise
        lines = _lines_with_error(text, str(exc))
        return render(
            request, "corrupt_edit.html", http_status(exc), name=name,
            reason=corrupt.reason_of(web.spool, name), text=text, error=str(exc), lines=lines,
        )  # fmt: skip
    return RedirectResponse(f"/app/riddle/{quote(ids[0])}", status_code=303)


@router.post("/corrupt/drop", response_class=HTMLResponse)
async def corrupt_drop(request: Request) -> Response:
    """Delete set-aside files: first a question naming them, then, once confirmed, the
    deletion."""
    form = await request.form()
    names = [str(v) for v in form.getlist("name")]
    if not names:
        raise InvalidDocument("no file chosen", where="corrupt")
    if str(form.get("confirmed") or "") != str(len(names)):
        return render(request, "confirm_drop.html", names=names)
    _web(request).drop_corrupt(names)
    return RedirectResponse("/app/corrupt?done=dropped", status_code=303)


def _lines_with_error(text: str, error: str) -> list[dict[str, Any]]:
    """The editor's lines, numbered, the line an error names (`…:LINE:COL: …`) marked
    with the error."""
    import re

    found = re.search(r":(\d+):(\d+): ", error)
    lines = text.splitlines() or [""]
    at = min(int(found.group(1)), len(lines)) if found else 0  # at the end: the last line
    return [
        {"n": n, "text": line, "error": error if n == at else ""}
        for n, line in enumerate(lines, start=1)
    ][:2000]
