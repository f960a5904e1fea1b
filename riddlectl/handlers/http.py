"""HTTP handlers (`http:URL`): the riddle POSTed as JSON, the reply read as a `cmd:` one.

Solve and validate POST the riddle document itself, as a command reads it on stdin;
extract POSTs `{"riddle": document, "item": {...}}`, the item with its index, type,
`file_plain`, absolute `path` and content (`text` for text types, else `base64`), since
the endpoint may not see the data directory. `X-Riddle-Id` and `X-Riddle-Stage` headers
name the riddle and the stage. The reply is what a command would write on stdout (see
`reply`); what its status means is in `transport`.

Headers come from the setting `http_headers`; `${VAR}` in a value is read from the
environment when the agent starts (`Authorization = "Bearer ${MY_TOKEN}"`), and those
values are kept out of every message.
"""

from __future__ import annotations

import base64
import os
import re
from collections.abc import Mapping
from typing import Any

import orjson

from riddlectl.document import codec as documents
from riddlectl.document import datafiles
from riddlectl.errors import ConfigError
from riddlectl.handlers.base import Job
from riddlectl.handlers.reply import parse_reply
from riddlectl.handlers.transport import Endpoint, endpoint_url
from riddlectl.settings import Settings

_VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")


class HttpHandler:
    threaded = True  # waits on the network: run in a thread (see `pipeline.stages.call`)

    def __init__(self, url: str, stage: str, settings: Settings) -> None:
        if not url.startswith(("http://", "https://")):
            raise ConfigError("expected http://HOST/PATH or https://…", where=f"http:{url}")
        endpoint_url(url, f"http:{url}")
        self.url = url
        self.name = f"http:{url}"
        self.stage = stage
        self.headers, secrets = expand_headers(settings.http_headers, os.environ)
        self.endpoint = Endpoint(url, settings.endpoint_concurrency, secrets)

    def current_version(self) -> str:
        return self.url

    def __call__(self, job: Job) -> dict[str, Any] | None:
        headers = {
            **self.headers,
            "x-riddle-id": job.riddle.id or "",
            "x-riddle-stage": job.stage,
        }
        reply = self.endpoint.post(self.name, self.body(job), headers, job.timeout)
        return parse_reply(reply.body, self.name)

    def body(self, job: Job) -> bytes:
        if job.item_index is None or job.item_path is None:
            return documents.dumps(job.riddle)
        item = job.riddle.data[job.item_index]
        content = job.item_path.read_bytes()
        shown: dict[str, Any] = {
            "index": job.item_index,
            "type": item.type,
            "file_plain": item.file_plain,
            "path": str(job.item_path.resolve()),
        }
        if item.type in datafiles.text_types():
            shown["text"] = content.decode("utf-8", "replace")
        else:
            shown["base64"] = base64.b64encode(content).decode("ascii")
        return orjson.dumps({"riddle": job.riddle.to_json(), "item": shown})


def expand_headers(
    headers: Mapping[str, str], env: Mapping[str, str]
) -> tuple[dict[str, str], list[str]]:
    """Headers with `${VAR}` read from `env`, and the values read (secrets to redact)."""
    secrets: list[str] = []

    def value_of(match: re.Match[str]) -> str:
        name = match.group(1)
        if name not in env:
            raise ConfigError(
                f"the environment variable {name} is not set", where="http_headers", field=header
            )
        secrets.append(env[name])
        return env[name]

    out = {}
    for header, template in headers.items():
        out[header] = _VAR.sub(value_of, template)
    return out, secrets
