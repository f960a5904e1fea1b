"""The application: the API, the pages, the live stream and `/metrics`, behind the
security middleware, over one `Service`.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, PlainTextResponse, RedirectResponse, Response
from fastapi.staticfiles import StaticFiles
from starlette.exceptions import HTTPException as StarletteHTTPException

from riddlectl.errors import RiddleError
from riddlectl.web import api, pages
from riddlectl.web.live import Hub
from riddlectl.web.metrics import ages
from riddlectl.web.security import Guard, Secure
from riddlectl.web.service import Service, error_body, http_status

STATIC = Path(__file__).parent / "static"
METRICS_TYPE = "text/plain; version=0.0.4; charset=utf-8"


def create_app(web: Service, guard: Guard | None = None) -> Any:
    """The ASGI application for `web`; the keeper starts with it and stops with it."""
    hub = Hub()

    @contextlib.asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        hub.bind(asyncio.get_running_loop())
        web.keeper.listeners.append(lambda version: hub.notify(version, web.counts()))
        await asyncio.to_thread(web.keeper.start)
        hub.notify(web.keeper.version, await asyncio.to_thread(web.counts))
        try:
            yield
        finally:
            hub.close()
            web.keeper.stop()

    app = FastAPI(
        title="riddlectl",
        summary="The riddle spool over HTTP: the command line's verbs as JSON.",
        version=_version(),
        lifespan=lifespan,
        docs_url=None,  # the interactive docs load scripts from a CDN; the CSP forbids it
        redoc_url=None,
    )
    app.state.service = web
    app.state.hub = hub
    app.include_router(api.router)
    app.include_router(pages.router)
    app.mount("/static", StaticFiles(directory=STATIC), name="static")
    _errors(app)

    @app.get("/", include_in_schema=False)
    def home() -> RedirectResponse:
        return RedirectResponse("/app/table", status_code=303)

    @app.get("/favicon.ico", include_in_schema=False)
    def favicon() -> Response:
        return Response(status_code=204)

    @app.get("/metrics", response_class=PlainTextResponse, tags=["metrics"])
    def metrics() -> Response:
        """Prometheus text: riddles per queue, the age of each queue's oldest riddle,
        agents alive per stage, events per stage and outcome, failures per stage, handler
        durations; on PostgreSQL, dead rows and the oldest transaction."""
        oldest = ages(web.index.oldest(), time.time())
        text = web.keeper.tally.render(
            web.counts(), oldest, web.agents_per_stage(), web.spool.health()
        )
        return Response(text, media_type=METRICS_TYPE)

    return Secure(app, guard or Guard(read_only=web.read_only))


def _errors(app: FastAPI) -> None:
    @app.exception_handler(RiddleError)
    async def riddle_error(request: Request, exc: RiddleError) -> Response:
        if request.url.path.startswith("/app/"):
            return pages.error_page(request, exc, http_status(exc))
        return JSONResponse(error_body(exc), status_code=http_status(exc))

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, exc: StarletteHTTPException) -> Response:
        # Starlette's own refusals (no such route, a method a route does not take, a body
        # that does not parse) in the shape of every other error here.
        body = {"error": str(exc.detail), "where": None, "field": None}
        return JSONResponse(body, status_code=exc.status_code, headers=exc.headers)

    @app.exception_handler(TimeoutError)
    async def timeout(request: Request, exc: TimeoutError) -> Response:
        return JSONResponse({"error": str(exc), "where": None, "field": None}, status_code=504)

    @app.exception_handler(OSError)
    async def unusable(request: Request, exc: OSError) -> Response:
        message = f"{exc.filename or 'spool'}: {exc.strerror or exc}"
        return JSONResponse({"error": message, "where": None, "field": None}, status_code=503)


def _version() -> str:
    from importlib.metadata import version

    return version("riddlectl")
