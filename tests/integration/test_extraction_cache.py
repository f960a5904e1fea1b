"""The extraction cache: keyed by the extractor's identity, and cleared on request.

Real `cmd:` extractor scripts and Python modules whose content changes between two runs,
through the installed `riddlectl` command.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import orjson
import pytest

import riddlectl
from tests.conftest import Cli, queue_of
from tests.rig import until

SCRIPT = '#!/bin/sh\ncat >/dev/null\necho \'{"variables": {"x": "VALUE"}}\'\n'
PY_SCRIPT = "import json, sys\nsys.stdin.read()\nprint(json.dumps({'variables': {'x': 'VALUE'}}))\n"
PY_MODULE = "def extract(job):\n    return {'variables': {'x': 'VALUE'}}\n"


def solve_x_plus_one(cli: Cli, handler: str, env: dict[str, str] | None = None) -> str:
    """Submit `x + 1 =` over example/x.txt, run it through `handler`, return the answer."""
    submitted = cli("submit", "--question", "x + 1 =", "--data", "example/x.txt", "--no-validate")
    assert submitted.code == 0, submitted.err
    riddle_id = submitted.out.strip()
    ran = cli("run", "--once", "--quiet", "--handler", f"extract={handler}", env=env)
    assert ran.code == 0, ran.err
    result = cli("result", riddle_id)
    assert result.code == 0, result.err
    return result.out.strip()


def cache_files(cli: Cli) -> list[Path]:
    return sorted((cli.spool / "cache" / "extractions").glob("*.json"))


def write_script(path: Path, text: str, value: str) -> None:
    path.write_text(text.replace("VALUE", value))
    path.chmod(0o755)


@pytest.mark.parametrize(
    ("name", "text", "handler"),
    [
        ("extract.sh", SCRIPT, "cmd:./extract.sh"),
        ("extract.sh", SCRIPT, "cmd:sh extract.sh"),
        ("extract.sh", SCRIPT, "cmd:sh ./extract.sh"),
        ("extract.py", PY_SCRIPT, f"cmd:{sys.executable} extract.py"),
    ],
)
def test_a_changed_extractor_script_extracts_again(
    cli: Cli, tmp_path: Path, name: str, text: str, handler: str
) -> None:
    script = tmp_path / name
    write_script(script, text, "1")
    assert solve_x_plus_one(cli, handler) == "2"
    write_script(script, text, "5")
    assert solve_x_plus_one(cli, handler) == "6"
    assert len(cache_files(cli)) == 2  # one per version of the script, the old one kept
    write_script(script, text, "1")  # back to the first version: its extraction again
    assert solve_x_plus_one(cli, handler) == "2"
    assert len(cache_files(cli)) == 2


def test_a_changed_executable_found_on_path_extracts_again(cli: Cli, tmp_path: Path) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    env = {"PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}"}
    write_script(bin_dir / "my-extractor", SCRIPT, "1")
    assert solve_x_plus_one(cli, "cmd:my-extractor", env) == "2"
    write_script(bin_dir / "my-extractor", SCRIPT, "5")
    assert solve_x_plus_one(cli, "cmd:my-extractor", env) == "6"


def test_a_changed_python_module_extracts_again_unless_it_names_its_version(
    cli: Cli, tmp_path: Path
) -> None:
    env = {"PYTHONPATH": str(tmp_path)}
    module = tmp_path / "my_extract.py"
    write_script(module, PY_MODULE, "1")
    assert solve_x_plus_one(cli, "my_extract:extract", env) == "2"
    write_script(module, PY_MODULE, "5")
    assert solve_x_plus_one(cli, "my_extract:extract", env) == "6"
    # A handler that names its version is trusted: same version, same extraction.
    write_script(module, PY_MODULE + "extract.version = '7'\n", "1")
    assert solve_x_plus_one(cli, "my_extract:extract", env) == "2"
    write_script(module, PY_MODULE + "extract.version = '7'\n", "9")
    assert solve_x_plus_one(cli, "my_extract:extract", env) == "2"
    write_script(module, PY_MODULE + "extract.version = '8'\n", "9")
    assert solve_x_plus_one(cli, "my_extract:extract", env) == "10"


def test_cache_files_are_named_by_content_and_extractor(cli: Cli, data_dir: Path) -> None:
    # As docs/handlers.md#extractions-and-the-cache says:
    # cache/extractions/<sha256 of the file>.<extractor key>.json, the extractor's name and
    # version inside.
    assert solve_x_plus_one(cli, "text") == "11"
    (path,) = cache_files(cli)
    digest = hashlib.sha256((data_dir / "example" / "x.txt").read_bytes()).hexdigest()
    assert re.fullmatch(rf"{digest}\.[0-9a-f]{{12}}\.json", path.name)
    extraction = orjson.loads(path.read_bytes())
    assert extraction["extractor"] == "text"
    assert re.fullmatch(r"\d+\.[0-9a-f]{8}", extraction["version"])


def test_a_riddlectl_whose_text_extractor_changed_extracts_again(cli: Cli, tmp_path: Path) -> None:
    # A copy of the package first on the import path stands for an upgraded riddlectl.
    copy = tmp_path / "site"
    shutil.copytree(Path(riddlectl.__file__).parent, copy / "riddlectl")
    env = {"PYTHONPATH": str(copy)}
    argv = [
        sys.executable,
        "-m",
        "riddlectl",
        "--spool",
        str(cli.spool),
        "--data-dir",
        str(cli.data),
    ]
    for _ in range(2):
        subprocess.run(
            [*argv, "submit", "--question", "x + 1 =", "--data", "example/x.txt"],
            env={**os.environ, **env},
            check=True,
            capture_output=True,
        )
        subprocess.run([*argv, "run", "--once", "--quiet"], env={**os.environ, **env}, check=True)
    assert len(cache_files(cli)) == 1
    with (copy / "riddlectl" / "handlers" / "builtin" / "text" / "facts.py").open("a") as module:
        module.write("# reads files differently now\n")
    subprocess.run(
        [*argv, "submit", "--question", "x + 1 =", "--data", "example/x.txt"],
        env={**os.environ, **env},
        check=True,
        capture_output=True,
    )
    subprocess.run([*argv, "run", "--once", "--quiet"], env={**os.environ, **env}, check=True)
    assert len(cache_files(cli)) == 2


def test_an_extractor_cannot_overwrite_the_envelope(cli: Cli, tmp_path: Path) -> None:
    forged = '{"extractor": "text", "version": "1", "sha256": "0", "variables": {"x": "3"}}'
    write_script(tmp_path / "forge.sh", f"#!/bin/sh\ncat >/dev/null\necho '{forged}'\n", "")
    assert solve_x_plus_one(cli, "cmd:./forge.sh") == "4"
    (path,) = cache_files(cli)
    extraction = orjson.loads(path.read_bytes())
    assert extraction["extractor"] == "cmd:./forge.sh"
    assert extraction["sha256"] != "0"
    assert extraction["variables"] == {"x": "3"}


@pytest.mark.postgres
def test_riddles_sharing_an_extraction_each_see_their_own_file(
    any_cli: Cli, tmp_path: Path, helpers: Path
) -> None:
    for name in ("gen/x4.txt", "other/x4.txt"):  # one content under two paths
        (any_cli.data / name).parent.mkdir(parents=True, exist_ok=True)
        (any_cli.data / name).write_text("x = 4\n")
    seen = tmp_path / "seen"
    seen.mkdir()
    env = {"PYTHONPATH": str(helpers), "RECORD_DIR": str(seen)}
    for riddle_id, name in (("a", "gen/x4.txt"), ("b", "other/x4.txt")):
        submitted = any_cli(
            "submit", "--id", riddle_id, "--question", "x =", "--data", name, "--no-validate"
        )
        assert submitted.code == 0, submitted.err
        ran = any_cli("run", "--once", "--handler", "solve=py_handlers:record_extractions", env=env)
        assert ran.code == 0, ran.err
    first, second = (orjson.loads((seen / f"{i}.json").read_bytes())[0] for i in "ab")
    assert first["sha256"] == second["sha256"]  # one extraction, shared by content
    assert (first["source"], second["source"]) == ("gen/x4.txt", "other/x4.txt")
    if isinstance(any_cli.spool, Path):  # what the cache shares names no riddle's file
        (stored,) = cache_files(any_cli)
        assert "gen/x4.txt" not in stored.read_text()


def test_cache_clear_drops_all_or_one_extractors_extractions(cli: Cli, tmp_path: Path) -> None:
    write_script(tmp_path / "extract.sh", SCRIPT, "1")
    assert solve_x_plus_one(cli, "text") == "11"
    assert solve_x_plus_one(cli, "cmd:./extract.sh") == "2"
    assert len(cache_files(cli)) == 2
    cleared = cli("cache", "clear", "--extractor", "cmd:./extract.sh")
    assert (cleared.code, cleared.out, cleared.err) == (0, "dropped 1 cached extraction(s)\n", "")
    (kept,) = cache_files(cli)
    assert orjson.loads(kept.read_bytes())["extractor"] == "text"
    nothing = cli("cache", "clear", "--extractor", "nope")
    assert (nothing.code, nothing.out) == (2, "")
    assert nothing.err == (
        "riddlectl: cache clear: --extractor: no extractor nope "
        "(known: ocr, speech, table, text, or a handler as --handler names one)\n"
    )
    assert len(cache_files(cli)) == 1  # refused: nothing dropped
    everything = cli("cache", "clear")
    assert (everything.code, everything.out) == (0, "dropped 1 cached extraction(s)\n")
    assert cache_files(cli) == []
    assert cli("doctor").code == 0


def test_cache_clear_leaves_no_lock_files_behind(cli: Cli) -> None:
    assert solve_x_plus_one(cli, "text") == "11"
    cleared = cli("cache", "clear")
    assert cleared.code == 0, cleared.err
    assert sorted(p.name for p in (cli.spool / "cache" / "extractions").iterdir()) == []


@pytest.mark.postgres
def test_cache_clear_of_an_unknown_extractor_is_refused_on_postgresql(pg_cli: Cli) -> None:
    assert solve_x_plus_one(pg_cli, "text") == "11"
    refused = pg_cli("cache", "clear", "--extractor", "nonesuch")
    assert (refused.code, refused.out) == (2, "")
    assert refused.err.startswith("riddlectl: cache clear: --extractor: no extractor nonesuch (")
    assert pg_cli("cache", "clear", "--extractor", "text").out == "dropped 1 cached extraction(s)\n"


def test_cache_clear_needs_a_spool(cli: Cli, tmp_path: Path) -> None:
    nowhere = Cli(tmp_path / "no-spool", cli.data)
    cleared = nowhere("cache", "clear")
    assert cleared.code == 5
    assert cleared.err.count("\n") == 1 and cleared.err.startswith("riddlectl: ")
    assert not nowhere.spool.exists()


def test_cache_clear_on_a_read_only_spool_is_one_line(cli: Cli, tmp_path: Path) -> None:
    mount = tmp_path / "ro"
    mount.mkdir()
    made = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", str(mount)])
    if made.returncode != 0:
        pytest.skip("cannot mount a tmpfs here")
    try:
        ro = Cli(mount / "spool", cli.data)
        assert ro("init").code == 0
        assert solve_x_plus_one(ro, "text") == "11"
        subprocess.run(["mount", "-o", "remount,ro", str(mount)], check=True)
        cleared = ro("cache", "clear")
        assert cleared.code == 5
        assert cleared.err.count("\n") == 1, cleared.err
        assert cleared.err.startswith("riddlectl: ")
        assert "Read-only file system" in cleared.err
        assert len(cache_files(ro)) == 1
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


def test_riddles_whose_extractions_were_dropped_are_extracted_again(any_cli: Cli) -> None:
    cli = any_cli
    submitted = cli("submit", "--question", "x * y =", *_data("x", "y", "z"))
    riddle_id = submitted.out.strip()
    assert cli("run", "--once", "--quiet", "--stages", "extract").code == 0
    assert queue_of(cli, riddle_id) == "extracted"
    assert cli("cache", "clear").out == "dropped 3 cached extraction(s)\n"
    ran = cli("run", "--once", "--quiet")
    assert ran.code == 0, ran.err
    assert cli("result", riddle_id).out == "150\n"
    riddle = orjson.loads(cli("show", riddle_id).out)
    _assert_cached(cli, riddle)
    assert not riddle.get("attempts")


def test_a_running_solve_agent_does_not_use_a_dropped_extraction_it_remembers(
    any_cli: Cli,
) -> None:
    # On PostgreSQL the claim brings a riddle's cached extractions with it: one dropped
    # since the agent last fetched it must not be taken from what the agent kept.
    cli = any_cli
    first, second = (
        cli("submit", "--question", "x * y =", *_data("x", "y", "z")).out.strip() for _ in "12"
    )
    assert cli("run", "--once", "--quiet", "--stages", "extract").code == 0
    assert cli("hold", second).code == 0
    agent = cli.popen("agent", "solve")
    try:
        until(lambda: queue_of(cli, first) == "solved", 30)  # the agent has read the three
        assert cli("cache", "clear").out == "dropped 3 cached extraction(s)\n"
        assert cli("release", second).code == 0
        until(lambda: queue_of(cli, second) == "incoming", 30)  # sent back to extract
    finally:
        agent.send_signal(signal.SIGTERM)
        agent.wait(timeout=30)
    assert cli("run", "--once", "--quiet").code == 0
    riddle = orjson.loads(cli("show", second).out)
    assert riddle["solution"]["solution"] == "150"
    _assert_cached(cli, riddle)


def _assert_cached(cli: Cli, riddle: dict[str, Any]) -> None:
    """Each of the riddle's three data items names an extraction the cache holds again."""
    for item in riddle["data"]:
        assert item["file_extracted"].startswith("cache/extractions/")
        if isinstance(cli.spool, Path):
            assert (cli.spool / item["file_extracted"]).is_file()
    assert cli("cache", "clear").out == "dropped 3 cached extraction(s)\n"


def _data(*names: str) -> list[str]:
    return [arg for name in names for arg in ("--data", f"example/{name}.txt")]
