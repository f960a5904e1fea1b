"""Preparing a grey image of a line of text for Tesseract: denoise, scale, binarise.

Tesseract's LSTM reads best when capitals are some 30-40 px high and the page is clean;
photos of notes are neither. Each `Preparation` is one recipe (a 3x3 median filter
against speckle, upscaling of small text, Otsu's threshold); the reader tries a few and
lets them vote, since no single recipe reads every image (see `ocrlines`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from PIL import Image


@dataclass(frozen=True)
class Preparation:
    """One recipe: a 3x3 `median` first, then scale to `height` px when smaller, then a
    `median_scaled` filter of that size (a thin minus sign survives it once scaled up),
    then `otsu`."""

    name: str
    median: bool
    height: int
    median_scaled: int
    otsu: bool
    whitelist: bool  # read with the assignment characters only (see `ocrengine`)


#: The recipes, in the order tried; measured on generated noisy lines (docs/data-types.md).
PREPARATIONS = (
    Preparation("median", True, 100, 0, otsu=False, whitelist=False),
    Preparation("scaled-median-otsu", False, 150, 5, otsu=True, whitelist=True),
    Preparation("plain", False, 120, 0, otsu=False, whitelist=True),
)
#: Largest side an image is scaled up to, so that upscaling never makes a huge image.
MAX_SIDE = 4000


def prepare(image: Image.Image, recipe: Preparation) -> tuple[Image.Image, float]:
    """The prepared image and the factor its coordinates were scaled by."""
    from PIL import Image, ImageFilter

    if recipe.median:
        image = image.filter(ImageFilter.MedianFilter(3))
    scale = 1.0
    if image.height < recipe.height:
        scale = min(recipe.height / image.height, MAX_SIDE / max(image.size))
        if scale > 1.0:
            size = (round(image.width * scale), round(image.height * scale))
            image = image.resize(size, Image.Resampling.BICUBIC)
        else:
            scale = 1.0
    if recipe.median_scaled:
        image = image.filter(ImageFilter.MedianFilter(recipe.median_scaled))
    if recipe.otsu:
        threshold = otsu_threshold(image.histogram())
        image = image.point(lambda value: 255 if value > threshold else 0)
    return image, scale


def otsu_threshold(histogram: list[int]) -> int:
    """The grey level splitting `histogram` (256 bins) into the two classes of largest
    between-class variance (Otsu, 1979)."""
    total = sum(histogram)
    weighted_total = sum(level * count for level, count in enumerate(histogram))
    below = weighted_below = 0
    best, threshold = -1.0, 127
    for level, count in enumerate(histogram[:256]):
        below += count
        above = total - below
        if below == 0:
            continue
        if above == 0:
            break
        weighted_below += level * count
        mean_below = weighted_below / below
        mean_above = (weighted_total - weighted_below) / above
        variance = below * above * (mean_below - mean_above) ** 2
        if variance > best:
            best, threshold = variance, level
    return threshold
