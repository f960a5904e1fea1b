"""Riddles dropped in are riddles at once: `status`, `status ID`, `show`, `hold` and
`cancel` find them under their id before any agent ran, on every kind of spool."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from tests.conftest import Cli, example_doc

pytestmark = pytest.mark.postgres  # the PostgreSQL half of `any_cli`


def _drop(cli: Cli, tmp_path: Path, files: dict[str, bytes]) -> None:
    """Files into the spool as a user drops them: copied into `incoming/` of a directory
    spool, or taken in by `ingest` into a PostgreSQL one."""
    if isinstance(cli.spool, Path):
        for name, raw in files.items():
            (cli.spool / "incoming" / name).write_bytes(raw)
        return
    inbox = tmp_path / "inbox"
    inbox.mkdir()
    for name, raw in files.items():
        (inbox / name).write_bytes(raw)
    done = cli("ingest", str(inbox))
    assert done.code == 0, done.err


def test_nameless_and_named_drop_ins_are_riddles_before_any_agent(
    any_cli: Cli, tmp_path: Path
) -> None:
    _drop(
        any_cli,
        tmp_path,
        {
            "a.json": orjson.dumps(example_doc()),  # no id: its name's stem
            "b.json": orjson.dumps(example_doc(id="own")),  # its own id wins
        },
    )
    bare = any_cli("status")
    assert bare.code == 0, bare.err
    listed = {line.split()[0] for line in bare.out.splitlines()[2:]}
    assert listed == {"a", "own"}
    one = any_cli("status", "a", "own", "--json")
    assert one.code == 0, one.err
    shown = one.json()["riddles"]  # type: ignore[index]
    assert [(r["id"], r["queue"]) for r in shown] == [("a", "incoming"), ("own", "incoming")]
    everything = any_cli("status", "--json").json()
    assert everything["counts"]["incoming"] == 2  # type: ignore[index]
    assert sorted(r["id"] for r in everything["riddles"]) == ["a", "own"]  # type: ignore[index]
    assert orjson.loads(any_cli("show", "a").out)["id"] == "a"
    assert orjson.loads(any_cli("show", "own").out)["id"] == "own"
    assert any_cli("status", "b").code == 3  # a name is no id when the document has one


def test_hold_and_cancel_find_drop_ins(any_cli: Cli, tmp_path: Path) -> None:
    _drop(
        any_cli,
        tmp_path,
        {"a.json": orjson.dumps(example_doc()), "b.json": orjson.dumps(example_doc(id="own"))},
    )
    held = any_cli("hold", "a")
    assert held.code == 0, held.err
    cancelled = any_cli("cancel", "own")
    assert cancelled.code == 0, cancelled.err
    shown = any_cli("status", "a", "own", "--json").json()["riddles"]  # type: ignore[index]
    assert [(r["id"], r["queue"]) for r in shown] == [("a", "hold"), ("own", "failed")]
    released = any_cli("release", "a")
    assert released.code == 0, released.err
    assert any_cli("run", "--once").code == 0
    assert any_cli("result", "a").out == "150\n"
