"""Input from outside the pipeline: files dropped in, and what is set aside in `corrupt/`
with the reason beside it.
"""

from __future__ import annotations

import os
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING

from riddlectl.spool.contract import (
    Corrupt,
    one_name,
)
from riddlectl.spool.dropins import check_name, ignored
from riddlectl.spool.fs import atomic
from riddlectl.spool.states import Queue

if TYPE_CHECKING:
    pass

from riddlectl.spool.fs.reading import Reading


class Intake(Reading):
    def drop_in(self, queue: Queue, name: str, raw: bytes) -> None:
        self.drop_ins(queue, [(name, raw)])

    def drop_ins(self, queue: Queue, entries: Sequence[tuple[str, bytes]]) -> None:
        for name, _ in entries:
            check_name(name)
        files = [(self.dir(queue) / name, raw) for name, raw in entries]
        atomic.write_many(files, self.tmp_dir, durable=self.durable)

    def set_aside(self, queue: Queue, name: str, reason: str) -> None:
        """Move an unreadable file to `corrupt/`, with `NAME.reason` beside it."""
        target = self.root / "corrupt" / name
        if target.exists():
            target = target.with_name(f"{name}.{time.time_ns()}")
        reason_path = target.with_name(f"{target.name}.reason")
        atomic.write(reason_path, f"{reason}\n".encode(), self.root / "tmp", durable=self.durable)
        os.rename(self.dir(queue) / name, target)
        self.log_set_aside(queue, name, reason)

    def corrupt_files(self) -> list[Corrupt]:
        out = []
        for entry in sorted(os.scandir(self.root / "corrupt"), key=lambda e: e.name):
            if entry.name.endswith(".reason") or ignored(entry.name):
                continue
            reason_path = self.root / "corrupt" / f"{entry.name}.reason"
            reason = (
                reason_path.read_text("utf-8", "replace").strip() if reason_path.exists() else ""
            )
            out.append(Corrupt(entry.name, reason))
        return out

    def corrupt_content(self, name: str) -> bytes | None:
        if not one_name(name) or name.endswith(".reason") or ignored(name):
            return None
        try:
            return (self.root / "corrupt" / name).read_bytes()
        except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
            return None

    def drop_corrupt(self, name: str) -> None:
        if not one_name(name) or name.endswith(".reason") or ignored(name):
            raise FileNotFoundError(f"corrupt/{name}: no such file set aside")
        path = self.root / "corrupt" / name
        if not path.is_file():
            raise FileNotFoundError(f"corrupt/{name}: no such file set aside")
        path.unlink()
        path.with_name(f"{name}.reason").unlink(missing_ok=True)
