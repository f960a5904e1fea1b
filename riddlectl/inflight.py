"""Handler calls in flight: how long each has run, and how a stopping agent ends them.

A `cmd:` handler's call is registered here with its process group, a Python callable's
with the thread it runs in. The agent reads the registry for two things:

- a call running past `SLOW` seconds makes its worker give back the rest of its batch,
  and the agent add a spare worker, so a hung handler does not hold up the other riddles;
- on shutdown the agent waits for the calls still running, then kills the process groups
  (and abandons the threads, which Python cannot kill); a call ended this way raises
  `HandlerStopped`, and its riddle is given back unchanged.

Built-in handlers are not registered: they bound their own work.
"""

from __future__ import annotations

import contextlib
import math
import os
import signal
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

SLOW = 1.0  # seconds a handler call may run before its worker's other riddles move on
WAIT_STEP = 0.1  # seconds between looks at whether the agent is stopping, in `wait_for`


class HandlerStopped(BaseException):
    """A handler call ended because its agent is stopping: the riddle is given back.

    A BaseException, like KeyboardInterrupt: it is not an error of the riddle, and no
    `except Exception` on the way may turn it into a failed attempt.
    """


@dataclass(eq=False)
class Call:
    name: str
    registry: Calls
    pgid: int | None = None  # a command's process group, killed when the agent stops
    kind: str = "thread"  # "command", "thread" (cannot be killed), or "wait" (for another)
    started: float = field(default_factory=time.monotonic)
    woken: threading.Event = field(default_factory=threading.Event)  # done, or stopped

    @property
    def stopped(self) -> bool:
        return self.registry.stopped.is_set()


class Calls:
    """The handler calls running in one agent process."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._calls: set[Call] = set()
        self.stopped = threading.Event()

    def running(self) -> list[Call]:
        """The handler calls under way (not the waits behind them)."""
        with self._lock:
            return [call for call in self._calls if call.kind != "wait"]

    def slow(self) -> int:
        """How many calls (waits included) have run past `SLOW` seconds."""
        now = time.monotonic()
        with self._lock:
            return sum(now - call.started >= SLOW for call in self._calls)

    def add(self, call: Call) -> None:
        with self._lock:
            if not self.stopped.is_set():
                self._calls.add(call)
                return
        _kill(call)  # started as the agent was stopping: not worth finishing
        raise HandlerStopped(f"{call.name}: the agent is stopping")

    def remove(self, call: Call) -> None:
        with self._lock:
            self._calls.discard(call)

    def stop(self) -> tuple[int, int]:
        """Kill every running command's process group and wake every worker waiting on a
        thread; from now on every call raises `HandlerStopped`. (groups killed, threads)."""
        with self._lock:
            self.stopped.set()
            calls = list(self._calls)
        for call in calls:
            _kill(call)
        kinds = [call.kind for call in calls]
        return kinds.count("command"), kinds.count("thread")


def _kill(call: Call) -> None:
    if call.pgid is not None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(call.pgid, signal.SIGKILL)
    call.woken.set()


# What the worker thread running a call is bound to: its agent's registry, and what to do
# when the call turns slow. Unbound (a library caller) means a registry of its own.
_bound = threading.local()
_unbound = Calls()


def registry() -> Calls:
    return getattr(_bound, "calls", None) or _unbound


@contextlib.contextmanager
def bound(calls: Calls) -> Iterator[None]:
    """Handler calls made by this thread meanwhile are registered in `calls`."""
    before = getattr(_bound, "calls", None)
    _bound.calls = calls
    try:
        yield
    finally:
        _bound.calls = before


@contextlib.contextmanager
def when_slow(hook: Callable[[], None]) -> Iterator[None]:
    """Meanwhile, a handler call of this thread that runs `SLOW` seconds calls `hook`
    (once per call, in this thread, while the call goes on)."""
    before = getattr(_bound, "on_slow", None)
    _bound.on_slow = hook
    try:
        yield
    finally:
        _bound.on_slow = before


@contextlib.contextmanager
def tracked(name: str, pgid: int | None = None, kind: str = "thread") -> Iterator[Call]:
    """Register a call for as long as it runs (a command's with its process group)."""
    calls = registry()
    call = Call(name, calls, pgid, "command" if pgid is not None else kind)
    calls.add(call)
    try:
        yield call
    finally:
        calls.remove(call)


def wait(call: Call, finished: Callable[[float], bool], timeout: float) -> bool:
    """Wait for `call`: `finished(seconds)` waits at most that long and says whether it
    ended. False when `timeout` seconds passed since the call started. Calls the bound
    `on_slow` once the call has run `SLOW` seconds."""
    on_slow = getattr(_bound, "on_slow", None)
    slow_at = call.started + SLOW if on_slow is not None else math.inf
    deadline = call.started + timeout
    while True:
        until = min(slow_at, deadline)
        if finished(max(0.0, until - time.monotonic())):
            return True
        if time.monotonic() >= deadline:
            return False
        if on_slow is not None and time.monotonic() >= slow_at:
            slow_at = math.inf
            on_slow()


def wait_for(name: str, attempt: Callable[[float], bool], timeout: float) -> bool:
    """Wait up to `timeout` s for what another call is doing; `attempt(seconds)` tries for
    at most that long. Registered like a handler call, so that waiting behind a hung
    handler counts as slow too, and ends (`HandlerStopped`) when the agent stops."""
    with tracked(name, kind="wait") as call:

        def finished(seconds: float) -> bool:
            if call.stopped:
                raise HandlerStopped(f"{name}: the agent is stopping")
            return attempt(min(seconds, WAIT_STEP))

        return wait(call, finished, timeout)
