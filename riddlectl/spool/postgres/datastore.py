"""Data files kept in the PostgreSQL spool, so that agents on other hosts need no copy of
the submitter's data directory.

At submit (`PgSpool.add`), each data file a riddle names is read by the rules of
`document.datafiles` (inside the data directory, no `..`, a regular file within
`max_data_bytes`, UTF-8 for text) and stored by the SHA-256 of its content in `blobs`
(once, whatever number of riddles name it); `riddle_data` maps the riddle's paths to
contents. A file that cannot be read then is not stored: the agent looks for it in its
own data directory, and fails the riddle as it always did when it is not there either.

An agent handles a riddle with stored files in a private local directory holding them
at their paths (`LocalCopies`); handlers, `cmd:` ones included, see an ordinary data
directory (`RIDDLE_DATA`).
"""

from __future__ import annotations

import atexit
import contextlib
import hashlib
import os
import shutil
import tempfile
import threading
from collections import OrderedDict
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from riddlectl.document import datafiles
from riddlectl.errors import InvalidData
from riddlectl.identity import scratch_dir
from riddlectl.spool.contract import DataPlace
from riddlectl.spool.postgres.db import Conn, Database

if TYPE_CHECKING:
    from riddlectl.document.model import Riddle

# (riddle id, path as the riddle gives it, sha256 of the content, the content)
Kept = tuple[str, str, str, bytes]


def gather(riddles: Iterable[Riddle], data_dir: Path, max_bytes: int) -> list[Kept]:
    """The data files of `riddles` that can be read from `data_dir` now."""
    read: dict[tuple[str, str], tuple[str, bytes] | None] = {}
    kept: list[Kept] = []
    for riddle in riddles:
        for item in riddle.data:
            known = (item.file_plain, item.type)
            if known not in read:
                try:
                    path = datafiles.resolve(data_dir, item.file_plain)
                    content = datafiles.read(path, item.type, max_bytes)
                    read[known] = (hashlib.sha256(content).hexdigest(), content)
                except (InvalidData, OSError):
                    read[known] = None  # for the agent to find, or to fail on
            found = read[known]
            if found is not None:
                kept.append((riddle.id or "", item.file_plain, *found))
    return kept


def unstored(conn: Conn, kept: list[Kept]) -> dict[str, bytes]:
    """The contents of `kept` not stored yet, by SHA-256 (those stored are not sent again)."""
    contents = {sha: content for _, _, sha, content in kept}
    if not contents:
        return {}
    have = conn.execute(
        "SELECT sha256 FROM blobs WHERE sha256 = ANY(%s)", (list(contents),)
    ).fetchall()
    for (sha,) in have:
        contents.pop(sha, None)
    return contents


def named(kept: list[Kept]) -> tuple[list[str], list[str], list[str]]:
    """Which riddle names which content at which path: riddle ids, paths, SHA-256s (a
    riddle naming one path twice, once)."""
    rows = {(riddle_id, path): sha for riddle_id, path, sha, _ in kept}
    return [r for r, _ in rows], [p for _, p in rows], list(rows.values())


def forget(conn: Conn, riddle_id: str) -> None:
    """A riddle purged: its rows go, and the contents no other riddle names."""
    gone = conn.execute(
        "DELETE FROM riddle_data WHERE riddle_id = %s RETURNING sha256", (riddle_id,)
    ).fetchall()
    if gone:
        conn.execute(
            "DELETE FROM blobs b WHERE b.sha256 = ANY(%s) AND NOT EXISTS "
            "(SELECT 1 FROM riddle_data d WHERE d.sha256 = b.sha256)",
            ([sha for (sha,) in gone],),
        )


