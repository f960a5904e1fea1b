"""Reading a line of an image as an assignment: several readings, repaired, voting.

Each recipe of `prep` gives one reading of the line; each reading goes through the
text extractor's assignment reader (`text.facts.extract_facts`), after repairs of what
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

import math
import re
import statistics
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from riddlectl.handlers.builtin.images.engine import Box, Recognition, Symbol, recognise, time_left
from riddlectl.handlers.builtin.images.prep import (
    MAX_BUSY,
    PREPARATIONS,
    Preparation,
    TooNoisy,
    busy,
    prepare,
)
from riddlectl.handlers.builtin.text.facts import extract_facts

if TYPE_CHECKING:
    from PIL import Image

#: Letters whose capital differs from them only in size.
SAME_SHAPE = frozenset("cosuvwxz")
#: Turns (degrees) of the image read again when no two readings agree: the first recipe
#: on the line turned back a little either way.
TURNS = (2.0, -2.0)
#: Small letters without ascenders or descenders: where lower case stops, in a line
#: without digits.
X_HEIGHT = frozenset("acemnorsuvwxzäöü")
#: Below this share of the digits' height a same-shape letter is lower case.
LOWER_CASE_HEIGHT = 0.87
_DOUBLED = re.compile(r"^([^\W\d_])([^\W\d_])(?=\s*[=:]|\s+ist?\s)")


@dataclass(frozen=True)
class LineReading:
    text: str
    facts: dict[str, Any]
    recognition: Recognition
    scale: float  # the prepared image's pixels per pixel of the original
    angle: float = 0.0  # degrees the image was turned (counter-clockwise) before reading
    size: tuple[int, int] = (0, 0)  # of the image read, before it was prepared

    def in_image(self, box: Box) -> tuple[float, float, float, float]:
        """A box of the recognition in the pixels of the image read: scaled back and,
        for a turned reading, the bounds of its corners turned back."""
        left, top, right, bottom = (edge / self.scale for edge in box)
        if not self.angle:
            return left, top, right, bottom
        turn = math.radians(self.angle)
        cos, sin = math.cos(turn), math.sin(turn)
        middle_x, middle_y = self.size[0] / 2, self.size[1] / 2
        corners = [
            (middle_x + (x - middle_x) * cos - (y - middle_y) * sin,
             middle_y + (x - middle_x) * sin + (y - middle_y) * cos)
            for x in (left, right) for y in (top, bottom)
        ]  # fmt: skip
        xs, ys = [x for x, _ in corners], [y for _, y in corners]
        return min(xs), min(ys), max(xs), max(ys)

    @property
    def assignment(self) -> tuple[str, ...]:
        """What the line assigns, comparable between readings; empty when nothing."""
        values = self.facts.get("variables", {})
        formulas = self.facts.get("formulas", {})
        return tuple(sorted(f"{k}={v}" for k, v in {**values, **formulas}.items()))


def read_line(image: Image.Image) -> tuple[LineReading, int, int]:
    """The line's reading, the number of recipes that agreed with it, and how many ran;
    `TooNoisy` when every preparation of it is mostly noise."""
    readings: list[LineReading] = []
    attempts = [(recipe, 0.0) for recipe in PREPARATIONS]
    attempts += [(PREPARATIONS[0], angle) for angle in TURNS]
    for recipe, angle in attempts:
        time_left()  # each step is bounded; the deadline is checked between them
        reading = _read(image, recipe, angle)
        if reading is None:
            continue
        readings.append(reading)
        agreeing = [r for r in readings if r.assignment and r.assignment == reading.assignment]
        if len(agreeing) >= 2:
            return _best(agreeing), len(agreeing), len(readings)
    if not readings:
        raise TooNoisy
    assigned = [r for r in readings if r.assignment]
    best = _best(assigned or readings)
    return best, sum(r.assignment == best.assignment for r in assigned) or 1, len(readings)


def _turned(image: Image.Image, angle: float) -> Image.Image:
    """The image turned about its middle, the corners filled with its commonest grey."""
    from PIL import Image

    histogram = image.histogram()
    paper = max(range(256), key=histogram.__getitem__)
    return image.rotate(angle, resample=Image.Resampling.BICUBIC, fillcolor=paper)


def _best(readings: list[LineReading]) -> LineReading:
    return max(readings, key=lambda r: r.recognition.confidence)


def _read(image: Image.Image, recipe: Preparation, angle: float) -> LineReading | None:
    """One reading of the line; None when this preparation of it is mostly noise."""
    prepared, scale = prepare(_turned(image, angle) if angle else image, recipe)
    if busy(prepared) > MAX_BUSY:
        return None
    recognition = recognise(prepared, recipe.whitelist)
    symbols = _repair_name(list(recognition.symbols))
    text = _joined(symbols) if symbols else recognition.text
    for candidate in (text, *_with_equals(symbols)):
        for variant in _spacings(_undoubled(candidate)):
            facts = extract_facts(variant).to_json()
            if facts.get("variables") or facts.get("formulas"):
                return LineReading(variant, facts, recognition, scale, angle, image.size)
    facts = extract_facts(text).to_json()
    return LineReading(text, facts, recognition, scale, angle, image.size)


def _joined(symbols: list[Symbol], equals_at: int = -1) -> str:
    """The line's text from its letters; the one at `equals_at` read as `=`."""
    parts: list[str] = []
    for index, symbol in enumerate(symbols):
        if symbol.starts_word and parts:
            parts.append(" ")
        parts.append("=" if index == equals_at else symbol.text)
    return "".join(parts)


