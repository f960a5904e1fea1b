"""The pipeline's promises, through the installed command, on a real spool."""

from __future__ import annotations

import sys
from pathlib import Path

import orjson

from tests.conftest import Cli, example_doc, write_json


def spool_doc(spool: Path, queue: str, riddle_id: str) -> dict:
    return orjson.loads((spool / queue / f"{riddle_id}.json").read_bytes())


def test_seed_example_prints_150_and_ends_done(cli: Cli, tmp_path: Path) -> None:
    source = write_json(tmp_path / "ex1.json", example_doc(id="ex1"))
    assert cli("submit", str(source)).out.split() == ["ex1"]
    run = cli("run", "--once")
    assert run.code == 0, run.err
    result = cli("result", "ex1")
    assert (result.code, result.out) == (0, "150\n")
    doc = spool_doc(cli.spool, "done", "ex1")
    assert doc["status"]["solved"] is True
    assert doc["solution"]["accepted"] is True
    assert "x = 10" in doc["solution"]["explanation"]
    assert all(item["file_extracted"] for item in doc["data"])
    extraction = orjson.loads((cli.spool / doc["data"][0]["file_extracted"]).read_bytes())
    assert extraction["variables"] == {"x": "10"}


def test_without_validation_ends_done_unvalidated(cli: Cli) -> None:
    cli(
        "submit",
        "--id",
        "nv",
        "--question",
        "x + y =",
        "--data",
        "example/x.txt",
        "--data",
        "example/y.txt",
        "--no-validate",
    )
    assert cli("run", "--once").code == 0
    doc = spool_doc(cli.spool, "done", "nv")
    assert doc["solution"]["solution"] == "25"
    assert doc["solution"]["accepted"] is None
    assert doc["status"]["solved"] is True
    assert not any(e["stage"] == "validate" for e in doc["history"])


def test_without_extraction_skips_incoming(cli: Cli, helpers: Path) -> None:
    cli("submit", "--id", "ne", "--question", "anything?", "--no-extract")
    assert (cli.spool / "extracted" / "ne.json").exists()
    assert not (cli.spool / "incoming" / "ne.json").exists()
    run = cli(
        "run",
        "--once",
        "--handler",
        f"solve=cmd:{sys.executable} {helpers}/wrong_then_right.py",
        "--handler",
        """validate=cmd:echo '{"accept": true, "review": "fine"}'""",
    )
    assert run.code == 0, run.err
    doc = spool_doc(cli.spool, "done", "ne")
    assert [e["stage"] for e in doc["history"]] == ["submit", "solve", "validate", "manage"]
    assert doc["solution"]["review"] == "fine"


def test_rejected_solution_is_posed_again_and_kept(cli: Cli, tmp_path: Path, helpers: Path) -> None:
    write_json(tmp_path / "r.json", example_doc(id="r1"))
    cli("submit", str(tmp_path / "r.json"))
    run = cli(
        "run", "--once", "--handler", f"solve=cmd:{sys.executable} {helpers}/wrong_then_right.py"
    )
    assert run.code == 0, run.err
    doc = spool_doc(cli.spool, "done", "r1")
    assert doc["status"]["trial"] == 1
    assert doc["solution"]["solution"] == "150"
    (rejected,) = doc["riddle"]["solutions_before"]
    assert rejected["solution"] == "149"
    assert rejected["accepted"] is False
    assert "150" in rejected["review"]


def test_always_wrong_fails_after_max_trials(cli: Cli, tmp_path: Path, helpers: Path) -> None:
    write_json(tmp_path / "w.json", example_doc(id="w1"))
    cli("submit", str(tmp_path / "w.json"))
    run = cli(
        "run",
        "--once",
        "--handler",
        f"solve=cmd:{sys.executable} {helpers}/always_wrong.py",
        env={"SOLUTION_MAX_TRIALS": "2"},
    )
    assert run.code == 1
    doc = spool_doc(cli.spool, "failed", "w1")
    assert doc["status"]["trial"] == 2
    assert len(doc["riddle"]["solutions_before"]) == 2
    assert "rejected 2 times" in doc["error"]
    result = cli("result", "w1")
    assert result.code == 1
    assert "failed" in result.err


