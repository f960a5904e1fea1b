"""CSV name/value tables: ``x;10`` rows, with or without a header row.

The delimiter is sniffed from the first line that is not blank: a tab when it has one,
else ``;`` when it has one, else ``,``. Fields may be quoted (``"1.234,5"``, with ``""``
for a quote inside). A ``;``-separated table reads numbers as German exports write them
(decimal comma: ``12,5`` is 12.5, ``1.234,5`` is 1234.5); a ``,``-separated one as
English (``1,234.5``; a lone ``,`` before three digits is a thousands separator); a
tab-separated one by the language of its words. Unless the table's own values show the
other way (:func:`cells.decimal_mark`: ``12.5`` in a ``;`` table, ``"12,5"`` in a
``,`` one), which then decides how it writes the ambiguous ones (``8,884``).

The first row is a header when one of its cells is a name word (``name``, ``variable``,
``key``, ``Name``, ``Bezeichnung`` …: :data:`cells.NAME_WORDS`) and another a
value word (``value``, ``Wert`` …), or when its first cell is a name word (the value
column is then the second); and when its value cell does not read as a number. Without
a header a row has two fields (an empty third, from a trailing delimiter, is allowed).
Blank lines are skipped.
A *wide* table — two rows, names across the first, values below them (``x;y;z`` over
``10;15;20``) — is read as the name/value rows it stands for.

A row that cannot be a name and a value fails the whole file, naming its line: a
missing value column, extra fields, a name that a question could not use (``total
amount``), a name given twice, a quote left open.
"""

from __future__ import annotations

import csv
import io

from riddlectl.handlers.builtin.tables.cells import (
    MAX_CELL_CHARS,
    MAX_ROWS,
    NAME_WORDS,
    VALUE_WORDS,
    TableError,
    TableFacts,
    decimal_mark,
    is_name,
    language_for,
)
from riddlectl.handlers.builtin.text.facts import guess_language, read_value

__all__ = ["read_csv", "sniff_delimiter"]


def read_csv(text: str) -> TableFacts:
    """The facts of a CSV table; `TableError` naming the line of the first bad row."""
    text = text.removeprefix("\ufeff")
    delimiter = sniff_delimiter(text)
    rows = _rows(text, delimiter)
    if _is_wide(rows):
        names = _trimmed(rows[0][1])
        line, values = rows[1][0], _trimmed(rows[1][1])
        if len(values) != len(names):
            raise TableError(f"{len(values)} value(s) under {len(names)} names", line)
        rows = [(line, [name, value]) for name, value in zip(names, values, strict=True)]
    columns = _header(rows[0][1]) if rows else None
    body = rows[1:] if columns is not None else rows
    value_col = columns[1] if columns else 1
    mark = decimal_mark(row[value_col].strip() for _, row in body if len(row) > value_col)
    default = {";": ",", ",": "."}.get(delimiter, "")
    guessed = guess_language(text)
    language = language_for(mark, default or ("," if guessed != "en" else "."), guessed)
    facts = TableFacts()
    for line, row in body:
        _row(row, columns, line, facts, language)
    return facts


def _is_wide(rows: list[tuple[int, list[str]]]) -> bool:
    """A wide table: two rows, names across the first, their values below them
    (``x;y;z`` over ``10;15;20``). A value row never starts with a name, so no
    name/value table of two rows reads as one."""
    if len(rows) != 2:
        return False
    names, values = _trimmed(rows[0][1]), _trimmed(rows[1][1])
    return (
        len(names) > 2 or (len(names) == 2 and not is_name(values[0].strip()) if values else False)
    ) and all(is_name(n.strip()) and n.strip().lower() not in NAME_WORDS for n in names)


def _trimmed(row: list[str], keep: int = 1) -> list[str]:
    """`row` without the empty fields a trailing delimiter leaves (at least `keep`)."""
    while len(row) > keep and not row[-1].strip():
        row = row[:-1]
    return row


def _rows(text: str, delimiter: str) -> list[tuple[int, list[str]]]:
    """(line, fields) of each row that is not blank, at most `MAX_ROWS`."""
    # strict: a quote left open or text after a closing quote is an error, not a guess.
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=delimiter, strict=True)
    rows: list[tuple[int, list[str]]] = []
    while True:
        line = reader.line_num + 1
        try:
            row = next(reader)
        except StopIteration:
            return rows
        except csv.Error as exc:
            raise TableError(str(exc), line) from None
        if any(cell.strip() for cell in row):
            if len(rows) == MAX_ROWS:
                raise TableError(f"more than {MAX_ROWS} rows", line)
            rows.append((line, row))


def sniff_delimiter(text: str) -> str:
    """Tab, ``;`` or ``,``: the first of them in the first line that is not blank."""
    first = next((line for line in text.splitlines() if line.strip()), "")
    for delimiter in ("\t", ";"):
        if delimiter in first:
            return delimiter
    return ","


def _header(row: list[str]) -> tuple[int, int] | None:
    """(name column, value column) when `row` is a header row, else None."""
    cells = [cell.strip().lower() for cell in row]
    name = next((i for i, cell in enumerate(cells) if cell in NAME_WORDS), None)
    value = next((i for i, cell in enumerate(cells) if cell in VALUE_WORDS), None)
    if name is None or (value is None and (name != 0 or len(cells) < 2)):
        return None
    value = 1 if value is None else value
    if read_value(row[value][:MAX_CELL_CHARS], "de").kind in ("number", "digits"):
        return None  # "name;10": a variable called name
    return name, value


def _row(
    row: list[str], columns: tuple[int, int] | None, line: int, facts: TableFacts, language: str
) -> None:
    if columns is None:
        row = _trimmed(row, keep=2)  # "x;" is a name without a value, not one field
        if len(row) != 2:
            raise TableError(
                f"{len(row)} field(s); a table without a header row has two: name, value", line
            )
        name_col, value_col = 0, 1
    else:
        name_col, value_col = columns
        if len(row) <= value_col:
            raise TableError(f"no value (column {value_col + 1})", line)
    name = row[name_col].strip()
    if not is_name(name):
        raise TableError(
            f"{name[:40]!r} is not a variable name (letters, digits and _, "
            "not starting with a digit)",
            line,
        )
    try:
        facts.add_text(name, row[value_col], f"line {line}", language)
    except TableError as exc:  # a name given twice: say on which line
        raise TableError(str(exc), line) from None
