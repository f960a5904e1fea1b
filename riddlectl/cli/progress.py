"""The progress bar `run` shows when stdout is a terminal (rich); nothing when piped."""

from __future__ import annotations

import time
from types import TracebackType

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from riddlectl.agent.supervisor import RunSummary
from riddlectl.spool.contract import Spool
from riddlectl.spool.states import INBOX, Queue

REFRESH = 0.2  # seconds between looks at the spool


class RunProgress:
    """Finished riddles of this run against finished + still in an inbox."""

    def __init__(self, spool: Spool) -> None:
        self.spool = spool
        self.progress = Progress(
            TextColumn("[bold]riddles"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("{task.fields[detail]}"),
            TimeElapsedColumn(),
            console=Console(stderr=False),
            transient=True,
        )
        self.task = self.progress.add_task("run", total=None, detail="")
        self._last = 0.0

    def __enter__(self) -> RunProgress:
        self.progress.start()
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        value: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.progress.stop()

    def update(self, summary: RunSummary) -> None:
        now = time.monotonic()
        if now - self._last < REFRESH:
            return
        self._last = now
        waiting = sum(len(self.spool.ids(q)) for q in (*INBOX.values(), Queue.WAITING))
        finished = summary.done_count + summary.failed_count
        detail = f"{summary.done_count} done, {summary.failed_count} failed"
        self.progress.update(self.task, completed=finished, total=finished + waiting, detail=detail)
