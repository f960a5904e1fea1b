"""`run` carries a riddle from one stage to the next in the same process, its claim kept:
still one durable commit per stage, so a death between two carried stages leaves the
riddle in the queue of the last stage committed, whole, and nothing abandoned."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from riddlectl import runtime
from riddlectl.settings import Settings
from riddlectl.spool import crashpoints
from tests.conftest import Cli, example_doc
from tests.integration.test_crash_safety import assert_recovered, copies, submit_docs


def test_a_run_killed_between_two_carried_stages_leaves_the_riddle_where_it_was_committed(
    cli: Cli, settings: Settings
) -> None:
    (riddle_id,) = submit_docs(settings, example_doc())
    died = subprocess.run(
        cli.argv("run", "--once"),
        env={**os.environ, crashpoints.ENV: crashpoints.CARRIED},
        capture_output=True,
        timeout=60,
    )
    # Dead as it carried the riddle on from extract (the first stage it committed).
    assert died.returncode == crashpoints.CRASH_EXIT, died.stderr
    assert copies(Path(settings.spool), riddle_id) == ["extracted"]
    stored = runtime.open_spool(settings).require(riddle_id)[1]
    assert [entry["stage"] for entry in stored.history] == ["submit", "extract"]
    assert_recovered(settings, riddle_id)  # done afterwards, and nothing for doctor
    logged = [e for e in runtime.event_log(settings).read() if e["id"] == riddle_id]
    assert [(e["stage"], e["outcome"]) for e in logged] == [
        ("submit", "ok"),
        ("extract", "ok"),
        ("solve", "ok"),
        ("validate", "accepted"),
        ("manage", "accepted"),
    ]


def test_a_run_carries_a_riddle_through_every_stage_with_a_commit_each(
    cli: Cli, settings: Settings
) -> None:
    (riddle_id,) = submit_docs(settings, example_doc())
    assert cli("run", "--once").code == 0
    stored = runtime.open_spool(settings).require(riddle_id)[1]
    assert [entry["stage"] for entry in stored.history] == [
        "submit",
        "extract",
        "solve",
        "validate",
        "manage",
    ]
    assert stored.rev == 5  # one commit per stage, as when each stage claims it anew
