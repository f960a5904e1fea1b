"""The `ocr` extractor's reading of images made here (Pillow, Debian fonts), in-process."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from riddlectl.bench.extractors.images import generate, render_line
from riddlectl.document.answers import ExtractSpec
from riddlectl.errors import HandlerRefused
from riddlectl.handlers.builtin.images import engine, files, wordboxes
from riddlectl.handlers.builtin.images.extractor import ocr_version, read_image
from riddlectl.handlers.builtin.images.prep import otsu_threshold
from riddlectl.handlers.registry import load

pytest.importorskip("tesserocr")


def test_generated_noisy_lines_are_read_exactly(tmp_path: Path) -> None:
    # Seeded: the same 40 images each time (12 fonts, 16-48 px, turned, noisy). Measured
    # 39 of 40 with this seed; the bar leaves room for a Tesseract build that differs.
    cases = generate(tmp_path, 40, seed=2)
    wrong = []
    for case in cases:
        found = read_image(files.open_image(tmp_path / case.file, case.file))
        if found["variables"] != case.truth:
            wrong.append((case.note, found["text"]))
    assert len(wrong) <= 4, wrong


def test_threads_read_at_once_each_with_its_own_engine(tmp_path: Path) -> None:
    from concurrent.futures import ThreadPoolExecutor

    cases = generate(tmp_path, 6, seed=4)
    images = [files.open_image(tmp_path / case.file, case.file) for case in cases]
    alone = [read_image(image) for image in images]
    with ThreadPoolExecutor(3) as pool:
        together = list(pool.map(read_image, images * 2))
    assert together == alone * 2


def test_the_generator_is_seeded(tmp_path: Path) -> None:
    first = generate(tmp_path / "a", 3, seed=5)
    again = generate(tmp_path / "b", 3, seed=5)
    assert first == again
    for case in first:
        assert (tmp_path / "a" / case.file).read_bytes() == (
            tmp_path / "b" / case.file
        ).read_bytes()


@pytest.mark.parametrize(
    ("line", "variables"),
    [
        ("y = 15", {"y": "15"}),
        ("w ist zwölf", {"w": "12"}),
        ("x=-2.5", {"x": "-2.5"}),
        ("n is seven", {"n": "7"}),
    ],
)
def test_a_line_goes_through_the_assignment_reader(line: str, variables: dict) -> None:
    image, _ = render_line(line, font=4)
    found = read_image(image)
    assert found["variables"] == variables
    assert found["numbers"] == list(variables.values())


def test_each_word_keeps_its_box_in_the_images_pixels() -> None:
    image, drawn = render_line("y = 15", size=40)
    found = read_image(image.resize((image.width * 2, image.height * 2)))
    assert found["image"] == {"width": image.width * 2, "height": image.height * 2}
    assert [w["text"] for w in found["words"]] == ["y", "=", "15"]
    for word, (_, box) in zip(found["words"], drawn, strict=True):
        left, top, right, bottom = word["box"]
        # Tesseract's boxes of letters are close, not exact: each lies on the word drawn.
        middle = ((left + right) / 2, (top + bottom) / 2)
        assert 2 * box[0] <= middle[0] <= 2 * box[2] and 2 * box[1] <= middle[1] <= 2 * box[3]
        assert 0 < word["confidence"] <= 1
    assert 0 < found["confidence"] <= 1


def test_a_note_of_several_lines_is_read_line_by_line() -> None:
    from PIL import Image

    lines = [render_line(text, font=2)[0] for text in ("Einkauf", "a = 12", "b ist zwölf")]
    note = Image.new("L", (max(i.width for i in lines), sum(i.height for i in lines)), 255)
    top = 0
    for line in lines:
        note.paste(line, (0, top))
        top += line.height
    found = read_image(note)
    assert found["variables"] == {"a": "12", "b": "12"}
    assert found["text"].count("\n") == 2  # three rows, each read as a line
    twelve = [w for w in found["words"] if w["text"] == "12"]
    assert len(twelve) == 1 and lines[0].height < twelve[0]["box"][1] < top - lines[2].height


def test_a_blank_image_assigns_nothing() -> None:
    from PIL import Image

    found = read_image(Image.new("L", (200, 60), 255))
    assert (found["variables"], found["numbers"], found["words"]) == ({}, [], [])


def test_the_extractor_is_built_in_for_images_and_versioned() -> None:
    handler = load("ocr", "extract")
    assert handler.supports("image") and not handler.supports("text")
    tesseract = engine.version()
    assert tesseract.split("+")[0][0].isdigit()  # Tesseract's own version, e.g. 5.5.1
    assert handler.identity() == ocr_version() != handler.version  # with the engine's


def test_otsu_splits_a_two_peaked_histogram_between_the_peaks() -> None:
    histogram = [0] * 256
    histogram[30], histogram[220] = 500, 1500
    assert 30 <= otsu_threshold(histogram) < 220


def test_the_pixel_limit_comes_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    assert files.max_pixels() == files.DEFAULT_MAX_PIXELS
    monkeypatch.setenv(files.PIXELS_ENV, "1000")
    assert files.max_pixels() == 1000
    monkeypatch.setenv(files.PIXELS_ENV, "lots")
    with pytest.raises(HandlerRefused, match="RIDDLECTL_MAX_IMAGE_PIXELS"):
        files.max_pixels()


# -- the gatekeeper's check against word boxes ---------------------------------------------


EXTRACTION = {
    "words": [{"text": "y", "box": [30, 35, 50, 60]}, {"text": "15", "box": [100, 30, 140, 55]}]
}


def points(solution: str, question: str, many: bool = False) -> str | None:
    spec = ExtractSpec(type="extract", kind="coordinates", many=many)
    return wordboxes.check_points(spec, solution, question, EXTRACTION)


def test_a_point_on_the_quoted_word_is_accepted() -> None:
    assert points("[120, 40]", "Where does '15' stand?") is None
    assert points("[98, 57]", "Wo steht „15“?") is None  # within the margin
    assert points(json.dumps([[120, 40], [35, 50]]), 'Where are "y" and "15"?', many=True) is None


def test_a_point_off_the_quoted_word_is_rejected() -> None:
    review = points("[40, 50]", "Where does '15' stand?")
    assert review == (
        "point [40, 50] is not on '15', which the image shows at [100, 30, 140, 55] (data item 1)"
    )


def test_nothing_to_check_against_accepts() -> None:
    assert points("[40, 50]", "Where is the number?") is None  # nothing quoted
    assert points("[40, 50]", "Where does 'twenty' stand?") is None  # not read
    spec = ExtractSpec(type="extract", kind="coordinates")
    assert wordboxes.check_points(spec, "[1, 1]", "Where is '15'?", None) is None


def gatekeeping(data_dir: Path, solution: str, question: str, kind: str, extraction: dict) -> dict:
    from riddlectl.document.model import Riddle
    from riddlectl.handlers.base import Job
    from riddlectl.handlers.builtin.calculator import gatekeeper

    doc = {
        "id": "g1",
        "riddle": {"question": question, "answer": {"type": "extract", "kind": kind}},
        "solution": {"solution": solution},
        "data": [{"type": "image", "file_plain": "note.webp"}],
    }
    job = Job(Riddle.model_validate(doc), "validate", data_dir, data_dir, extractions=[extraction])
    return gatekeeper(job)


def test_the_gatekeeper_uses_what_the_extractor_read(tmp_path: Path) -> None:
    # A file the header reader cannot size: the extraction's size stands in for it.
    (tmp_path / "note.webp").write_bytes(b"not really an image")
    read = {**EXTRACTION, "text": "y=15", "image": {"width": 171, "height": 94}}
    quoted = "Where does '15' stand?"
    assert gatekeeping(tmp_path, "[120, 40]", quoted, "coordinates", read)["accept"] is True
    off = gatekeeping(tmp_path, "[40, 50]", quoted, "coordinates", read)
    assert off["accept"] is False and "is not on '15'" in off["review"]
    outside = gatekeeping(tmp_path, "[171, 40]", "Where?", "coordinates", read)
    assert outside["review"] == "point [171, 40] lies outside the 171x94 image (data item 1)"
    # Text copied from the image: what the extractor read there.
    assert gatekeeping(tmp_path, "y=15", "What does it say?", "text", read)["accept"] is True
    made_up = gatekeeping(tmp_path, "y=16", "What does it say?", "text", read)
    assert made_up["accept"] is False and "does not occur verbatim" in made_up["review"]


def extract(data_dir: Path, image: object, timeout: float = 60.0) -> dict:
    from riddlectl.document.model import Riddle
    from riddlectl.handlers.base import Job
    from riddlectl.handlers.builtin.images.extractor import OcrExtractor

    image.save(data_dir / "note.png")  # type: ignore[attr-defined]
    doc = {
        "id": "o1",
        "riddle": {"question": "y + 1 ="},
        "data": [{"type": "image", "file_plain": "note.png"}],
    }
    job = Job(
        Riddle.model_validate(doc), "extract", data_dir, data_dir, timeout, 0, data_dir / "note.png"
    )
    return OcrExtractor()(job)


def test_an_image_of_noise_is_refused_without_asking_tesseract(tmp_path: Path) -> None:
    import random

    from PIL import Image

    specks = random.Random(3).randbytes(1500 * 1500)
    with pytest.raises(HandlerRefused, match=r"note\.png: the image is mostly noise"):
        extract(tmp_path, Image.frombytes("L", (1500, 1500), specks))


def test_reading_stops_within_its_share_of_the_handler_timeout(tmp_path: Path) -> None:
    image, _ = render_line("y = 15")
    assert extract(tmp_path, image)["variables"] == {"y": "15"}
    with pytest.raises(HandlerRefused, match=r"note\.png: reading the image takes longer than"):
        extract(tmp_path, image, timeout=0.001)
