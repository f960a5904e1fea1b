"""One-line images of assignments, with their truth, for measuring the `ocr` extractor.

Each case is a note of one line (`x = 10`, `y=15`, `b = -3.25`, `w ist zwölf`, `n is
seven`) rendered with Pillow in one of a dozen fonts from Debian's font packages
(`fonts-dejavu-core`, `fonts-liberation`, `fonts-freefont-ttf`), 16-48 px high, turned
by up to 3 degrees, on a paper-grey background, with Gaussian or salt-and-pepper noise,
sometimes a light blur, and saved as PNG or JPEG. Everything comes from the seed: the
same seed writes the same files.
"""

from __future__ import annotations

import random
from fractions import Fraction
from pathlib import Path
from typing import TYPE_CHECKING

from riddlectl.bench.extractors.cases import Case
from riddlectl.document.numbers import format_number

if TYPE_CHECKING:
    from PIL import Image

FONT_DIR = Path("/usr/share/fonts/truetype")
FONTS = (
    "dejavu/DejaVuSans.ttf",
    "dejavu/DejaVuSans-Bold.ttf",
    "dejavu/DejaVuSerif.ttf",
    "dejavu/DejaVuSansMono.ttf",
    "liberation/LiberationSans-Regular.ttf",
    "liberation/LiberationSans-Bold.ttf",
    "liberation/LiberationSerif-Regular.ttf",
    "liberation/LiberationMono-Regular.ttf",
    "freefont/FreeSans.ttf",
    "freefont/FreeSerif.ttf",
    "freefont/FreeMono.ttf",
    "freefont/FreeSansBold.ttf",
)
# Names as on notes, which a reader would not mistake for digits (no l, o, i).
NAMES = ("x", "y", "z", "w", "a", "b", "c", "n", "k", "m", "p", "t", "X", "W")
_ENGLISH = "zero one two three four five six seven eight nine ten eleven twelve thirteen \
fourteen fifteen sixteen seventeen eighteen nineteen twenty"
_GERMAN = "null eins zwei drei vier fünf sechs sieben acht neun zehn elf zwölf dreizehn \
vierzehn fünfzehn sechzehn siebzehn achtzehn neunzehn zwanzig"
ENGLISH, GERMAN = _ENGLISH.split(), _GERMAN.split()


def fonts() -> list[Path]:
    """The fonts installed of `FONTS`; `RuntimeError` naming the packages when none is."""
    found = [FONT_DIR / name for name in FONTS if (FONT_DIR / name).is_file()]
    if not found:
        raise RuntimeError(
            f"no fonts in {FONT_DIR}: install fonts-dejavu-core, fonts-liberation, "
            "fonts-freefont-ttf"
        )
    return found


def generate(directory: Path, count: int, seed: int) -> list[Case]:
    """Write `count` images into `directory` and return their cases."""
    rng = random.Random(seed)
    available = fonts()
    directory.mkdir(parents=True, exist_ok=True)
    cases = []
    for number in range(count):
        name = rng.choice(NAMES)
        text, value = _line(rng, name)
        font = available[number % len(available)]
        image, note = _render(rng, text, font)
        suffix = "jpg" if rng.random() < 0.2 else "png"
        file = f"line-{number:04d}.{suffix}"
        if suffix == "jpg":
            image.save(directory / file, quality=85)
        else:
            image.save(directory / file)
        cases.append(
            Case(
                file=file,
                type="image",
                truth={name: format_number(value)},
                question=f"{name} + 1 =",
                note=f"{text!r}, {font.stem}, {note}, {suffix}",
            )
        )
    return cases


