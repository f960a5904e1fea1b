"""Every spool implementation, each test once per spool: the contract suite's fixture."""

from __future__ import annotations

from pathlib import Path

import pytest

from riddlectl.document.model import Riddle
from riddlectl.spool import open_spool
from riddlectl.spool.contract import Spool
from riddlectl.spool.memory import MemorySpool

# The PostgreSQL case carries the `postgres` marker: the fast tier leaves it out.
SPOOLS = ["fs", "memory", pytest.param("postgres", marks=pytest.mark.postgres)]
# The kind of spool (a row of riddlectl.spool.schemes) each parameter holds to the
# contract; the in-memory twin is no row. tests/unit/test_open_spool.py checks that every
# row has its parameter here.
BACKEND_OF_PARAM = {"fs": "directory", "postgres": "postgresql"}


@pytest.fixture(params=SPOOLS)
def spool(request: pytest.FixtureRequest, tmp_path: Path) -> Spool:
    """A fresh spool of each kind. The filesystem's is opened as a command opens it, with
    no grace for drop-ins (a test's are complete when it drops them); the PostgreSQL one
    in a schema of its own (see tests/pg.py)."""
    if request.param == "fs":
        return open_spool(tmp_path / "spool", drop_in_grace=0.0)
    if request.param == "postgres":
        return request.getfixturevalue("pg_spool")
    made = MemorySpool()
    made.init()
    return made


def riddle(riddle_id: str, **fields: object) -> Riddle:
    return Riddle.model_validate({"id": riddle_id, "riddle": {"question": "x ="}, **fields})
