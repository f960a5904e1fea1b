"""The extraction cache a spool keeps: what extractors found in data files, by content.

An extraction is keyed by the SHA-256 of the file's content and the extractor's name and
version (its identity: see `handlers`), so the same content is extracted once for any
number of riddles, and again when the file or the extractor changes. A riddle names its
extractions in `file_extracted` by reference, `cache/extractions/<key>.json` (the path
in a filesystem spool's root). Making one is serialised per key, so two agents
extracting the same content at once still call the extractor once.

The filesystem spool keeps them in `cache/extractions/` (see `fs/extractions.py`); the
in-memory twin in a dict.
"""

from __future__ import annotations

import abc
import hashlib
import os
import re
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import orjson

SCHEMA_VERSION = 1
KEPT = 1024  # data file keys remembered per cache
SETTLED = 1.0  # seconds a data file must be unchanged before its key is remembered
# A reference this cache made: content-addressed, so what it names never changes. Its
# group is the key.
OWN_PATH = re.compile(r"cache/extractions/([0-9a-f]{64}\.[0-9a-f]{12})\.json")


class ExtractionCache(abc.ABC):
    def __init__(self) -> None:
        self._file_keys: OrderedDict[tuple[Any, ...], str] = OrderedDict()

    def key(self, content: bytes, extractor: str, version: str) -> str:
        """`<sha256 of the content>.<12 hex digits of the extractor's name and version>`."""
        return self.key_of_digest(hashlib.sha256(content).hexdigest(), extractor, version)

    def key_of_digest(self, digest: str, extractor: str, version: str) -> str:
        """`key` of a content whose SHA-256 (hex) is `digest`."""
        who = hashlib.sha256(f"{extractor}\0{version}".encode()).hexdigest()[:12]
        return f"{digest}.{who}"

    def reference(self, key: str) -> str:
        """What a riddle's `file_extracted` holds for the extraction `key`."""
        return f"cache/extractions/{key}.json"

    def file_key(self, info: os.stat_result, extractor: str, version: str) -> str | None:
        """The key of a data file's content, if this cache saw the file as it is now."""
        return self._file_keys.get(_identity(info, extractor, version))

    def note_file_key(self, info: os.stat_result, extractor: str, version: str, key: str) -> None:
        """Remember `key` for the file `info` describes, so it is not read and hashed again.

        As `make` and git do: a file modified within a clock tick of its last change could
        keep its size and times, so only files unchanged for `SETTLED` seconds are noted.
        """
        if time.time() - max(info.st_mtime, info.st_ctime) < SETTLED:
            return
        self._file_keys[_identity(info, extractor, version)] = key
        if len(self._file_keys) > KEPT:
            self._file_keys.popitem(last=False)

    @abc.abstractmethod
    def get_or_make(self, key: str, make: Callable[[], dict[str, Any]]) -> str:
        """The extraction's reference, calling `make` only when the cache lacks it (once
        for any number of callers asking at the same time). `TimeoutError` when another
        agent has been making it for too long."""

    def get_or_make_many(
        self, wanted: Iterable[tuple[str, Callable[[], dict[str, Any]]]]
    ) -> list[str]:
        """`get_or_make` of each (key, make) of `wanted`, in order. Here one at a time,
        so that an iterator's items (and the content they hold) come one by one; a cache
        kept elsewhere takes them all first and looks for them in one query."""
        return [self.get_or_make(key, make) for key, make in wanted]

    @abc.abstractmethod
    def load(self, reference: str | None) -> dict[str, Any] | None:
        """An extraction by its reference; None when there is none, or it is gone or
        unreadable."""

    @abc.abstractmethod
    def dropped(self, reference: str | None) -> bool:
        """Whether `reference` names an extraction this cache made that is gone (cleared)."""

    def dropped_of(self, references: Sequence[str | None]) -> list[bool]:
        """`dropped` of each of `references`, in order: a cache kept elsewhere answers all
        in one look."""
        return [self.dropped(reference) for reference in references]

    @abc.abstractmethod
    def clear(self, extractor: str | None = None) -> int:
        """Drop the cached extractions (of one extractor by name); how many went. Safe
        while agents run: one that finds an extraction gone makes it again."""


def object_of(raw: bytes) -> dict[str, Any] | None:
    """A stored extraction's JSON object; None when it is not one (damaged, say)."""
    try:
        value = orjson.loads(raw)
    except orjson.JSONDecodeError:
        return None
    return value if isinstance(value, dict) else None


def _identity(info: os.stat_result, extractor: str, version: str) -> tuple[Any, ...]:
    return (
        info.st_dev,
        info.st_ino,
        info.st_size,
        info.st_mtime_ns,
        info.st_ctime_ns,
        extractor,
        version,
    )


def envelope(content: bytes, extractor: str, version: str, found: dict[str, Any]) -> dict[str, Any]:
    """One extraction schema for every extractor: what it came from, then what was found.

    The handler's own fields come after these, and cannot replace them: the cache is
    cleared by the `extractor` recorded here. What is stored is shared by every riddle
    whose file has this content, so it holds nothing of one riddle's: each sees its own
    file's path as `source` (`seen_by`).
    """
    head = {
        "schema": SCHEMA_VERSION,
        "sha256": hashlib.sha256(content).hexdigest(),
        "extractor": extractor,
        "version": version,
    }
    return {**head, **{k: v for k, v in found.items() if k not in (*head, "source")}}


def seen_by(extraction: dict[str, Any] | None, source: str) -> dict[str, Any] | None:
    """A stored extraction as the riddle whose data file `source` it was made from sees
    it: with `source`, its own path, after `schema` (one stored before paths were kept out
    of the cache loses the path of the riddle that made it)."""
    if extraction is None:
        return None
    rest = {k: v for k, v in extraction.items() if k not in ("schema", "source")}
    head = {"schema": extraction["schema"]} if "schema" in extraction else {}
    return {**head, "source": source, **rest}