def render_line(
    text: str, size: int = 32, font: int = 0
) -> tuple[Image.Image, list[tuple[str, tuple[int, int, int, int]]]]:
    """A clean image of `text` (no turn, no noise) and the box of each of its words, as
    drawn: for tests that need to know where a word is."""
    from PIL import Image, ImageDraw, ImageFont

    face = ImageFont.truetype(str(fonts()[font]), size)
    measure = ImageDraw.Draw(Image.new("L", (1, 1)))
    left, top, right, bottom = (round(e) for e in measure.textbbox((0, 0), text, font=face))
    pad = size
    image = Image.new("L", (right - left + 2 * pad, bottom - top + 2 * pad), 255)
    origin = (pad - left, pad - top)
    ImageDraw.Draw(image).text(origin, text, fill=0, font=face)
    boxes = []
    start = 0
    for word in text.split():
        start = text.index(word, start)
        before = measure.textlength(text[:start], font=face)
        box = measure.textbbox((origin[0] + before, origin[1]), word, font=face)
        boxes.append((word, tuple(round(e) for e in box)))
        start += len(word)
    return image, boxes  # type: ignore[return-value]


def _line(rng: random.Random, name: str) -> tuple[str, Fraction]:
    """One assignment line and the value it gives `name`."""
    kind = rng.choice(("int", "int", "tight", "negative", "decimal", "words"))
    if kind == "words":
        number = rng.randrange(len(GERMAN))
        if rng.random() < 0.5:
            return f"{name} ist {GERMAN[number]}", Fraction(number)
        return f"{name} is {ENGLISH[number]}", Fraction(number)
    if kind == "decimal":
        scale = rng.choice((10, 100))
        value = Fraction(rng.randrange(-99 * scale, 1000 * scale), scale)
        if value.denominator == 1:  # a decimal, not a whole number written with ".0"
            value += Fraction(1, scale)
        shown = format_number(value)
    else:
        value = Fraction(rng.randrange(-999, 0) if kind == "negative" else rng.randrange(1000))
        shown = format_number(value)
    equals = "=" if kind == "tight" else rng.choice((" = ", " = ", " =", "= "))
    return f"{name}{equals}{shown}", value


def _render(rng: random.Random, text: str, font_path: Path) -> tuple[Image.Image, str]:
    from PIL import Image, ImageDraw, ImageFilter, ImageFont

    size = rng.randrange(16, 49)
    font = ImageFont.truetype(str(font_path), size)
    measure = ImageDraw.Draw(Image.new("L", (1, 1)))
    left, top, right, bottom = (round(e) for e in measure.textbbox((0, 0), text, font=font))
    pad = size // 2 + rng.randrange(4, 20)
    paper = rng.randrange(215, 256)
    image = Image.new("L", (right - left + 2 * pad, bottom - top + 2 * pad), paper)
    ImageDraw.Draw(image).text((pad - left, pad - top), text, fill=rng.randrange(0, 70), font=font)
    angle = rng.uniform(-3, 3)
    image = image.rotate(angle, resample=Image.Resampling.BICUBIC, expand=True, fillcolor=paper)
    notes = [f"{size} px", f"{angle:+.1f} deg"]
    if rng.random() < 0.3:
        radius = rng.uniform(0.3, 0.8)
        image = image.filter(ImageFilter.GaussianBlur(radius))
        notes.append(f"blur {radius:.1f}")
    if rng.random() < 0.5:
        sigma = rng.uniform(5, 25)
        image = _gaussian(rng, image, sigma)
        notes.append(f"gaussian noise {sigma:.0f}")
    else:
        share = rng.uniform(0.002, 0.02)
        _salt_and_pepper(rng, image, share)
        notes.append(f"salt-and-pepper {share:.1%}")
    return image, ", ".join(notes)


def _gaussian(rng: random.Random, image: Image.Image, sigma: float) -> Image.Image:
    # Drawn from the seeded generator rather than Image.effect_noise, whose C random
    # numbers are not seeded: the same seed must write the same images.
    from PIL import Image, ImageChops

    width, height = image.size
    noise = bytes(min(255, max(0, round(128 + rng.gauss(0, sigma)))) for _ in range(width * height))
    return ImageChops.add(image, Image.frombytes("L", (width, height), noise), 1.0, -128)


def _salt_and_pepper(rng: random.Random, image: Image.Image, share: float) -> None:
    width, height = image.size
    pixels = image.load()
    assert pixels is not None
    for _ in range(int(width * height * share)):
        pixels[rng.randrange(width), rng.randrange(height)] = rng.choice((0, 255))
