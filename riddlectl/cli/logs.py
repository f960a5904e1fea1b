"""The log lines of `run` and `agent`: one handler on stderr, text or JSON, one line an event.

The library only emits: each room logs to `logging.getLogger(__name__)` with an event name
as the message and its fields (`id`, `stage`, `agent`, `error`, …) as `extra`. Here alone
a handler is installed, on the `riddlectl` logger (not the root: the libraries below,
httpx, psycopg, watchdog, keep quiet), at the level the operator chose.

    text: 2026-12-06T22:50:51.123+00:00 WARNING riddle-failed id=r1 stage=solve agent=… error="…"
    json: {"time": "2026-12-06T22:50:51.123+00:00", "level": "warning", "event": "riddle-failed", …}
"""

from __future__ import annotations

import logging
import sys
from datetime import UTC, datetime
from typing import Any

import orjson

LEVELS = {
    "debug": logging.DEBUG,
    "info": logging.INFO,
    "warning": logging.WARNING,
    "error": logging.ERROR,
}
FORMATS = ("text", "json")
# A record's own attributes; whatever else it carries came as `extra`: the event's fields.
_OWN = set(vars(logging.LogRecord("", 0, "", 0, "", (), None))) | {"message", "asctime"}
FIRST = ("id", "stage", "agent")  # the fields every line has where they apply, in front


def fields(record: logging.LogRecord) -> dict[str, Any]:
    extra = {k: v for k, v in vars(record).items() if k not in _OWN and v is not None}
    ordered = {k: extra.pop(k) for k in FIRST if k in extra}
    return {**ordered, **extra}


def when(record: logging.LogRecord) -> str:
    return datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds")


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        line = {
            "time": when(record),
            "level": record.levelname.lower(),
            "event": record.getMessage(),
            **fields(record),
        }
        return orjson.dumps(line, default=str).decode()


class TextFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        pairs = " ".join(f"{k}={_text(v)}" for k, v in fields(record).items())
        head = f"{when(record)} {record.levelname} {record.getMessage()}"
        return f"{head} {pairs}" if pairs else head


def _text(value: Any) -> str:
    """A field's value as logfmt writes it: bare when it is one plain word, else quoted."""
    if isinstance(value, bool):
        value = "true" if value else "false"
    elif isinstance(value, list | tuple):
        value = ",".join(map(str, value)) or "-"
    elif isinstance(value, dict):
        value = " ".join(f"{k}:{_text(v)}" for k, v in value.items())
    elif isinstance(value, float):
        value = f"{value:g}"
    text = str(value)
    plain = text and not any(c.isspace() or c in '"=\\' for c in text)
    return text if plain else orjson.dumps(text).decode()


_installed: list[logging.Handler] = []


def install(level: str, form: str) -> None:
    """Send the library's events at `level` and above to stderr, one `form` line each."""
    logger = logging.getLogger("riddlectl")
    for handler in _installed:  # once per process, whatever calls it
        logger.removeHandler(handler)
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonFormatter() if form == "json" else TextFormatter())
    _installed[:] = [handler]
    logger.addHandler(handler)
    logger.setLevel(LEVELS[level])
    logger.propagate = False
