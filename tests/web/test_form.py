"""The form `/app/new`: the preview checked by the same code as `submit`, errors next to
their fields, data file names completed from the data directory only, uploads kept in
it under safe names, and every kind of typed answer."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import orjson
import pytest

from tests.web.conftest import Served, make_cli, start

SAME_ORIGIN = {"sec-fetch-site": "same-origin"}


def preview(served: Served, **fields: str | list[str]) -> str:
    with served.client(**SAME_ORIGIN) as http:
        answer = http.post("/app/preview", data=fields)
    assert answer.status_code == 200
    return answer.text


def previewed_document(html: str) -> dict[str, object]:
    import html as entities

    text = html.split('<pre id="preview-json">', 1)[1].split("</pre>", 1)[0]
    return orjson.loads(entities.unescape(text))  # type: ignore[no-any-return]


def test_preview_is_the_document_submit_takes(served: Served) -> None:
    html = preview(
        served,
        context="[Taschenrechner]",
        question="x * y =",
        data=["example/x.txt", "example/y.txt"],
        data_type=["text", "text"],
        priority="5",
        no_validate="1",
    )
    assert 'id="preview-ok"' in html
    doc = previewed_document(html)
    assert doc == {
        "riddle": {"context": "[Taschenrechner]", "question": "x * y ="},
        "data": [
            {"type": "text", "file_plain": "example/x.txt"},
            {"type": "text", "file_plain": "example/y.txt"},
        ],
        "status": {"extract": {"required": True}, "validate": {"required": False}},
        "priority": 5,
    }
    # The same document through `riddlectl submit` is taken as it stands.
    done = served.cli("submit", "-", input=orjson.dumps({**doc, "id": "from-preview"}))
    assert done.code == 0, done.err


@pytest.mark.parametrize(
    ("fields", "field", "says"),
    [
        ({"question": "  "}, "question", "riddle.question: must not be empty"),
        ({"question": "q", "data": "../outside.txt"}, "data", "data[0].file_plain"),
        ({"question": "q", "data": "example/missing.txt"}, "data", "data[0].file_plain"),
        ({"question": "q", "answer_type": "fill", "fill_pattern": "("}, "answer_type", "pattern"),
        ({"question": "q", "answer_type": "choice", "choices": "only"}, "answer_type", "criteria"),
        ({"question": "q", "priority": "high"}, "priority", "whole number"),
        ({"question": "q", "id": "bad id!"}, "id", "id"),
    ],
)
def test_errors_stand_next_to_their_field(
    served: Served, fields: dict[str, str], field: str, says: str
) -> None:
    html = preview(served, **fields)
    assert (
        f'id="err-{field}" hx-swap-oob="true"><span class="field-error" data-field="{field}">'
        in html
    )
    assert says in html


@pytest.mark.parametrize(
    ("fields", "answer"),
    [
        ({"answer_type": "fill", "fill_kind": "int"}, {"type": "fill", "kind": "int"}),
        (
            {"answer_type": "fill", "fill_pattern": "[0-9]+", "fill_max_tokens": "4"},
            {"type": "fill", "kind": "text", "pattern": "[0-9]+", "max_tokens": 4},
        ),
        (
            {"answer_type": "noul", "noul_true": "bigger", "noul_false": "smaller"},
            {"type": "noul", "criteria": {"true": "bigger", "false": "smaller"}},
        ),
        (
            {"answer_type": "choice", "choices": "a: the first\nb: the second"},
            {"type": "choice", "criteria": {"a": "the first", "b": "the second"}},
        ),
        (
            {"answer_type": "score", "levels": "low\nmid\nhigh"},
            {"type": "score", "criteria": ["low", "mid", "high"]},
        ),
        (
            {"answer_type": "extract", "extract_kind": "coordinates", "extract_image": "2"},
            {"type": "extract", "kind": "coordinates", "many": False, "image": 2},
        ),
    ],
)
def test_every_kind_of_typed_answer(
    served: Served, fields: dict[str, str], answer: dict[str, object]
) -> None:
    html = preview(served, question="x * y =", **fields)
    assert 'id="preview-ok"' in html, html
    assert previewed_document(html)["riddle"] == {
        "context": "",
        "question": "x * y =",
        "answer": answer,
    }


def test_submitting_goes_to_the_riddles_page(served: Served) -> None:
    with served.client(**SAME_ORIGIN) as http:
        made = http.post(
            "/app/new", data={"question": "x * y =", "id": "by-form", "data": "example/x.txt"}
        )
        assert made.status_code == 303 and made.headers["location"] == "/app/riddle/by-form"
        page = http.get("/app/riddle/by-form")
        assert "riddlectl submit --question" in page.text
        refused = http.post("/app/new", data={"question": "", "id": "by-form-2"})
        assert refused.status_code == 400 and "must not be empty" in refused.text
    assert served.cli("status", "by-form-2").code == 3


def test_completion_lists_data_files_only_from_the_data_directory(
    served: Served, tmp_path: Path
) -> None:
    data = served.cli.data
    secret = tmp_path / "secret.txt"
    secret.write_text("x = 1\n")
    (data / "example" / ".hidden.txt").write_text("x = 2\n")
    link = data / "example" / "escape.txt"
    if not link.exists():
        os.symlink(secret, link)
    with served.client() as http:
        names = http.get("/api/datafiles", params={"prefix": "example/"}).json()
        options = http.get("/app/datafiles", params={"data": "ex"}).text
        outside = http.get("/api/datafiles", params={"prefix": "../"}).json()
    assert names == ["example/x.txt", "example/y.txt", "example/z.txt"]
    assert options.count("<option") == 3 and 'value="example/x.txt"' in options
    assert outside == []


def test_upload_is_sanitised_and_limited(served: Served) -> None:
    with served.client(**SAME_ORIGIN) as http:
        stored = http.post(
            "/app/upload", files={"file": ("../../evil name;rm -rf.txt", b"x = 4\n", "text/plain")}
        )
        assert stored.status_code == 200
        assert 'data-uploaded="uploads/evil_name_rm_-rf.txt"' in stored.text
        again = http.post("/app/upload", files={"file": ("evil name;rm -rf.txt", b"x = 5\n")})
        assert 'data-uploaded="uploads/evil_name_rm_-rf-1.txt"' in again.text
        big = http.post("/app/upload", files={"file": ("big.txt", b"x" * 70000)})
        assert big.status_code == 400 and "size limit" in big.text
    uploads = served.cli.data / "uploads"
    assert sorted(p.name for p in uploads.iterdir()) == [
        "evil_name_rm_-rf-1.txt",
        "evil_name_rm_-rf.txt",
    ]
    assert (uploads / "evil_name_rm_-rf.txt").read_bytes() == b"x = 4\n"
    assert not list(served.cli.data.parent.glob("*.txt"))  # nothing landed outside


@pytest.mark.parametrize(
    ("umask", "mode"), [(0o022, 0o644), (0o002, 0o664), (0o077, 0o600)], ids=["022", "002", "077"]
)
def test_uploads_get_the_mode_the_umask_gives(tmp_path: Path, umask: int, mode: int) -> None:
    """Agents running as another user of the same group read the data directory: an
    upload is made like any other file there, with the server's umask."""
    before = os.umask(umask)
    try:
        server = start(make_cli(tmp_path))
    finally:
        os.umask(before)
    try:
        with server.client() as http:
            stored = http.post("/app/upload", files={"file": ("facts.txt", b"x = 4\n")})
            assert 'data-uploaded="uploads/facts.txt"' in stored.text
    finally:
        server.stop()
    assert stat.S_IMODE((server.cli.data / "uploads" / "facts.txt").stat().st_mode) == mode