class LocalCopies:
    """The local copies of data files this process keeps, one directory per set of
    (path, content) a riddle names, so that riddles naming the same files share one and a
    riddle's next stage finds it made: the `KEEP` used last are kept, in a private
    directory removed when the process ends (and by the next one, after `kill -9`).

    Each content is fetched from the database and written once per process, into
    `.blobs/SHA256` (read-only); a directory holds hard links to those. A new set of files
    thus costs a directory and a link per file, not a query and a write per file: riddles
    mixing the same files in new ways are the common case (one file per variable)."""

    KEEP = 64
    NOTED = 1024  # claims' file lists kept for the local copy that follows
    BLOBS_KEEP = 1024  # contents kept on disk beyond those the kept directories link to

    def __init__(self) -> None:
        self._mutex = threading.Lock()
        self._views: OrderedDict[str, Path] = OrderedDict()
        self._using: dict[str, int] = {}
        self._blobs: set[str] = set()
        self._claimed: OrderedDict[str, dict[str, str]] = OrderedDict()  # by `note_files`
        self._root: Path | None = None

    @contextlib.contextmanager
    def local_copy(self, db: Database, riddle: Riddle, data_dir: Path) -> Iterator[DataPlace]:
        """Where `riddle`'s data files are read: a directory holding its stored data files
        at their paths, made or taken when first asked for, with their digests; `data_dir`
        when some of them are not stored (see the module's docstring)."""
        wanted = {item.file_plain for item in riddle.data}
        files = self._noted(riddle.id or "")
        if files is None:
            with db.session() as conn:
                rows = conn.execute(
                    "SELECT path, sha256 FROM riddle_data WHERE riddle_id = %s", (riddle.id,)
                ).fetchall()
            files = dict(rows)
        if not wanted or not wanted <= set(files):
            yield DataPlace(data_dir)
            return
        key = hashlib.sha256(repr(sorted(files.items())).encode()).hexdigest()[:32]
        used = False

        def view() -> Path:
            nonlocal used
            found = self._take(key) or self._make(db, key, files)
            used = True
            return found

        try:
            yield DataPlace(view, files)
        finally:
            if used:
                with self._mutex:
                    self._using[key] -= 1

    def note_files(self, riddle_id: str, files: dict[str, str]) -> None:
        """What a claim returned of the riddle's stored files, for its local copy."""
        with self._mutex:
            self._claimed[riddle_id] = files
            while len(self._claimed) > self.NOTED:
                self._claimed.popitem(last=False)

    def _noted(self, riddle_id: str) -> dict[str, str] | None:
        with self._mutex:
            return self._claimed.pop(riddle_id, None)

    def _take(self, key: str) -> Path | None:
        with self._mutex:
            view = self._views.get(key)
            if view is not None:
                self._views.move_to_end(key)
                self._using[key] = self._using.get(key, 0) + 1
            return view

    def _make(self, db: Database, key: str, files: dict[str, str]) -> Path:
        root = self._ensure_root()
        blobs = self._fetch(db, root, set(files.values()))
        making = Path(tempfile.mkdtemp(prefix=".making-", dir=root))
        for path, sha in files.items():
            parts = [p for p in path.split("/") if p not in ("", ".")]
            if not parts or ".." in parts or path.startswith("/") or sha not in blobs:
                continue  # never stored so: submit refuses such paths
            target = making.joinpath(*parts)
            target.parent.mkdir(parents=True, exist_ok=True)
            os.link(blobs[sha], target)
        view = root / key
        with self._mutex:
            if key in self._views:  # made by another thread meanwhile
                shutil.rmtree(making, ignore_errors=True)
            else:
                making.rename(view)
                self._views[key] = view
            self._using[key] = self._using.get(key, 0) + 1
            self._evict(root)
        return view

    def _ensure_root(self) -> Path:
        with self._mutex:
            if self._root is None:
                self._root = Path(scratch_dir("data"))
                (self._root / ".blobs").mkdir()
                atexit.register(shutil.rmtree, self._root, True)
            return self._root

    def _fetch(self, db: Database, root: Path, shas: set[str]) -> dict[str, Path]:
        """The local file of each of `shas` that is stored, fetched when not on disk yet."""
        place = root / ".blobs"
        with self._mutex:
            missing = sorted(shas - self._blobs)
        if missing:
            with db.session() as conn:
                rows = conn.execute(
                    "SELECT sha256, content FROM blobs WHERE sha256 = ANY(%s)", (missing,)
                ).fetchall()
            for sha, content in rows:
                partial = place / f".{sha}.{threading.get_ident()}"
                partial.write_bytes(bytes(content))
                partial.chmod(0o444)  # shared by every directory linking it: not to be changed
                partial.rename(place / sha)
                with self._mutex:
                    self._blobs.add(sha)
        with self._mutex:
            return {sha: place / sha for sha in shas if sha in self._blobs}

    def _evict(self, root: Path) -> None:
        for old in list(self._views):
            if len(self._views) <= self.KEEP:
                break
            if not self._using.get(old):
                shutil.rmtree(self._views.pop(old), ignore_errors=True)
                self._using.pop(old, None)
        if len(self._blobs) > self.BLOBS_KEEP:
            for sha in list(self._blobs):
                blob = root / ".blobs" / sha
                if blob.stat().st_nlink == 1:  # no kept directory links it
                    blob.unlink()
                    self._blobs.discard(sha)
