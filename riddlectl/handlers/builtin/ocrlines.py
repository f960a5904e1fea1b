"""Reading a line of an image as an assignment: several readings, repaired, voting.

Each recipe of `ocrprep` gives one reading of the line; each reading goes through the
text extractor's assignment reader (`textfacts.extract_facts`), after repairs of what
Tesseract gets wrong on short notes:

- the case of a one-letter name whose capital has the same shape (`c o s u v w x z`):
  lower case when the letter is clearly shorter than the digits of the line;
- a name read twice (`kK`, `Ww`): once;
- a space lost before `is`/`ist` (`tis seven`);
- an `=` read as another sign (`w - 5`, `k x 226`): when the line is no assignment,
  a letter whose alternatives include `=` is read as `=`.

The readings then vote on what the line assigns: the first assignment two recipes agree
on wins, else the most confident one. A line no recipe reads as an assignment keeps the
most confident text.
"""

from __future__ import annotations

import re
import statistics
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from riddlectl.handlers.builtin.ocrengine import Recognition, Symbol, recognise
from riddlectl.handlers.builtin.ocrprep import PREPARATIONS, Preparation, prepare
from riddlectl.handlers.builtin.textfacts import extract_facts

if TYPE_CHECKING:
    from PIL import Image

#: Letters whose capital differs from them only in size.
SAME_SHAPE = frozenset("cosuvwxz")
#: Below this share of the digits' height a same-shape letter is lower case.
LOWER_CASE_HEIGHT = 0.87
_LOST_SPACE = re.compile(r"^([^\W\d_])(ist|is)(?=\s)")
_DOUBLED = re.compile(r"^([^\W\d_])([^\W\d_])(?=\s*[=:])")


@dataclass(frozen=True)
class LineReading:
    text: str
    facts: dict[str, Any]
    recognition: Recognition
    scale: float  # the prepared image's pixels per pixel of the original

    @property
    def assignment(self) -> tuple[str, ...]:
        """What the line assigns, comparable between readings; empty when nothing."""
        values = self.facts.get("variables", {})
        formulas = self.facts.get("formulas", {})
        return tuple(sorted(f"{k}={v}" for k, v in {**values, **formulas}.items()))


def read_line(image: Image.Image) -> tuple[LineReading, int, int]:
    """The line's reading, the number of recipes that agreed with it, and how many ran."""
    readings: list[LineReading] = []
    for recipe in PREPARATIONS:
        reading = _read(image, recipe)
        readings.append(reading)
        agreeing = [r for r in readings if r.assignment and r.assignment == reading.assignment]
        if len(agreeing) >= 2:
            return _best(agreeing), len(agreeing), len(readings)
    assigned = [r for r in readings if r.assignment]
    best = _best(assigned or readings)
    return best, sum(r.assignment == best.assignment for r in assigned) or 1, len(readings)


def _best(readings: list[LineReading]) -> LineReading:
    return max(readings, key=lambda r: r.recognition.confidence)


def _read(image: Image.Image, recipe: Preparation) -> LineReading:
    prepared, scale = prepare(image, recipe)
    recognition = recognise(prepared, recipe.whitelist)
    symbols = _repair_case(list(recognition.symbols))
    text = _joined(symbols) if symbols else recognition.text
    text = _repair_text(text)
    facts = extract_facts(text).to_json()
    if not facts.get("variables") and not facts.get("formulas"):
        for candidate in _with_equals(symbols):
            tried = extract_facts(_repair_text(candidate)).to_json()
            if tried.get("variables") or tried.get("formulas"):
                text, facts = _repair_text(candidate), tried
                break
    return LineReading(text, facts, recognition, scale)


def _joined(symbols: list[Symbol], equals_at: int = -1) -> str:
    """The line's text from its letters; the one at `equals_at` read as `=`."""
    parts: list[str] = []
    for index, symbol in enumerate(symbols):
        if symbol.starts_word and parts:
            parts.append(" ")
        parts.append("=" if index == equals_at else symbol.text)
    return "".join(parts)


def _repair_text(text: str) -> str:
    text = _LOST_SPACE.sub(r"\1 \2", text)
    doubled = _DOUBLED.match(text)
    if doubled and doubled[1].lower() == doubled[2].lower():
        text = text[0] + text[2:]
    return text


def _repair_case(symbols: list[Symbol]) -> list[Symbol]:
    """The first letter in lower case when it is a same-shape letter clearly shorter than
    the line's digits (or a little shorter, its top well below theirs), else upper case."""
    digits = [s for s in symbols if s.text.isdigit()]
    if not symbols or not digits or symbols[0].text.lower() not in SAME_SHAPE:
        return symbols
    first = symbols[0]
    height = statistics.median(s.box[3] - s.box[1] for s in digits)
    ratio = (first.box[3] - first.box[1]) / height
    below = (first.box[1] - _digit_top(digits, (first.box[0] + first.box[2]) / 2)) / height
    short = ratio < LOWER_CASE_HEIGHT or (ratio < 0.95 and below > 0.15)
    text = first.text.lower() if short else first.text.upper()
    return [Symbol(text, first.box, first.choices, first.starts_word), *symbols[1:]]


def _digit_top(digits: list[Symbol], x: float) -> float:
    """Where the tops of the digits would be at `x`: a line through them, since the
    text may be turned a little."""
    xs = [(s.box[0] + s.box[2]) / 2 for s in digits]
    tops = [float(s.box[1]) for s in digits]
    mean_x, mean_top = statistics.fmean(xs), statistics.fmean(tops)
    spread = sum((a - mean_x) ** 2 for a in xs)
    if not spread:
        return mean_top
    slope = sum((a - mean_x) * (b - mean_top) for a, b in zip(xs, tops, strict=True)) / spread
    return mean_top + slope * (x - mean_x)


def _with_equals(symbols: list[Symbol]) -> list[str]:
    """The line read again with one sign taken as `=` where Tesseract thought it might be."""
    return [
        _joined(symbols, index)
        for index, symbol in enumerate(symbols)
        if index > 0 and symbol.text != "=" and "=" in symbol.choices[1:]
    ]
