"""`audio_policy = "agree"`: an audio value is accepted only when two recognisers of
different kinds heard the same assignment.

The two are the first two extract handlers reading audio whose kinds differ (the kind of
a handler is its name before `:`: `speech`, `transcribe`, `http`, `cmd`, …), in the
order they are listed: `--handler extract=speech --handler extract=transcribe:whisper-1`.
They are put together as one handler, ahead of the others, so that it reads every audio
item; fewer than two is a configuration error when the agent starts.

When both hear the same assignment (the same `variables`), the extraction is the first's,
with `agreed` listing what each heard and how sure it was. Otherwise the riddle fails now
(`HandlerRefused`, not tried again: the same recording would be heard the same way) with
`unsure: heard 'z equals fifty' and 'z equals sixty'`. A recogniser that heard no
assignment counts as hearing something else; one that fails (an endpoint answering 500)
fails the attempt as it would alone, and the attempt is tried again.
"""

from __future__ import annotations

import hashlib
from typing import Any

from riddlectl.document.model import Riddle
from riddlectl.errors import ConfigError, HandlerRefused
from riddlectl.handlers.base import Job, NamedHandler

__all__ = ["POLICIES", "AgreeingExtractor", "apply_policy", "kind_of"]

POLICIES = ("best", "agree")
AUDIO = "audio"


def kind_of(name: str) -> str:
    """`speech` → `speech`, `transcribe:tiny.en` → `transcribe`, `http:URL` → `http`."""
    return name.split(":", 1)[0]


def apply_policy(handlers: list[NamedHandler], policy: str) -> list[NamedHandler]:
    """The extract handlers as `policy` wants them: as they are for `best`; for `agree`,
    the two recognisers that must agree put together ahead of the others."""
    if policy not in POLICIES:
        raise ConfigError(
            f"must be one of {', '.join(POLICIES)}", where=repr(policy), field="audio_policy"
        )
    if policy == "best":
        return handlers
    hearing = [h for h in handlers if h.supports(AUDIO)]
    first = hearing[0] if hearing else None
    second = next((h for h in hearing if first and kind_of(h.name) != kind_of(first.name)), None)
    if first is None or second is None:
        listed = ", ".join(h.name for h in hearing) or "none"
        raise ConfigError(
            "agree needs two extract handlers of different kinds reading audio "
            "(e.g. --handler extract=speech --handler extract=transcribe:whisper-1); "
            f"audio is read by: {listed}",
            where="audio_policy",
        )
    both = AgreeingExtractor(first, second)
    named = NamedHandler(both.name, both, frozenset({AUDIO}), both.version)
    return [named, *handlers]


class AgreeingExtractor:
    threaded = True  # an endpoint may be one of the two

    def __init__(self, first: NamedHandler, second: NamedHandler) -> None:
        self.first, self.second = first, second
        self.name = f"agree:{first.name}+{second.name}"
        self.version = f"{first.version}|{second.version}"

    def current_version(self) -> str:
        return f"{self.first.identity()}|{self.second.identity()}"

    def riddle_version(self, riddle: Riddle) -> str:
        both = f"{self.first.identity(riddle)}|{self.second.identity(riddle)}"
        return hashlib.sha256(both.encode()).hexdigest()[:8]

    def __call__(self, job: Job) -> dict[str, Any]:
        heard = [_hear(handler, job) for handler in (self.first, self.second)]
        (one, said_one), (two, said_two) = heard
        if (
            one is None
            or two is None
            or not one.get("variables")
            or (one.get("variables") != two.get("variables"))
        ):
            raise HandlerRefused(f"unsure: heard {said_one!r} and {said_two!r}")
        agreed = [
            {"by": handler.name, "heard": said, "confidence": found.get("confidence")}
            for handler, (found, said) in zip((self.first, self.second), heard, strict=True)
            if found is not None
        ]
        return {**one, "agreed": agreed}


def _hear(handler: NamedHandler, job: Job) -> tuple[dict[str, Any] | None, str]:
    """What `handler` heard: its extraction and words, or (None, its words) when it heard
    no assignment (a refusal naming what it heard); other errors are raised."""
    try:
        found = handler(job) or {}
    except HandlerRefused as exc:
        said = getattr(exc, "heard", None)
        if said is None:
            raise
        return None, str(said)
    return found, str(found.get("heard", ""))