def _undoubled(text: str) -> str:
    """`kK = 5` as `k = 5`: a one-letter name Tesseract read in both cases."""
    doubled = _DOUBLED.match(text)
    if doubled and doubled[1].lower() == doubled[2].lower():
        return text[0] + text[2:]
    return text


def _spacings(text: str) -> list[str]:
    """The text, and when a one-letter name is glued to `is`/`ist` (`tis seven`,
    `misten`), the ways of putting the spaces back."""
    variants = [text]
    if len(text) > 3 and text[0].isalpha() and text[1:3] == "is":
        variants.append(f"{text[0]} is {text[3:].lstrip()}")
        if text[3] == "t":
            variants.append(f"{text[0]} ist {text[4:].lstrip()}")
    return variants


def _repair_name(symbols: list[Symbol]) -> list[Symbol]:
    """The first letter as a name: a digit read where Tesseract also saw a letter before
    an `=` (`2 = 5` for `z = 5`), and the case of letters whose capitals differ in size."""
    if len(symbols) > 1 and symbols[0].text.isdigit() and symbols[1].text in "=:":
        letters = [c for c in symbols[0].choices if c.isalpha()]
        if letters:
            first = symbols[0]
            symbols = [replace(first, text=letters[0]), *symbols[1:]]
    return _repair_case(symbols)


def _repair_case(symbols: list[Symbol]) -> list[Symbol]:
    """The first letter's case, when its capital has its shape, from its size beside the
    line's digits, or, in a line without digits, beside its small letters."""
    if not symbols or symbols[0].text.lower() not in SAME_SHAPE | {"p"}:
        return symbols
    first, rest = symbols[0], symbols[1:]
    digits = [s for s in rest if s.text.isdigit()]
    small = [s for s in rest if s.text in X_HEIGHT]
    if digits:
        lower = _smaller_than_digits(first, digits)
    elif small:
        lower = _as_small_as(first, small)
    else:
        return symbols
    return [replace(first, text=first.text.lower() if lower else first.text.upper()), *rest]


def _smaller_than_digits(first: Symbol, digits: list[Symbol]) -> bool:
    """Lower case: clearly shorter than the digits (or a little, its top well below
    theirs); a `p` reaching below their baseline."""
    height = statistics.median(s.box[3] - s.box[1] for s in digits)
    middle = (first.box[0] + first.box[2]) / 2
    if first.text.lower() == "p":
        return (first.box[3] - _line_at(digits, middle, 3)) / height > 0.12
    ratio = (first.box[3] - first.box[1]) / height
    below = (first.box[1] - _line_at(digits, middle, 1)) / height
    return ratio < LOWER_CASE_HEIGHT or (ratio < 0.95 and below > 0.15)


def _as_small_as(first: Symbol, small: list[Symbol]) -> bool:
    """Lower case: its top not well above the small letters' tops (a capital stands some
    40 % taller) and, but for `p` with its descender, about as tall as they are."""
    height = statistics.median(s.box[3] - s.box[1] for s in small)
    ratio = (first.box[3] - first.box[1]) / height
    above = (_line_at(small, (first.box[0] + first.box[2]) / 2, 1) - first.box[1]) / height
    if first.text.lower() == "p":
        return above < 0.25
    return ratio < 1.15 and above < 0.35


def _line_at(letters: list[Symbol], x: float, edge: int) -> float:
    """Where the letters' tops (`edge` 1) or bottoms (3) would be at `x`: a line through
    them, since the text may be turned a little."""
    xs = [(s.box[0] + s.box[2]) / 2 for s in letters]
    ys = [float(s.box[edge]) for s in letters]
    mean_x, mean_y = statistics.fmean(xs), statistics.fmean(ys)
    spread = sum((a - mean_x) ** 2 for a in xs)
    if not spread:
        return mean_y
    slope = sum((a - mean_x) * (b - mean_y) for a, b in zip(xs, ys, strict=True)) / spread
    return mean_y + slope * (x - mean_x)


def _with_equals(symbols: list[Symbol]) -> list[str]:
    """The line read again with one sign taken as `=` where Tesseract thought it might be."""
    return [
        _joined(symbols, index)
        for index, symbol in enumerate(symbols)
        if index > 0 and symbol.text != "=" and "=" in symbol.choices[1:]
    ]
