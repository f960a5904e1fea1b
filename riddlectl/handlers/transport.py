"""POSTing JSON to an endpoint for `http:` and `openai:` handlers: bounded in time, in the
size of the reply, and in the calls in flight per endpoint.

What a status means, as for any HTTP agent: 2xx, a reply; 422, the other side refuses
the riddle and retrying would not help (`HandlerRefused`); 429, 5xx, a timeout or a
dropped connection, an error tried again later (`HandlerFailed`, with the server's
`Retry-After` when it sent one). Any other status (3xx: redirects are not followed; 4xx
such as 401 or 404) is an error too: tried again, then the riddle fails with it.

Secrets (a bearer token, an API key) go in headers and are never part of a message:
`redact` takes them out of anything quoted from a reply, and replies to 401 and 403,
where an endpoint may quote the key it was given, are not quoted at all.

httpx is imported here only, when a handler first calls (`riddlectl[llm]`).
"""

from __future__ import annotations

import email.utils
import threading
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from riddlectl.errors import ConfigError, HandlerFailed, HandlerRefused, HandlerTimeout
from riddlectl.handlers.reply import MAX_REPLY_BYTES

if TYPE_CHECKING:
    import httpx

REFUSED = 422  # the `cmd:` handler's exit 65
QUOTED_CHARS = 300  # of an error reply's text, in a riddle's error
_SECRET_STATUSES = (401, 403, 407)


def import_httpx() -> Any:
    """httpx, or a one-line `ConfigError` naming the extra that brings it."""
    try:
        import httpx
    except ImportError:
        raise ConfigError(
            "needs httpx: pip install 'riddlectl[llm]'", where="http: and openai: handlers"
        ) from None
    return httpx


def endpoint_url(url: str, where: str, field: str | None = None) -> str:
    """`url` when it can be called: http:// or https:// with a host (and a port that is a
    number); else a `ConfigError` naming it, raised as the agent starts rather than at
    each riddle's call."""
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018  # a port that is no number raises here
    except ValueError as exc:
        raise ConfigError(f"{url!r} is not a URL: {exc}", where=where, field=field) from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ConfigError(
            f"{url!r} is not an http:// or https:// URL with a host", where=where, field=field
        )
    return url


@dataclass(frozen=True)
class Reply:
    status: int
    body: bytes
    headers: Mapping[str, str]


class Endpoint:
    """One endpoint's client: a connection pool, and a bound on the calls in flight to its
    host and port from this process (shared by every handler calling it)."""

    def __init__(self, url: str, concurrency: int, secrets: Iterable[str] = ()) -> None:
        httpx = import_httpx()
        self.url = url
        self.secrets = tuple(s for s in secrets if s)
        self.slots = _slots(url, concurrency)
        self.client = httpx.Client(follow_redirects=False)

    def post(
        self, who: str, body: bytes, headers: Mapping[str, str], timeout: float, url: str = ""
    ) -> Reply:
        """POST `body` (JSON); the reply, or the error its status means (see the module)."""
        deadline = time.monotonic() + timeout
        if not self.slots.acquire(timeout=timeout):
            raise HandlerTimeout(f"{who} timed out after {timeout:g} s waiting for a free slot")
        try:
            reply = self._send(who, url or self.url, body, headers, deadline, timeout)
        finally:
            self.slots.release()
        check_status(who, reply, self.secrets)
        return reply

    def _send(
        self,
        who: str,
        url: str,
        body: bytes,
        headers: Mapping[str, str],
        deadline: float,
        timeout: float,
    ) -> Reply:
        httpx = import_httpx()
        sent = {"content-type": "application/json", **headers}
        try:
            with self.client.stream(
                "POST", url, content=body, headers=sent, timeout=max(0.001, timeout)
            ) as response:
                data = _read_bounded(who, response, deadline, timeout)
                return Reply(response.status_code, data, dict(response.headers))
        except httpx.TimeoutException:
            raise HandlerTimeout(f"{who} timed out after {timeout:g} s") from None
        except httpx.HTTPError as exc:
            reason = redact(str(exc) or type(exc).__name__, self.secrets)
            raise HandlerFailed(f"{who}: connection failed: {reason}") from None


def _read_bounded(who: str, response: httpx.Response, deadline: float, timeout: float) -> bytes:
    """The reply's body, streamed: past `MAX_REPLY_BYTES` or the deadline it is refused
    without reading the rest, so a huge or endless reply costs no more than the bound."""
    declared = response.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > MAX_REPLY_BYTES:
        raise HandlerFailed(f"{who} replied with {declared} bytes, over {MAX_REPLY_BYTES}")
    data = bytearray()
    for chunk in response.iter_bytes():
        if len(data) + len(chunk) > MAX_REPLY_BYTES:
            raise HandlerFailed(f"{who} replied with over {MAX_REPLY_BYTES} bytes")
        if time.monotonic() > deadline:
            raise HandlerTimeout(f"{who} timed out after {timeout:g} s")
        data += chunk
    return bytes(data)


def check_status(who: str, reply: Reply, secrets: Iterable[str] = ()) -> None:
    """Nothing for a 2xx; else the error the status means, quoting the reply (redacted)."""
    status = reply.status
    if 200 <= status < 300:
        return
    quoted = "" if status in _SECRET_STATUSES else _quote(reply.body, secrets)
    if status == REFUSED:
        raise HandlerRefused(f"{who} refused the riddle (HTTP 422){quoted}")
    retry_after = parse_retry_after(reply.headers.get("retry-after"))
    raise HandlerFailed(f"{who} answered HTTP {status}{quoted}", retry_after=retry_after)


def parse_retry_after(value: str | None, now: float | None = None) -> float | None:
    """Seconds to wait from a `Retry-After` header: a number of seconds or an HTTP date."""
    if not value:
        return None
    value = value.strip()
    if value.isdigit():
        return float(value)
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - (time.time() if now is None else now))


def redact(text: str, secrets: Iterable[str]) -> str:
    for secret in secrets:
        if secret:
            text = text.replace(secret, "[redacted]")
    return text


def _quote(body: bytes, secrets: Iterable[str]) -> str:
    text = " ".join(body[: QUOTED_CHARS * 4].decode("utf-8", "replace").split())
    text = redact(text, secrets)[:QUOTED_CHARS]
    return f": {text}" if text else ""


_slots_lock = threading.Lock()
_slots_by_endpoint: dict[tuple[str, str, int | None], threading.BoundedSemaphore] = {}


def _slots(url: str, concurrency: int) -> threading.BoundedSemaphore:
    parts = urlsplit(url)
    key = (parts.scheme, parts.hostname or "", parts.port)
    with _slots_lock:
        slots = _slots_by_endpoint.get(key)
        if slots is None:
            slots = _slots_by_endpoint[key] = threading.BoundedSemaphore(concurrency)
        return slots
