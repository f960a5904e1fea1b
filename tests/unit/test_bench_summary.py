"""`riddlectl bench`'s verdict on a PostgreSQL spool: its comparison is with the peers on
the same server, not with the filesystem reference, and its wake-ups are named right."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from riddlectl.bench.peers.table import render
from riddlectl.bench.summary import judge

REFERENCE = {
    "fsync": {"riddles_per_s": 400.0, "transition_ms": 2.0},
    "no_fsync": {"riddles_per_s": 3500.0, "transition_ms": 0.3},
    "group_sync": {"riddles_per_s": 120.0, "transition_ms": 1.6, "transitions_per_riddle": 5},
    "inotify_wakeup": {"median_ms": 0.05},
}


def outcome(spool: str | None) -> dict[str, Any]:
    """A run's outcome; `spool` is a database's URL, or None for a directory."""
    return {
        "on_directory": spool is None,
        "reference": REFERENCE,
        "throughput": {"per_s": 90.0},
        "latency": {"p50_ms": 25.0, "p99_ms": 45.0},
        "cpu": {"ms_per_riddle": 7.0},
        "agents": [],
        "status": None,
        "options": {"spool": spool},
        "durable": True,
    }


def options(spool: str | None) -> SimpleNamespace:
    return SimpleNamespace(fsync=True, status_riddles=0, spool=spool)


def test_a_file_spool_is_judged_against_the_filesystem_reference() -> None:
    ratios, targets = judge(outcome(None), options(None))
    assert ratios["throughput"] == 0.225
    assert targets["throughput_durable"]["holds"] is False
    assert ratios["group_sync"] == 0.75  # 90 riddles/s over the limit's 120
    assert targets["throughput_group_sync"]["holds"] is False


def test_the_group_sync_limit_judges_durable_runs_only() -> None:
    ratios, targets = judge(outcome(None), SimpleNamespace(fsync=False, status_riddles=0))
    assert ratios["group_sync"] is None
    assert targets["throughput_group_sync"]["holds"] is None


def test_a_database_spool_is_not_judged_against_the_filesystem() -> None:
    url = "postgresql://postgres@127.0.0.1/postgres"
    ratios, targets = judge(outcome(url), options(url))
    assert ratios == {"throughput": None, "group_sync": None, "latency_p50": None}
    assert all(goal["holds"] is None for goal in targets.values())


def test_the_table_names_how_riddlectl_was_woken() -> None:
    on_files = render([], riddlectl=outcome(None)).splitlines()[1]
    on_database = render([], riddlectl=outcome("postgresql://h/db")).splitlines()[1]
    assert on_files.split()[:3] == ["riddlectl", "yes", "inotify"]
    assert on_database.split()[:3] == ["riddlectl", "yes", "listen/notify"]
