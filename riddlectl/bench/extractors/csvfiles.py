"""Generated CSV name/value tables with their truth, for `riddlectl bench --extractors`.

Varied: the delimiter (``,``, ``;``, tab), a header row or none (``name,value``,
``Name;Wert``, three columns with a unit), wide tables (names across, values below),
quoting, the decimal mark (``12,5`` or ``12.5``, in tables of either delimiter),
thousands separators, number words, fractions, CRLF line ends, a byte order mark, blank
lines.
"""

from __future__ import annotations

import random
from pathlib import Path

from riddlectl.bench.extractors import tablevalues as tv
from riddlectl.bench.extractors.cases import Case
from riddlectl.document.numbers import format_number

_HEADERS = (
    "",
    "name|value",
    "Name|Wert",
    "variable|value|unit",
    "key|unit|value",
    "Einheit|Name|Wert",
)


def generate(directory: Path, count: int, seed: int) -> list[Case]:
    """`count` CSV files written under `directory`, each with its truth."""
    rng = random.Random(f"csv-{seed}")
    cases = []
    for index in range(count):
        delimiter = rng.choice((",", ";", "\t"))
        header = rng.choice(_HEADERS)
        quoting = rng.choice(("none", "all", "needed"))
        chosen = tv.names(rng, rng.randint(2, 4))
        values = [tv.value(rng) for _ in chosen]
        rows = [header.split("|")] if header else []
        cells = tv.written(values, rng, "," if delimiter == ";" else ".")
        rows += [_arrange(header, n, cell) for n, cell in zip(chosen, cells, strict=True)]
        if not header and rng.random() < 0.25:
            header, rows = "wide", [list(chosen), cells]  # names across, values below
        newline = rng.choice(("\n", "\r\n"))
        text = newline.join(delimiter.join(_quote(c, delimiter, quoting) for c in r) for r in rows)
        if rng.random() < 0.2:
            text = text.replace(newline, newline + newline, 1)  # a blank line
        bom = "\ufeff" if rng.random() < 0.1 else ""
        name = f"csv/t{index:04d}.csv"
        (directory / name).parent.mkdir(parents=True, exist_ok=True)
        (directory / name).write_text(bom + text + newline, "utf-8", newline="")
        truth = {n: format_number(v) for n, (v, _) in zip(chosen, values, strict=True)}
        note = f"delimiter={delimiter!r} header={header or 'none'} quoting={quoting}"
        cases.append(Case(name, "csv", truth, " + ".join(chosen) + " =", note))
    return cases


def _arrange(header: str, name: str, cell: str) -> list[str]:
    if header.startswith("Einheit"):
        return ["kg", name, cell]
    if header.startswith("key|unit"):
        return [name, "kg", cell]
    if header.endswith("unit"):
        return [name, cell, "m"]
    return [name, cell]


def _quote(cell: str, delimiter: str, quoting: str) -> str:
    if quoting == "all" or delimiter in cell or '"' in cell:
        return '"' + cell.replace('"', '""') + '"'
    return cell
