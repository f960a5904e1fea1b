"""The lines of an image: one line, or several read one by one.

Tesseract's layout analysis finds the text lines (on the image as it is: a median filter
made it miss short lines); pieces that overlap vertically belong to one row. An
image of one row is read whole (`lines.read_line`); an image of several is cut into
its rows, each read as a line of its own with a margin around it, and the rows' words
are given back in the whole image's pixels.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from riddlectl.handlers.builtin.images.engine import Box, line_boxes
from riddlectl.handlers.builtin.images.lines import LineReading, read_line
from riddlectl.handlers.builtin.images.prep import MAX_BUSY, busy

if TYPE_CHECKING:
    from PIL import Image

#: Margin around a row cut out of the image, as a share of the row's height.
MARGIN = 0.35


@dataclass(frozen=True)
class Piece:
    """One row's reading and where its crop lies in the image read."""

    reading: LineReading
    agreeing: int
    tried: int
    origin: tuple[int, int]


def read_rows(image: Image.Image) -> list[Piece]:
    """Each row of the image read as a line, top to bottom; the whole image as one line
    when it has fewer than two rows."""
    rows = _rows(image)
    if len(rows) < 2:
        return [Piece(*read_line(image), (0, 0))]
    pieces = []
    for left, top, right, bottom in rows:
        pad = round((bottom - top) * MARGIN) + 2
        box = (
            max(0, left - pad),
            max(0, top - pad),
            min(image.width, right + pad),
            min(image.height, bottom + pad),
        )
        pieces.append(Piece(*read_line(image.crop(box)), (box[0], box[1])))
    return pieces


def _rows(image: Image.Image) -> list[Box]:
    if busy(image) > MAX_BUSY:
        return []  # noise: Tesseract's layout analysis would take long to find nothing
    rows: list[Box] = []
    for box in sorted(line_boxes(image), key=lambda b: b[1]):
        if rows and box[1] < rows[-1][3] - (box[3] - box[1]) / 3:  # overlaps the row above
            last = rows[-1]
            rows[-1] = (min(last[0], box[0]), last[1], max(last[2], box[2]), max(last[3], box[3]))
        else:
            rows.append(box)
    return rows
