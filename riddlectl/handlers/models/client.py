"""One chat-completions call to an OpenAI-compatible endpoint, asking for JSON that fits
a schema; what it cost (`usage`), and the budget of calls per riddle.

The base URL is the setting `openai_base_url` (`OPENAI_BASE_URL`); the key is read from
`OPENAI_API_KEY` when the agent starts, sent as a bearer token, and never written
anywhere (see `transport.redact`). Calls are made at temperature 0.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

import orjson

from riddlectl.document.model import Riddle
from riddlectl.errors import ConfigError, HandlerFailed, HandlerRefused
from riddlectl.handlers.transport import Endpoint, endpoint_url
from riddlectl.settings import OPENAI_KEY_VAR, Settings

RESPONSE_FORMATS = ("json_schema", "json_object")


@dataclass(frozen=True)
class Completion:
    reply: Any  # the JSON the model answered, parsed
    usage: dict[str, Any]  # model, calls, prompt_tokens, completion_tokens, total_tokens


class ChatClient:
    def __init__(self, model: str, settings: Settings) -> None:
        if not model:
            raise ConfigError("expected openai:MODEL", where="openai:")
        if settings.openai_response_format not in RESPONSE_FORMATS:
            raise ConfigError(
                f"must be one of {', '.join(RESPONSE_FORMATS)}",
                where=repr(settings.openai_response_format),
                field="openai_response_format",
            )
        self.who = f"openai:{model}"
        self.model = model
        self.base_url = endpoint_url(
            settings.openai_base_url, self.who, "openai_base_url (OPENAI_BASE_URL)"
        ).rstrip("/")
        self.max_tokens = settings.openai_max_tokens
        self.style = settings.openai_response_format
        key = os.environ.get(OPENAI_KEY_VAR, "")
        self.headers = {"authorization": f"Bearer {key}"} if key else {}
        url = f"{self.base_url}/chat/completions"
        self.endpoint = Endpoint(url, settings.endpoint_concurrency, [key])

    def complete(
        self, messages: list[dict[str, str]], schema: dict[str, Any], timeout: float
    ) -> Completion:
        """The model's reply to `messages`, in JSON fitting `schema`; `HandlerFailed` (with
        the call's usage) when it is cut short or is not JSON."""
        body = {
            "model": self.model,
            "messages": messages,
            "temperature": 0,
            "max_tokens": self.max_tokens,
            "response_format": self._format(schema),
        }
        reply = self.endpoint.post(self.who, orjson.dumps(body), self.headers, timeout)
        try:
            data = orjson.loads(reply.body)
            choice = data["choices"][0]
            content = choice["message"]["content"]
        except (orjson.JSONDecodeError, KeyError, IndexError, TypeError):
            raise HandlerFailed(f"{self.who}: the endpoint's reply is no chat completion") from None
        usage = self._usage(data)
        if choice.get("finish_reason") == "length":
            raise HandlerFailed(
                f"{self.who}: the reply was cut at openai_max_tokens ({self.max_tokens})",
                usage=usage,
            )
        try:
            return Completion(orjson.loads(content or ""), usage)
        except orjson.JSONDecodeError:
            shown = str(content)[:120]
            raise HandlerFailed(
                f"{self.who}: the reply is not JSON: {shown!r}", usage=usage
            ) from None

    def _format(self, schema: dict[str, Any]) -> dict[str, Any]:
        if self.style == "json_object":
            return {"type": "json_object", "schema": schema}
        return {"type": "json_schema", "json_schema": {"name": "reply", "schema": schema}}

    def _usage(self, data: dict[str, Any]) -> dict[str, Any]:
        found = data.get("usage")
        counted: dict[str, Any] = found if isinstance(found, dict) else {}
        usage: dict[str, Any] = {"model": str(data.get("model") or self.model), "calls": 1}
        for name in ("prompt_tokens", "completion_tokens", "total_tokens"):
            if isinstance(counted.get(name), int):
                usage[name] = counted[name]
        return usage


def check_budget(riddle: Riddle, max_calls: int, who: str) -> None:
    """Refuse a riddle whose model calls, over all its attempts and handlers (as its
    history records them), have reached `max_calls`."""
    made = calls_made(riddle)
    if made >= max_calls:
        raise HandlerRefused(
            f"{who}: {made} model calls made for this riddle, as many as openai_max_calls allows"
        )


def calls_made(riddle: Riddle) -> int:
    total = 0
    for entry in riddle.history:
        usage = entry.get("usage")
        for name, cost in usage.items() if isinstance(usage, dict) else []:
            if str(name).startswith("openai:") and isinstance(cost, dict):
                calls = cost.get("calls")
                total += calls if isinstance(calls, int) else 0
    return total
