"""The gatekeeper's check of points against the words read in an image.

An `extract` answer of kind `coordinates` to a question that quotes a word ("Where does
'fünfzehn' stand?") must point at that word when the image's extraction has it among
its `words` (the `ocr` extractor keeps each word's box): a point outside every box of
the word, widened by a quarter of its height, is rejected. When the word was not read,
or the question quotes nothing, only the image's size is checked (see `answers`).
"""

from __future__ import annotations

import json
import re
from typing import Any

from riddlectl.document.answers import ExtractSpec

# Straight, typographic and German quotation marks, written as escapes: some look like
# commas and accents.
_QUOTES = "\"'\u201e\u201c\u201d\u201a\u2018\u2019\u00ab\u00bb"
_QUOTED = re.compile(f"[{_QUOTES}]([^{_QUOTES}]{{1,80}})[{_QUOTES}]")
Box = tuple[float, float, float, float]


def named_words(question: str) -> list[str]:
    """The words quoted in the question, folded for comparison."""
    return [word for phrase in _QUOTED.findall(question) for word in map(_fold, phrase.split())]


def check_points(spec: ExtractSpec, solution: str, question: str, extraction: Any) -> str | None:
    """Why the answer's points miss the quoted word's boxes, or None (also when there is
    nothing to check them against). The answer's form was checked already."""
    names = named_words(question)
    boxes = _boxes(extraction, names)
    if not boxes:
        return None
    try:
        parsed = json.loads(solution)
    except ValueError:
        return None
    for point in parsed if spec.many else [parsed]:
        x, y = point
        if not any(_inside(x, y, box) for box in boxes):
            quoted = " ".join(names)
            return (
                f"point [{x}, {y}] is not on {quoted!r}, which the image shows at "
                f"{_shown(boxes)} (data item {spec.image})"
            )
    return None


def _boxes(extraction: Any, names: list[str]) -> list[Box]:
    words = extraction.get("words") if isinstance(extraction, dict) else None
    if not names or not isinstance(words, list):
        return []
    boxes = []
    for word in words:
        if not isinstance(word, dict) or _fold(str(word.get("text", ""))) not in names:
            continue
        box = word.get("box")
        if isinstance(box, list) and len(box) == 4 and all(_number(e) for e in box):
            boxes.append((float(box[0]), float(box[1]), float(box[2]), float(box[3])))
    return boxes


def _inside(x: float, y: float, box: Box) -> bool:
    left, top, right, bottom = box
    margin = max(2.0, (bottom - top) / 4)
    return left - margin <= x <= right + margin and top - margin <= y <= bottom + margin


def _fold(word: str) -> str:
    return word.strip(".,;:!?()[]{}").casefold()


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _shown(boxes: list[Box]) -> str:
    return ", ".join(f"[{', '.join(f'{e:g}' for e in box)}]" for box in boxes[:3])
