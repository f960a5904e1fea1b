"""What the built-in agents read from data files, end to end: the installed `riddlectl`,
real agent processes, a real spool. Each riddle is checked where a user would look: the
queue it ends in, its answer, its error, the gatekeeper's review."""

from __future__ import annotations

import sys
from pathlib import Path

import orjson
import pytest

from tests.conftest import Cli, final, submit_documents
from tests.images import png

SOLVER = """\
import json, os, sys
json.load(sys.stdin)
answers = json.load(open(os.environ["ANSWERS_FILE"]))
answer = answers.get(os.environ["RIDDLE_ID"])
print(json.dumps({} if answer is None else {"solution": answer, "explanation": "told so"}))
"""


def write(data: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        (data / "r" / name).parent.mkdir(parents=True, exist_ok=True)
        (data / "r" / name).write_text(text, encoding="utf-8")


def riddle(riddle_id: str, question: str, *files: str, **extra: object) -> dict:
    return {
        "id": riddle_id,
        "riddle": {"question": question, **extra.pop("riddle", {})},  # type: ignore[dict-item]
        "data": [{"type": "text", "file_plain": f"r/{name}"} for name in files],
        **extra,
    }


def solve_attempts(doc: dict) -> int:
    return len([e for e in doc["history"] if e["stage"] == "solve" and e.get("agent")])


@pytest.fixture
def told(tmp_path: Path) -> tuple[str, Path]:
    """A `cmd:` solver that answers what `answers.json` says for each riddle id, and
    declines the others (so the calculator after it answers them)."""
    script = tmp_path / "told.py"
    script.write_text(SOLVER)
    return f"cmd:{sys.executable} {script}", tmp_path / "answers.json"


def test_one_letter_names_as_the_issue_wrote_them(cli: Cli) -> None:
    forms = {
        "is.txt": "c is 10",
        "ist.txt": "c ist zehn",
        "let.txt": "Let c be ten",
        "equals.txt": "c equals ten",
        "eq.txt": "c = 10",
        "upper.txt": "C ist zehn",
        "sei.txt": "c sei zehn",
    }
    write(cli.data, forms)
    docs = [riddle(Path(f).stem, "c * 2 =", f) for f in forms if f != "upper.txt"]
    submit_documents(cli, *docs, riddle("upper", "C * 2 =", "upper.txt"))
    run = cli("run", "--once")
    assert run.code == 0, run.err
    for doc in [*docs, {"id": "upper"}]:
        queue, found = final(cli, doc["id"])
        assert (queue, found["solution"]["solution"]) == ("done", "20"), found.get("error")
        assert found["solution"]["accepted"] is True


@pytest.mark.parametrize(
    ("text", "question", "answer"),
    [
        ("x = 10%", "x * 50 =", "5"),
        ("x = 12.5 %", "x * 8 =", "1"),
        ("x = 10 thousand", "x + 1 =", "10001"),
        ("x = 3 quarters", "x * 4 =", "3"),
        ("x = 2 1/2", "x * 2 =", "5"),
        ("x = 1e3", "x + 1 =", "1001"),
        ("x = 1,000", "x + 1 =", "1001"),
        ("x = 1,5", "x * 2 =", "3"),
        ("x = \u22123", "x * 2 =", "-6"),
        ("x = $10", "x * 2 =", "20"),
        ("x = 2\u00bd", "x * 2 =", "5"),
    ],
)
def test_numbers_with_something_attached_are_read_exactly(
    cli: Cli, text: str, question: str, answer: str
) -> None:
    write(cli.data, {"x.txt": text})
    submit_documents(cli, riddle("r1", question, "x.txt"))
    assert cli("run", "--once").code == 0
    assert cli("result", "r1").out == f"{answer}\n"


def test_what_cannot_be_read_exactly_fails_at_once_saying_why(cli: Cli) -> None:
    cases = {
        "hex": ("x = 0x10", "hexadecimal numbers are not read"),
        "glued": ("x = 10abc", "a number with letters attached"),
        "signs": ("x = --3", "two signs in a row"),
        "two": ("x = 10 or 12", "more than one number"),
        "dots": ("x = 1.2.3", "not a number"),
    }
    write(cli.data, {f"{key}.txt": text for key, (text, _) in cases.items()})
    submit_documents(cli, *(riddle(key, "x * 2 =", f"{key}.txt") for key in cases))
    run = cli("run", "--once")
    assert run.code == 1
    for key, (_, reason) in cases.items():
        queue, doc = final(cli, key)
        assert queue == "failed"
        assert doc["error"].startswith(f"'x' in r/{key}.txt cannot be read: "), doc["error"]
        assert reason in doc["error"]
        assert solve_attempts(doc) == 1  # refused, not retried
        extraction = orjson.loads((cli.spool / doc["data"][0]["file_extracted"]).read_bytes())
        assert reason in extraction["unreadable"]["x"]
    status = cli("status", "hex")
    assert "hexadecimal" in status.out


def test_two_files_that_disagree_fail_the_riddle_naming_both(cli: Cli) -> None:
    write(
        cli.data,
        {"a.txt": "x = 10\ny = 3", "b.txt": "x ist zwölf", "c.txt": "x is ten", "d.txt": "y = 4"},
    )
    submit_documents(
        cli,
        riddle("clash", "x * y =", "a.txt", "b.txt"),
        riddle("agree", "x * y =", "a.txt", "c.txt"),
        riddle("unused", "y * 2 =", "a.txt", "b.txt"),
        riddle("clash-y", "x + y =", "c.txt", "a.txt", "d.txt"),
    )
    assert cli("run", "--once").code == 1
    queue, doc = final(cli, "clash")
    assert queue == "failed"
    assert doc["error"] == "conflicting values for 'x': 10 in r/a.txt, 12 in r/b.txt"
    assert solve_attempts(doc) == 1
    assert final(cli, "clash-y")[1]["error"] == (
        "conflicting values for 'y': 3 in r/a.txt, 4 in r/d.txt"
    )
    assert final(cli, "agree")[1]["solution"]["solution"] == "30"
    assert final(cli, "unused")[1]["solution"]["solution"] == "6"


def test_the_gatekeeper_rejects_what_a_solver_misread(cli: Cli, told: tuple[str, Path]) -> None:
    """A solver that read the data the old way: 10% as 10, 0x10 as 0, the first of two
    files, "c is 10" as nothing. The gatekeeper must not accept any of it."""
    handler, answers = told
    write(
        cli.data,
        {
            "pct.txt": "x = 10%",
            "hex.txt": "x = 0x10",
            "a.txt": "x = 10",
            "b.txt": "x = 12",
            "c.txt": "c is 10",
            "half.txt": "x = two and a half",
        },
    )
    wrong = {"pct": "500", "hex": "0", "clash": "20", "c": "7", "half": "4"}
    answers.write_text(orjson.dumps(wrong).decode())
    submit_documents(
        cli,
        riddle("pct", "x * 50 =", "pct.txt"),
        riddle("hex", "x * 2 =", "hex.txt"),
        riddle("clash", "x * 2 =", "a.txt", "b.txt"),
        riddle("c", "c * 2 =", "c.txt"),
        riddle("half", "x * 2 =", "half.txt"),
    )
    run = cli(
        "run", "--once", "--max-trials", "1", "--handler", f"solve={handler}",
        env={"ANSWERS_FILE": str(answers)},
    )  # fmt: skip
    assert run.code == 1, run.err
    reviews = {}
    for riddle_id, given in wrong.items():
        queue, doc = final(cli, riddle_id)
        assert queue == "failed", riddle_id
        (rejected,) = doc["riddle"]["solutions_before"]
        assert rejected["solution"] == given
        reviews[riddle_id] = rejected["review"]
    assert "from the data gives 5" in reviews["pct"]
    assert "hexadecimal" in reviews["hex"]
    assert "conflicting values for 'x'" in reviews["clash"] and "r/b.txt" in reviews["clash"]
    assert "from the data gives 20" in reviews["c"]
    assert "from the data gives 5" in reviews["half"]


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("v = two point five", "2.5"),
        ("v ist zwei Komma fünf", "2.5"),
        ("v = three quarters", "0.75"),
        ("v = one half", "0.5"),
        ("Let v be a half.", "0.5"),
        ("v = minus two point five", "-2.5"),
        ("v ist drei Viertel", "0.75"),
        ("v ist ein halb", "0.5"),
        ("v ist zweieinhalb", "2.5"),
        ("v = two and three quarters", "2.75"),
        ("v = ten percent", "0.1"),
        ("v = two thirds", "2/3"),
    ],
)
def test_numbers_in_words_beyond_integers(cli: Cli, text: str, value: str) -> None:
    write(cli.data, {"v.txt": text})
    submit_documents(
        cli, riddle("w1", "v =", "v.txt"), riddle("w2", "v times three quarters", "v.txt")
    )
    assert cli("run", "--once").code == 0
    assert cli("result", "w1").out == f"{value}\n"
    queue, doc = final(cli, "w2")
    assert queue == "done" and doc["solution"]["accepted"] is True


