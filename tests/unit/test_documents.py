"""Documents: canonical round trip, the first request format, and clear refusals."""

from __future__ import annotations

import os

import orjson
import pytest

from riddlectl.document import codec as documents
from riddlectl.errors import InvalidDocument

CANONICAL = {
    "id": "ex1",
    "sub_ids": [],
    "riddle": {"context": "[Taschenrechner]", "question": "x * y =", "solutions_before": []},
    "solution": None,
    "data": [{"type": "text", "file_plain": "example/x.txt", "file_extracted": None}],
    "status": {
        "extract": {"required": True, "finished": False},
        "solve": {"required": True, "finished": False},
        "validate": {"required": True, "finished": False},
        "trial": 0,
        "solved": False,
    },
    "contacts": 0,
}


def test_canonical_document_round_trips_every_field() -> None:
    doc = {**CANONICAL, "custom": {"a": 1}, "riddle": {**CANONICAL["riddle"], "hint": "h"}}
    out = documents.parse(orjson.dumps(doc), "ex1.json").to_json()
    for key, value in doc.items():
        assert out[key] == value, key


def test_legacy_request_is_converted() -> None:
    legacy = {
        "id": "xyz",
        "riddle": {
            "context": "c",
            "question": "What is x+y?",
            "solution_before": "26",
            "review_before": "y does not match Y",
        },
        "trial": 1,
        "steps": {"extract": True, "solve": True, "validate": False},
        "data": [{"type": "text", "file": "./my-test.txt", "extraction": ""}],
    }
    riddle = documents.parse(orjson.dumps(legacy), "legacy.json")
    assert riddle.status.trial == 1
    assert riddle.status.validate_.required is False
    assert riddle.status.extract.required is True
    (before,) = riddle.riddle.solutions_before
    assert (before.solution, before.review) == ("26", "y does not match Y")
    assert riddle.data[0].file_plain == "./my-test.txt"
    assert riddle.data[0].file_extracted is None


def test_legacy_empty_strings_mean_absent() -> None:
    legacy = {"riddle": {"question": "q", "solution_before": "", "review_before": ""}, "trial": ""}
    riddle = documents.parse(orjson.dumps(legacy), "l.json")
    assert riddle.riddle.solutions_before == []
    assert riddle.status.trial == 0


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        (b"{not json", "f.json:1:2: not valid JSON"),
        (b"[1, 2]", "f.json: expected a JSON object"),
        (b'{"riddle": {"question": 5}}', "f.json: riddle.question:"),
        (b'{"riddle": {}}', "f.json: riddle.question:"),
        (b'{"id": "../etc", "riddle": {"question": "q"}}', "f.json: id:"),
        (b'{"id": "a/b", "riddle": {"question": "q"}}', "f.json: id:"),
        (b'{"riddle": {"question": "q"}, "status": {"trial": -1}}', "f.json: status.trial:"),
        (b"[" * 100_000 + b"]" * 100_000, "f.json:1:1026: not valid JSON: depth limit"),
    ],
)
def test_invalid_documents_name_file_and_field(raw: bytes, expected: str) -> None:
    with pytest.raises(InvalidDocument) as caught:
        documents.to_riddle(documents.loads(raw, "f.json"), "f.json")
    assert str(caught.value).startswith(expected)
    assert "\n" not in str(caught.value)


def test_long_id_is_refused() -> None:
    with pytest.raises(InvalidDocument, match="id"):
        documents.parse(orjson.dumps({"id": "a" * 10_000, "riddle": {"question": "q"}}), "f")


def test_oversize_document_is_refused_before_parsing() -> None:
    with pytest.raises(InvalidDocument, match="over the"):
        documents.loads(b" " * (documents.MAX_DOCUMENT_BYTES + 1), "big.json")


def test_submission_forms() -> None:
    one = b'{"riddle": {"question": "a"}}'
    assert len(documents.split_submission(one, "-")) == 1
    assert len(documents.split_submission(b"[" + one + b"," + one + b"]", "-")) == 2
    assert len(documents.split_submission(one + b"\n" + one + b"\n", "-")) == 2
    with pytest.raises(InvalidDocument, match=r"-:2:2: not valid JSON"):
        documents.split_submission(one + b"\n{oops\n", "-")


def test_read_raw_reads_whole_files_and_stops_at_the_limit(tmp_path) -> None:
    small, big = tmp_path / "small.json", tmp_path / "big.json"
    small.write_bytes(b'{"id": "a"}')
    big.write_bytes(b"x" * 100_000)
    assert documents.read_raw(str(small))[0] == b'{"id": "a"}'
    raw, info = documents.read_raw(str(big), limit=70_001)
    assert (len(raw), info.st_size) == (70_001, 100_000)


def test_read_raw_does_not_wait_on_a_fifo(tmp_path) -> None:
    fifo = tmp_path / "r.json"
    os.mkfifo(fifo)
    raw, _ = documents.read_raw(str(fifo))  # would block forever without O_NONBLOCK
    assert raw is None


PRETTY_WITH_TRAILING_COMMA = b"""{
  "riddle": {
    "question": "x * y ="
  },
}
"""


def test_syntax_error_of_a_pretty_printed_file_names_its_line_and_column() -> None:
    with pytest.raises(InvalidDocument) as caught:
        documents.split_submission(PRETTY_WITH_TRAILING_COMMA, "f.json")
    assert str(caught.value) == "f.json:4:4: not valid JSON: trailing comma is not allowed"
    with pytest.raises(InvalidDocument, match=r"^f\.json:4:4: not valid JSON"):
        documents.parse(PRETTY_WITH_TRAILING_COMMA, "f.json")


def test_places_in_a_submission_count_from_one() -> None:
    one = b'{"riddle": {"question": "a"}}'
    lines = documents.split_submission(b"\n" + one + b"\n\n" + one + b"\n", "in.jsonl")
    assert [where for where, _ in lines] == ["in.jsonl:2", "in.jsonl:4"]
    array = documents.split_submission(b"[" + one + b",\n" + one + b"]", "a.json")
    assert [where for where, _ in array] == ["a.json[1]", "a.json[2]"]
    assert [where for where, _ in documents.split_submission(one, "o.json")] == ["o.json"]
    with pytest.raises(InvalidDocument, match=r"^in\.jsonl:3:4: not valid JSON"):
        documents.split_submission(one + b"\n" + one + b"\n  {oops\n", "in.jsonl")


def test_field_paths_are_written_alike() -> None:
    doc = {"riddle": {"question": "q"}, "data": [{"file_plain": "a"}, {"file_plain": 7}]}
    with pytest.raises(InvalidDocument) as caught:
        documents.to_riddle(doc, "f.json")
    assert caught.value.field == "data[1].file_plain"


@pytest.mark.parametrize("raw", [b"[]", b" [ ]\n", b"", b"\n\n", b"\xef\xbb\xbf"])
def test_an_empty_submission_is_nothing_to_submit(raw: bytes) -> None:
    with pytest.raises(InvalidDocument, match="nothing to submit"):
        documents.split_submission(raw, "<stdin>")


def test_a_byte_order_mark_is_accepted() -> None:
    bom = b"\xef\xbb\xbf"
    one = b'{"id": "b1", "riddle": {"question": "a"}}'
    assert documents.parse(bom + one, "f.json").id == "b1"
    assert len(documents.split_submission(bom + one + b"\n" + one, "f.jsonl")) == 2
    assert len(documents.split_submission(bom + b"[" + one + b"]", "f.json")) == 1
