"""The extraction cache, on every spool: made once per key, read by reference, cleared."""

from __future__ import annotations

import os
import re
import threading
import time
from pathlib import Path
from typing import Any

from riddlectl.spool.contract import Spool


def test_an_extraction_is_made_once_and_read_by_its_reference(spool: Spool) -> None:
    cache = spool.extractions
    key = cache.key(b"x = 1\n", "text", "1")
    made: list[int] = []

    def make() -> dict[str, Any]:
        made.append(1)
        return {"extractor": "text", "variables": {"x": "1"}}

    reference = cache.get_or_make(key, make)
    assert reference == f"cache/extractions/{key}.json"
    assert cache.get_or_make(key, make) == reference
    assert made == [1]
    assert cache.load(reference) == {"extractor": "text", "variables": {"x": "1"}}
    assert cache.load(None) is None
    assert cache.load(cache.reference(cache.key(b"other", "text", "1"))) is None


def test_many_at_once_makes_only_what_is_missing_once_each_in_order(spool: Spool) -> None:
    cache = spool.extractions
    old, new = cache.key(b"a = 1\n", "text", "1"), cache.key(b"b = 2\n", "text", "1")
    made: list[str] = []

    def maker(name: str) -> Any:
        def make() -> dict[str, Any]:
            made.append(name)
            return {"extractor": "text", "variables": {name: "1"}}

        return make

    cache.get_or_make(old, maker("a"))
    references = cache.get_or_make_many(
        iter([(new, maker("b")), (old, maker("a")), (new, maker("b"))])
    )
    assert references == [cache.reference(new), cache.reference(old), cache.reference(new)]
    assert made == ["a", "b"]  # the old one was there; the new one made once
    assert cache.load(cache.reference(new)) == {"extractor": "text", "variables": {"b": "1"}}


def test_keys_tell_content_and_extractor_apart(spool: Spool) -> None:
    cache = spool.extractions
    keys = {
        cache.key(b"1", "text", "1"),
        cache.key(b"2", "text", "1"),
        cache.key(b"1", "text", "2"),
        cache.key(b"1", "cmd:x", "1"),
    }
    assert len(keys) == 4
    assert all(re.fullmatch(r"[0-9a-f]{64}\.[0-9a-f]{12}", key) for key in keys)


def test_makers_of_one_key_at_once_call_the_extractor_once(spool: Spool) -> None:
    cache = spool.extractions
    key = cache.key(b"slow", "text", "1")
    made: list[int] = []

    def make() -> dict[str, Any]:
        made.append(1)
        time.sleep(0.2)
        return {"extractor": "text"}

    references: list[str] = []
    threads = [
        threading.Thread(target=lambda: references.append(cache.get_or_make(key, make)))
        for _ in range(3)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert made == [1] and len(set(references)) == 1 and len(references) == 3


def test_clear_drops_extractions_by_extractor_and_they_are_made_again(spool: Spool) -> None:
    cache = spool.extractions
    text = cache.get_or_make(cache.key(b"1", "text", "1"), lambda: {"extractor": "text"})
    other = cache.get_or_make(cache.key(b"1", "other", "1"), lambda: {"extractor": "other"})
    assert not cache.dropped(text) and not cache.dropped(other)
    assert cache.clear("other") == 1
    assert cache.dropped(other) and cache.load(other) is None
    assert not cache.dropped(text) and cache.load(text) == {"extractor": "text"}
    assert cache.clear() == 1 and cache.dropped(text)
    again = cache.get_or_make(cache.key(b"1", "text", "1"), lambda: {"extractor": "text", "v": 2})
    assert again == text and cache.load(text) == {"extractor": "text", "v": 2}
    assert not cache.dropped(None) and not cache.dropped("not/a/reference.json")


def test_a_data_file_changed_just_now_is_not_remembered(spool: Spool, tmp_path: Path) -> None:
    path = tmp_path / "x.txt"
    path.write_bytes(b"x = 1\n")
    info = os.stat(path)
    spool.extractions.note_file_key(info, "text", "1", "key")
    assert spool.extractions.file_key(info, "text", "1") is None
