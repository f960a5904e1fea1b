"""Bounded documents: one size limit, `max_document_bytes`. A new riddle over its share of
it is refused (submit) or set aside (drop-in); a riddle the spool accepted that a step
would grow past it fails with the reason, and is never set aside or lost."""

from __future__ import annotations

import os
import re
import sys
import time
from pathlib import Path

import orjson
import pytest

from riddlectl import runtime
from riddlectl.agent.supervisor import run
from riddlectl.errors import DocumentTooLarge
from riddlectl.identity import Actor
from riddlectl.ops import submit
from riddlectl.ops.admin import hold, release, retry
from riddlectl.settings import Settings
from riddlectl.spool.states import Queue
from tests.conftest import Cli, Completed, example_doc, submit_flags

MIB = 1024 * 1024
OLD = time.time() - 3_600  # drop-ins backdated past the drop-in grace period


def solver(helpers: Path, *args: object) -> str:
    return f"solve=cmd:{sys.executable} {helpers / 'sized_solver.py'} " + " ".join(map(str, args))


def one_line(res: Completed) -> str:
    lines = [line for line in res.err.splitlines() if line.strip()]
    assert len(lines) == 1 and "Traceback" not in res.err, res.err[-2000:]
    return lines[0]


def status(cli: Cli, riddle_id: str) -> dict:
    res = cli("status", riddle_id, "--json")
    assert res.code == 0, res.err
    (found,) = res.json()["riddles"]
    return found


def sizes_in(text: str) -> list[int]:
    return [int(n) for n in re.findall(r"(\d+) bytes", text)]


def drop_in(cli: Cli, name: str, body: bytes) -> Path:
    path = cli.spool / "incoming" / name
    path.write_bytes(body)
    os.utime(path, (OLD, OLD))
    return path


def padded(riddle_id: str, size: int) -> bytes:
    """A valid riddle document of exactly `size` bytes."""
    head = orjson.dumps({**example_doc(id=riddle_id), "pad": ""})
    return head[:-2] + b"p" * (size - len(head)) + b'"}'


def corrupt_reason(cli: Cli, name: str) -> str:
    return (cli.spool / "corrupt" / f"{name}.reason").read_text()


def set_limit(cli: Cli, limit: int) -> None:
    (cli.spool / "config.toml").write_text(f"max_document_bytes = {limit}\n")


# -- a step that would grow a riddle past the limit fails it -----------------------------------


def test_solver_answer_over_the_limit_fails_the_riddle(cli: Cli, helpers: Path) -> None:
    submit_flags(cli, "big")
    submit_flags(cli, "small")
    done = cli("run", "--once", "--handler", solver(helpers, "explanation", 5 * MIB))
    assert done.code == 1, done.err  # a riddle of this run failed
    found = status(cli, "big")
    assert found["queue"] == "failed" and found["solution"] is None
    assert found["error"].startswith("solve: ")
    assert "max_document_bytes" in found["error"]
    would_be, limit, *_ = sizes_in(found["error"])
    assert would_be > 5 * MIB and limit < 4 * MIB, found["error"]
    assert list((cli.spool / "corrupt").iterdir()) == []
    shown = cli("show", "big").json()
    assert len(orjson.dumps(shown)) <= 4 * MIB
    assert shown["history"][-1]["outcome"] == "failed"
    assert shown["status"]["extract"]["finished"] is True  # the document before the step
    assert cli("result", "big").code == 1


def test_sub_results_that_would_grow_the_parent_past_the_limit_fail_it(
    cli: Cli, helpers: Path
) -> None:
    cli("init")
    set_limit(cli, 64 * 1024)  # 48 KiB for a riddle on its way; three children of 20 KB
    assert cli("submit", "--id", "P", "--question", "parts?", "--no-validate").code == 0
    done = cli("run", "--once", "--handler", solver(helpers, "children", 3, 20_000))
    assert done.code == 1, done.err
    parent = status(cli, "P")
    assert parent["queue"] == "failed" and "max_document_bytes" in parent["error"]
    assert parent["error"].startswith("solve: ")
    for child in ("P-1", "P-2", "P-3"):
        assert status(cli, child)["queue"] == "done"
    assert list((cli.spool / "corrupt").iterdir()) == []


