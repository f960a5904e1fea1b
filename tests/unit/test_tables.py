"""The `table` extractor's readers: CSV and JSON name/value data, read exactly, bounded."""

from __future__ import annotations

from pathlib import Path

import pytest

from riddlectl.bench.extractors.csvfiles import generate as generate_csv
from riddlectl.bench.extractors.jsonfiles import generate as generate_json
from riddlectl.document import datatypes
from riddlectl.document.datatypes import DataType, type_for
from riddlectl.errors import ConfigError
from riddlectl.handlers import registry
from riddlectl.handlers.builtin.tables.cells import MAX_ROWS, TableError
from riddlectl.handlers.builtin.tables.csvtable import read_csv, sniff_delimiter
from riddlectl.handlers.builtin.tables.jsontable import MAX_DEPTH, read_json
from riddlectl.settings import default_handlers


def csv_values(text: str) -> dict[str, str]:
    return read_csv(text).to_json()["variables"]


def json_values(text: str) -> dict[str, str]:
    return read_json(text).to_json()["variables"]


# -- CSV ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "want"),
    [
        ("x,10\ny,15\n", {"x": "10", "y": "15"}),
        ("name,value\nx,10\n", {"x": "10"}),
        ("variable,value\r\nx,-2.5\r\n", {"x": "-2.5"}),
        ("Name;Wert\nx;12,5\ny;1.234,5\n", {"x": "12.5", "y": "1234.5"}),
        ('x;"1.234,5"\n', {"x": "1234.5"}),
        ('x,"1,234.5"\ny,"10"\n', {"x": "1234.5", "y": "10"}),
        ("x\t10\ny\t3/4\n", {"x": "10", "y": "0.75"}),
        ("\ufeffx;7\n", {"x": "7"}),
        ("x,twenty\ny,zwölf\n", {"x": "20", "y": "12"}),
        ("x;zwei Komma fünf\n", {"x": "2.5"}),
        ("x,10%\n", {"x": "0.1"}),
        ("\n\nx,1\n\n", {"x": "1"}),
        ("x;10;\n", {"x": "10"}),  # a trailing delimiter
        ("name,value,unit\nx,10,kg\n", {"x": "10"}),
        ("Bezeichnung;Einheit;Wert\nx;kg;3\n", {"x": "3"}),
        ("Einheit;Name;Wert\nkg;x;3\n", {"x": "3"}),
        ("value,name\n3,x\n", {"x": "3"}),
        ('"x","10"\n', {"x": "10"}),
        ("name,10\n", {"name": "10"}),  # no header: a variable called name
        ("x,0.1\ny,1/3\n", {"x": "0.1", "y": "1/3"}),
        ("x;y;z\n10;15,5;20\n", {"x": "10", "y": "15.5", "z": "20"}),  # wide
        ("x,y\n10,15\n", {"x": "10", "y": "15"}),  # wide
        ("x,10\ny,15\n", {"x": "10", "y": "15"}),  # not wide: the second row has a name
    ],
)
def test_csv_values_are_read_exactly(text: str, want: dict[str, str]) -> None:
    assert csv_values(text) == want


def test_csv_formulas_and_numbers_keep_the_shared_shape() -> None:
    found = read_csv("x;10\ny;x + 2\nz;3\n").to_json()
    assert found["variables"] == {"x": "10", "z": "3"}
    assert found["formulas"] == {"y": "x + 2"}
    assert found["numbers"] == ["10", "3"]
    assert found["places"] == {"x": "line 1", "y": "line 2", "z": "line 3"}


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("x;Alice\n", "'Alice' is not a number"),
        ("x;9**9**9**9\n", "9**9**9**9"),
        ("x;1e999999\n", "1e999999"),
        ("x;0x10\n", "hexadecimal"),
        ("x; \n", "no value"),
    ],
)
def test_csv_values_that_are_no_numbers_are_unreadable_with_their_line(
    text: str, reason: str
) -> None:
    found = read_csv("a;1\n" + text).to_json()
    assert found["variables"] == {"a": "1"}
    assert found["unreadable"]["x"].startswith("line 2: ")
    assert reason in found["unreadable"]["x"]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("x,1\ny\n", "line 2: 1 field(s)"),
        ("x,1\ny,2,3\n", "line 2: 3 field(s)"),
        ("x;1\ntotal amount;3\n", "line 2: 'total amount' is not a variable name"),
        ("x;1\n2x;3\n", "line 2: '2x' is not a variable name"),
        ("x;1\n\nx;2\n", "line 3: 'x' is given again (first at line 1)"),
        ('x;1\ny;"2\n', "line 2: unexpected end of data"),
        ("name;value;unit\nx\n", "line 2: no value (column 2)"),
        ("x;y;z\n10;15\n", "line 2: 2 value(s) under 3 names"),
    ],
)
def test_bad_csv_rows_are_refused_by_line(text: str, message: str) -> None:
    with pytest.raises(TableError) as caught:
        read_csv(text)
    assert str(caught.value).startswith(message), str(caught.value)


def test_quoted_line_breaks_count_towards_the_line_numbers() -> None:
    with pytest.raises(TableError, match=r"^line 3: "):
        read_csv('x,"1\n2"\ny z,3\n')


def test_csv_row_limit() -> None:
    with pytest.raises(TableError, match=f"more than {MAX_ROWS} rows"):
        read_csv("".join(f"v{i},1\n" for i in range(MAX_ROWS + 1)))


