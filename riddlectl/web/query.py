"""The table's filters, as they stand in the URL, turned into one indexed query.

Pages follow each other by keyset (`after`: the sort key of the last row shown), so a
deep page costs what the first one does, and rows moving meanwhile are neither skipped
nor shown twice within one sort order.
"""

from __future__ import annotations

import base64
import time
from dataclasses import dataclass, replace
from typing import Any
from urllib.parse import urlencode

import orjson

from riddlectl.errors import InvalidDocument
from riddlectl.spool.states import Queue
from riddlectl.web.index import Index

SORTS = ("priority", "newest", "oldest")
PAGE = 50
MAX_PAGE = 500
_QUEUES = frozenset(q.value for q in Queue)
# Each sort's ORDER BY, and the keyset condition of the rows after a cursor: row values,
# which SQLite turns into a range of an index (a deep page costs what the first does).
# `rank` is minus the priority, so that the priority order ascends.
_ORDER = {
    "priority": "rank, created, id",
    "newest": "created DESC, id DESC",
    "oldest": "created, id",
}
_AFTER = {
    "priority": "(rank, created, id) > (?, ?, ?)",
    "newest": "(created, id) < (?, ?)",
    "oldest": "(created, id) > (?, ?)",
}


@dataclass(frozen=True)
class Filter:
    """What the table shows: every field is a URL parameter of the same name."""

    queue: str | None = None
    q: str = ""
    trial: int | None = None
    solved: bool | None = None
    parent: str | None = None
    min_age: float | None = None  # seconds since creation, at least
    max_age: float | None = None  # at most
    sort: str = "priority"
    after: str | None = None
    limit: int = PAGE

    def params(self, **changes: Any) -> str:
        """The query string of this filter (with `changes`), for links and bookmarks."""
        chosen = replace(self, **changes)
        pairs = {
            "queue": chosen.queue,
            "q": chosen.q or None,
            "trial": chosen.trial,
            "solved": None if chosen.solved is None else str(chosen.solved).lower(),
            "parent": chosen.parent,
            "min_age": _seconds(chosen.min_age),
            "max_age": _seconds(chosen.max_age),
            "sort": None if chosen.sort == "priority" else chosen.sort,
            "after": chosen.after,
            "limit": None if chosen.limit == PAGE else chosen.limit,
        }
        return urlencode({k: v for k, v in pairs.items() if v is not None})


def parse(values: dict[str, str]) -> Filter:
    """A filter from URL parameters; `InvalidDocument` naming the parameter at fault."""
    from riddlectl.ops.admin import parse_duration

    def get(name: str) -> str | None:
        value = (values.get(name) or "").strip()
        return value or None

    queue = get("queue")
    if queue is not None and queue not in _QUEUES:
        raise InvalidDocument(f"unknown queue {queue!r}", where="queue")
    sort = get("sort") or "priority"
    if sort not in SORTS:
        raise InvalidDocument(f"expected one of {', '.join(SORTS)}", where="sort")
    solved = get("solved")
    if solved not in (None, "true", "false"):
        raise InvalidDocument("expected true or false", where="solved")
    ages: dict[str, float | None] = {}
    for name in ("min_age", "max_age"):
        text = get(name)
        try:
            ages[name] = None if text is None else parse_duration(text)
        except (ValueError, OverflowError):
            raise InvalidDocument("expected a duration like 30m, 12h, 7d", where=name) from None
    after = get("after")
    if after is not None:
        _cursor(after, sort)
    return Filter(
        queue=queue,
        q=(values.get("q") or "").strip()[:200],
        trial=_int(get("trial"), "trial", 0, 10**6),
        solved=None if solved is None else solved == "true",
        parent=get("parent"),
        min_age=ages["min_age"],
        max_age=ages["max_age"],
        sort=sort,
        after=after,
        limit=_int(get("limit"), "limit", 1, MAX_PAGE) or PAGE,
    )


def where(chosen: Filter, now: float | None = None) -> tuple[str, list[Any]]:
    """The WHERE clause (without keyset) of a filter, and its parameters."""
    now = time.time() if now is None else now
    clauses: list[str] = ["1"]
    params: list[Any] = []
    simple = (("queue = ?", chosen.queue), ("trial = ?", chosen.trial))
    for clause, value in (*simple, ("parent_id = ?", chosen.parent)):
        if value is not None:
            clauses.append(clause)
            params.append(value)
    if chosen.solved is not None:
        clauses.append("solved = ?")
        params.append(int(chosen.solved))
    if chosen.min_age is not None:
        clauses.append("created <= ?")
        params.append(now - chosen.min_age)
    if chosen.max_age is not None:
        clauses.append("created >= ?")
        params.append(now - chosen.max_age)
    if chosen.q:
        text, args = _search(chosen.q)
        clauses.append(text)
        params += args
    return " AND ".join(clauses), params


