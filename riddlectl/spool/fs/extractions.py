"""The content-addressed extraction cache: `cache/extractions/` in the spool root.

An extraction is keyed by the SHA-256 of the file's content and the extractor's name and
version (its identity: see `handlers`), so the same content is extracted once for any
number of riddles, and again when the file or the extractor changes. Its file is
`<sha256 of the content>.<12 hex digits of the extractor's name and version>.json`.
Making one is serialised by a lock per key, so two agents extracting the same content at
once still call the extractor once.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import time
from collections import OrderedDict
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson

from riddlectl import inflight
from riddlectl.spool.fs import atomic
from riddlectl.spool.fs.locks import Lock

SCHEMA_VERSION = 1
MAKE_WAIT = 600.0  # seconds to wait for another agent making the same extraction
KEPT = 1024  # extractions (and data file keys) kept in memory per store
SETTLED = 1.0  # seconds a data file must be unchanged before its key is remembered
# A path this store wrote: content-addressed, so what it holds never changes.
OWN_PATH = re.compile(r"cache/extractions/[0-9a-f]{64}\.[0-9a-f]{12}\.json")


class ExtractionStore:
    def __init__(self, spool_root: Path, *, durable: bool = True) -> None:
        self.root = Path(spool_root)
        self.dir = self.root / "cache" / "extractions"
        self.durable = durable
        self._kept: OrderedDict[str, bytes] = OrderedDict()
        self._file_keys: OrderedDict[tuple[Any, ...], str] = OrderedDict()

    def key(self, content: bytes, extractor: str, version: str) -> str:
        digest = hashlib.sha256(content).hexdigest()
        who = hashlib.sha256(f"{extractor}\0{version}".encode()).hexdigest()[:12]
        return f"{digest}.{who}"

    def file_key(self, info: os.stat_result, extractor: str, version: str) -> str | None:
        """The key of a data file's content, if this store saw the file as it is now."""
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

    def relative(self, key: str) -> str:
        return f"cache/extractions/{key}.json"

    def get_or_make(self, key: str, make: Callable[[], dict[str, Any]]) -> str:
        """The extraction's path relative to the spool root, calling `make` only on a miss.

        Looked for on disk, not in memory: `riddlectl cache clear` may have dropped it.
        """
        path = self.dir / f"{key}.json"
        if os.path.exists(f"{self.dir}/{key}.json"):
            return self.relative(key)
        self.dir.mkdir(parents=True, exist_ok=True)
        lock = Lock(self.dir / f"{key}.lock")
        # Another handler call is making it (maybe hung): waiting behind it counts as a
        # slow call, so that this worker's other riddles move on meanwhile.
        if not lock.try_acquire() and not inflight.wait_for(
            f"extraction {key}", lambda seconds: lock.acquire(timeout=seconds), MAKE_WAIT
        ):
            raise TimeoutError(f"extraction {key} is still being made by another agent")
        try:
            if not path.exists():
                tmp_dir = self.root / "tmp"
                tmp_dir.mkdir(parents=True, exist_ok=True)
                atomic.write(path, orjson.dumps(make()), tmp_dir, durable=self.durable)
        finally:
            lock.release()
        return self.relative(key)

    def load(self, relative: str | None) -> dict[str, Any] | None:
        """An extraction by its `file_extracted` path; None when absent or unreadable."""
        if not relative:
            return None
        raw = self._kept.get(relative)
        if raw is None:
            raw = self._read(relative)
            if raw is None:
                return None
            if OWN_PATH.fullmatch(relative):
                self._kept[relative] = raw
                if len(self._kept) > KEPT:
                    self._kept.popitem(last=False)
        try:
            value = orjson.loads(raw)
        except orjson.JSONDecodeError:
            return None
        return value if isinstance(value, dict) else None

    def dropped(self, relative: str | None) -> bool:
        """Whether `relative` names an extraction of this cache that is gone (cleared)."""
        if not relative or not OWN_PATH.fullmatch(relative):
            return False
        if os.path.exists(os.path.join(self.root, relative)):
            return False
        self._kept.pop(relative, None)
        return True

    def clear(self, extractor: str | None = None) -> int:
        """Delete the cached extractions (of one extractor by name); how many went.

        Safe while agents run: one that finds an extraction gone makes it again (see
        `stages`). A file being made meanwhile is written after the listing and stays.
        """
        dropped = 0
        for entry in _scan(self.dir):
            if not entry.name.endswith(".json") or not OWN_PATH.fullmatch(
                f"cache/extractions/{entry.name}"
            ):
                continue
            if extractor is not None and _extractor_of(entry.path) != extractor:
                continue
            with contextlib.suppress(FileNotFoundError):
                os.unlink(entry.path)
                dropped += 1
        self._kept.clear()
        return dropped

    def _read(self, relative: str) -> bytes | None:
        if OWN_PATH.fullmatch(relative):
            path = os.path.join(self.root, relative)  # nothing in the name can lead out
        else:  # written by someone else: it must not lead out of the spool
            root = os.path.realpath(self.root)
            path = os.path.realpath(os.path.join(root, relative))
            if not path.startswith(root + os.sep):
                return None
        try:
            with open(path, "rb") as handle:
                return handle.read()
        except OSError:
            return None


def _scan(directory: Path) -> list[os.DirEntry[str]]:
    try:
        with os.scandir(directory) as entries:
            return list(entries)
    except FileNotFoundError:
        return []


def _extractor_of(path: str) -> str | None:
    try:
        with open(path, "rb") as handle:
            value = orjson.loads(handle.read())
    except (OSError, orjson.JSONDecodeError):
        return None
    return value.get("extractor") if isinstance(value, dict) else None


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


def envelope(
    source: str, content: bytes, extractor: str, version: str, found: dict[str, Any]
) -> dict[str, Any]:
    """One extraction schema for every extractor: where it came from, then what was found.

    The handler's own fields come after these, and cannot replace them: the cache is
    cleared by the `extractor` recorded here.
    """
    head = {
        "schema": SCHEMA_VERSION,
        "source": source,
        "sha256": hashlib.sha256(content).hexdigest(),
        "extractor": extractor,
        "version": version,
    }
    return {**head, **{k: v for k, v in found.items() if k not in head}}
