"""The pipeline through the library API: the same promises as the CLI tests, in-process."""

from __future__ import annotations

import sys
from dataclasses import replace
from pathlib import Path

import pytest

from riddlectl import runtime
from riddlectl.agent.supervisor import run
from riddlectl.identity import Actor
from riddlectl.ops import submit
from riddlectl.settings import Settings
from riddlectl.spool.states import Queue
from tests.conftest import example_doc


def submit_docs(settings: Settings, *docs: dict) -> list[str]:
    spool = runtime.open_spool(settings)
    pipeline = runtime.pipeline(settings, spool, Actor("test"))
    riddles = submit.prepare([(f"doc{i}", d) for i, d in enumerate(docs)], settings)
    return submit.submit(pipeline, riddles)


def where(settings: Settings, riddle_id: str):
    return runtime.open_spool(settings).require(riddle_id)


def test_seed_example_solves_to_150(settings: Settings) -> None:
    (riddle_id,) = submit_docs(settings, example_doc())
    summary = run(settings, once=True)
    assert summary.done == [riddle_id] and summary.failed == []
    queue, riddle = where(settings, riddle_id)
    assert queue is Queue.DONE
    assert riddle.solution.solution == "150"
    assert riddle.solution.accepted is True
    assert riddle.status.solved
    assert [e["stage"] for e in riddle.history] == [
        "submit",
        "extract",
        "solve",
        "validate",
        "manage",
    ]
    assert riddle.rev == 5 and riddle.contacts == 4


def test_routing_skips_steps_not_required(settings: Settings) -> None:
    no_validate, no_extract_no_solve = submit_docs(
        settings,
        example_doc(status={"validate": {"required": False}}),
        example_doc(
            status={
                "extract": {"required": False},
                "solve": {"required": False},
                "validate": {"required": False},
            }
        ),
    )
    assert where(settings, no_extract_no_solve)[0] is Queue.DONE  # nothing left to do
    run(settings, once=True)
    queue, riddle = where(settings, no_validate)
    assert queue is Queue.DONE and riddle.status.solved and riddle.solution.accepted is None
    assert riddle.solution.solution == "150"
    assert where(settings, no_extract_no_solve)[1].status.solved is False


def test_retry_then_fail_after_max_trials(settings: Settings, helpers: Path) -> None:
    wrong = f"cmd:{sys.executable} {helpers}/always_wrong.py"
    settings = replace(settings, handlers={**settings.handlers, "solve": (wrong,)}, max_trials=3)
    (riddle_id,) = submit_docs(settings, example_doc())
    summary = run(settings, once=True)
    assert summary.failed == [riddle_id]
    queue, riddle = where(settings, riddle_id)
    assert queue is Queue.FAILED and riddle.status.trial == 3
    assert [s.solution for s in riddle.riddle.solutions_before] == ["1000", "1001", "1002"]
    assert all(s.review and "150" in s.review for s in riddle.riddle.solutions_before)


def test_handler_errors_are_retried_then_fail(settings: Settings) -> None:
    crash = "cmd:sh -c 'echo boom >&2; exit 3'"
    settings = replace(settings, handlers={**settings.handlers, "solve": (crash,)}, max_attempts=2)
    (riddle_id,) = submit_docs(settings, example_doc())
    run(settings, once=True)
    _, riddle = where(settings, riddle_id)
    assert riddle.error == "solve failed after 2 attempts: sh exited with status 3: boom"
    assert [e["outcome"] for e in riddle.history if e["stage"] == "solve"] == ["error", "error"]


def test_handler_timeout_kills_and_fails(settings: Settings) -> None:
    hang = "cmd:sh -c 'sleep 30'"
    settings = replace(
        settings, handlers={**settings.handlers, "solve": (hang,)}, max_attempts=1, timeout=0.5
    )
    (riddle_id,) = submit_docs(settings, example_doc())
    summary = run(settings, once=True)
    assert summary.seconds < 10
    _, riddle = where(settings, riddle_id)
    assert "timed out after 0.5 s" in riddle.error
    assert riddle.history[-1]["outcome"] == "timeout"


def test_exit_65_fails_at_once(settings: Settings) -> None:
    refuse = "cmd:sh -c 'echo cannot >&2; exit 65'"
    settings = replace(settings, handlers={**settings.handlers, "solve": (refuse,)})
    (riddle_id,) = submit_docs(settings, example_doc())
    run(settings, once=True)
    _, riddle = where(settings, riddle_id)
    assert riddle.error == "sh refused the riddle (exit 65): cannot"
    assert len([e for e in riddle.history if e["stage"] == "solve"]) == 1


def test_python_handlers_by_module_attr(
    settings: Settings, helpers: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.syspath_prepend(str(helpers))
    settings = replace(
        settings, handlers={**settings.handlers, "solve": ("py_handlers:decline", "calculator")}
    )
    (riddle_id,) = submit_docs(settings, example_doc())
    run(settings, once=True)
    _, riddle = where(settings, riddle_id)
    assert riddle.solution.solution == "150"
    assert (Path(settings.spool) / "declined.txt").read_text() == riddle_id
    solve_events = [e for e in riddle.history if e["stage"] == "solve"]
    assert [e["outcome"] for e in solve_events] == ["declined", "ok"]
    assert solve_events[0]["handler"] == "py_handlers:decline"
    logged = [e["outcome"] for e in runtime.event_log(settings).read() if e["stage"] == "solve"]
    assert logged == ["declined", "ok"]
