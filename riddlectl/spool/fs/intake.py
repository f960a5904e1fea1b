"""Input from outside the pipeline: files dropped in, and what is set aside in `corrupt/`
with the reason beside it.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import stat
import time
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING

from riddlectl.entries import NotRegular, kind_of, read_regular, shown
from riddlectl.spool.contract import (
    Corrupt,
    DropIn,
    Unreadable,
    one_name,
)
from riddlectl.spool.dropins import check_name, ignored
from riddlectl.spool.fs import atomic, copying
from riddlectl.spool.fs.reading import Reading
from riddlectl.spool.states import Queue

if TYPE_CHECKING:
    from riddlectl.document.model import Riddle

REASON_BYTES = 64 * 1024  # of a reason file: one line, written by `set_aside`


class Intake(Reading):
    def drop_in(self, queue: Queue, name: str, raw: bytes) -> None:
        self.drop_ins(queue, [(name, raw)])

    def drop_ins(self, queue: Queue, entries: Sequence[tuple[str, bytes]]) -> None:
        for name, _ in entries:
            check_name(name)
        files = [(self.dir(queue) / name, raw) for name, raw in entries]
        atomic.write_many(files, self.tmp_dir, durable=self.durable)

    def contents(self, queue: Queue) -> Iterator[Riddle | DropIn | Unreadable]:
        return copying.contents(str(self.dir(queue)), queue.value, self.limits)

    def restore_drop_ins(self, queue: Queue, entries: Sequence[DropIn]) -> None:
        copying.restore_drop_ins(str(self.dir(queue)), entries, self.tmp_dir, self.durable)

    def restore_set_aside(self, entries: Sequence[tuple[Corrupt, bytes]]) -> None:
        corrupt = str(self.root / "corrupt")
        copying.restore_set_aside(corrupt, entries, self.tmp_dir, self.durable)

    def set_aside(self, queue: Queue, name: str, reason: str) -> None:
        """Move an unreadable file to `corrupt/`, with `NAME.reason` beside it."""
        target = self.root / "corrupt" / name
        if target.exists():
            target = target.with_name(f"{name}.{time.time_ns()}")
        reason_path = target.with_name(f"{target.name}.reason")
        line = f"{shown(reason)}\n".encode()  # a name that is no UTF-8, as printed
        atomic.write(reason_path, line, self.root / "tmp", durable=self.durable)
        os.rename(self.dir(queue) / name, target)
        self.log_set_aside(queue, name, reason)

    def corrupt_files(self) -> list[Corrupt]:
        out = []
        with os.scandir(self.root / "corrupt") as found:
            entries = sorted(found, key=lambda e: e.name)
        for entry in entries:
            if self._listed(entry.name):
                with contextlib.suppress(FileNotFoundError):  # dropped meanwhile
                    out.append(self._described(entry.name, entry.stat(follow_symlinks=False)))
        return out

    def corrupt_entry(self, name: str) -> Corrupt | None:
        if not self._listed(name):
            return None
        try:
            return self._described(name, os.lstat(self.root / "corrupt" / name))
        except (FileNotFoundError, NotADirectoryError):
            return None

    def _listed(self, name: str) -> bool:
        """Whether `name` is one a listing of `corrupt/` shows (reasons are not)."""
        return one_name(name) and not name.endswith(".reason") and not ignored(name)

    def _described(self, name: str, info: os.stat_result) -> Corrupt:
        """The entry `name` of `corrupt/` by its `lstat`, with its reason: nothing of the
        entry itself is opened, and the reason only when it is a regular file."""
        kind = kind_of(info.st_mode)
        try:
            raw = read_regular(self.root / "corrupt" / f"{name}.reason", REASON_BYTES)
            reason = raw.decode("utf-8", "replace").strip()
        except OSError:  # none, or no regular file: a reason is never waited on
            reason = ""
        return Corrupt(name, reason, info.st_size if kind is None else 0, kind)

    def corrupt_content(self, name: str) -> bytes | None:
        if not self._listed(name):
            return None
        try:
            return read_regular(self.root / "corrupt" / name, self.limits.readable + 1)
        except (FileNotFoundError, NotADirectoryError, NotRegular):
            return None

    def drop_corrupt(self, name: str) -> None:
        """Remove the entry itself, whatever it is: a link, not what it leads to; a
        directory with what it holds (no link in it is followed)."""
        path = self.root / "corrupt" / name
        try:
            info = os.lstat(path) if self._listed(name) else None
        except (FileNotFoundError, NotADirectoryError):
            info = None
        if info is None:
            raise FileNotFoundError(f"corrupt/{name}: no such file set aside")
        if stat.S_ISDIR(info.st_mode):
            shutil.rmtree(path)
        else:
            path.unlink()
        with contextlib.suppress(FileNotFoundError, IsADirectoryError):
            path.with_name(f"{name}.reason").unlink()
