"""The reply of an external handler, `cmd:` or `http:`: one JSON object, read bounded.

Empty means `{}` (a solver declining); anything else that is not a JSON object is an
error worth retrying, named after the handler (`who`).
"""

from __future__ import annotations

from typing import Any

import orjson

from riddlectl.errors import HandlerFailed

MAX_REPLY_BYTES = 16 * 1024 * 1024


def parse_reply(out: bytes, who: str) -> dict[str, Any]:
    """The JSON object `who` answered with; `HandlerFailed` saying what is wrong."""
    if len(out) > MAX_REPLY_BYTES:
        raise HandlerFailed(f"{who} wrote over {MAX_REPLY_BYTES} bytes")
    if not out.strip():
        return {}
    try:
        answer = orjson.loads(out)
    except orjson.JSONDecodeError as exc:
        raise HandlerFailed(f"{who} did not write a JSON object: {exc}") from None
    if not isinstance(answer, dict):
        raise HandlerFailed(f"{who} wrote JSON {type(answer).__name__}, not an object")
    return answer
