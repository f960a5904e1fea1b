"""What a handler is: a callable taking one `Job` and returning a JSON-able dict (or None).

- extract: the extraction of `job.item_path` (called once per data item);
- solve: `{"solution", "explanation", "used_data"}`, `{"sub_riddles": [...]}`, or
  `{}`/None to decline;
- validate: `{"accept": bool, "review": str}`.

It raises `HandlerRefused` when the riddle cannot be handled and retrying would not help;
any other exception is an error that is retried. An extract handler may carry a `types`
attribute (the data types it supports; all when absent). Handlers are found by name in
`registry`.
"""

from __future__ import annotations

import hashlib
import os
import stat
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

from riddlectl.document.model import Riddle


@dataclass
class Job:
    """What a handler gets: the riddle and where things are."""

    riddle: Riddle
    stage: str
    # The data directory, or what makes it: a spool keeping the files makes a local copy
    # only for a handler that asks for it (`data_dir`).
    data_place: Path | Callable[[], Path]
    # The spool's directory on this machine; None for a spool that is none (a database).
    spool_root: Path | None
    timeout: float = 60.0
    item_index: int | None = None  # extract only
    item_path: Path | None = None  # extract only
    extractions: list[dict[str, Any] | None] = field(default_factory=list)  # solve, validate
    spool_name: str = ""  # how output names the spool (a URL without its password)

    @property
    def data_dir(self) -> Path:
        """The directory the riddle's data files are in, by their `file_plain` paths."""
        if not isinstance(self.data_place, Path):
            self.data_place = self.data_place()
        return self.data_place


HandlerFn = Callable[[Job], "dict[str, Any] | None"]


@dataclass(frozen=True)
class NamedHandler:
    name: str
    fn: HandlerFn
    types: frozenset[str] | None = None
    version: str = "1"

    def supports(self, item_type: str) -> bool:
        return self.types is None or item_type in self.types

    def __call__(self, job: Job) -> dict[str, Any] | None:
        return self.fn(job)

    def identity(self, riddle: Riddle | None = None) -> str:
        """The version the extraction cache is keyed by: what this handler runs now, and
        (for a handler with a `riddle_version(riddle)` method, whose extraction depends on
        the riddle as well as the file) what of `riddle` it depends on."""
        current = getattr(self.fn, "current_version", None)
        found = str(current()) if callable(current) else self.version
        for_riddle = getattr(self.fn, "riddle_version", None)
        if riddle is not None and callable(for_riddle):
            found = f"{found}+{for_riddle(riddle)}"
        return found


SETTLED = 1.0  # seconds a file must be unchanged before its digest is remembered
_digests: dict[tuple[Any, ...], str] = {}


def file_digest(path: str) -> str | None:
    """The SHA-256 of a regular file's content; None when it cannot be read.

    Hashed once per version of the file: the digest is remembered by path, inode, size and
    times (as `make` and git do, only once the file has been unchanged for a second).
    """
    try:
        info = os.stat(path)
    except OSError:
        return None
    if not stat.S_ISREG(info.st_mode):
        return None
    seen = (path, info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns, info.st_ctime_ns)
    digest = _digests.get(seen)
    if digest is not None:
        return digest
    try:
        with open(path, "rb") as handle:
            digest = hashlib.file_digest(handle, "sha256").hexdigest()
    except OSError:
        return None
    if time.time() - max(info.st_mtime, info.st_ctime) >= SETTLED:
        if len(_digests) > 1024:  # old versions of files that keep changing
            _digests.clear()
        _digests[seen] = digest
    return digest


def code_version(version: str, modules: Iterable[ModuleType]) -> str:
    """`version` and a digest of the files of `modules` (`2.5d1e07a2`): a built-in's
    identity, so that a riddlectl whose code reads files differently does not reuse an
    older one's extractions."""
    digests = [file_digest(m.__file__ or "") or "-" for m in modules]
    code = hashlib.sha256("\0".join(digests).encode()).hexdigest()[:8]
    return f"{version}.{code}"
