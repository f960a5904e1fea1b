"""Machine-readable listings are complete unless asked otherwise: `status --json` and
`--jsonl` list every riddle that matches (`--limit N` cuts, `--limit 0` does not); the
view for a person shows the newest 20 and says how many more there are."""

from __future__ import annotations

import orjson
import pytest

from tests.conftest import Cli, example_doc

pytestmark = pytest.mark.postgres  # the PostgreSQL half of `any_cli`

MANY = 27  # more than a person is shown


def _ids(out: str) -> list[str]:
    return [orjson.loads(line)["id"] for line in out.splitlines()]


def test_status_lists_every_riddle_to_a_program_and_says_what_it_leaves_out_to_a_person(
    any_cli: Cli,
) -> None:
    docs = [example_doc(id=f"r{n:02}") for n in range(MANY)]
    lines = "\n".join(orjson.dumps(doc).decode() for doc in docs)
    assert any_cli("submit", "-", input=lines).code == 0
    everyone = {f"r{n:02}" for n in range(MANY)}
    for args in (["--jsonl"], ["--jsonl", "--limit", "0"], ["--jsonl", "--stage", "extract"]):
        listed = any_cli("status", *args)
        assert listed.code == 0, listed.err
        assert sorted(_ids(listed.out)) == sorted(everyone), args
    whole = any_cli("status", "--json").json()
    assert {r["id"] for r in whole["riddles"]} == everyone  # type: ignore[index]
    assert len(_ids(any_cli("status", "--jsonl", "--limit", "5").out)) == 5
    person = any_cli("status").out.splitlines()
    assert len(person) == 2 + 20 + 1 and person[-1] == f"… {MANY - 20} more (--limit 0 for all)"
    assert len(any_cli("status", "--limit", "0").out.splitlines()) == 2 + MANY
    staged = any_cli("status", "--stage", "incoming").out.splitlines()
    assert staged[-1] == f"… {MANY - 20} more (--limit 0 for all)"
