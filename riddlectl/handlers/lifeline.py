"""Handler processes die with the process that started them, however it dies.

A `cmd:` handler runs in a process group of its own (so that a timeout ends its children
too), which also takes it out of reach of whatever ends its agent: after a `kill -9` of
the agent, the handler and its children would go on under init while another agent takes
the riddle again. A keeper ties them to their agent: a small process of its own, started
with the first handler, reading a pipe from the agent. The kernel closes the pipe when the
agent ends, by any signal; the keeper then kills

- every process group the agent named on the pipe (`+PGID` as a handler starts, `-PGID`
  once it has ended), children that left the handler's environment behind included;
- every process whose environment carries the agent's mark (`MARK`, in each handler's
  environment): a handler started just as the agent died, before it was named, and
  children that left its group.

The agent's part is a write of a few bytes per handler call (about 20 µs); a death signal
set in the child (`PR_SET_PDEATHSIG`) would need a `fork` of the whole agent instead of a
`vfork`, about 30 ms a call here. This file is also the keeper's program, run by the
interpreter with the standard library only (`python -I -S lifeline.py MARK`).
"""

from __future__ import annotations

import contextlib
import os
import secrets
import signal
import subprocess
import sys
import threading
from collections.abc import Iterable
from typing import IO

MARK = "RIDDLE_LIFELINE"  # in each handler's environment: whose it is


class Keeper:
    """The agent's end of the pipe to its keeper, started on first use."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._pipe: IO[bytes] | None = None
        self._pid = -1  # the process that started the keeper (a forked child needs its own)
        self._mark = ""

    def mark(self) -> dict[str, str]:
        """The environment entry that marks a handler as this process's."""
        with self._lock:
            self._ensure()
            return {MARK: self._mark}

    def hold(self, pgid: int) -> None:
        """`pgid` dies with this process from now on."""
        self._say(f"+{pgid}\n")

    def let_go(self, pgid: int) -> None:
        """`pgid` has ended (or was ended): no longer the keeper's to kill."""
        self._say(f"-{pgid}\n")

    def _say(self, line: str) -> None:
        with self._lock:
            pipe = self._ensure()
            if pipe is None:
                return
            try:
                pipe.write(line.encode())
                pipe.flush()
            except OSError:  # the keeper died: another is started for the next handler
                self._pipe = None

    def _ensure(self) -> IO[bytes] | None:
        if self._pid != os.getpid() or self._pipe is None:
            self._pid = os.getpid()
            self._mark = f"{os.getpid()}.{secrets.token_hex(8)}"
            self._pipe = _start(self._mark)
        return self._pipe


def _start(mark: str) -> IO[bytes] | None:
    """The keeper, in a session of its own (a Ctrl-C at the terminal is the agent's to
    handle); its pipe is the agent's alone (not inherited: the keeper must see it end)."""
    env = {key: value for key, value in os.environ.items() if key != MARK}
    try:
        keeper = subprocess.Popen(
            [sys.executable, "-I", "-S", os.path.abspath(__file__), mark],
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            env=env,
            start_new_session=True,
        )
    except OSError:
        return None
    return keeper.stdin


_keeper = Keeper()


def mark() -> dict[str, str]:
    return _keeper.mark()


def hold(pgid: int) -> None:
    _keeper.hold(pgid)


def let_go(pgid: int) -> None:
    _keeper.let_go(pgid)


def keep(lines: Iterable[bytes], mark: str) -> None:
    """The keeper: follow `+PGID`/`-PGID` lines until the pipe ends, then kill the groups
    still named and the processes that carry `mark`."""
    for signum in (signal.SIGINT, signal.SIGHUP, signal.SIGPIPE):
        signal.signal(signum, signal.SIG_IGN)
    held: set[int] = set()
    for line in lines:
        with contextlib.suppress(ValueError):
            pgid = int(line[1:])
            if line.startswith(b"+"):
                held.add(pgid)
            else:
                held.discard(pgid)
    for pgid in held:
        _kill(pgid, group=True)
    for pid in marked(f"{MARK}={mark}".encode()):
        with contextlib.suppress(OSError):
            _kill(os.getpgid(pid), group=True)
        _kill(pid, group=False)


def marked(entry: bytes) -> list[int]:
    """The processes whose environment holds `entry` (those this user may read)."""
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) == os.getpid():
            continue
        with contextlib.suppress(OSError), open(f"/proc/{name}/environ", "rb") as environ:
            if entry in environ.read().split(b"\0"):
                found.append(int(name))
    return found


def _kill(target: int, *, group: bool) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        if group:
            os.killpg(target, signal.SIGKILL)
        else:
            os.kill(target, signal.SIGKILL)


if __name__ == "__main__":
    keep(sys.stdin.buffer, sys.argv[1])