def test_rejected_solutions_piling_up_past_the_limit_fail_the_riddle(
    cli: Cli, helpers: Path
) -> None:
    cli("init")
    set_limit(cli, 64 * 1024)  # 48 KiB on its way: two rejected 20 KB answers, then a third
    submit_flags(cli, "wordy")
    done = cli(
        "run", "--once", "--max-trials", "5", "--handler", solver(helpers, "explanation", 20_000)
    )
    assert done.code == 1, done.err
    found = status(cli, "wordy")
    assert found["queue"] == "failed" and found["error"].startswith("solve: ")
    shown = cli("show", "wordy").json()
    assert len(shown["riddle"]["solutions_before"]) == 2 and shown["status"]["trial"] == 2
    assert list((cli.spool / "corrupt").iterdir()) == []


def test_a_sub_riddle_over_the_limit_for_new_riddles_fails_its_parent(
    cli: Cli, helpers: Path
) -> None:
    cli("init")
    set_limit(cli, 64 * 1024)  # new riddles, sub-riddles included: 16 KiB
    assert cli("submit", "--id", "P", "--question", "parts?", "--no-validate").code == 0
    done = cli("run", "--once", "--handler", solver(helpers, "child-question", 20_000))
    assert done.code == 1, done.err
    parent = status(cli, "P")
    assert parent["queue"] == "failed"
    assert "sub-riddle P-1" in parent["error"] and "16384-byte limit" in parent["error"]
    assert cli("status", "P-1").code == 3  # never stored
    assert list((cli.spool / "corrupt").iterdir()) == []


def test_riddles_over_a_lowered_limit_stay_visible_and_fail_at_their_next_step(
    cli: Cli, helpers: Path
) -> None:
    submit_flags(cli, "wide")
    run = cli(
        "run",
        "--once",
        "--stages",
        "extract,solve",
        "--handler",
        solver(helpers, "explanation", 100_000),
    )
    assert run.code == 0, run.err
    set_limit(cli, 64 * 1024)  # the riddle in solved/ is now over the limit
    assert status(cli, "wide")["queue"] == "solved"
    done = cli("run", "--once")
    assert done.code == 1, done.err
    found = status(cli, "wide")
    assert found["queue"] == "failed" and found["error"].startswith("validate: ")
    assert list((cli.spool / "corrupt").iterdir()) == []


# -- new riddles: refused at submit, set aside as drop-ins, with their real size -------------


def test_drop_in_over_the_limit_for_new_riddles_is_set_aside_with_its_real_size(
    cli: Cli,
) -> None:
    cli("init")
    drop_in(cli, "near.json", padded("near", 4_194_254))  # under 4 MiB, over the new-riddle 1 MiB
    drop_in(cli, "over.json", padded("over", 5 * MIB + 7))
    drop_in(cli, "far.json", padded("far", 17 * MIB + 3))  # beyond what is ever read
    submit_flags(cli, "fine")
    done = cli("run", "--once")
    assert done.code == 0, done.err
    assert status(cli, "fine")["queue"] == "done"
    assert sizes_in(corrupt_reason(cli, "near.json")) == [4_194_254]
    assert "1048576-byte limit" in corrupt_reason(cli, "near.json")
    assert sizes_in(corrupt_reason(cli, "over.json")) == [5 * MIB + 7]
    assert sizes_in(corrupt_reason(cli, "far.json")) == [17 * MIB + 3]


def test_the_limit_is_one_setting_for_submit_and_drop_ins(cli: Cli) -> None:
    cli("init")
    set_limit(cli, 256 * 1024)  # new riddles: 64 KiB
    body = padded("mid", 70_000)
    refused = cli("submit", "-", input=body)
    assert refused.code == 2
    line = one_line(refused)
    assert "65536-byte limit" in line and "max_document_bytes" in line
    env = {"RIDDLECTL_MAX_DOCUMENT_BYTES": str(MIB)}  # the environment beats config.toml
    assert cli("submit", "-", input=body, env=env).out == "mid\n"
    drop_in(cli, "dropped.json", padded("dropped", 70_000))
    assert cli("run", "--once").code == 0
    assert "65536-byte limit" in corrupt_reason(cli, "dropped.json")
    assert status(cli, "mid")["queue"] == "done"  # accepted before: it is not set aside
    for bad in ("1000", "lots"):
        res = cli("status", env={"RIDDLECTL_MAX_DOCUMENT_BYTES": bad})
        assert res.code == 2 and "RIDDLECTL_MAX_DOCUMENT_BYTES" in one_line(res)


