"""Generated JSON name/value data with their truth, for `riddlectl bench --extractors`.

Varied: a flat object, nested objects (``group.name``), a list of name/value records;
numbers written as JSON numbers (exponents included) or as strings (``"1,234.5"``,
``"12,5"``, words, fractions); metadata beside the values; indentation.
"""

from __future__ import annotations

import random
from fractions import Fraction
from pathlib import Path
from typing import Any

from riddlectl.bench.extractors import tablevalues as tv
from riddlectl.bench.extractors.cases import Case
from riddlectl.document.numbers import format_number

_GROUPS = ("input", "werte", "data", "params")


class _Raw(str):
    """A JSON number's text, written as it is."""


def generate(directory: Path, count: int, seed: int) -> list[Case]:
    """`count` JSON files written under `directory`, each with its truth."""
    rng = random.Random(f"json-{seed}")
    cases = []
    for index in range(count):
        shape = rng.choice(("flat", "nested", "records"))
        chosen = tv.names(rng, rng.randint(2, 4))
        values = [tv.value(rng) for _ in chosen]
        written = _written(values, rng)
        group = rng.choice(_GROUPS)
        truth_names = [f"{group}.{n}" if shape == "nested" else n for n in chosen]
        document = _document(shape, group, chosen, written, rng)
        name = f"json/t{index:04d}.json"
        (directory / name).parent.mkdir(parents=True, exist_ok=True)
        (directory / name).write_text(_dump(document, rng.choice((0, 2)), 0), "utf-8")
        truth = {n: format_number(v) for n, (v, _) in zip(truth_names, values, strict=True)}
        question = " + ".join(truth_names) + " ="
        cases.append(Case(name, "json", truth, question, f"shape={shape}"))
    return cases


def _written(values: list[tuple[Fraction, str]], rng: random.Random) -> list[Any]:
    """Each value as a JSON number (its text) or a string, as exports write them; the
    strings with one decimal mark throughout (`tablevalues.written`)."""
    as_text = [kind in ("words", "fraction") or rng.random() < 0.5 for _, kind in values]
    texts = iter(tv.written([v for v, t in zip(values, as_text, strict=True) if t], rng, "."))
    return [
        next(texts) if text else _Raw(_json_number(number, rng))
        for (number, _), text in zip(values, as_text, strict=True)
    ]


def _json_number(number: Fraction, rng: random.Random) -> str:
    text = tv.english(number)
    if number.denominator == 1 and number and number % 1000 == 0 and rng.random() < 0.5:
        exponent = len(str(abs(int(number)))) - 1
        text = f"{int(number) / 10**exponent:g}e{exponent}"  # 2000 -> 2e3
    return text


def _document(
    shape: str, group: str, names: list[str], written: list[Any], rng: random.Random
) -> Any:
    pairs = dict(zip(names, written, strict=True))
    if shape == "records":
        return [{"name": n, "value": v} for n, v in pairs.items()]
    meta = {"unit": "kg"} if rng.random() < 0.5 else {}
    if shape == "nested":
        return {"source": "bench", group: pairs, **meta}
    return {**pairs, **meta}


def _dump(value: Any, indent: int, level: int) -> str:
    """JSON text, numbers written from their text (never through a float)."""
    pad, inner = (" " * indent * level, " " * indent * (level + 1)) if indent else ("", "")
    sep = ",\n" if indent else ", "
    if isinstance(value, _Raw):
        return str(value)
    if isinstance(value, str):
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if isinstance(value, dict):
        items = [f'{inner}"{k}": {_dump(v, indent, level + 1)}' for k, v in value.items()]
        return (
            "{" + ("\n" if indent else "") + sep.join(items) + ("\n" + pad if indent else "") + "}"
        )
    items = [inner + _dump(v, indent, level + 1) for v in value]
    return "[" + ("\n" if indent else "") + sep.join(items) + ("\n" + pad if indent else "") + "]"
