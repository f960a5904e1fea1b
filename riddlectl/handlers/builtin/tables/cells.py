"""What the ``table`` extractor's readers share: names, one value read, the facts found.

A value is read as the ``text`` extractor reads the right-hand side of ``name = …``
(:func:`riddlectl.handlers.builtin.text.facts.read_value`): digits (``12,5`` with a
decimal comma where the table has one), number words (``twenty``, ``zwölf``), formulas
over other variables (``x + y``). What cannot be read exactly goes to ``unreadable``
with the reason and where it stands, never read in part: a riddle fails with it only
when its question needs that variable.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from riddlectl.handlers.builtin.text.facts import read_value, shared_fields

#: Largest table file read, in bytes (the data size limit of submit applies too).
MAX_TABLE_BYTES = 10 * 1024 * 1024
#: Most rows of a CSV file, or values of a JSON file.
MAX_ROWS = 100_000
#: Longest cell or string value read (characters); a longer one is unreadable.
MAX_CELL_CHARS = 1000

#: A variable name a question can use: letters, digits and ``_``, not starting with a
#: digit; dotted parts for nested JSON keys (``a.b``).
NAME_RE = re.compile(r"[^\W\d]\w*(?:\.[^\W\d]\w*)*")

#: Header cells naming the name column and the value column (compared in lower case).
_NAME_TEXT = """name variable var key field parameter param symbol bezeichnung schlüssel
größe nom nombre nome naam navn"""
_VALUE_TEXT = "value val wert betrag zahl number amount valeur valor valore waarde værdi"
NAME_WORDS = frozenset(_NAME_TEXT.split())
VALUE_WORDS = frozenset(_VALUE_TEXT.split())


class TableError(ValueError):
    """The file cannot be read as a table: a bad row (by line), bad JSON, a bound."""

    def __init__(self, message: str, line: int | None = None) -> None:
        super().__init__(f"line {line}: {message}" if line else message)
        self.line = line


@dataclass
class TableFacts:
    """What a table holds, in the shared extraction schema plus where each name was."""

    variables: dict[str, Fraction] = field(default_factory=dict)
    formulas: dict[str, str] = field(default_factory=dict)
    numbers: list[Fraction] = field(default_factory=list)
    unreadable: dict[str, str] = field(default_factory=dict)
    places: dict[str, str] = field(default_factory=dict)  # name -> "line 4", "a.b"
    skipped: dict[str, str] = field(default_factory=dict)  # keys that are no names

    def add_text(self, name: str, text: str, place: str, language: str) -> None:
        """Read `text` as the value of `name`, found at `place` (a line, a JSON item; the
        name itself for a JSON key, which says where it is)."""
        text = text.strip()
        if not text:
            self.add_unreadable(name, "no value", place)
        elif len(text) > MAX_CELL_CHARS:
            self.add_unreadable(name, f"value longer than {MAX_CELL_CHARS} characters", place)
        else:
            reading = read_value(text, language)
            if reading.kind in ("number", "digits"):
                assert isinstance(reading.value, Fraction)
                self.add_number(name, reading.value, place)
            elif reading.kind == "formula":
                self._set(name, place, formula=" ".join(text.split()))
            elif reading.kind == "unreadable":
                self.add_unreadable(name, str(reading.value), place)
            else:
                self.add_unreadable(name, f"{text[:40]!r} is not a number", place)

    def add_number(self, name: str, value: Fraction, place: str) -> None:
        self._set(name, place, value=value)
        self.numbers.append(value)

    def add_unreadable(self, name: str, reason: str, place: str) -> None:
        self._set(name, place, unreadable=reason if place == name else f"{place}: {reason}")

    def _set(
        self,
        name: str,
        place: str,
        value: Fraction | None = None,
        formula: str | None = None,
        unreadable: str | None = None,
    ) -> None:
        if name in self.places:
            raise TableError(f"{name!r} is given again (first at {self.places[name]})")
        self.places[name] = place
        if value is not None:
            self.variables[name] = value
        elif formula is not None:
            self.formulas[name] = formula
        else:
            self.unreadable[name] = unreadable or f"{place}: unreadable"

    def to_json(self) -> dict[str, Any]:
        """The shared schema (``variables``, ``formulas``, ``numbers``), ``unreadable``
        ``skipped`` and ``places`` (where each name stands: ``line 4``, ``item 2``) when
        not empty."""
        found = shared_fields(self.variables, self.formulas, self.numbers, self.unreadable)
        if self.skipped:
            found["skipped"] = dict(self.skipped)
        places = {name: place for name, place in self.places.items() if place != name}
        if places:
            found["places"] = places
        return found


def is_name(text: str) -> bool:
    return NAME_RE.fullmatch(text) is not None


def decimal_mark(texts: Iterable[str]) -> str | None:
    """``,`` when some of `texts` writes a decimal comma that cannot be anything else
    (``12,5``, ``1.234,5``, ``0,125``) and none a decimal point that way (``12.5``,
    ``1,234.5``), ``.`` for the converse; None when they show neither, or both.

    A file's own numbers decide how it writes the ambiguous ones (``8,884``): one file
    is written one way."""
    values = [text for text in texts if len(text) <= 100]  # numbers are shorter
    shown = {mark for mark in (",", ".") if any(_shows(text, mark) for text in values)}
    return shown.pop() if len(shown) == 1 else None


def language_for(mark: str | None, default_mark: str, guessed: str) -> str:
    """The language to read a table's values in: one with a decimal comma when the
    table's mark (else `default_mark`) is ``,``; `guessed` where it fits."""
    if (mark or default_mark) == ",":
        return guessed if guessed != "en" else "de"
    return "en"


def _shows(text: str, mark: str) -> bool:
    other = "." if mark == "," else ","
    match = re.fullmatch(rf"[+-]?(\d+(?:{re.escape(other)}\d{{3}})*){re.escape(mark)}(\d+)", text)
    if match is None:
        return False
    whole, decimals = match.groups()
    return other in whole or len(decimals) != 3 or len(whole) > 3 or whole.startswith("0")
