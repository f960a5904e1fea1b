"""The server's safety rules, applied to every request before any route sees it.

- **Token**: when the server has one, every request carries it: `Authorization: Bearer
  T` (the scheme in any case), or the cookie a browser gets by opening any page once
  with `?token=T`.
- **Trusted hosts**: the `Host` header must name the server (loopback names, the
  `--host` given, `--allow-host` names), so that a page on another site that rebinds its
  DNS name to this machine cannot read or act on it.
- **Same origin for state changes**: every request that changes state is a POST (no route
  changes anything on GET), and a POST from a browser must come from the server's own
  pages: `Sec-Fetch-Site: same-origin` (or `none`), and an `Origin`, when one is sent,
  equal to the server's (a foreign `Origin` is refused whatever `Sec-Fetch-Site` says).
  A request with neither header is not a browser's (curl, scripts) and is let through,
  as a cross-site page cannot send one.
- **Read-only**: every POST that changes state is refused (the preview of the form is not
  one).
- **Headers**: a strict Content-Security-Policy (scripts and styles from the server only,
  no inline script, no eval), no framing, no sniffing, no referrer to other sites.
"""

from __future__ import annotations

import hmac
import ipaddress
import time
from collections.abc import Awaitable, Callable, MutableMapping
from dataclasses import dataclass, field
from http.cookies import SimpleCookie
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit

import orjson

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
App = Callable[[Scope, Receive, Send], Awaitable[None]]

COOKIE = "riddlectl_token"
LOOPBACK_NAMES = frozenset({"localhost", "127.0.0.1", "::1"})
WILDCARDS = frozenset({"0.0.0.0", "::", ""})
# POSTs that change nothing, allowed in read-only mode.
READ_ONLY_POSTS = frozenset({("POST", "/app/preview")})
CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
)
HEADERS = [
    (b"content-security-policy", CSP.encode()),
    (b"x-content-type-options", b"nosniff"),
    (b"x-frame-options", b"DENY"),
    (b"referrer-policy", b"same-origin"),
    (b"cross-origin-opener-policy", b"same-origin"),
    (b"cross-origin-resource-policy", b"same-origin"),
]


def is_loopback(host: str) -> bool:
    """Whether binding to `host` keeps the server on this machine."""
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


@dataclass(frozen=True)
class Guard:
    """The rules of one server: its token, the host names it answers to, read-only."""

    host: str = "127.0.0.1"
    token: str | None = None
    read_only: bool = False
    allow_hosts: tuple[str, ...] = ()
    names: frozenset[str] = field(init=False)

    def __post_init__(self) -> None:
        names = set(LOOPBACK_NAMES) | {h.lower().strip("[]") for h in self.allow_hosts}
        if self.host not in WILDCARDS:
            names.add(self.host.lower().strip("[]"))
        object.__setattr__(self, "names", frozenset(names))

    def trusts(self, host_header: str) -> bool:
        name = _hostname(host_header)
        if name in self.names:
            return True
        # Bound to every address with a token and no names given: the token protects it
        # (a rebinding page cannot know it), and its names are not known here.
        return self.host in WILDCARDS and self.token is not None and not self.allow_hosts

    def authorized(self, headers: dict[str, str], query: str) -> bool:
        if self.token is None:
            return True
        given = [_bearer(headers.get("authorization", ""))]
        given.append(_cookie(headers.get("cookie", "")))
        given.append(dict(parse_qsl(query)).get("token", ""))
        return any(g and hmac.compare_digest(g.encode(), self.token.encode()) for g in given)


def same_origin(headers: dict[str, str], scheme: str) -> bool:
    """Whether a browser's request comes from this server's own pages (see the module).
    An `Origin` that is present is checked whatever `Sec-Fetch-Site` says: one header
    vouching for the request does not excuse the other naming a foreign site."""
    origin = headers.get("origin")
    if origin is not None and not _own_origin(origin, headers, scheme):
        return False
    site = headers.get("sec-fetch-site")
    if site is not None:
        return site in ("same-origin", "none")
    return True  # the server's own Origin, or not a browser (neither header)


def _own_origin(origin: str, headers: dict[str, str], scheme: str) -> bool:
    parts = urlsplit(origin)
    return parts.scheme == scheme and parts.netloc.lower() == headers.get("host", "").lower()


