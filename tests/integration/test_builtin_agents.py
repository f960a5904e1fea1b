"""The built-in agents on real input, through the pipeline on a real spool."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from riddlectl import runtime
from riddlectl.agent.supervisor import run
from riddlectl.identity import Actor
from riddlectl.ops import admin, submit
from riddlectl.settings import Settings
from riddlectl.spool.states import Queue


def submit_docs(settings: Settings, *docs: dict) -> list[str]:
    spool = runtime.open_spool(settings)
    pipeline = runtime.pipeline(settings, spool, Actor("test"))
    return submit.submit(pipeline, submit.prepare([("doc", d) for d in docs], settings))


def riddle_doc(question: str, *files: str, **extra: object) -> dict:
    return {
        "riddle": {"question": question, **extra.pop("riddle", {})},
        "data": [{"type": "text", "file_plain": f} for f in files],
        **extra,
    }


def final(settings: Settings, riddle_id: str):
    return runtime.open_spool(settings).require(riddle_id)


@pytest.fixture
def facts(data_dir: Path) -> Path:
    (data_dir / "f").mkdir()
    (data_dir / "f" / "xy.txt").write_text("Let x be ten.\ny ist fünfzehn\n")
    (data_dir / "f" / "z.txt").write_text("z = x + y\n")
    (data_dir / "f" / "w.txt").write_text("w = z * 2\n")
    (data_dir / "f" / "q.txt").write_text("q = x + nothing\n")
    (data_dir / "f" / "cycle.txt").write_text("a = b + 1\nb = a + 1\n")
    return data_dir


def test_formula_variable_is_solved_as_a_sub_riddle(settings: Settings, facts: Path) -> None:
    (parent,) = submit_docs(settings, riddle_doc("z * 2 =", "f/xy.txt", "f/z.txt"))
    run(settings, once=True)
    queue, riddle = final(settings, parent)
    assert (queue, riddle.solution.solution) == (Queue.DONE, "50")
    assert riddle.sub_ids == [f"{parent}-1"]
    assert riddle.sub_results[0]["solution"] == "25"
    child_queue, child = final(settings, f"{parent}-1")
    assert child_queue is Queue.DONE and child.parent_id == parent
    assert {d.file_plain for d in child.data} == {"f/xy.txt"}
    assert any(e["to"] == "waiting" for e in riddle.history)


def test_nested_derivations(settings: Settings, facts: Path) -> None:
    (parent,) = submit_docs(settings, riddle_doc("w + 1 =", "f/xy.txt", "f/z.txt", "f/w.txt"))
    run(settings, once=True)
    queue, riddle = final(settings, parent)
    assert (queue, riddle.solution.solution) == (Queue.DONE, "51")
    assert final(settings, f"{parent}-1-1")[1].solution.solution == "25"


def test_cycles_are_refused(settings: Settings, facts: Path) -> None:
    (riddle_id,) = submit_docs(settings, riddle_doc("a * 2 =", "f/cycle.txt"))
    summary = run(settings, once=True)
    assert summary.failed == [riddle_id]
    assert final(settings, riddle_id)[1].error == "cyclic definition: a → b → a"


def test_failed_child_fails_the_parent(settings: Settings, facts: Path) -> None:
    (parent,) = submit_docs(settings, riddle_doc("q * 2 =", "f/xy.txt", "f/q.txt"))
    run(settings, once=True)
    queue, riddle = final(settings, parent)
    assert queue is Queue.FAILED
    assert riddle.error.startswith(f"sub-riddle {parent}-1 failed: ")
    assert "nothing" in riddle.error


def waiting_parent(settings: Settings, riddle_id: str = "P1") -> str:
    """A parent in waiting/ whose sub-riddle `P1-1` is still pending in incoming/."""
    submit_docs(settings, riddle_doc("z * 2 =", "f/xy.txt", "f/z.txt", id=riddle_id))
    run(settings, ("extract",), once=True)
    run(settings, ("solve",), once=True)
    assert final(settings, riddle_id)[0] is Queue.WAITING
    assert final(settings, f"{riddle_id}-1")[0] is Queue.INCOMING
    return riddle_id


def assert_solved_afresh(settings: Settings, parent: str, child: str) -> None:
    """Done with 50, from the one new child `child`; the earlier ones kept aside."""
    queue, riddle = final(settings, parent)
    assert (queue, riddle.error) == (Queue.DONE, None)
    assert riddle.solution.solution == "50"
    assert riddle.sub_ids == [child]
    assert [r["id"] for r in riddle.sub_results] == [child]
    assert riddle.extensions()["retired_sub_ids"] == [f"{parent}-1"]
    assert final(settings, child)[0] is Queue.DONE


def test_retry_of_a_cancelled_parent_starts_afresh(settings: Settings, facts: Path) -> None:
    parent = waiting_parent(settings)
    pipeline = runtime.pipeline(settings, runtime.open_spool(settings), Actor("test"))
    assert sorted(admin.cancel(pipeline, parent)) == ["P1", "P1-1"]
    assert admin.retry(pipeline, parent) is Queue.EXTRACTED
    assert run(settings, once=True).failed == []
    assert_solved_afresh(settings, parent, "P1-2")  # numbering goes on: P1-1 is taken
    assert final(settings, "P1-1")[1].error == "cancelled"


def test_retry_of_a_parent_failed_by_its_child_starts_afresh(
    settings: Settings, facts: Path
) -> None:
    parent = waiting_parent(settings)
    pipeline = runtime.pipeline(settings, runtime.open_spool(settings), Actor("test"))
    admin.cancel(pipeline, "P1-1")
    run(settings, once=True)
    assert final(settings, parent)[1].error == "sub-riddle P1-1 failed: cancelled"
    admin.retry(pipeline, parent)
    run(settings, once=True)
    assert_solved_afresh(settings, parent, "P1-2")
    admin.retry(pipeline, parent, from_step="extract")  # and again: P1-3
    run(settings, once=True)
    _, riddle = final(settings, parent)
    assert riddle.sub_ids == ["P1-3"] and riddle.extensions()["retired_sub_ids"] == [
        "P1-1",
        "P1-2",
    ]


def test_retry_of_a_parent_from_validate_keeps_its_children(
    settings: Settings, facts: Path
) -> None:
    parent = waiting_parent(settings)
    run(settings, once=True)
    pipeline = runtime.pipeline(settings, runtime.open_spool(settings), Actor("test"))
    assert admin.retry(pipeline, parent, from_step="validate") is Queue.SOLVED
    assert run(settings, once=True).done == [parent]
    _, riddle = final(settings, parent)
    assert riddle.sub_ids == ["P1-1"] and riddle.sub_results[0]["solution"] == "25"
    assert "retired_sub_ids" not in riddle.extensions()


def test_hold_and_release_of_a_waiting_parent(settings: Settings, facts: Path) -> None:
    parent = waiting_parent(settings)
    pipeline = runtime.pipeline(settings, runtime.open_spool(settings), Actor("test"))
    assert admin.hold(pipeline, parent) is Queue.WAITING
    run(settings, once=True)  # the child is done meanwhile; the held parent stays put
    assert final(settings, parent)[0] is Queue.HOLD
    assert admin.release(pipeline, parent) is Queue.WAITING
    run(settings, once=True)
    queue, riddle = final(settings, parent)
    assert (queue, riddle.solution.solution, riddle.sub_ids) == (Queue.DONE, "50", ["P1-1"])


def test_a_sub_riddle_id_taken_by_another_riddle_fails_the_parent_clearly(
    settings: Settings, facts: Path
) -> None:
    submit_docs(settings, riddle_doc("x * y =", "f/xy.txt", id="P1-1"))
    (parent,) = submit_docs(settings, riddle_doc("z * 2 =", "f/xy.txt", "f/z.txt", id="P1"))
    run(settings, once=True)
    queue, riddle = final(settings, parent)
    assert queue is Queue.FAILED
    assert riddle.error == "solve: sub-riddle P1-1: the id is taken by another riddle"
    assert final(settings, "P1-1")[1].solution.solution == "150"  # left as it was


@pytest.mark.parametrize("bomb", ["9**9**9**9 =", "9^9^9^9 =", "*".join(["99"] * 20_000) + " ="])
def test_expression_bombs_fail_fast_without_holding_others(
    settings: Settings, facts: Path, bomb: str
) -> None:
    bad, good = submit_docs(settings, riddle_doc(bomb), riddle_doc("x * y =", "f/xy.txt"))
    summary = run(settings, once=True)
    assert summary.failed == [bad] and summary.done == [good]
    assert final(settings, bad)[1].error.startswith("calculator: ")
    assert final(settings, good)[1].solution.solution == "150"


def test_unknown_variable_fails_at_once(settings: Settings, facts: Path) -> None:
    (riddle_id,) = submit_docs(settings, riddle_doc("x * unknown =", "f/xy.txt"))
    run(settings, once=True)
    _, riddle = final(settings, riddle_id)
    assert "unknown" in riddle.error
    assert len([e for e in riddle.history if e["stage"] == "solve"]) == 1


def test_noul_comparison_answers_a_probability(settings: Settings, facts: Path) -> None:
    (riddle_id,) = submit_docs(
        settings, riddle_doc("Is x > y?", "f/xy.txt", riddle={"answer": {"type": "noul"}})
    )
    run(settings, once=True)
    queue, riddle = final(settings, riddle_id)
    assert (queue, riddle.solution.solution, riddle.solution.accepted) == (Queue.DONE, "0", True)


def test_gatekeeper_rejects_a_repeated_wrong_solution(settings: Settings, facts: Path) -> None:
    stubborn = 'cmd:echo \'{"solution": "149", "explanation": "same again"}\''
    settings = replace(settings, handlers={**settings.handlers, "solve": (stubborn,)}, max_trials=2)
    (riddle_id,) = submit_docs(settings, riddle_doc("x * y =", "f/xy.txt"))
    run(settings, once=True)
    first, second = final(settings, riddle_id)[1].riddle.solutions_before
    assert "is wrong" in first.review and "150" in first.review
    assert "already rejected" in second.review


def test_gatekeeper_checks_the_typed_answer(settings: Settings, facts: Path) -> None:
    wrong_key = 'cmd:echo \'{"solution": "maybe"}\''
    settings = replace(
        settings, handlers={**settings.handlers, "solve": (wrong_key,)}, max_trials=1
    )
    answer = {"type": "choice", "criteria": {"yes": "it is", "no": "it is not"}}
    (riddle_id,) = submit_docs(settings, riddle_doc("Is it?", riddle={"answer": answer}))
    run(settings, once=True)
    (rejected,) = final(settings, riddle_id)[1].riddle.solutions_before
    assert "maybe" in rejected.review and "yes" in rejected.review


def test_a_file_used_by_1000_riddles_is_extracted_once(
    settings: Settings, facts: Path, helpers: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    counter = tmp_path / "count.txt"
    monkeypatch.setenv("COUNT_FILE", str(counter))
    monkeypatch.syspath_prepend(str(helpers))
    settings = replace(
        settings,
        fsync=False,
        handlers={**settings.handlers, "extract": ("py_handlers:count_extractions",)},
    )
    submit_docs(settings, *[riddle_doc("x * y =", "f/xy.txt") for _ in range(1000)])
    run(settings, ("extract",), once=True)
    assert counter.read_text() == "x\n"
    spool = runtime.open_spool(settings)
    assert len(spool.ids(Queue.EXTRACTED)) == 1000
    paths = {r.data[0].file_extracted for r in spool.iter_queue(Queue.EXTRACTED)}
    assert len(paths) == 1
    (facts / "f" / "xy.txt").write_text("x = 11\ny = 15\n")  # changed content: extracted again
    submit_docs(settings, riddle_doc("x * y =", "f/xy.txt"))
    run(settings, ("extract",), once=True)
    assert counter.read_text() == "x\nx\n"


def test_handler_from_entry_point(
    settings: Settings, facts: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, helpers: Path
) -> None:
    site = tmp_path / "site"
    dist = site / "riddle_plugin-1.0.dist-info"
    dist.mkdir(parents=True)
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: riddle-plugin\nVersion: 1.0\n")
    (dist / "entry_points.txt").write_text("[riddlectl.handlers]\nnaysayer = py_handlers:decline\n")
    monkeypatch.syspath_prepend(str(site))
    monkeypatch.syspath_prepend(str(helpers))
    settings = replace(
        settings, handlers={**settings.handlers, "solve": ("naysayer", "calculator")}
    )
    (riddle_id,) = submit_docs(settings, riddle_doc("x + y =", "f/xy.txt"))
    run(settings, once=True)
    assert final(settings, riddle_id)[1].solution.solution == "25"
    assert (Path(settings.spool) / "declined.txt").read_text() == riddle_id


def test_shell_script_solver(settings: Settings, facts: Path, tmp_path: Path) -> None:
    script = tmp_path / "solver.sh"
    script.write_text('#!/bin/sh\ncat >/dev/null\necho "{\\"solution\\": \\"$RIDDLE_ID\\"}"\n')
    script.chmod(0o755)
    settings = replace(settings, handlers={**settings.handlers, "solve": (f"cmd:{script}",)})
    (riddle_id,) = submit_docs(
        settings, riddle_doc("who am i?", status={"validate": {"required": False}})
    )
    run(settings, once=True)
    assert final(settings, riddle_id)[1].solution.solution == riddle_id
