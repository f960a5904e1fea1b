"""A spool dressed as an operator meets one after an hour of work, made by the real
commands: riddles done by a real `run --once` (a timeline with pids and durations), one
cancelled, one held, one waiting; a file set aside; agents gone: several one-shot runs
stopped, then one killed with SIGKILL holding a riddle, then one stopped."""

from __future__ import annotations

import os
import signal
from dataclasses import dataclass
from pathlib import Path

from riddlectl.spool import open_spool
from riddlectl.spool.states import Queue
from tests.cli.test_agents import SKIP_TO_SOLVE, hanging_agent, poll
from tests.conftest import Cli, example_doc, submit_documents

ENV = {**os.environ, "RIDDLECTL_FSYNC": "0"}
LONG_QUESTION = "How many " + "very " * 60 + "long words are in this question?"


@dataclass
class Dressed:
    done: list[str]  # generated ids, one batch: alike but for their ends
    waiting: str
    cancelled: str
    killed_pid: int
    corrupt: str
    once_runs: int  # one-shot runs stopped before the kill


def dress(cli: Cli, helpers: Path, tmp_path: Path, once_runs: int = 3) -> Dressed:
    submit_documents(cli, *(example_doc() for _ in range(4)))
    done = [r["id"] for r in cli("status", "--json").json()["riddles"]]  # type: ignore[index]
    for _ in range(once_runs):  # one-shot runs: each a gone agent, `stopped`
        assert cli("run", "--once", timeout=120, env=ENV).code == 0
    corrupt = "typo.json"
    spool = open_spool(cli.spool, drop_in_grace=0.0)
    try:  # a drop-in that is no riddle, set aside when an agent would claim it
        spool.drop_in(Queue.INCOMING, corrupt, b'{"riddle": {"question": "x * y ="},\n')
        assert spool.claim(Queue.INCOMING) == []
    finally:
        spool.close()
    submit_documents(
        cli,
        example_doc(id="cancelled", riddle={"question": LONG_QUESTION}),
        example_doc(id="held"),
        example_doc(id="waiting"),
    )
    assert cli("cancel", "cancelled").code == 0
    assert cli("hold", "held").code == 0
    submit_documents(cli, example_doc(id="hang", status=SKIP_TO_SOLVE))
    with hanging_agent(cli, helpers, tmp_path / "pids") as agent:
        poll(cli, lambda a: any(x["holds"] for x in a["alive"]), 60)
        agent.kill()  # SIGKILL, holding `hang`
        agent.wait(30)
        poll(cli, lambda a: any(g["how"] == "died" for g in a["gone"]), 10)
    # An agent stopped after the kill, newer than the dead one.
    later = cli.popen("agent", "validate", env=ENV)
    poll(cli, lambda a: any(x["pid"] == later.pid for x in a["alive"]), 60)
    later.send_signal(signal.SIGTERM)
    assert later.wait(30) == 0
    return Dressed(done, "waiting", "cancelled", agent.pid, corrupt, once_runs)
