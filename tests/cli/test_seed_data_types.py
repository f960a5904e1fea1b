"""The seed riddle over three kinds of data at once: `x` from a CSV table, `y` from a
picture of a note, `z` from a recording, posed and answered through the command line."""

from __future__ import annotations

import orjson

from riddlectl.bench.extractors.images import render_line
from riddlectl.bench.extractors.speech import synthesise
from tests.conftest import Cli


def test_x_from_a_table_y_from_a_picture_z_from_a_recording_gives_170(cli: Cli) -> None:
    (cli.data / "x.csv").write_text('name;value\n"x";10\n')
    picture, _ = render_line("y = 15", size=40)
    picture.save(cli.data / "y.png")
    synthesise("z equals twenty", cli.data / "z.wav", "en-us")

    submitted = cli(
        "submit", "--question", "x * y + z =",
        "--data", "x.csv", "--data", "y.png", "--data", "z.wav",
    )  # fmt: skip
    assert submitted.code == 0, submitted.err
    riddle_id = submitted.out.strip()
    run = cli("run", "--once", timeout=120)
    assert run.code == 0, run.err

    assert cli("result", riddle_id).out == "170\n"
    document = orjson.loads(cli("show", riddle_id).out)
    assert document["status"]["solved"] is True
    assert document["solution"]["accepted"] is True
    assert [item["type"] for item in document["data"]] == ["csv", "image", "audio"]
    extractions = [
        orjson.loads((cli.spool / item["file_extracted"]).read_bytes()) for item in document["data"]
    ]
    assert [e["variables"] for e in extractions] == [{"x": "10"}, {"y": "15"}, {"z": "20"}]