# -- the library: commands make room, errors are bounded ---------------------------------------


@pytest.fixture
def small(settings: Settings) -> Settings:
    return Settings(**{**settings.__dict__, "max_document_bytes": 64 * 1024})


def submitted(settings: Settings, *docs: dict) -> list[str]:
    spool = runtime.open_spool(settings)
    pipeline = runtime.pipeline(settings, spool, Actor("test"))
    return submit.submit(pipeline, submit.prepare([("doc", d) for d in docs], settings))


def test_commands_make_room_by_dropping_old_history_never_fail_the_riddle(
    small: Settings,
) -> None:
    (riddle_id,) = submitted(small, example_doc(id="full", pad="p" * 15_000))
    spool = runtime.open_spool(small)
    pipeline = runtime.pipeline(small, spool, Actor("test"))
    claim = spool.claim_id(riddle_id)
    riddle = claim.riddle.model_copy(deep=True)
    riddle.extensions()["notes"] = "n" * 30_000  # what a generous handler left: ~46 KiB in all
    pipeline.move(claim, riddle, Queue.INCOMING, "extract", "ok")
    for _ in range(60):  # each hold and release adds a history entry
        hold(pipeline, riddle_id)
        release(pipeline, riddle_id)
    queue, riddle = spool.require(riddle_id)
    assert queue is Queue.INCOMING and riddle.error is None
    assert len(orjson.dumps(riddle.to_json())) <= 64 * 1024
    assert riddle.history[-1]["stage"] == "release"
    assert riddle.history[0]["stage"] != "submit"  # the oldest entries made room


def test_a_failure_always_fits_and_retry_makes_room(
    small: Settings, helpers: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (riddle_id,) = submitted(small, example_doc(id="edge", pad="p" * 15_000))
    spool = runtime.open_spool(small)
    pipeline = runtime.pipeline(small, spool, Actor("test"))
    claim = spool.claim_id(riddle_id)
    riddle = claim.riddle.model_copy(deep=True)
    # As close to the limit for a riddle on its way (the limit less 16 KiB) as can be.
    riddle.extensions()["notes"] = ""
    size = len(orjson.dumps(riddle.to_json()))
    riddle.extensions()["notes"] = "n" * (48 * 1024 - size - 400)
    pipeline.move(claim, riddle, Queue.INCOMING, "extract", "ok")
    monkeypatch.syspath_prepend(str(helpers))
    handlers = {**small.handlers, "extract": ("py_handlers:raise_huge",)}
    run(
        Settings(**{**small.__dict__, "handlers": handlers, "max_attempts": 1}),
        ("extract",),
        once=True,
    )
    queue, failed = spool.require(riddle_id)
    assert queue is Queue.FAILED, failed.error
    assert failed.error.startswith("extract failed after 1 attempt: RuntimeError: boom")
    assert len(failed.error) < 2_000  # a handler's huge message is cut, not stored whole
    assert len(orjson.dumps(failed.to_json())) <= 64 * 1024
    assert retry(pipeline, riddle_id) is Queue.INCOMING
    queue, retried = spool.require(riddle_id)
    assert (queue, retried.error) == (Queue.INCOMING, None)
    assert len(orjson.dumps(retried.to_json())) <= 48 * 1024


def test_a_command_that_cannot_make_room_refuses_and_changes_nothing(
    settings: Settings, small: Settings
) -> None:
    (riddle_id,) = submitted(settings, example_doc(id="wide"))
    spool = runtime.open_spool(settings)
    pipeline = runtime.pipeline(settings, spool, Actor("test"))
    claim = spool.claim_id(riddle_id)
    riddle = claim.riddle.model_copy(deep=True)
    riddle.extensions()["notes"] = "n" * 60_000  # stored before the limit was lowered
    pipeline.move(claim, riddle, Queue.FAILED, "solve", "failed", error="gave up")
    lowered = runtime.pipeline(small, runtime.open_spool(small), Actor("test"))
    for _ in range(2):  # the claim was given back: the second try is refused alike
        with pytest.raises(DocumentTooLarge, match="cannot retry: the document would grow"):
            retry(lowered, riddle_id)
    queue, kept = spool.require(riddle_id)
    assert (queue, kept.error, kept.rev) == (Queue.FAILED, "gave up", 2)