@pytest.mark.parametrize(
    ("line", "delimiter"), [("a;b,c", ";"), ("a\tb;c", "\t"), ("a,b", ","), ("a", ",")]
)
def test_delimiter_sniffing(line: str, delimiter: str) -> None:
    assert sniff_delimiter(f"\n{line}\nx;1\n") == delimiter


# -- JSON ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "want"),
    [
        ('{"x": 10, "y": 0.1}', {"x": "10", "y": "0.1"}),
        ('{"a": {"b": {"c": -2.5}}, "d": 1}', {"a.b.c": "-2.5", "d": "1"}),
        ('{"x": "12,5", "y": "twenty", "z": "1/3"}', {"x": "12.5", "y": "20", "z": "1/3"}),
        ('{"x": 1e3, "y": 2.5E-2}', {"x": "1000", "y": "0.025"}),
        ('{"x": 123456789012345678901234567890}', {"x": "123456789012345678901234567890"}),
        ('[{"name": "x", "value": 10}, {"Name": "y", "Wert": "15"}]', {"x": "10", "y": "15"}),
        ('{"a.b": 1}', {"a.b": "1"}),
        ('\ufeff{"x": 1}', {"x": "1"}),
    ],
)
def test_json_values_are_read_exactly(text: str, want: dict[str, str]) -> None:
    assert json_values(text) == want


def test_json_formulas_and_what_is_no_number() -> None:
    found = read_json(
        '{"z": "x + a.b", "s": "Alice", "t": true, "n": null, "l": [1, 2.5], '
        '"big": 1e999999, "nan": NaN, "my key": 7}'
    ).to_json()
    assert found["formulas"] == {"z": "x + a.b"}
    assert found["variables"] == {}
    assert found["unreadable"] == {
        "s": "'Alice' is not a number",
        "t": "true is not a number",
        "n": "null is not a number",
        "l": "a list of 2 item(s), not a number",
        "big": "not a number: '1e999999' (exponent beyond ±1000)",
        "nan": "NaN is not a number",
    }
    assert list(found["skipped"]) == ["my key"]
    assert found["numbers"] == ["1", "2.5", "7"]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('{"x": 1,}', "line 1: column 9: "),
        ('{\n"x": 1\n"y": 2}', "line 3: column 1: Expecting ','"),
        ("3", "expected an object, or a list of name/value records"),
        ('{"x": 1, "x": 2}', "key 'x' is given twice"),
        ('{"a.b": 1, "a": {"b": 2}}', "'a.b' is given again"),
        ("[" * (MAX_DEPTH + 1) + "]" * (MAX_DEPTH + 1), f"nested deeper than {MAX_DEPTH}"),
        ("[" * 100_000, f"nested deeper than {MAX_DEPTH}"),
        ('[{"name": "x"}]', "item 1: expected an object with a name and a value"),
        ('[{"name": "x y", "value": 1}]', "item 1: 'x y' is not a variable name"),
    ],
)
def test_bad_json_is_refused_whole(text: str, message: str) -> None:
    with pytest.raises(TableError) as caught:
        read_json(text)
    assert message in str(caught.value), str(caught.value)


def test_brackets_inside_strings_do_not_count_as_nesting() -> None:
    deep = "[" * 1000
    assert json_values(f'{{"note": "{deep}", "x": 1}}') == {"x": "1"}


def test_escaped_quotes_that_never_close_are_refused_without_quadratic_work() -> None:
    # A scan that restarts at every quote would take hours on this megabyte.
    with pytest.raises(TableError, match="Unterminated string"):
        read_json('"\\' * 500_000)


# -- types and the registry ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "kind"),
    [
        ("t.csv", "csv"),
        ("dir/T.CSV", "csv"),
        ("t.json", "json"),
        ("t.txt", "text"),
        ("notes", "text"),
        ("a.csv.txt", "text"),
        ("p.png", "image"),
        ("p.JPEG", "image"),
        ("p.webp", "image"),
        ("s.wav", "audio"),
        ("s.mp3", "audio"),
        (".csv", "text"),
    ],
)
def test_type_for_file_names(name: str, kind: str) -> None:
    assert type_for(name) == kind


def test_default_extractors_are_the_built_in_ones() -> None:
    assert default_handlers()["extract"] == tuple(registry.builtin_names("extract"))
    assert default_handlers()["extract"] == ("text", "table", "ocr", "speech")


def test_built_in_extractors_load_with_their_types_and_versions() -> None:
    covered: set[str] = set()
    for name in registry.builtin_names("extract"):
        handler = registry.load(name, "extract")
        assert handler.types, name
        assert not covered & handler.types, f"{name} reads a type another one reads"
        covered |= handler.types
        assert handler.identity().count(".") == 1
    assert {"text", "csv", "json"} <= covered


def test_a_built_in_extractor_that_cannot_import_is_one_clear_error(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(datatypes, "DATA_TYPES", list(datatypes.DATA_TYPES))
    missing = DataType("image", False, (".png",), "ocr", "riddlectl.handlers.builtin.no_such")
    datatypes.register(missing)
    with pytest.raises(ConfigError, match="built-in extractor cannot be loaded: No module"):
        registry.load("ocr", "extract")


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_the_generated_tables_are_read_exactly(seed: int, tmp_path: Path) -> None:
    """The bench's generators vary header, delimiter, quoting, decimal mark, nesting …:
    every value of every file is read as written."""
    for generate, read in ((generate_csv, read_csv), (generate_json, read_json)):
        for case in generate(tmp_path, 60, seed):
            text = (tmp_path / case.file).read_bytes().decode("utf-8")  # CRLF kept
            found = read(text).to_json()["variables"]
            assert {n: found.get(n) for n in case.truth} == case.truth, case
