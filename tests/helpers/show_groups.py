"""A pytest plugin for `tests/unit/test_tiers.py`: prints each collected test's xdist group
(`GROUP <nodeid> <group>`, `-` for none), as `--dist loadgroup` will read it."""

from __future__ import annotations

import pytest


def pytest_collection_finish(session: pytest.Session) -> None:
    for item in session.items:
        mark = item.get_closest_marker("xdist_group")
        group = mark.args[0] if mark is not None and mark.args else "-"
        print(f"GROUP {item.nodeid} {group}")