def page(index: Index, chosen: Filter) -> tuple[list[dict[str, Any]], str | None]:
    """One page of rows, and the cursor of the next page (None on the last)."""
    clause, params = _from_cursor(chosen)
    sql = (
        f"SELECT * FROM riddles WHERE {clause} ORDER BY {_ORDER[chosen.sort]} "
        f"LIMIT {chosen.limit + 1}"
    )
    rows = [dict(row) for row in index.query(sql, params)]
    more = len(rows) > chosen.limit
    rows = rows[: chosen.limit]
    return rows, (cursor_of(rows[-1], chosen.sort) if more and rows else None)


def count(index: Index, chosen: Filter) -> int:
    return _count(index, *where(chosen))


def _count(index: Index, clause: str, params: list[Any]) -> int:
    return int(index.query(f"SELECT count(*) FROM riddles WHERE {clause}", params)[0][0])


def _from_cursor(chosen: Filter) -> tuple[str, list[Any]]:
    """The WHERE clause of a filter's rows from its cursor on (all of them without one)."""
    clause, params = where(chosen)
    if chosen.after is not None:
        clause += " AND " + _AFTER[chosen.sort]
        params += _cursor(chosen.after, chosen.sort)
    return clause, params


@dataclass(frozen=True)
class Span:
    """Where a page lies among the rows its filter matches: rows `first` to `last` (from
    1) of `total`; `first` is 0 when the page is empty."""

    first: int
    last: int
    total: int


def span(index: Index, chosen: Filter, shown: int) -> Span:
    """The span of a page of `shown` rows: how many rows match, and how many of them
    come before the page's cursor (a keyset page knows no offset of its own)."""
    total = count(index, chosen)
    before = 0 if chosen.after is None else total - _count(index, *_from_cursor(chosen))
    return Span(first=before + 1 if shown else 0, last=before + shown, total=total)


def matching_ids(index: Index, chosen: Filter) -> list[str]:
    """Every id the filter matches (not just one page), in its order: for bulk actions."""
    clause, params = where(chosen)
    sql = f"SELECT id FROM riddles WHERE {clause} ORDER BY {_ORDER[chosen.sort]}"
    return [row[0] for row in index.query(sql, params)]


def cursor_of(row: dict[str, Any], sort: str) -> str:
    key = (
        [row["priority"], row["created"], row["id"]]
        if sort == "priority"
        else [row["created"], row["id"]]
    )
    return base64.urlsafe_b64encode(orjson.dumps(key)).decode().rstrip("=")


def _cursor(text: str, sort: str) -> list[Any]:
    """The keyset parameters a cursor stands for, as `_AFTER[sort]` takes them."""
    try:
        key = orjson.loads(base64.urlsafe_b64decode(text + "=" * (-len(text) % 4)))
        if sort == "priority":
            priority, created, riddle_id = key
            parts = [-int(priority), float(created), str(riddle_id)]
        else:
            created, riddle_id = key
            parts = [float(created), str(riddle_id)]
    except (ValueError, TypeError, orjson.JSONDecodeError):
        raise InvalidDocument("not a cursor of this sort order", where="after") from None
    return parts


def _search(text: str) -> tuple[str, list[Any]]:
    """Substring search over id, question, context and error: the trigram index for 3
    characters or more, a scan below that."""
    if len(text) >= 3:
        phrase = '"' + text.replace('"', '""') + '"'
        return "rowid IN (SELECT rowid FROM texts WHERE texts MATCH ?)", [phrase]
    like = "%" + text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
    fields = ("id", "question", "context", "error")
    return "(" + " OR ".join(f"{f} LIKE ? ESCAPE '\\'" for f in fields) + ")", [like] * 4


def _int(text: str | None, name: str, low: int, high: int) -> int | None:
    if text is None:
        return None
    try:
        value = int(text)
    except ValueError:
        raise InvalidDocument("expected a whole number", where=name) from None
    if not low <= value <= high:
        raise InvalidDocument(f"expected {low} to {high}", where=name)
    return value


def _seconds(value: float | None) -> str | None:
    return None if value is None else f"{value:g}s"
