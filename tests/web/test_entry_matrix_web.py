"""The web's part of the hostile-entry matrix (tests/integration/test_entry_matrix.py):
every kind of entry (`tests.hostile_entries.KINDS`) in `incoming/` and in `corrupt/` of
one served spool, under every page and API call that lists what lies there (`PATHS`).
Each answers in time, never with a 500, and never with what a link leads to."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from riddlectl.entries import shown
from tests.hostile_entries import KINDS, SECRET, make_entries, make_outside, tidy
from tests.web.conftest import Served, make_cli, start

PLACES = ("incoming", "corrupt")
# What lists or reads the entries of those places; `{name}`: once per entry of corrupt/.
PATHS = [
    "/app/table",
    "/app",
    "/app/corrupt",
    "/app/corrupt/edit?name={name}",
    "/api/corrupt",
    "/api/status",
    "/api/status?stage=corrupt",
    "/api/status?stage=incoming",
    "/api/riddles",
    "/metrics",
]
# Forms that name an entry of corrupt/ and store nothing: posted once per entry.
FORMS = ["/app/corrupt/check"]


@pytest.fixture(scope="module")
def hostile(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Served, list[str]]]:
    """A server over a spool with every kind of entry in each place; the names of those
    in corrupt/, as the pages print them."""
    base = tmp_path_factory.mktemp("web-entries")
    cli = make_cli(base)
    outside = make_outside(base)
    names: list[str] = []
    for place in PLACES:
        made = make_entries(Path(str(cli.spool)) / place, outside)
        names = [shown(name) for name in made] if place == "corrupt" else names
    server = start(cli)
    yield server, names
    server.stop()
    tidy(base)


def case_count() -> int:
    """Kinds in each place by each path, and in corrupt/ by each form."""
    return len(KINDS) * (len(PLACES) * len(PATHS) + len(FORMS))


@pytest.mark.parametrize("path", PATHS)
def test_every_page_over_every_kind_answers_without_following(
    hostile: tuple[Served, list[str]], path: str
) -> None:
    served, names = hostile
    targets = [path.replace("{name}", name) for name in names] if "{name}" in path else [path]
    with served.client() as http:
        for target in targets:
            answer = http.get(target, timeout=30)
            assert answer.status_code < 500, (target, answer.status_code, answer.text[:500])
            assert SECRET not in answer.text, target
        assert http.get("/app/table", timeout=30).status_code == 200


@pytest.mark.parametrize("path", FORMS)
def test_every_form_over_every_kind_answers_without_following(
    hostile: tuple[Served, list[str]], path: str
) -> None:
    served, names = hostile
    text = '{"riddle": {"question": "x * y ="}}'
    with served.client(**{"sec-fetch-site": "same-origin"}) as http:
        for name in names:
            answer = http.post(path, data={"name": name, "text": text}, timeout=30)
            assert answer.status_code < 500, (name, answer.status_code, answer.text[:500])
            assert SECRET not in answer.text, name
        assert http.get("/app/table", timeout=30).status_code == 200
