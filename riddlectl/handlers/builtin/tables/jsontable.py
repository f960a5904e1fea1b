"""JSON name/value data: an object (nested keys flattened as ``a.b``), or a list of
``{"name": …, "value": …}`` records.

Numbers are read from their text, exactly (``0.1`` is 1/10, never a float); strings as
the ``text`` extractor reads a value (``"12,5"``, ``"twenty"``, ``"x + y"``), with the
decimal mark the file's strings show (:func:`cells.decimal_mark`: ``"8,884"`` is
8.884 in a file that also has ``"1.234,5"``, else 8884), or else its language's. What is no
number — ``true``, ``null``, a list inside an object, a string such as ``"Alice"``, a
number beyond the bounds of :func:`riddlectl.document.numbers.parse_number` (``1e999999``)
— goes to ``unreadable`` under its name, with why; the numbers of a list go to
``numbers``. A key that a question could not use as a name (``"total amount"``, ``"2024"``)
goes to ``skipped``, with its numbers still in ``numbers``.

Refused whole (`TableError`): JSON that does not parse (with its line and column),
nesting deeper than :data:`MAX_DEPTH`, more than :data:`cells.MAX_ROWS` values, a
key given twice in one object, a name given twice (``{"a.b": 1, "a": {"b": 2}}``), and
anything but an object or a list of records at the top.
"""

from __future__ import annotations

import contextlib
import json
from typing import Any

from riddlectl.document.numbers import parse_number
from riddlectl.handlers.builtin.tables.cells import (
    MAX_ROWS,
    NAME_WORDS,
    VALUE_WORDS,
    TableError,
    TableFacts,
    decimal_mark,
    is_name,
    language_for,
)
from riddlectl.handlers.builtin.text.facts import guess_language

__all__ = ["MAX_DEPTH", "read_json"]

#: Deepest nesting of objects and lists read.
MAX_DEPTH = 32


class _Number(str):
    """A JSON number's text, kept as written."""


class _Constant(str):
    """``NaN``, ``Infinity`` or ``-Infinity``, which Python's JSON reader allows."""


def read_json(text: str) -> TableFacts:
    """The facts of a JSON document (see the module docstring)."""
    text = text.removeprefix("\ufeff")
    try:
        data = json.loads(
            text,
            parse_float=_Number,
            parse_int=_Number,
            parse_constant=_Constant,
            object_pairs_hook=_object,
        )
    except json.JSONDecodeError as exc:
        raise TableError(f"column {exc.colno}: {exc.msg}", exc.lineno) from None
    except RecursionError:  # the parser's own bound (about 1,000 levels), met in C
        raise TableError(f"nested deeper than {MAX_DEPTH} levels") from None
    _check_depth(data)
    facts = TableFacts()
    guessed = guess_language(text)
    language = language_for(decimal_mark(_strings(data)), "," if guessed != "en" else ".", guessed)
    if isinstance(data, dict):
        _walk(data, "", facts, language, [0])
    elif isinstance(data, list):
        _records(data, facts, language)
    else:
        raise TableError("expected an object, or a list of name/value records, at the top")
    return facts


def _strings(data: Any) -> list[str]:
    """Every string value (not key) in `data`, at most `MAX_ROWS` of them."""
    found: list[str] = []
    stack = [data]
    while stack and len(found) < MAX_ROWS:
        item = stack.pop()
        if isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
        elif isinstance(item, str) and not isinstance(item, _Number | _Constant):
            found.append(item.strip())
    return found


def _check_depth(data: Any) -> None:
    """Refuse objects and lists nested deeper than `MAX_DEPTH` (walked with a stack)."""
    stack = [(data, 1)]
    while stack:
        item, depth = stack.pop()
        if not isinstance(item, dict | list):
            continue
        if depth > MAX_DEPTH:
            raise TableError(f"nested deeper than {MAX_DEPTH} levels")
        stack.extend(
            (child, depth + 1) for child in (item.values() if isinstance(item, dict) else item)
        )


def _object(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise TableError(f"key {key[:40]!r} is given twice in one object")
        out[key] = value
    return out


def _walk(value: Any, path: str, facts: TableFacts, language: str, count: list[int]) -> None:
    """Record `value` under the name `path` (objects: each key below it)."""
    if isinstance(value, dict):
        for key, inner in value.items():
            _walk(inner, f"{path}.{key}" if path else key, facts, language, count)
        return
    count[0] += 1
    if count[0] > MAX_ROWS:
        raise TableError(f"more than {MAX_ROWS} values")
    if not is_name(path):
        facts.skipped[path] = (
            "not a variable name (letters, digits and _, not starting with a digit)"
        )
        _numbers_only(value, facts)
        return
    if isinstance(value, _Number):
        try:
            facts.add_number(path, parse_number(value), path)
        except ValueError as exc:
            facts.add_unreadable(path, str(exc), path)
    elif isinstance(value, _Constant):
        facts.add_unreadable(path, f"{value} is not a number", path)
    elif isinstance(value, str):
        facts.add_text(path, value, path, language)
    elif isinstance(value, list):
        facts.add_unreadable(path, f"a list of {len(value)} item(s), not a number", path)
        _numbers_only(value, facts)
    else:  # true, false, null
        facts.add_unreadable(path, f"{json.dumps(value)} is not a number", path)


def _numbers_only(value: Any, facts: TableFacts) -> None:
    """The numbers in `value`, into `numbers` only (they have no usable name)."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, _Number):
            with contextlib.suppress(ValueError):  # unreadable: no number to list
                facts.numbers.append(parse_number(item))
        elif isinstance(item, list):
            stack.extend(reversed(item))
        elif isinstance(item, dict):
            stack.extend(reversed(list(item.values())))


def _records(items: list[Any], facts: TableFacts, language: str) -> None:
    """A list of ``{"name": "x", "value": 10}`` records (any name and value words)."""
    if len(items) > MAX_ROWS:
        raise TableError(f"more than {MAX_ROWS} values")
    for index, item in enumerate(items):
        place = f"item {index + 1}"
        keys = {key.lower(): key for key in item} if isinstance(item, dict) else {}
        name_key = next((keys[k] for k in keys if k in NAME_WORDS), None)
        value_key = next((keys[k] for k in keys if k in VALUE_WORDS), None)
        if name_key is None or value_key is None or not isinstance(item[name_key], str):
            raise TableError(f"{place}: expected an object with a name and a value")
        name, value = item[name_key].strip(), item[value_key]
        if not is_name(name):
            raise TableError(f"{place}: {name[:40]!r} is not a variable name")
        try:
            _record_value(name, value, place, facts, language)
        except TableError as exc:
            raise TableError(f"{place}: {exc}") from None


def _record_value(name: str, value: Any, place: str, facts: TableFacts, language: str) -> None:
    if isinstance(value, _Number):
        try:
            facts.add_number(name, parse_number(value), place)
        except ValueError as exc:
            facts.add_unreadable(name, str(exc), place)
    elif isinstance(value, str) and not isinstance(value, _Constant):
        facts.add_text(name, value, place, language)
    else:
        shown = (
            f"a list of {len(value)} item(s)"
            if isinstance(value, list)
            else value
            if isinstance(value, _Constant)
            else json.dumps(value)
        )
        facts.add_unreadable(name, f"{shown} is not a number", place)
