"""Preparing a grey image of a line of text for Tesseract: denoise, scale, binarise.

Tesseract's LSTM reads best when capitals are some 30-40 px high and the page is clean;
photos of notes are neither. Each `Preparation` is one recipe (a 3x3 median filter
against speckle, upscaling of small text, Otsu's threshold); the reader tries a few and
lets them vote, since no single recipe reads every image (see `lines`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from PIL import Image


@dataclass(frozen=True)
class Preparation:
    """One recipe: a 3x3 `median` first, then scale to `height` px when smaller, then, if
    it was scaled, a `median_scaled` filter of that size (a thin minus sign survives it
    once scaled up), then `otsu`."""

    name: str
    median: bool
    height: int
    median_scaled: int
    otsu: bool
    whitelist: bool  # read with the assignment characters only (see `engine`)


#: The recipes, in the order tried; measured on generated noisy lines (docs/data-types.md).
PREPARATIONS = (
    Preparation("median", True, 100, 0, otsu=False, whitelist=False),
    Preparation("scaled-median-otsu", False, 150, 5, otsu=True, whitelist=True),
    Preparation("plain", False, 120, 0, otsu=False, whitelist=True),
)
#: Largest side of an image read: a larger one is scaled down first, and a small one is
#: never scaled up beyond it (Tesseract's time grows with the pixels, and a line of text
#: this wide is still large).
MAX_SIDE = 2000
#: Above this `busy` share a preparation is taken for noise, not text.
MAX_BUSY = 0.15


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
    if recipe.median_scaled and scale > 1.0:
        image = image.filter(ImageFilter.MedianFilter(recipe.median_scaled))
    if recipe.otsu:
        threshold = otsu_threshold(image.histogram())
        image = image.point(lambda value: 255 if value > threshold else 0)
    return image, scale


class TooNoisy(Exception):
    """Every preparation of the image is mostly noise: nothing to give Tesseract."""


def busy(image: Image.Image) -> float:
    """The share of pixels whose right neighbour differs once the image is thresholded
    (Otsu): some 0.01-0.04 for a line of text even under heavy noise, up to 0.085 for a
    page of small bold print, 0.25-0.5 for an image of noise. Tesseract's time grows
    with the specks it must sort, and it cannot be stopped while it does (a noise image
    of 4 megapixels kept it busy for minutes), so a preparation over `MAX_BUSY` is not
    read at all."""
    from PIL import ImageChops

    threshold = otsu_threshold(image.histogram())
    binary = image.point(lambda value: 255 if value > threshold else 0)
    changes = ImageChops.difference(binary, ImageChops.offset(binary, 1, 0))
    return changes.histogram()[255] / (image.width * image.height)


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
