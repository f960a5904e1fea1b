"""Who is acting: the agent name, host and pid recorded in claims, history and events."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from functools import cache


@cache
def hostname() -> str:
    import socket  # only commands that act load it

    return socket.gethostname()


_pid = os.getpid()


def _forked() -> None:
    global _pid
    _pid = os.getpid()


os.register_at_fork(after_in_child=_forked)


def pid() -> int:
    """This process's id, without a system call each time (temp files and journals are
    named by it several times per riddle); a forked child learns its own."""
    return _pid


def alive(pid: int) -> bool:
    """Whether process `pid` of this host still runs (one of another user's counts as
    running): how a dead writer's leftovers are told from a live one's."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


@dataclass(frozen=True)
class Actor:
    """An agent (or a command) acting on riddles."""

    name: str
    host: str = field(default_factory=hostname)
    pid: int = field(default_factory=os.getpid)

    def as_dict(self) -> dict[str, object]:
        return {"agent": self.name, "host": self.host, "pid": self.pid}


_swept: set[str] = set()


def scratch_dir(kind: str) -> str:
    """A new private directory `riddlectl-KIND-PID-…` in the temporary directory, for a
    local copy that lives as long as one call. Those of processes that died before
    removing theirs (`kill -9`) are removed first, once per process and kind."""
    import shutil
    import tempfile

    base = tempfile.gettempdir()
    if kind not in _swept:
        _swept.add(kind)
        prefix = f"riddlectl-{kind}-"
        for name in os.listdir(base):
            pid = name.removeprefix(prefix).split("-", 1)[0]
            if name.startswith(prefix) and pid.isdigit() and not alive(int(pid)):
                shutil.rmtree(os.path.join(base, name), ignore_errors=True)
    return tempfile.mkdtemp(prefix=f"riddlectl-{kind}-{os.getpid()}-", dir=base)
