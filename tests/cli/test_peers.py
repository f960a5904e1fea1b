"""The peers' harness: the same pipeline on other queues, run small. Its report has the
shape riddlectl's own bench has; a peer whose library is missing is skipped with a note.
Speed is reported, never asserted."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import orjson
import pytest

from riddlectl.bench import peers
from riddlectl.bench.peers.driver import PeerOptions, run_peer
from tests.conftest import Cli


def peers_json(*args: str) -> dict[str, Any]:
    argv = [sys.executable, "-m", "riddlectl.bench.peers", *args, "--json"]
    done = subprocess.run(argv, capture_output=True, timeout=150)
    assert done.returncode == 0, done.stderr.decode()[-3000:]
    outcome: dict[str, Any] = orjson.loads(done.stdout)
    return outcome


@pytest.mark.timeout(180)
def test_a_small_run_reports_every_figure() -> None:
    outcome = peers_json("--n", "50", "--lat-n", "5", "--peers", "naive,dirq")
    assert outcome["version"] == 1
    assert outcome["machine"]["cpus"] >= 1
    assert (outcome["options"]["riddles"], outcome["options"]["latency_riddles"]) == (50, 5)
    assert [p["name"] for p in outcome["peers"]] == ["naive", "dirq"]
    naive, dirq = outcome["peers"]
    assert (naive["durable"], naive["wakeup"]) == (True, "inotify")
    assert (dirq["durable"], dirq["wakeup"]) == (False, "poll")
    for peer in outcome["peers"]:
        if peer["skipped"]:  # dirq not installed: the note says how to get it
            assert "riddlectl[peers]" in peer["skipped"]
            continue
        assert peer["error"] is None
        assert peer["throughput"]["done"] == peer["throughput"]["riddles"] == 50
        assert peer["throughput"]["per_s"] > 0 and peer["submit"]["per_s"] > 0
        latency = peer["latency"]
        assert latency["riddles"] >= 1
        assert 0 < latency["p50_ms"] <= latency["p99_ms"] <= latency["max_ms"]
        assert peer["cpu"]["ms_per_riddle"] >= 0  # clock ticks: 50 riddles may take none
        assert sorted(w["stage"] for w in peer["workers"]) == [
            "extract",
            "manage",
            "solve",
            "validate",
        ]
        for worker in peer["workers"]:
            assert worker["peak_rss_kb"] > 0
            assert worker["exit_code"] is not None


def test_a_peer_whose_library_is_missing_is_skipped_with_a_note(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setitem(sys.modules, "dirq", None)  # import dirq now raises ImportError
    note = peers.missing("dirq")
    assert note is not None and "dirq" in note and "riddlectl[peers]" in note
    outcome = run_peer("dirq", tmp_path, PeerOptions(riddles=5, latency_riddles=1))
    assert outcome["skipped"] == note
    assert outcome["throughput"] is None and outcome["workers"] == []
    assert list(tmp_path.iterdir()) == []  # nothing started, nothing made


def test_peer_names() -> None:
    assert peers.choose("all") == ("naive", "dirq", "persist-queue", "huey-file")
    assert peers.choose("procrastinate") == ("procrastinate",)  # needs a server: by name
    assert peers.choose(" dirq, naive ,dirq") == ("dirq", "naive")
    with pytest.raises(ValueError, match="unknown peer rq"):
        peers.choose("naive,rq")


def test_bench_refuses_an_unknown_peer(cli: Cli) -> None:
    shown = cli("bench", "--peers", "rq")
    assert shown.code == 2
    assert shown.err.startswith("riddlectl: --peers: unknown peer rq"), shown.err


def test_the_module_refuses_an_unknown_peer() -> None:
    argv = [sys.executable, "-m", "riddlectl.bench.peers", "--peers", "rq"]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and "unknown peer rq" in done.stderr
