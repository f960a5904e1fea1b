"""Image data through the installed command: the seed riddle with `y` from a PNG, images
that must fail their riddle (a decompression bomb, a truncated PNG, a text file named
.png), the extra missing, and the gatekeeper's check of points against word boxes."""

from __future__ import annotations

import os
import struct
import subprocess
import zlib
from pathlib import Path

import orjson
import pytest

from riddlectl.bench.extractors.images import render_line
from tests.conftest import Cli, final, submit_documents

pytest.importorskip("tesserocr")


def image_riddle(riddle_id: str, question: str, *items: tuple[str, str], **extra: object) -> dict:
    return {
        "id": riddle_id,
        "riddle": {"question": question, **extra.pop("riddle", {})},  # type: ignore[dict-item]
        "data": [{"type": kind, "file_plain": path} for kind, path in items],
        **extra,
    }


def png_bomb(width: int, height: int) -> bytes:
    """A real 1-bit PNG of `width` x `height` black pixels: some 100 KB that decode to
    width x height bytes."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))

    packer = zlib.compressobj(9)
    row = b"\x00" * (1 + (width + 7) // 8)
    idat = b"".join(packer.compress(row * 1000) for _ in range(height // 1000))
    idat += packer.compress(row * (height % 1000)) + packer.flush()
    header = struct.pack(">IIBBBBB", width, height, 1, 0, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", idat) + chunk(b"IEND", b"")
    )


@pytest.fixture
def notes(cli: Cli) -> Path:
    folder = cli.data / "notes"
    folder.mkdir()
    (folder / "x.txt").write_text("x = 10\n")
    image, _ = render_line("y = 15", font=0)
    image.save(folder / "y.png")
    return folder


def test_the_seed_riddle_reads_y_from_a_png(cli: Cli, notes: Path) -> None:
    done = cli(
        "submit", "--id", "seed", "--question", "x * y =",
        "--data", "notes/x.txt", "--data", "notes/y.png",
    )  # fmt: skip
    assert done.code == 0, done.err
    run = cli("run", "--once")
    assert run.code == 0, run.err
    assert cli("result", "seed").out == "150\n"
    queue, doc = final(cli, "seed")
    assert (queue, doc["solution"]["accepted"]) == ("done", True)
    assert "y = 15 (notes/y.png)" in doc["solution"]["explanation"]
    extraction = orjson.loads((cli.spool / doc["data"][1]["file_extracted"]).read_bytes())
    assert extraction["extractor"] == "ocr" and extraction["variables"] == {"y": "15"}
    assert [w["text"] for w in extraction["words"]] == ["y", "=", "15"]


def test_bad_images_fail_their_riddle_and_no_other(cli: Cli, notes: Path) -> None:
    (notes / "bomb.png").write_bytes(png_bomb(30_000, 30_000))
    whole = (notes / "y.png").read_bytes()
    (notes / "cut.png").write_bytes(whole[: len(whole) // 2])
    (notes / "letter.png").write_text("Dear x, y = 15.\n")
    good = image_riddle("good", "x * y =", ("text", "notes/x.txt"), ("image", "notes/y.png"))
    bad = {
        "bomb": "notes/bomb.png: the image is 30000x30000 pixels, over the limit of 40000000 "
        "(RIDDLECTL_MAX_IMAGE_PIXELS); not decoded",
        "cut": "notes/cut.png: the image is truncated or corrupt",
        "letter": "notes/letter.png: not an image in a format read here",
    }
    submit_documents(
        cli,
        *(
            image_riddle(key, "x * y =", ("text", "notes/x.txt"), ("image", f"notes/{key}.png"))
            for key in bad
        ),
        good,
    )
    # Waited for by pid: its peak memory, and its own children's, alone (the test process's
    # other children, a browser or a model server, would count otherwise).
    with (notes / "run.err").open("wb") as err:
        run = subprocess.Popen(cli.argv("run", "--once", "--timeout", "30"), stderr=err)
        _, status, usage = os.wait4(run.pid, 0)
    code = os.waitstatus_to_exitcode(status)
    assert code == 1, (notes / "run.err").read_text()  # some riddles failed
    for key, error in bad.items():
        queue, doc = final(cli, key)
        assert queue == "failed" and doc["error"].startswith(error), doc["error"]
        tries = [e for e in doc["history"] if e["stage"] == "extract" and e.get("agent")]
        assert len(tries) == 1  # refused at once, not tried again
    assert final(cli, "good")[1]["solution"]["solution"] == "150"
    # The bomb was never decoded: 900 million pixels would take 900 MB.
    assert usage.ru_maxrss < 400 * 1024


def test_a_lower_pixel_limit_is_honoured(cli: Cli, notes: Path) -> None:
    submit_documents(cli, image_riddle("small", "y + 1 =", ("image", "notes/y.png")))
    run = cli("run", "--once", env={"RIDDLECTL_MAX_IMAGE_PIXELS": "100"})
    assert run.code == 1
    assert "over the limit of 100" in final(cli, "small")[1]["error"]


def test_without_the_extra_the_riddle_fails_naming_it(
    cli: Cli, notes: Path, tmp_path: Path
) -> None:
    shadow = tmp_path / "no-ocr"
    shadow.mkdir()
    (shadow / "tesserocr.py").write_text("raise ImportError('tesserocr is not installed')\n")
    submit_documents(cli, image_riddle("bare", "y + 1 =", ("image", "notes/y.png")))
    run = cli("run", "--once", env={"PYTHONPATH": str(shadow)})
    assert run.code == 1
    queue, doc = final(cli, "bare")
    assert queue == "failed"
    assert doc["error"] == "reading images needs tesserocr: pip install 'riddlectl[ocr]'"


def test_the_gatekeeper_checks_a_point_against_the_quoted_word(cli: Cli, notes: Path) -> None:
    _, drawn = render_line("y = 15", font=0)  # as the fixture drew notes/y.png
    (_, y_box), _, (_, number_box) = drawn
    on_number = [(number_box[0] + number_box[2]) // 2, (number_box[1] + number_box[3]) // 2]
    on_y = [(y_box[0] + y_box[2]) // 2, (y_box[1] + y_box[3]) // 2]
    answer = {"type": "extract", "kind": "coordinates"}
    for key in ("right", "wrong"):
        submit_documents(cli, image_riddle(key, "Where does '15' stand?", ("image", "notes/y.png"),
                                 riddle={"answer": answer}))  # fmt: skip
        point = on_number if key == "right" else on_y
        solver = f'cmd:echo \'{{"solution": "{point}"}}\''
        run = cli("run", "--once", "--max-trials", "1", "--handler", f"solve={solver}")
        assert run.code in (0, 1), run.err
    queue, doc = final(cli, "right")
    assert (queue, doc["solution"]["accepted"]) == ("done", True)
    queue, doc = final(cli, "wrong")
    assert queue == "failed"
    (rejected,) = doc["riddle"]["solutions_before"]
    assert rejected["review"].startswith(f"point {on_y} is not on '15', which the image shows at")
