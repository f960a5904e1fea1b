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

from riddlectl.entries import shown
from riddlectl.errors import InvalidDocument, UnknownRiddle
from riddlectl.ops import submit as submitting
from riddlectl.pipeline.jobs import Pipeline
from riddlectl.settings import Settings
from riddlectl.spool.contract import Corrupt, Spool
from riddlectl.spool.dropins import drop_in_stem

PLACE = "corrupt"  # how errors name a set-aside file: corrupt/NAME


def listing(spool: Spool) -> list[dict[str, Any]]:
    """Each set-aside entry: its name, the reason, its size in bytes, and what it is when
    it is no regular file (`kind`: `a FIFO`, `a symbolic link`, …; None for a file). No
    entry is opened: a FIFO or a link lists as what it is."""
    try:
        found = spool.corrupt_files()
    except FileNotFoundError:  # a spool made by hand, without corrupt/
        return []
    return [
        {"name": shown(e.name), "reason": e.reason, "bytes": e.size, "kind": e.kind} for e in found
    ]


def entry(spool: Spool, name: str) -> Corrupt:
    """The set-aside entry `name` (as `listing` shows it); `UnknownRiddle` (exit 3) when
    there is none."""
    found = spool.corrupt_entry(name)
    if found is None and "\\" in name:  # a name that is no UTF-8, as `shown` prints it
        found = next((e for e in _files(spool) if shown(e.name) == name), None)
    if found is None:
        raise UnknownRiddle("no such file set aside", where=f"{PLACE}/{name}")
    return found


def _files(spool: Spool) -> list[Corrupt]:
    try:
        return spool.corrupt_files()
    except FileNotFoundError:
        return []


def reason_of(spool: Spool, name: str) -> str:
    found = spool.corrupt_entry(name)
    return found.reason if found is not None else ""


def content(spool: Spool, name: str) -> bytes:
    """The bytes of the set-aside file `name`; `UnknownRiddle` (exit 3) when none, and
    `NotShown` (exit 2) when it is no regular file: that is never opened."""
    found = entry(spool, name)
    if found.kind is not None:
        raise NotShown(found)
    raw = spool.corrupt_content(found.name)
    if raw is None:  # gone, or swapped for something else, since it was looked at
        raise UnknownRiddle("no such file set aside", where=f"{PLACE}/{name}")
    return raw


class NotShown(InvalidDocument):
    """A set-aside entry that is no regular file: said what it is, never read."""

    def __init__(self, found: Corrupt, what: str = "not shown") -> None:
        super().__init__(f"{found.kind}; {what}", where=f"{PLACE}/{shown(found.name)}")
        self.kind = found.kind


def drop(spool: Spool, names: list[str]) -> list[str]:
    """Delete the set-aside files `names`, all or none: every name is checked first."""
    names = list(dict.fromkeys(names))
    found = [entry(spool, name) for name in names]
    for each in found:
        try:
            spool.drop_corrupt(each.name)
        except FileNotFoundError:
            continue  # dropped meanwhile by someone else: gone either way
    return names


def check(
    spool: Spool, settings: Settings, name: str, raw: bytes | None = None, origin: str = ""
) -> list[Any]:
    """The riddles the set-aside file `name` would become, its own bytes or `raw` in
    their place (read from `origin`, which errors name; by default the set-aside file),
    checked as `submit` checks; nothing is stored. `UnknownRiddle` when there is no such
    file, `InvalidDocument`/`InvalidData` (exit 2) for the first problem, and `NotShown`
    for an entry that is no regular file: never read, nor submitted."""
    found = entry(spool, name)
    if found.kind is not None:
        raise NotShown(found, "not submitted")
    stored = content(spool, name) if raw is None else raw
    where = origin if raw is not None and origin else f"{PLACE}/{shown(found.name)}"
    parsed = submitting.parse_sources([submitting.Source(where, stored)])
    stem = drop_in_stem(found.name)
    if stem is not None and len(parsed) == 1:
        doc = parsed[0][1]
        if isinstance(doc, dict) and "id" not in doc:
            parsed = [(parsed[0][0], {**doc, "id": stem})]
    riddles = submitting.prepare(parsed, settings)
    spool.refuse_duplicates(riddles)
    return riddles


def resubmit(
    pipeline: Pipeline, settings: Settings, name: str, raw: bytes | None = None, origin: str = ""
) -> list[str]:
    """Submit the set-aside file `name` again (corrected: `raw`, read from `origin`), then
    drop it; the new riddles' ids. Nothing changes when it is refused."""
    found = entry(pipeline.spool, name)
    riddles = check(pipeline.spool, settings, name, raw, origin)
    ids = submitting.submit(pipeline, riddles)
    with contextlib.suppress(FileNotFoundError):  # dropped meanwhile: the riddle stands
        pipeline.spool.drop_corrupt(found.name)
    return ids
