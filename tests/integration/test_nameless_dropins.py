"""A drop-in with no `id` whose name gives none (generated names: spaces, any script,
200 characters, bytes that are no UTF-8) is a riddle under one id from the first look:
every form of `status` lists it under that id, `show` finds it there with its name in
`dropped_as`, and the agents of `run --once` answer it under the same id; on both kinds
of spool (dropped into `incoming/`, or taken in by `ingest`)."""

from __future__ import annotations

import itertools
import os
from pathlib import Path

import orjson
import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from riddlectl.document.ids import ID_RE
from riddlectl.spool.dropins import shown_name
from tests.conftest import Cli, example_doc
from tests.contract.test_spool_names import NAMES, usable

pytestmark = pytest.mark.postgres  # the PostgreSQL half of `any_cli`

JSON_NAMES = NAMES.map(lambda name: name + ".json").filter(usable)
_made = itertools.count()


def _drop(cli: Cli, tmp_path: Path, names: list[str]) -> None:
    """Each name a file holding the seed riddle without an id, dropped as a user drops
    it: into `incoming/` of a directory spool, or through `ingest` into a database."""
    inbox = cli.spool / "incoming" if isinstance(cli.spool, Path) else tmp_path / "inbox"
    inbox.mkdir(exist_ok=True)
    for name in names:
        doc = example_doc(riddle={"context": f"[{next(_made)}]", "question": "x * y ="})
        (inbox / name).write_bytes(orjson.dumps(doc))
    if not isinstance(cli.spool, Path):
        taken = cli("ingest", str(inbox))
        assert taken.code == 0, taken.err


@pytest.mark.timeout(600)  # a dozen commands an example, several examples
@settings(
    max_examples=3,
    deadline=None,
    phases=[Phase.explicit, Phase.generate],  # a shrink of many commands takes minutes
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(names=st.lists(JSON_NAMES, min_size=1, max_size=4, unique_by=lambda n: shown_name(n)))
def test_status_show_and_agents_see_one_id_for_a_name_that_is_no_id(
    any_cli: Cli, tmp_path: Path, names: list[str]
) -> None:
    _drop(any_cli, tmp_path, names)
    lines = any_cli("status", "--jsonl", "--stage", "incoming")
    assert lines.code == 0, lines.err
    ids = {orjson.loads(line)["id"] for line in lines.out.splitlines()}
    assert len(ids) == len(names) and all(ID_RE.fullmatch(i) for i in ids)
    whole = any_cli("status", "--json")
    assert whole.code == 0, whole.err
    assert ids <= {r["id"] for r in whole.json()["riddles"]}  # type: ignore[index]
    human = any_cli("status", "--limit", "0")
    assert human.code == 0, human.err
    assert ids <= {line.split()[0] for line in human.out.splitlines()[2:]}
    dropped_as = set()
    for riddle_id in ids:
        shown = any_cli("show", riddle_id)
        assert shown.code == 0, shown.err
        dropped_as.add(orjson.loads(shown.out)["dropped_as"])
    assert dropped_as == {shown_name(os.fsdecode(os.fsencode(n))) for n in names}
    ran = any_cli("run", "--once", timeout=120)
    assert ran.code == 0, ran.err
    answered = any_cli("result", *sorted(ids))
    assert answered.code == 0, answered.err
    assert answered.out.count("\t150\n") == len(ids) or answered.out == "150\n"