def _bearer(header: str) -> str:
    """The token of `Authorization: Bearer T`; the scheme's name is case-insensitive
    (RFC 9110, 11.1), so `bearer T` gives it too. Another scheme gives none."""
    scheme, _, token = header.strip().partition(" ")
    return token.strip() if scheme.lower() == "bearer" else ""


class Secure:
    """ASGI middleware enforcing a `Guard` and adding the security headers."""

    def __init__(self, app: App, guard: Guard) -> None:
        self.app = app
        self.guard = guard

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        refusal = self._refusal(scope, headers)
        if refusal is not None:
            status, text = refusal
            if scope["path"].startswith("/api/"):
                await _json_error(send, status, text)
            else:
                await _plain(send, status, f"riddlectl: {text}")
            return
        query = scope.get("query_string", b"").decode("latin-1")
        if self.guard.token and "token=" in query and scope["method"] == "GET":
            await self._set_cookie(scope, query, send)
            return
        await self.app(scope, receive, _with_headers(send, time.perf_counter()))

    def _refusal(self, scope: Scope, headers: dict[str, str]) -> tuple[int, str] | None:
        method, path = scope["method"], scope["path"]
        if not self.guard.trusts(headers.get("host", "")):
            return 421, "this server does not answer to that host name"
        query = scope.get("query_string", b"").decode("latin-1")
        if not self.guard.authorized(headers, query):
            if path.startswith("/api/"):
                return 401, "a token is needed (Authorization: Bearer TOKEN)"
            # A browser cannot send a header: it is told how to give the token once.
            return 401, (
                "a token is needed: open this page once with ?token=TOKEN at the end of "
                "its address (a cookie keeps it), or send Authorization: Bearer TOKEN"
            )
        if method in ("GET", "HEAD", "OPTIONS"):
            return None
        # Any other method is held to the rules of a change; the routes then answer all
        # but POST with 405 (and the methods they take).
        if not same_origin(headers, scope.get("scheme", "http")):
            return 403, "refused: a cross-site request may not change anything"
        if self.guard.read_only and (method, path) not in READ_ONLY_POSTS:
            return 403, "refused: this server is read-only"
        return None

    async def _set_cookie(self, scope: Scope, query: str, send: Send) -> None:
        """`?token=T` on a page: keep it in a cookie, and go to the page without it (so
        the token leaves the address bar and the history)."""
        rest = urlencode([(k, v) for k, v in parse_qsl(query) if k != "token"])
        location = scope["path"] + (f"?{rest}" if rest else "")
        cookie = f"{COOKIE}={self.guard.token}; Path=/; HttpOnly; SameSite=Strict"
        await send(
            {
                "type": "http.response.start",
                "status": 303,
                "headers": [
                    (b"location", location.encode("latin-1")),
                    (b"set-cookie", cookie.encode("latin-1")),
                    *HEADERS,
                ],
            }
        )
        await send({"type": "http.response.body", "body": b""})


def _with_headers(send: Send, started: float) -> Send:
    """The security headers, and `Server-Timing` (how long the server took to start the
    response: what `riddlectl bench --web` reports)."""

    async def sending(message: Message) -> None:
        if message["type"] == "http.response.start":
            took = (time.perf_counter() - started) * 1000
            timing = (b"server-timing", f"app;dur={took:.2f}".encode())
            message["headers"] = [*message.get("headers", []), *HEADERS, timing]
        await send(message)

    return sending


async def _plain(send: Send, status: int, text: str) -> None:
    body = (text + "\n").encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [(b"content-type", b"text/plain; charset=utf-8"), *HEADERS],
        }
    )
    await send({"type": "http.response.body", "body": body})


async def _json_error(send: Send, status: int, text: str) -> None:
    """A refusal under `/api/`, in the API's error format (`{"error", "where", "field"}`)."""
    body = orjson.dumps({"error": text, "where": None, "field": None})
    extra = [(b"www-authenticate", b"Bearer")] if status == 401 else []
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [(b"content-type", b"application/json"), *extra, *HEADERS],
        }
    )
    await send({"type": "http.response.body", "body": body})


def _hostname(host_header: str) -> str:
    host = host_header.strip().lower()
    if host.startswith("["):
        return host[1 : host.find("]")] if "]" in host else host
    return host.rsplit(":", 1)[0] if host.count(":") == 1 else host


def _cookie(header: str) -> str:
    jar: SimpleCookie = SimpleCookie()
    try:
        jar.load(header)
    except Exception:  # a malformed cookie header is no token
        return ""
    morsel = jar.get(COOKIE)
    return morsel.value if morsel is not None else ""
