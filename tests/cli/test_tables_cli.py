"""CSV and JSON data through the installed command: submit, run --once, result."""

from __future__ import annotations

from pathlib import Path

import orjson

from tests.conftest import Cli, write_json


def put(data: Path, name: str, content: str | bytes) -> str:
    path = data / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(content.encode() if isinstance(content, str) else content)
    return name


def ask(cli: Cli, riddle_id: str, question: str, *files: str) -> None:
    data = [arg for name in files for arg in ("--data", name)]
    done = cli("submit", "--id", riddle_id, "--question", question, *data)
    assert done.code == 0, done.err


def test_x_and_y_from_a_csv_file_and_z_from_a_json_file(cli: Cli) -> None:
    put(cli.data, "t/t.csv", 'Name;Wert\nx;"1.234,5"\ny;2\n')
    put(cli.data, "t/z.json", '{"z": 0.1}')
    ask(cli, "tab", "x * y + z =", "t/t.csv", "t/z.json")
    run = cli("run", "--once")
    assert run.code == 0, run.err
    assert cli("result", "tab").out == "2469.1\n"
    doc = orjson.loads(cli("show", "tab").out)
    assert [item["type"] for item in doc["data"]] == ["csv", "json"]
    assert doc["solution"]["accepted"] is True
    extraction = orjson.loads((cli.spool / doc["data"][0]["file_extracted"]).read_bytes())
    assert extraction["extractor"] == "table"
    assert extraction["variables"] == {"x": "1234.5", "y": "2"}


def test_nested_json_keys_are_dotted_names_in_questions(cli: Cli) -> None:
    put(cli.data, "m.json", '{"m": {"x": 10, "y": "fifteen"}, "z": "m.x + 10"}')
    put(cli.data, "w.csv", "name,value\nw,1/3\n")
    ask(cli, "dots", "m.x * m.y + z + w =", "m.json", "w.csv")
    run = cli("run", "--once")
    assert run.code == 0, run.err
    assert cli("result", "dots").out == "511/3\n"  # 150 + 20 (a sub-riddle) + 1/3


def test_a_document_may_give_the_type_of_a_file_of_any_name(cli: Cli, tmp_path: Path) -> None:
    put(cli.data, "values.txt", "x;3\ny;4\n")
    doc = {
        "id": "typed",
        "riddle": {"question": "x * y ="},
        "data": [{"type": "csv", "file_plain": "values.txt"}],
    }
    assert cli("submit", str(write_json(tmp_path / "r.json", doc))).code == 0
    assert cli("run", "--once").code == 0
    assert cli("result", "typed").out == "12\n"


def test_hostile_tables_fail_their_riddle_alone_with_one_clear_error(cli: Cli) -> None:
    put(cli.data, "good.csv", "x,6\ny,7\n")
    put(cli.data, "deep.json", "[" * 50_000 + "]" * 50_000)
    put(cli.data, "rows.csv", "x;1\ny;2\ntotal amount;3\n")
    put(cli.data, "huge.json", '{"x": 1e999999, "y": "9**9**9**9"}')
    ask(cli, "good", "x * y =", "good.csv")
    ask(cli, "deep", "x * y =", "deep.json")
    ask(cli, "rows", "x * y =", "rows.csv")
    ask(cli, "huge", "x * y =", "huge.json")
    run = cli("run", "--once", timeout=120)
    assert run.code == 1  # riddles of this run failed
    assert cli("result", "good").out == "42\n"
    errors = {}
    for riddle_id in ("deep", "rows", "huge"):
        result = cli("result", riddle_id)
        assert result.code == 1, riddle_id
        assert len(result.err.strip().splitlines()) == 1, result.err
        errors[riddle_id] = result.err
    assert "deep.json: nested deeper than 32 levels" in errors["deep"]
    assert "rows.csv: line 3: 'total amount' is not a variable name" in errors["rows"]
    assert "'x' in huge.json cannot be read" in errors["huge"]
    assert "exponent beyond" in errors["huge"]
    # Refused at once: one extract attempt each, not three.
    deep = orjson.loads(cli("show", "deep").out)
    assert [e["outcome"] for e in deep["history"] if e["stage"] == "extract"] == ["failed"]


def test_submit_infers_types_and_checks_utf8_only_for_text_types(cli: Cli) -> None:
    not_utf8 = b"\x89PNG\r\n\x1a\n\xff\xfe\x00"
    put(cli.data, "pic.png", not_utf8)
    put(cli.data, "bad.csv", b"x;\xff\n")
    done = cli("submit", "--id", "pic", "--question", "x =", "--data", "pic.png")
    assert done.code == 0, done.err
    refused = cli("submit", "--question", "x =", "--data", "bad.csv")
    assert refused.code == 2
    assert "bad.csv is not UTF-8 text" in refused.err
    assert orjson.loads(cli("show", "pic").out)["data"][0]["type"] == "image"
    small = {"RIDDLECTL_MAX_DATA_BYTES": "8"}
    too_big = cli("submit", "--question", "x =", "--data", "pic.png", env=small)
    assert too_big.code == 2
    assert f"{cli.data.resolve() / 'pic.png'} is over the 8-byte limit" in too_big.err


def test_an_item_whose_type_no_extractor_reads_fails_its_riddle_at_once(
    cli: Cli, tmp_path: Path
) -> None:
    put(cli.data, "doc.pdf", b"%PDF-1.4 \xff")
    doc = {
        "id": "pdf",
        "riddle": {"question": "x ="},
        "data": [{"type": "pdf", "file_plain": "doc.pdf"}],
    }
    assert cli("submit", str(write_json(tmp_path / "r.json", doc))).code == 0
    assert cli("run", "--once").code == 1
    result = cli("result", "pdf")
    assert result.code == 1
    assert "no extractor for type 'pdf'" in result.err