def test_number_words_beyond_integers_in_questions(cli: Cli) -> None:
    write(cli.data, {"x.txt": "x = 10"})
    questions = {
        "q1": ("two point five * x =", "25"),
        "q2": ("Was ist zwei Komma fünf mal x?", "25"),
        "q3": ("x times one half", "5"),
        "q4": ("drei Viertel mal x", "7.5"),
        "q5": ("minus two point five plus x", "7.5"),
    }
    submit_documents(cli, *(riddle(key, q, "x.txt") for key, (q, _) in questions.items()))
    assert cli("run", "--once").code == 0
    for key, (_, answer) in questions.items():
        queue, doc = final(cli, key)
        assert (queue, doc["solution"]["solution"]) == ("done", answer)
        assert doc["solution"]["accepted"] is True


def test_a_point_outside_the_image_is_rejected(cli: Cli, told: tuple[str, Path]) -> None:
    handler, answers = told
    (cli.data / "img").mkdir()
    (cli.data / "img" / "dot.png").write_bytes(png(10, 8))
    answers.write_text(
        orjson.dumps({"out": "[20, 3]", "in": "[9, 7]", "many": "[[1, 1], [3, 8]]"}).decode()
    )

    def point_riddle(riddle_id: str, **answer: object) -> dict:
        return {
            "id": riddle_id,
            "riddle": {
                "question": "Where is the red dot?",
                "answer": {"type": "extract", "kind": "coordinates", **answer},
            },
            "data": [{"type": "image", "file_plain": "img/dot.png"}],
            "status": {"extract": {"required": False}},
        }

    submit_documents(cli, point_riddle("out"), point_riddle("in"), point_riddle("many", many=True))
    run = cli(
        "run", "--once", "--max-trials", "1", "--handler", f"solve={handler}",
        env={"ANSWERS_FILE": str(answers)},
    )  # fmt: skip
    assert run.code == 1, run.err
    queue, doc = final(cli, "in")
    assert (queue, doc["solution"]["accepted"]) == ("done", True)
    for riddle_id, point in (("out", "[20, 3]"), ("many", "[3, 8]")):
        queue, doc = final(cli, riddle_id)
        assert queue == "failed"
        (rejected,) = doc["riddle"]["solutions_before"]
        assert rejected["review"] == (f"point {point} lies outside the 10x8 image (data item 1)"), (
            rejected["review"]
        )
