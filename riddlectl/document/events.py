"""The events of a riddle's life: each one entry of its `history` and one line of the log.

One `Event` per handler attempt, per hand-off between queues, and per command acting on
a riddle; two more kinds are only logged: a file set aside as corrupt (it has no id, so
its `file` is named) and a claim found abandoned by its dead agent (which names the dead
holder, and when it `claimed` the riddle). `to_json` is the one place their JSON is
made: what `riddlectl events` prints, so its field names, their order and their values
are a contract.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import Enum
from typing import Any, Protocol

MAX_HISTORY = 200  # entries kept per document, so a riddle retried forever stays small


class Actor(Protocol):
    """Who acts (`identity.Actor`): an agent or a command, on a host, in a process."""

    @property
    def name(self) -> str: ...
    @property
    def host(self) -> str: ...
    @property
    def pid(self) -> int: ...


class _Unset(Enum):
    UNSET = "unset"


# `claimed` is written for every abandoned claim, as null when the dead holder's record
# did not say when; other events have no such field at all.
UNSET = _Unset.UNSET


@dataclass(frozen=True, kw_only=True)
class Event:
    id: str | None
    stage: str | None  # the stage, or the command that acted (`submit`, `retry`, …)
    source: str | None  # the queue it was in ("from"); None for a new riddle
    to: str | None  # the queue it went to; None for a purged riddle
    outcome: str
    agent: str | None
    host: str | None
    pid: int | None
    rev: int | None  # the riddle's `rev` once the change is stored
    time: float = field(default_factory=time.time)
    handler: str | None = None  # the solve handler that declined
    duration: float | None = None  # seconds the handlers took
    error: str | None = None
    file: str | None = None  # a file set aside as corrupt
    claimed: float | _Unset | None = UNSET  # an abandoned claim: when its holder took it
    usage: Mapping[str, Any] | None = None  # what handlers reported it cost, by handler

    @classmethod
    def by(
        cls,
        actor: Actor,
        riddle_id: str | None,
        stage: str,
        source: str | None,
        to: str | None,
        outcome: str,
        *,
        rev: int | None,
        handler: str | None = None,
        duration: float | None = None,
        error: str | None = None,
        usage: Mapping[str, Any] | None = None,
    ) -> Event:
        """What `actor` did to a riddle: a handler attempt, a hand-off, a command."""
        return cls(
            id=riddle_id,
            stage=stage,
            source=source,
            to=to,
            outcome=outcome,
            agent=actor.name,
            host=actor.host,
            pid=actor.pid,
            rev=rev,
            handler=handler or None,
            duration=duration,
            error=error or None,
            usage=usage or None,
        )

    @classmethod
    def corrupt(cls, actor: Actor, queue: str, stage: str | None, file: str, reason: str) -> Event:
        """A file of `queue` that `actor` set aside in `corrupt/`, and why."""
        return cls(
            id=None,
            file=file,
            stage=stage,
            source=queue,
            to="corrupt",
            outcome="corrupt",
            agent=actor.name,
            host=actor.host,
            pid=actor.pid,
            rev=None,
            error=reason,
        )

    @classmethod
    def abandoned(
        cls,
        riddle_id: str | None,
        stage: str,
        queue: str,
        rev: int,
        holder: Mapping[str, Any],
        count: int,
    ) -> Event:
        """A claim of a riddle in `queue` whose `holder` (its claim record: agent, host,
        pid, time) died before finishing; `count` such claims in a row."""
        return cls(
            id=riddle_id,
            stage=stage,
            source=queue,
            to=queue,
            outcome="abandoned",
            agent=holder.get("agent"),
            host=holder.get("host"),
            pid=holder.get("pid"),
            rev=rev,
            error=f"its agent died while handling it ({count} in a row)",
            claimed=holder.get("time"),
        )

    def to_json(self) -> dict[str, Any]:
        """The event as logged and kept in `history`; optional fields only when set."""
        out: dict[str, Any] = {"time": self.time, "id": self.id}
        if self.file is not None:
            out["file"] = self.file
        out["stage"] = self.stage
        out["from"] = self.source
        out["to"] = self.to
        out["outcome"] = self.outcome
        out["agent"] = self.agent
        out["host"] = self.host
        out["pid"] = self.pid
        if self.handler is not None:
            out["handler"] = self.handler
        out["rev"] = self.rev
        if self.duration is not None:
            out["duration"] = round(self.duration, 6)
        if self.usage is not None:
            out["usage"] = dict(self.usage)
        if self.error is not None:
            out["error"] = self.error
        if self.claimed is not UNSET:
            out["claimed"] = self.claimed
        return out
