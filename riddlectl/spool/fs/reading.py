"""Reading the directory spool: ids, documents, drop-ins under their ids, counts."""

from __future__ import annotations

import contextlib
import heapq
import os
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING

from riddlectl.document import codec as documents
from riddlectl.document.ids import ID_RE
from riddlectl.entries import present
from riddlectl.errors import InvalidDocument
from riddlectl.spool.contract import (
    Claim,
)
from riddlectl.spool.dropins import entry_of, ignored, read_entry, shown_name, stamp_of
from riddlectl.spool.fs.inbox import iter_files, list_files
from riddlectl.spool.states import Queue

if TYPE_CHECKING:
    from riddlectl.document.model import Riddle

from riddlectl.spool.fs.layout import Layout, Token


class Reading(Layout):
    def _names(self, queue: Queue) -> list[os.DirEntry[str]]:
        return list_files(str(self.dir(queue)))

    def ids(self, queue: Queue) -> list[str]:
        """Names of the regular files of a queue, less `.json`; anything else is no riddle."""
        return [entry_of(e.name) for e in self._names(queue)]

    def holds(self, queue: Queue, riddle_id: str) -> bool:
        return ID_RE.fullmatch(riddle_id) is not None and present(self._file(queue, riddle_id))

    def read(self, queue: Queue, riddle_id: str) -> Riddle | None:
        """The document `ID.json` of `queue`; a drop-in there without an id of its own
        reads under the id its name gives (`drop_in_id`). An entry of `ids` that is a
        drop-in's whole name (`notes.txt`) reads as that drop-in, in any queue (a claim
        takes drop-ins in from any)."""
        if ID_RE.fullmatch(riddle_id):  # else an entry that is a whole name (`entry_of`)
            with contextlib.suppress(FileNotFoundError):
                return self._parse_file(self._file(queue, riddle_id), f"{riddle_id}.json")
        if "/" in riddle_id or ignored(riddle_id):
            return None
        try:
            return self._parse_file(f"{self._dirs[queue]}/{riddle_id}", riddle_id)
        except (FileNotFoundError, IsADirectoryError):
            return None

    def _parse_file(self, path: str, name: str | None = None) -> Riddle:
        """The document at `path`, read up to `limits.readable` (a document stored before
        the limit was lowered is still read), with its real size in the reason if over;
        read as the entry `name` of its queue when given (see `dropins.read_entry`)."""
        raw, info = documents.read_raw(path, self.limits.readable + 1)
        where = shown_name(path)
        if raw is None:
            raise InvalidDocument("not a regular file", where=where)
        if name is None:
            return documents.parse(raw, where, None, self.limits.readable, info.st_size)
        stamp = stamp_of(info.st_mtime_ns)
        return read_entry(raw, info.st_size, where, name, self.limits, stamp)

    def reread(self, claim: Claim) -> Riddle:
        token: Token = claim.token
        return self._parse_file(token.path)

    def find(self, riddle_id: str) -> tuple[Queue, Riddle] | None:
        if not ID_RE.fullmatch(riddle_id):
            return None
        found = []
        for queue in Queue:
            with contextlib.suppress(InvalidDocument):
                riddle = self.read(queue, riddle_id)
                # A drop-in `ID.json` whose document names another id is that riddle.
                if riddle is not None and riddle.id == riddle_id:
                    found.append((riddle.rev, queue, riddle))
        if not found:
            dropped = self._dropped(riddle_id)
            return None if dropped is None else (Queue.INCOMING, dropped[1])
        _, queue, riddle = max(found, key=lambda f: f[0])
        return queue, riddle

    def _dropped(self, riddle_id: str) -> tuple[str, Riddle] | None:
        """The drop-in of `incoming/` that is the riddle `riddle_id` under a name of its
        own (`b.json` holding `"id": "own"`), with that name. Each drop-in is read, so this
        is for an id no queue holds as `ID.json`, and `incoming/` alone: drop-ins land
        there, and an agent soon stores each as `ID.json`."""
        name = self._drop_ins().get(riddle_id)
        if name is None or name == f"{riddle_id}.json":
            return None
        riddle = self._peek(name)  # read again: the index may be a little behind
        return (name, riddle) if riddle is not None and riddle.id == riddle_id else None

    def _drop_ins(self) -> dict[str, str]:
        return self._drop_in_index.index()

    def _peek(self, name: str) -> Riddle | None:
        return self._drop_in_index.peek(name)

    def counts(self) -> dict[Queue, int]:
        # Regular files only, told by the directory entry's type: no stat per file, for
        # `status` on a spool of 100,000. A FIFO or a directory dropped in is no riddle.
        return {q: sum(1 for _ in iter_files(str(self.dir(q)))) for q in Queue}

    def recent(self, limit: int, queues: Iterable[Queue] = tuple(Queue)) -> list[tuple[Queue, str]]:
        # Modification times, not documents: every commit writes a new file, and a stat is
        # far cheaper than a parse. Streamed: on a spool of 100,000 riddles a list of
        # stat'ed directory entries alone took 100 MB.
        def stamped() -> Iterator[tuple[int, Queue, str]]:
            for queue in queues:
                for entry in iter_files(str(self.dir(queue))):
                    try:
                        yield entry.stat().st_mtime_ns, queue, entry_of(entry.name)
                    except FileNotFoundError:
                        continue

        return [(queue, riddle_id) for _, queue, riddle_id in heapq.nlargest(limit, stamped())]
