"""Wake-ups on arrivals only, through both watchdog paths, on real directories."""

from __future__ import annotations

import os
import sys
import threading
from pathlib import Path

import pytest

from riddlectl.spool.fs import wakeups

BACKENDS = [wakeups._ObserverWatch]
if sys.platform.startswith("linux"):
    BACKENDS.insert(0, wakeups._InotifyWatch)


@pytest.fixture(params=BACKENDS, ids=lambda b: b.__name__)
def watched(request: pytest.FixtureRequest, tmp_path: Path):
    inbox, elsewhere = tmp_path / "inbox", tmp_path / "elsewhere"
    inbox.mkdir()
    elsewhere.mkdir()
    (inbox / "old.json").write_text("{}")
    wake = threading.Event()
    watching = request.param([str(inbox)], wake)
    yield inbox, elsewhere, wake, watching
    watching.stop()


def test_a_riddle_moved_in_wakes(watched) -> None:
    inbox, elsewhere, wake, _ = watched
    (elsewhere / "a.json").write_text("{}")
    os.rename(elsewhere / "a.json", inbox / "a.json")
    assert wake.wait(2.0)


def test_a_file_written_in_place_wakes(watched) -> None:
    inbox, _, wake, _ = watched
    (inbox / "dropped.json").write_text("{}")
    assert wake.wait(2.0)


def test_reading_and_removing_do_not_wake(watched) -> None:
    inbox, _, wake, _ = watched
    (inbox / "old.json").read_bytes()  # what a claim does
    os.unlink(inbox / "old.json")  # what a commit does to its source
    assert not wake.wait(0.3)


def test_nothing_wakes_after_stop(watched) -> None:
    inbox, _, wake, watching = watched
    watching.stop()
    (inbox / "late.json").write_text("{}")
    assert not wake.wait(0.3)


def test_the_default_watch_on_linux_is_the_shared_inotify_reader(tmp_path: Path) -> None:
    watching = wakeups.watch([tmp_path, tmp_path / "missing"], threading.Event())
    assert watching is not None
    try:
        expected = (
            wakeups._InotifyWatch if sys.platform.startswith("linux") else wakeups._ObserverWatch
        )
        assert type(watching) is expected
    finally:
        watching.stop()
