"""The extraction cache of a filesystem spool: `cache/extractions/` in the spool root.

One file per extraction, `<key>.json` (see `spool.extractions` for the key), written
atomically; making one is serialised by a lock file per key, so two agents extracting
the same content at once still call the extractor once.
"""

from __future__ import annotations

import contextlib
import os
from collections import OrderedDict
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson

from riddlectl import inflight
from riddlectl.entries import present, read_regular
from riddlectl.spool.extractions import KEPT, OWN_PATH, ExtractionCache, object_of
from riddlectl.spool.fs import atomic
from riddlectl.spool.fs.locks import Lock

MAKE_WAIT = 600.0  # seconds to wait for another agent making the same extraction
READ_AT_MOST = 1 << 30  # bytes of an extraction read: a bound, not a limit one meets


class FsExtractionCache(ExtractionCache):
    def __init__(self, spool_root: Path, *, durable: bool = True) -> None:
        super().__init__()
        self.root = Path(spool_root)
        self.dir = self.root / "cache" / "extractions"
        self.durable = durable
        self._kept: OrderedDict[str, bytes] = OrderedDict()  # extractions read, by reference

    def get_or_make(self, key: str, make: Callable[[], dict[str, Any]]) -> str:
        # Looked for on disk, not in memory: `riddlectl cache clear` may have dropped it.
        path = self.dir / f"{key}.json"
        if os.path.exists(f"{self.dir}/{key}.json"):
            return self.reference(key)
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
        return self.reference(key)

    def load(self, reference: str | None) -> dict[str, Any] | None:
        # A reference this cache did not make is read too, as a path in the spool root.
        if not reference:
            return None
        raw = self._kept.get(reference)
        if raw is None:
            raw = self._read(reference)
            if raw is None:
                return None
            if OWN_PATH.fullmatch(reference):
                self._kept[reference] = raw
                if len(self._kept) > KEPT:
                    self._kept.popitem(last=False)
        return object_of(raw)

    def dropped(self, reference: str | None) -> bool:
        if not reference or not OWN_PATH.fullmatch(reference):
            return False
        if present(os.path.join(self.root, reference)):
            return False
        self._kept.pop(reference, None)
        return True

    def clear(self, extractor: str | None = None) -> int:
        # A file being made meanwhile is written after the listing and stays.
        dropped = 0
        for entry in _scan(self.dir):
            if not entry.name.endswith(".json") or not OWN_PATH.fullmatch(
                f"cache/extractions/{entry.name}"
            ):
                continue
            if entry.is_dir(follow_symlinks=False):  # no extraction: a person's to remove
                continue
            if extractor is not None and _extractor_of(entry.path) != extractor:
                continue
            with contextlib.suppress(FileNotFoundError):
                os.unlink(entry.path)
                dropped += 1
        self._kept.clear()
        self._drop_free_locks()
        return dropped

    def _drop_free_locks(self) -> None:
        """Remove the lock files of extractions that are gone, unless one is being made:
        taken first, so that a maker never works under a lock file removed from under it
        (`Lock` checks after taking that its file is still the one at the path)."""
        for entry in _scan(self.dir):
            key = entry.name.removesuffix(".lock")
            if key == entry.name or os.path.exists(self.dir / f"{key}.json"):
                continue
            lock = Lock(entry.path)
            with contextlib.suppress(FileNotFoundError):
                if lock.try_acquire():
                    try:
                        os.unlink(entry.path)
                    finally:
                        lock.release()

    def _read(self, reference: str) -> bytes | None:
        if OWN_PATH.fullmatch(reference):
            path = os.path.join(self.root, reference)  # nothing in the name can lead out
        else:  # written by someone else: it must not lead out of the spool
            root = os.path.realpath(self.root)
            path = os.path.realpath(os.path.join(root, reference))
            if not path.startswith(root + os.sep):
                return None
        try:  # no FIFO or link put in the cache is waited on or followed
            return read_regular(path, READ_AT_MOST)
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
        value = orjson.loads(read_regular(path, READ_AT_MOST))
    except (OSError, orjson.JSONDecodeError):
        return None
    return value.get("extractor") if isinstance(value, dict) else None
