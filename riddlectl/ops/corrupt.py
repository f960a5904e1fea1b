"""The files set aside as no riddle (`corrupt/`): list them, show one, drop them, or
submit one again, as it is or corrected (`riddlectl corrupt …` and `/app/corrupt`).

A file submitted again is checked by `submit`'s own code (`ops.submit.prepare`), so an
error names the line or field at fault exactly as `submit` would; it becomes a riddle
like any other, and the set-aside file goes once the riddle is stored. A document
without an `id` takes the file's name less its extension, as a file dropped into
`incoming/` does.
"""

from __future__ import annotations

import contextlib
from typing import Any

from riddlectl.errors import UnknownRiddle
from riddlectl.ops import submit as submitting
from riddlectl.pipeline.jobs import Pipeline
from riddlectl.settings import Settings
from riddlectl.spool.contract import Spool
from riddlectl.spool.dropins import drop_in_stem

PLACE = "corrupt"  # how errors name a set-aside file: corrupt/NAME


def listing(spool: Spool) -> list[dict[str, Any]]:
    """Each set-aside file: its name, the reason, its size in bytes."""
    try:
        found = spool.corrupt_files()
    except FileNotFoundError:  # a spool made by hand, without corrupt/
        return []
    out = []
    for entry in found:
        content = spool.corrupt_content(entry.name)
        size = len(content) if content is not None else 0
        out.append({"name": entry.name, "reason": entry.reason, "bytes": size})
    return out


def reason_of(spool: Spool, name: str) -> str:
    for entry in spool.corrupt_files():
        if entry.name == name:
            return entry.reason
    return ""


def content(spool: Spool, name: str) -> bytes:
    """The bytes of the set-aside file `name`; `UnknownRiddle` (exit 3) when none."""
    found = spool.corrupt_content(name)
    if found is None:
        raise UnknownRiddle("no such file set aside", where=f"{PLACE}/{name}")
    return found


def drop(spool: Spool, names: list[str]) -> list[str]:
    """Delete the set-aside files `names`, all or none: every name is checked first."""
    names = list(dict.fromkeys(names))
    for name in names:
        content(spool, name)
    for name in names:
        try:
            spool.drop_corrupt(name)
        except FileNotFoundError:
            continue  # dropped meanwhile by someone else: gone either way
    return names


def check(spool: Spool, settings: Settings, name: str, raw: bytes | None = None) -> list[Any]:
    """The riddles the set-aside file `name` would become, its own bytes or `raw` in
    their place, checked as `submit` checks; nothing is stored. `UnknownRiddle` when there
    is no such file, `InvalidDocument`/`InvalidData` (exit 2) for the first problem."""
    stored = content(spool, name)
    where = f"{PLACE}/{name}"
    parsed = submitting.parse_sources([submitting.Source(where, stored if raw is None else raw)])
    stem = drop_in_stem(name)
    if stem is not None and len(parsed) == 1:
        doc = parsed[0][1]
        if isinstance(doc, dict) and "id" not in doc:
            parsed = [(parsed[0][0], {**doc, "id": stem})]
    riddles = submitting.prepare(parsed, settings)
    spool.refuse_duplicates(riddles)
    return riddles


def resubmit(
    pipeline: Pipeline, settings: Settings, name: str, raw: bytes | None = None
) -> list[str]:
    """Submit the set-aside file `name` again (corrected: `raw`), then drop it; the new
    riddles' ids. Nothing changes when it is refused."""
    riddles = check(pipeline.spool, settings, name, raw)
    ids = submitting.submit(pipeline, riddles)
    with contextlib.suppress(FileNotFoundError):  # dropped meanwhile: the riddle stands
        pipeline.spool.drop_corrupt(name)
    return ids
