"""A new data type read by an extractor of its own is its family's folder and one
registration (`document.datatypes.register`): submit's file types, the web form, the
default extractors and the registry derive from it, and the pipeline answers a riddle
from its data. The toy family lives in a temporary package, outside riddlectl."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from riddlectl import settings as settings_mod
from riddlectl.document import datatypes
from riddlectl.document.datatypes import DataType
from riddlectl.handlers import registry
from riddlectl.settings import default_handlers
from riddlectl.spool import open_spool
from riddlectl.spool.states import Queue
from riddlectl.web.app import create_app
from riddlectl.web.service import Service
from tests.rig import Rig, history

#: A family folder as a contributor writes one: `extractor` reads `name := value` lines
#: into the shared extraction schema, `version` keys the extraction cache.
TOY_FAMILY = '''
"""The toy family: `.toy` files of `name := value` lines."""

from __future__ import annotations

from typing import Any


def extractor(job: Any) -> dict[str, Any]:
    text = job.item_path.read_text("utf-8")
    pairs = (line.split(":=", 1) for line in text.splitlines() if ":=" in line)
    return {
        "variables": {name.strip(): value.strip() for name, value in pairs},
        "formulas": {},
        "numbers": [],
    }


def version() -> str:
    return "toy.1"
'''

TOY = DataType("toy", True, (".toy",), "toy", "toyfam")


@pytest.fixture
def toy_family(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[DataType]:
    """The toy family importable and registered; both undone afterwards."""
    package = tmp_path / "families" / "toyfam"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text(TOY_FAMILY, "utf-8")
    monkeypatch.syspath_prepend(str(package.parent))
    before = list(datatypes.DATA_TYPES)
    datatypes.register(TOY)
    try:
        yield TOY
    finally:
        datatypes.DATA_TYPES[:] = before
        sys.modules.pop("toyfam", None)


def test_the_toy_family_is_one_registration_away(toy_family: DataType) -> None:
    assert datatypes.type_for("a.toy") == "toy"
    assert datatypes.type_for("A.TOY") == "toy"
    assert "toy" in datatypes.builtin_types() and "toy" in datatypes.text_types()
    assert "toy" in default_handlers()["extract"]
    assert "toy" in settings_mod.Settings().handlers["extract"]
    assert "toy" in registry.builtin_names("extract")
    handler = registry.load("toy", "extract")
    assert handler.types == frozenset({"toy"}) and handler.identity() == "toy.1"


# Starlette asks for `httpx2` under its test client; the served tests use httpx itself.
@pytest.mark.filterwarnings("ignore:Using `httpx`")
def test_the_web_form_offers_the_toy_type(toy_family: DataType, tmp_path: Path) -> None:
    from fastapi.testclient import TestClient

    spool = tmp_path / "spool"
    open_spool(spool, create=True)
    settings = settings_mod.resolve({"spool": spool, "data_dir": tmp_path})
    with TestClient(create_app(Service.open(settings)), base_url="http://127.0.0.1") as http:
        page = http.get("/app/new")
    assert page.status_code == 200, page.text
    assert "<option >toy</option>" in page.text
    assert "<option >image</option>" in page.text


def test_a_riddle_with_a_toy_data_file_is_answered(toy_family: DataType, rig: Rig) -> None:
    (rig.data / "numbers.toy").write_text("x := 12\ny := 30\n", "utf-8")
    rig.handlers = {
        "extract": [registry.load(name, "extract") for name in default_handlers()["extract"]],
        "solve": [registry.load("calculator", "solve")],
        "validate": [registry.load("gatekeeper", "validate")],
    }
    (riddle_id,) = rig.submit(
        {
            "riddle": {"question": "x + y ="},
            "data": [{"file": "numbers.toy", "type": "toy"}],
            "status": {"extract": {"required": True}},
        }
    )
    rig.drain()
    queue, riddle = rig.where(riddle_id)
    assert history(riddle, "stage") == ["submit", "extract", "solve", "validate", "manage"]
    assert queue is Queue.DONE and riddle.solution is not None
    assert (riddle.solution.solution, riddle.solution.accepted) == ("42", True)
    assert "numbers.toy" in (riddle.solution.explanation or "")


def test_the_registration_is_gone_after_the_test() -> None:
    assert datatypes.type_for("a.toy") == "text"
    assert "toy" not in default_handlers()["extract"]
