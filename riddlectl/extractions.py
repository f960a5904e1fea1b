"""The content-addressed extraction cache: `cache/extractions/` in the spool root.

An extraction is keyed by the SHA-256 of the file's content and the extractor's name and
version, so the same content is extracted once for any number of riddles, and again when
the file changes. Making one is serialised by a lock per key, so two agents extracting the
same content at once still call the extractor once.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson

from riddlectl import atomic
from riddlectl.locks import Lock

SCHEMA_VERSION = 1
MAKE_WAIT = 600.0  # seconds to wait for another agent making the same extraction


class ExtractionStore:
    def __init__(self, spool_root: Path, *, durable: bool = True) -> None:
        self.root = Path(spool_root)
        self.dir = self.root / "cache" / "extractions"
        self.durable = durable

    def key(self, content: bytes, extractor: str, version: str) -> str:
        digest = hashlib.sha256(content).hexdigest()
        who = hashlib.sha256(f"{extractor}\0{version}".encode()).hexdigest()[:12]
        return f"{digest}.{who}"

    def relative(self, key: str) -> str:
        return f"cache/extractions/{key}.json"

    def get_or_make(self, key: str, make: Callable[[], dict[str, Any]]) -> str:
        """The extraction's path relative to the spool root, calling `make` only on a miss."""
        path = self.dir / f"{key}.json"
        if path.exists():
            return self.relative(key)
        self.dir.mkdir(parents=True, exist_ok=True)
        lock = Lock(self.dir / f"{key}.lock")
        if not lock.acquire(timeout=MAKE_WAIT):
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
        path = (self.root / relative).resolve()
        if not path.is_relative_to(self.root.resolve()):
            return None
        try:
            value = orjson.loads(path.read_bytes())
        except (OSError, orjson.JSONDecodeError):
            return None
        return value if isinstance(value, dict) else None


def envelope(
    source: str, content: bytes, extractor: str, version: str, found: dict[str, Any]
) -> dict[str, Any]:
    """One extraction schema for every extractor: where it came from, then what was found."""
    return {
        "schema": SCHEMA_VERSION,
        "source": source,
        "sha256": hashlib.sha256(content).hexdigest(),
        "extractor": extractor,
        "version": version,
        **found,
    }
