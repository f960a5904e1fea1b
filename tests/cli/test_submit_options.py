"""`submit`'s options beside files or stdin: each applies to every riddle submitted, over
the documents' own fields, or the command refuses with exit 2 naming the option; none is
dropped without a word. The table below names every option of the command: a new option
joins it, or the test that reads the command's own options fails."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson
import pytest

from riddlectl.cli.app import _load
from tests.conftest import ROOT, Cli

EXAMPLE = str(ROOT / "examples" / "x-times-y.json")
Doc = dict[str, Any]

# option -> (its arguments, what every riddle submitted with it holds)
APPLIES: dict[str, tuple[list[str], Callable[[Doc], bool]]] = {
    "--context": (["ctx"], lambda d: d["riddle"]["context"] == "ctx"),
    "--data": (
        ["--data", "example/x.txt"],
        lambda d: [i["file_plain"] for i in d["data"]] == ["example/x.txt"],
    ),
    "--answer-kind": (["int"], lambda d: d["riddle"]["answer"] == {"type": "fill", "kind": "int"}),
    "--no-extract": ([], lambda d: d["status"]["extract"]["required"] is False),
    "--no-validate": ([], lambda d: d["status"]["validate"]["required"] is False),
    "--priority": (["9"], lambda d: d["priority"] == 9),
}
# Options that name one riddle, or change what is printed rather than what is stored.
OTHERS = {"--id", "--question", "--wait", "--timeout"}


def option_args(option: str) -> list[str]:
    args, _ = APPLIES[option]
    return args if args[:1] == [option] else [option, *args]


def shown(cli: Cli, riddle_id: str) -> Doc:
    found = cli("show", riddle_id)
    assert found.code == 0, found.err
    doc = found.json()
    assert isinstance(doc, dict)
    return doc


def test_the_table_names_every_option_of_submit() -> None:
    command = _load("submit")
    options = {opt for param in command.params for opt in param.opts if opt.startswith("--")}
    assert options == set(APPLIES) | OTHERS


@pytest.mark.parametrize("option", sorted(APPLIES))
@pytest.mark.parametrize("way", ["file", "stdin", "two on stdin"])
def test_an_option_beside_documents_applies_to_every_riddle(
    cli: Cli, option: str, way: str
) -> None:
    _, holds = APPLIES[option]
    ids = ["a1", "a2"] if way == "two on stdin" else ["a1"]
    docs = [{**orjson.loads(Path(EXAMPLE).read_bytes()), "id": i} for i in ids]
    lines = "\n".join(orjson.dumps(d).decode() for d in docs)
    if way == "file":
        path = cli.data.parent / "one.json"
        path.write_text(lines)
        done = cli("submit", str(path), *option_args(option))
    else:
        done = cli("submit", "-", *option_args(option), input=lines)
    assert (done.code, done.out) == (0, "".join(f"{i}\n" for i in ids)), done.err
    for riddle_id in ids:
        assert holds(shown(cli, riddle_id)), (option, riddle_id)


def test_the_issue_line_applies_every_option(cli: Cli) -> None:
    done = cli(
        "submit", EXAMPLE, "--id", "wantthis", "--context", "ctx", "--no-validate",
        "--priority", "9",
    )  # fmt: skip
    assert (done.code, done.out) == (0, "wantthis\n"), done.err
    doc = shown(cli, "wantthis")
    assert doc["riddle"]["context"] == "ctx" and doc["priority"] == 9
    assert doc["status"]["validate"]["required"] is False


REFUSED = [
    (["--id", "two", EXAMPLE, EXAMPLE], "--id: names one riddle, but the input holds 2"),
    (["--id", "a b", EXAMPLE], "--id: 'a b' is not a valid id"),
    (["--question", "q", EXAMPLE], "submit: give files or --question, not both"),
    (["--timeout", "3", EXAMPLE], "--timeout: only with --wait"),
    (
        ["--answer-kind", "bogus", EXAMPLE],
        "--answer-kind: expected one of text, int, number, json_list, noul, got 'bogus'",
    ),
]


@pytest.mark.parametrize(("args", "line"), REFUSED)
def test_an_option_that_cannot_apply_is_refused_naming_it(
    cli: Cli, args: list[str], line: str
) -> None:
    refused = cli("submit", *args)
    assert (refused.code, refused.out, refused.err) == (2, "", f"riddlectl: {line}\n")
    assert cli("status", "--json").json()["riddles"] == []  # type: ignore[index]


def test_errors_name_the_option_the_user_typed_and_the_absolute_path(cli: Cli) -> None:
    refused = cli("submit", "--question", "q", "--data", "example/nope.txt")
    looked_for = cli.data.resolve() / "example" / "nope.txt"
    assert (refused.code, refused.err) == (2, f"riddlectl: --data: {looked_for} does not exist\n")
    beside = cli("submit", EXAMPLE, "--data", "nope.txt")
    assert beside.err == f"riddlectl: --data: {cli.data.resolve() / 'nope.txt'} does not exist\n"
    bad_answer = {"riddle": {"question": "q", "answer": {"type": "choice", "criteria": {"a": "x"}}}}
    refused = cli("submit", "-", input=orjson.dumps(bad_answer))
    assert refused.err == (
        'riddlectl: <stdin>: riddle.answer.criteria: must have at least 2 items (got {"a": "x"})\n'
    )


def test_a_missing_data_file_is_named_by_its_absolute_path_from_anywhere(
    cli: Cli, tmp_path: Path
) -> None:
    """A relative data directory, a command run from elsewhere: the error names the place
    looked in, whichever way the riddle came (submit, or a drop-in that fails)."""
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    argv = cli.argv("submit", "--question", "x =", "--data", "example/gone.txt")
    argv[argv.index("--data-dir") + 1] = os.path.relpath(cli.data, elsewhere)
    refused = subprocess.run(argv, cwd=elsewhere, capture_output=True, text=True, timeout=60)
    looked_for = cli.data.resolve() / "example" / "gone.txt"
    assert (refused.returncode, refused.stderr) == (
        2,
        f"riddlectl: --data: {looked_for} does not exist\n",
    )
    doc = {"id": "m1", "riddle": {"question": "x ="}, "data": [{"file_plain": "example/gone.txt"}]}
    assert isinstance(cli.spool, Path)
    (cli.spool / "incoming" / "m1.json").write_bytes(orjson.dumps(doc))
    assert cli("run", "--once", "--quiet").code == 1
    assert f"{looked_for} does not exist" in shown(cli, "m1")["error"]


@pytest.mark.parametrize(
    ("args", "line"),
    [
        (["result", "r1", "--timeout", "3"], "--timeout: only with --wait"),
        (
            ["status", "r1", "--stage", "failed"],
            "--stage: not with ids (it lists a queue; ids name the riddles)",
        ),
        (
            ["status", "-", "--stage", "failed"],
            "--stage: not with ids (it lists a queue; ids name the riddles)",
        ),
    ],
)
def test_kin_an_option_other_commands_would_drop_is_refused(
    cli: Cli, args: list[str], line: str
) -> None:
    """The same rule beyond `submit`: an option that the rest of the command line would
    make meaningless is refused, not dropped."""
    assert cli("submit", "--id", "r1", "--question", "1 + 1 =").code == 0
    refused = cli(*args, input="r1\n")
    assert (refused.code, refused.out, refused.err) == (2, "", f"riddlectl: {line}\n")