def test_two_agents_share_100_riddles_without_doubles(
    cli: Cli, tmp_path: Path, helpers: Path
) -> None:
    docs = [
        {
            "id": f"c{i:03}",
            "riddle": {"question": "q"},
            "status": {"extract": {"required": False}, "validate": {"required": False}},
        }
        for i in range(100)
    ]
    assert cli("submit", "-", input=orjson.dumps(docs)).code == 0
    log = tmp_path / "solve.log"
    handler = f"cmd:{sys.executable} {helpers}/logging_solver.py"
    agents = [
        cli.popen(
            "agent",
            "solve",
            "--handler",
            handler,
            "--once",
            env={**__import__("os").environ, "SOLVE_LOG": str(log)},
        )
        for _ in range(2)
    ]
    for agent in agents:
        assert agent.wait(timeout=120) == 0, agent.stderr.read()
    lines = log.read_text().split()
    ids, pids = lines[0::2], lines[1::2]
    assert sorted(ids) == [f"c{i:03}" for i in range(100)]
    assert len(set(pids)) == 2, "both agents should have taken a share"
    assert len(list((cli.spool / "done").glob("*.json"))) == 100


def test_a_reply_that_does_not_fit_is_one_line_naming_its_fields(cli: Cli, tmp_path: Path) -> None:
    solver = tmp_path / "misfit.sh"
    solver.write_text(
        "#!/bin/sh\ncat >/dev/null\n"
        """echo '{"solution": ["42"], "explanation": null}'\n"""
    )
    solver.chmod(0o755)
    cli("submit", "--id", "misfit", "--question", "1 + 1 =", "--no-extract")
    run = cli("run", "--once", "--max-attempts", "1", "--handler", f"solve=cmd:{solver}")
    assert run.code == 1, run.err
    error = spool_doc(cli.spool, "failed", "misfit")["error"]
    assert "\n" not in error and "pydantic" not in error, error
    assert error.endswith(
        f'cmd:{solver}: reply: solution must be a string (got ["42"]); '
        "explanation must be a string (got null)"
    ), error
    status = cli("status", "misfit")
    assert len(status.out.strip().splitlines()) == 2, status.out  # a header and one line
    assert "explanation must be a string (got null)" in status.out


def test_a_sub_riddle_that_does_not_fit_is_one_line_naming_its_fields(
    cli: Cli, tmp_path: Path
) -> None:
    solver = tmp_path / "splitter.sh"
    solver.write_text(
        "#!/bin/sh\ncat >/dev/null\n"
        """echo '{"sub_riddles": [{"riddle": "what is 1 + 1?"}]}'\n"""
    )
    solver.chmod(0o755)
    cli("submit", "--id", "parent", "--question", "1 + 1 =", "--no-extract")
    run = cli("run", "--once", "--max-attempts", "1", "--handler", f"solve=cmd:{solver}")
    assert run.code == 1, run.err
    error = spool_doc(cli.spool, "failed", "parent")["error"]
    assert error.endswith(
        f'cmd:{solver}: invalid sub-riddle: riddle must be an object (got "what is 1 + 1?")'
    ), error


def test_agent_takes_stage_equals_handler_for_its_own_stage(cli: Cli) -> None:
    cli("submit", "--id", "two", "--question", "1 + 1 =", "--no-extract", "--no-validate")
    done = cli("agent", "solve", "--once", "--handler", """solve=cmd:echo '{"solution": 2}'""")
    assert done.code == 0, done.err
    assert (cli("result", "two").code, cli("result", "two").out) == (0, "2\n")


def test_agent_refuses_a_handler_for_another_stage_in_one_line(cli: Cli) -> None:
    done = cli("agent", "solve", "--once", "--handler", "validate=gatekeeper")
    assert done.code == 2
    assert done.err.strip().splitlines() == [
        "riddlectl: --handler: validate=gatekeeper: this agent runs solve; "
        "give a handler for solve (HANDLER or solve=HANDLER)"
    ]
