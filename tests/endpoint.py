"""A real HTTP server on 127.0.0.1, in a thread of the test, whose replies the test scripts:
for `http:` handlers, and for `openai:` handlers where a test needs a reply no model
would give (a key echoed back, a reply that does not fit the schema).

Each route (the request's path) answers from a list of `Scripted` replies, one per
request, the last one repeated; every request is recorded (path, headers, body).
"""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Scripted:
    status: int = 200
    body: bytes | dict[str, Any] = b"{}"
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0  # seconds before answering
    drop: bool = False  # close the connection without answering
    stream_bytes: int = 0  # this many bytes more, in 64 KiB writes, with no length given
    sent: int = 0  # bytes of the stream written before the client hung up

    def payload(self) -> bytes:
        return json.dumps(self.body).encode() if isinstance(self.body, dict) else self.body


@dataclass
class Request:
    path: str
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)


class Endpoint:
    def __init__(self) -> None:
        self.routes: dict[str, list[Scripted]] = {}
        self.requests: list[Request] = []
        self.lock = threading.Lock()
        self.in_flight = 0
        self.most_in_flight = 0  # requests being answered at once, at most
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), _handler_for(self))
        self.server.daemon_threads = True

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def route(self, path: str, *replies: Scripted) -> str:
        self.routes[path] = list(replies)
        return f"{self.url}{path}"

    def next_reply(self, path: str) -> Scripted:
        replies = self.routes.get(path) or [Scripted(404, b"no such route")]
        return replies.pop(0) if len(replies) > 1 else replies[0]

    def seen(self, path: str) -> list[Request]:
        return [r for r in self.requests if r.path == path]


def _handler_for(endpoint: Endpoint) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:
            pass

        def do_POST(self) -> None:
            with endpoint.lock:
                endpoint.in_flight += 1
                endpoint.most_in_flight = max(endpoint.most_in_flight, endpoint.in_flight)
            self.counted = True
            try:
                self._answer()
            finally:
                self._answered()

        def _answered(self) -> None:
            # Counted out before the reply is sent: a client that gets its reply frees its
            # slot and may send the next request before this thread would run again.
            if self.counted:
                self.counted = False
                with endpoint.lock:
                    endpoint.in_flight -= 1

        def _answer(self) -> None:
            length = int(self.headers.get("content-length") or 0)
            body = self.rfile.read(length)
            headers = {k.lower(): v for k, v in self.headers.items()}
            with endpoint.lock:
                endpoint.requests.append(Request(self.path, headers, body))
                reply = endpoint.next_reply(self.path)
            time.sleep(reply.delay)
            self._answered()
            if reply.drop:
                self.connection.shutdown(socket.SHUT_RDWR)
                self.close_connection = True
                return
            self.send_response(reply.status)
            for name, value in reply.headers.items():
                self.send_header(name, value)
            if reply.stream_bytes:
                self._stream(reply)
                return
            payload = reply.payload()
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        def _stream(self, reply: Scripted) -> None:
            # No length: the body ends when the connection closes, so only reading it
            # all tells its size.
            self.send_header("connection", "close")
            self.end_headers()
            self.close_connection = True
            block = b" " * 65536
            try:
                while reply.sent < reply.stream_bytes:
                    self.wfile.write(block)
                    reply.sent += len(block)
            except OSError:
                pass  # the client hung up: what the test wants

    return Handler


@contextmanager
def serving() -> Iterator[Endpoint]:
    endpoint = Endpoint()
    thread = threading.Thread(target=endpoint.server.serve_forever, daemon=True)
    thread.start()
    try:
        yield endpoint
    finally:
        endpoint.server.shutdown()
        endpoint.server.server_close()


def completion(content: Any, model: str = "scripted", finish: str = "stop") -> dict[str, Any]:
    """A chat-completions reply whose message is `content` (JSON-encoded unless a str)."""
    text = content if isinstance(content, str) else json.dumps(content)
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "model": model,
        "choices": [
            {"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": finish}
        ],
        "usage": {"prompt_tokens": 11, "completion_tokens": 7, "total_tokens": 18},
    }


class Proxy:
    """A logging proxy in front of a real server: every POST is forwarded unchanged and
    recorded, so that a test can read what the server was asked (a prompt, a schema)."""

    def __init__(self, target: str) -> None:
        self.target = target.rstrip("/")
        self.requests: list[Request] = []
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), _proxy_handler_for(self))
        self.server.daemon_threads = True

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def prompts(self) -> list[str]:
        """The last message of each chat-completions request, in order."""
        return [r.json()["messages"][-1]["content"] for r in self.requests]


def _proxy_handler_for(proxy: Proxy) -> type[BaseHTTPRequestHandler]:
    import httpx

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:
            pass

        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("content-length") or 0))
            headers = {k.lower(): v for k, v in self.headers.items()}
            proxy.requests.append(Request(self.path, headers, body))
            try:
                answer = httpx.post(
                    proxy.target + self.path,
                    content=body,
                    headers={"content-type": "application/json"},
                    timeout=600,
                )
                status, payload = answer.status_code, answer.content
            except httpx.HTTPError as exc:
                status, payload = 502, str(exc).encode()
            self.send_response(status)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

    return Handler


@contextmanager
def proxying(target: str) -> Iterator[Proxy]:
    proxy = Proxy(target)
    thread = threading.Thread(target=proxy.server.serve_forever, daemon=True)
    thread.start()
    try:
        yield proxy
    finally:
        proxy.server.shutdown()
        proxy.server.server_close()
