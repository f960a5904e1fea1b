"""Image data files opened with bounds, for the `ocr` extractor.

An image is refused before it is decoded when its file is over `MAX_IMAGE_BYTES` or its
header announces more pixels than the limit (`RIDDLECTL_MAX_IMAGE_PIXELS`, default
`DEFAULT_MAX_PIXELS`): a small file can unpack into gigabytes (a decompression bomb), so
the size is checked from the header alone. Only common raster formats are opened;
Pillow's other plugins (EPS runs Ghostscript, for one) are never reached. A file that is
not an image, or is truncated or corrupt, is refused with what Pillow said.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

from riddlectl.errors import HandlerRefused

if TYPE_CHECKING:
    from PIL import Image

MAX_IMAGE_BYTES = 50 * 1024 * 1024
DEFAULT_MAX_PIXELS = 40_000_000
PIXELS_ENV = "RIDDLECTL_MAX_IMAGE_PIXELS"
FORMATS = ("PNG", "JPEG", "GIF", "BMP", "TIFF", "WEBP", "PPM")
INSTALL_HINT = "pip install 'riddlectl[ocr]'"


def max_pixels() -> int:
    """The pixel limit: `RIDDLECTL_MAX_IMAGE_PIXELS` when set to a positive integer."""
    text = os.environ.get(PIXELS_ENV, "").strip()
    if not text:
        return DEFAULT_MAX_PIXELS
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value <= 0:
        raise HandlerRefused(f"{PIXELS_ENV}: invalid value {text!r} (a positive integer)")
    return value


def pillow() -> object:
    """The `PIL` package, or `HandlerRefused` naming the extra that brings it."""
    try:
        import PIL.Image
    except ImportError:
        raise HandlerRefused(f"reading images needs Pillow: {INSTALL_HINT}") from None
    return PIL.Image


def open_image(path: Path, where: str) -> Image.Image:
    """The decoded image at `path` in mode `L` (grey), its first frame; `HandlerRefused`
    saying why when it is too large, not an image, truncated or corrupt."""
    pillow()
    from PIL import Image, UnidentifiedImageError

    size = path.stat().st_size
    if size > MAX_IMAGE_BYTES:
        raise HandlerRefused(f"{where}: the file is over the {MAX_IMAGE_BYTES}-byte limit")
    limit = max_pixels()
    # Ours replaces Pillow's own check (made when the header is read, with a limit of its
    # own), so that every image over the limit is refused in the same words.
    Image.MAX_IMAGE_PIXELS = None
    try:
        with Image.open(path, formats=FORMATS) as image:
            width, height = image.size
            if width * height > limit:
                raise HandlerRefused(
                    f"{where}: the image is {width}x{height} pixels, over the limit of "
                    f"{limit} ({PIXELS_ENV}); not decoded"
                )
            image.load()
            return image.convert("L")
    except UnidentifiedImageError:
        raise HandlerRefused(
            f"{where}: not an image in a format read here ({', '.join(FORMATS)})"
        ) from None
    except (OSError, SyntaxError, ValueError, EOFError) as exc:
        # Pillow raises these for truncated data, bad chunks and broken headers.
        reason = str(exc) or type(exc).__name__
        raise HandlerRefused(f"{where}: the image is truncated or corrupt ({reason})") from None
