"""What a handler reports an attempt cost (`usage`) goes into the attempt's history entry
and event, keyed by the handler, and not into the solution; a failed attempt's too; an
error's `retry_after` (an endpoint's Retry-After) lengthens the back-off."""

from __future__ import annotations

import time
from typing import Any

from riddlectl.errors import HandlerFailed
from riddlectl.handlers.base import Job
from riddlectl.pipeline.retry import RetryPolicy
from riddlectl.pipeline.stages import bounded_usage
from tests.rig import Rig, accept

COST = {"model": "m1", "calls": 1, "prompt_tokens": 120, "completion_tokens": 8}


def costly(job: Job) -> dict[str, Any]:
    return {"solution": "150", "explanation": "asked a model", "usage": dict(COST)}


def judged(job: Job) -> dict[str, Any]:
    return {"accept": True, "review": "fine", "usage": {"model": "judge", "calls": 1}}


def busy(job: Job) -> dict[str, Any]:
    raise HandlerFailed("HTTP 429", retry_after=30.0, usage={"model": "m1", "calls": 1})


def test_usage_is_recorded_in_history_and_events_not_in_the_solution(rig: Rig) -> None:
    rig.use("solve", costly).use("validate", judged)
    [riddle_id] = rig.submit({"riddle": {"question": "x * y ="}})
    rig.drain()
    _, riddle = rig.where(riddle_id)
    assert riddle.solution is not None and "usage" not in riddle.solution.model_dump()
    [solved] = [e for e in riddle.history if e["stage"] == "solve"]
    assert solved["usage"] == {"costly": COST}
    [validated] = [e for e in riddle.history if e["stage"] == "validate"]
    assert validated["usage"] == {"judged": {"model": "judge", "calls": 1}}
    assert solved in rig.logged() and validated in rig.logged()
    manage = [e for e in riddle.history if e["stage"] == "manage"]
    assert all("usage" not in e for e in manage)


def test_a_failed_attempts_usage_and_retry_after_are_kept(rig: Rig) -> None:
    rig.retry = RetryPolicy(max_attempts=3, base=0.5, cap=30.0)
    rig.pipeline.attempts.retry = rig.retry
    rig.use("solve", busy).use("validate", accept)
    [riddle_id] = rig.submit({"riddle": {"question": "x * y ="}})
    before = time.time()
    rig.drain()
    _, riddle = rig.where(riddle_id)
    [failed] = [e for e in riddle.history if e["stage"] == "solve"]
    assert failed["outcome"] == "error" and failed["usage"] == {"busy": {"model": "m1", "calls": 1}}
    # The policy alone would wait 0.5 s; the endpoint asked for 30.
    assert riddle.extensions()["retry_at"] >= before + 30.0


def test_usage_is_bounded() -> None:
    usage = {f"k{n}": n for n in range(40)}
    usage.update(k0="x" * 1000, k1={"nested": 1}, k2=[1])
    kept = bounded_usage(usage)
    assert len(kept) <= 16 and kept["k0"] == "x" * 200
    assert "k1" not in kept and "k2" not in kept
    assert bounded_usage("lots") == {}
