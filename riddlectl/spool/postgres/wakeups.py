"""Wake-ups by LISTEN/NOTIFY: a thread on a connection of its own.

Every transaction that puts a riddle into a queue notifies the spool's channel with the
queue's name; a drop-in, with `drop-in:` and the queue's name (`inputs`): it wakes the
agent, and tells it to read the queue's drop-ins (`told`). The listening connection is
made again after any error (a server restart, a cut network), and a wake-up is given
then, as notifications may have been missed meanwhile; it is checked with a query every
`CHECK_EVERY` s so that a connection dropped without a word is noticed too. Agents poll
besides (the contract's hint, not truth), so a wake-up lost in the gap costs at most a
poll interval.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable

from riddlectl.spool.postgres.db import Database
from riddlectl.spool.postgres.inputs import WAKE_UP
from riddlectl.spool.states import Queue

LISTEN_WAIT = 0.25  # seconds between looks at `stop` while no notification comes
CHECK_EVERY = 10.0
FIRST_WAIT = 5.0  # seconds `watch` waits for the first LISTEN
BACKOFF = (0.2, 0.5, 1.0, 2.0, 5.0)


class PgWatch:
    def __init__(
        self,
        db: Database,
        queues: Iterable[Queue],
        wake: threading.Event,
        told: Callable[[Queue], None] | None = None,
    ) -> None:
        self.db = db
        self.queues = {queue.value for queue in queues}
        self.wake = wake
        self.told = told  # called with a queue a drop-in arrived in
        self._stop = threading.Event()
        self.listening = threading.Event()
        self._thread = threading.Thread(target=self._run, name="riddlectl-listen", daemon=True)
        self._thread.start()
        self.listening.wait(FIRST_WAIT)

    def stop(self) -> None:
        self._stop.set()

    def _wake(self) -> None:
        if not self._stop.is_set():
            self.wake.set()

    def _drop_in(self, queue: str) -> None:
        if self.told is not None:
            self.told(Queue(queue))

    def _run(self) -> None:
        failures = 0
        while not self._stop.is_set():
            try:
                self._listen(again=failures > 0)
            except Exception:  # any trouble: connect again after a pause
                self.listening.clear()
                self._stop.wait(BACKOFF[min(failures, len(BACKOFF) - 1)])
                failures += 1

    def _listen(self, again: bool) -> None:
        with self.db.connect() as conn:
            conn.execute(f'LISTEN "{self.db.url.channel}"')
            self.listening.set()
            if again:  # what arrived while the connection was down
                for queue in self.queues:
                    self._drop_in(queue)
                self._wake()
            checked = time.monotonic()
            while not self._stop.is_set():
                for note in conn.notifies(timeout=LISTEN_WAIT):
                    queue = note.payload.removeprefix(WAKE_UP)
                    if queue in self.queues:
                        if queue != note.payload:
                            self._drop_in(queue)
                        self._wake()
                if time.monotonic() - checked > CHECK_EVERY:
                    conn.execute("SELECT 1")
                    checked = time.monotonic()
