"""Settings precedence and the data-path guard."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from riddlectl.document import datafiles
from riddlectl.errors import ConfigError, InvalidData
from riddlectl.runtime import resolve_settings as resolve


def test_precedence_flag_over_env_over_config_over_default(tmp_path: Path) -> None:
    spool = tmp_path / "spool"
    spool.mkdir()
    assert resolve({"spool": spool}, env={}).max_trials == 3
    (spool / "config.toml").write_text("max_trials = 4\ntimeout = 9\n")
    assert resolve({"spool": spool}, env={}).max_trials == 4
    assert resolve({"spool": spool}, env={"SOLUTION_MAX_TRIALS": "5"}).max_trials == 5
    flagged = resolve({"spool": spool, "max_trials": 6}, env={"SOLUTION_MAX_TRIALS": "5"})
    assert (flagged.max_trials, flagged.timeout) == (6, 9.0)


def test_spool_from_environment(tmp_path: Path) -> None:
    assert resolve({}, env={"RIDDLECTL_SPOOL": str(tmp_path)}).spool == str(tmp_path)


def test_a_config_file_named_by_option_or_environment_replaces_the_spools_own(
    tmp_path: Path,
) -> None:
    spool = tmp_path / "spool"
    spool.mkdir()
    (spool / "config.toml").write_text("max_trials = 4\n")
    (tmp_path / "team.toml").write_text("max_trials = 7\n")
    assert resolve({"spool": spool, "config": tmp_path / "team.toml"}, env={}).max_trials == 7
    env = {"RIDDLECTL_CONFIG": str(tmp_path / "team.toml")}
    assert resolve({"spool": spool}, env=env).max_trials == 7
    with pytest.raises(ConfigError, match=r"none\.toml: no such config file"):
        resolve({"spool": spool, "config": tmp_path / "none.toml"}, env={})


def test_a_postgresql_spool_takes_its_settings_from_a_named_file(tmp_path: Path) -> None:
    (tmp_path / "pg.toml").write_text("max_trials = 2\n")
    url = "postgresql://nobody@127.0.0.1:1/none"
    assert resolve({"spool": url}, env={}).max_trials == 3
    env = {"RIDDLECTL_CONFIG": str(tmp_path / "pg.toml")}
    assert resolve({"spool": url}, env=env).max_trials == 2


def test_config_handlers_and_bad_config(tmp_path: Path) -> None:
    (tmp_path / "config.toml").write_text('[handlers]\nsolve = ["cmd:./s", "calculator"]\n')
    assert resolve({"spool": tmp_path}, env={}).handlers_for("solve") == ("cmd:./s", "calculator")
    (tmp_path / "config.toml").write_text("max_trails = 3\n")
    with pytest.raises(ConfigError, match="max_trails: unknown setting"):
        resolve({"spool": tmp_path}, env={})
    with pytest.raises(ConfigError, match="SOLUTION_MAX_TRIALS"):
        resolve({"spool": tmp_path / "none"}, env={"SOLUTION_MAX_TRIALS": "many"})


@pytest.fixture
def data(tmp_path: Path) -> Path:
    root = tmp_path / "data"
    (root / "sub").mkdir(parents=True)
    (root / "sub" / "ok.txt").write_text("x = 1\n")
    (tmp_path / "secret.txt").write_text("password = 1\n")
    os.symlink(tmp_path / "secret.txt", root / "link.txt")
    (root / "latin1.txt").write_bytes("x = 1 \xe9\n".encode("latin-1"))
    return root


@pytest.mark.parametrize(
    "path",
    ["/etc/passwd", "../secret.txt", "sub/../../secret.txt", "link.txt", "missing.txt", "sub", ""],
)
def test_hostile_data_paths_are_refused(data: Path, path: str) -> None:
    with pytest.raises(InvalidData):
        datafiles.check(data, path, "text", 1024, "r.json", "data[0].file_plain")


def test_good_paths_and_leading_dot(data: Path) -> None:
    assert datafiles.resolve(data, "./sub/ok.txt").name == "ok.txt"
    datafiles.check(data, "sub/ok.txt", "text", 1024, "r.json", "data[0].file_plain")


def test_size_and_encoding_limits(data: Path) -> None:
    with pytest.raises(InvalidData, match="over the 3-byte limit"):
        datafiles.check(data, "sub/ok.txt", "text", 3, "r.json", "data[0].file_plain")
    with pytest.raises(InvalidData, match="not UTF-8"):
        datafiles.check(data, "latin1.txt", "text", 1024, "r.json", "data[0].file_plain")
