"""Where a stage reads a riddle's data files (`DataPlace`): a spool that keeps the files
makes their directory only when a handler asks for it, and names an extraction by the
digest it stored, so a cached extraction costs no file at all."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

from riddlectl.document.model import DataItem, Riddle
from riddlectl.handlers.base import Job, NamedHandler
from riddlectl.pipeline.stages import EXTRACT, StageContext
from riddlectl.spool.contract import DataPlace
from riddlectl.spool.memory import MemorySpool

CONTENT = b"x = 10\n"


def facts(job: Job) -> dict[str, Any]:
    assert job.item_path is not None
    return {"facts": {"text": job.item_path.read_text()}}


def context(tmp_path: Path, place: DataPlace) -> StageContext:
    return StageContext(
        data_dir=tmp_path / "not-there",
        spool_root=tmp_path,
        store=MemorySpool().extractions,
        handlers=[NamedHandler("facts", facts, frozenset({"text"}))],
        place=place,
    )


def one_file() -> Riddle:
    riddle = Riddle.model_validate({"id": "r1", "riddle": {"question": "x ="}})
    riddle.data = [DataItem(type="text", file_plain="in/x.txt")]
    return riddle


def test_a_cached_extraction_of_a_kept_file_is_found_by_its_digest_without_the_file(
    tmp_path: Path,
) -> None:
    asked: list[str] = []

    def directory() -> Path:
        asked.append("made")
        return tmp_path / "not-there"

    place = DataPlace(directory, {"in/x.txt": hashlib.sha256(CONTENT).hexdigest()})
    ctx = context(tmp_path, place)
    key = ctx.store.key(CONTENT, "facts", "1")
    ctx.store.get_or_make(key, lambda: {"extractor": "facts", "facts": {"text": "cached"}})
    riddle = one_file()
    EXTRACT.run(riddle, ctx)
    assert riddle.data[0].file_extracted == ctx.store.reference(key)
    assert asked == []  # no directory was made, no file opened


def test_a_kept_file_not_extracted_yet_is_read_from_the_directory_made_then(
    tmp_path: Path,
) -> None:
    local = tmp_path / "copy"
    (local / "in").mkdir(parents=True)
    (local / "in" / "x.txt").write_bytes(CONTENT)
    made: list[Path] = []

    def directory() -> Path:
        made.append(local)
        return local

    place = DataPlace(directory, {"in/x.txt": hashlib.sha256(CONTENT).hexdigest()})
    ctx = context(tmp_path, place)
    riddle = one_file()
    EXTRACT.run(riddle, ctx)
    found = ctx.store.load(riddle.data[0].file_extracted)
    assert found is not None and found["facts"] == {"text": "x = 10\n"}
    assert made == [local]  # made once, for the extractor
    assert ctx.job(riddle, "solve").data_dir == local
