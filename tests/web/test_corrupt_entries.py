"""The pages and the API that list what is set aside, while corrupt/ holds entries that
are no regular file: none is opened or followed, no request waits on one, and the
server goes on answering everyone."""

from __future__ import annotations

import itertools
import os
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx

from tests.web.conftest import Served

SECRET = "secret-marker-web-5d1c"  # in a file outside the spool: never in any answer
REQUESTS = 60  # more than the server has threads: one stuck request each would stop it


def test_pages_never_open_a_fifo_nor_follow_a_link(fresh: Served, tmp_path: Path) -> None:
    corrupt = Path(str(fresh.cli.spool)) / "corrupt"
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.json").write_text(f'{{"riddle": {{"question": "{SECRET}"}}}}')
    os.mkfifo(corrupt / "fifo.json")
    (corrupt / "link.json").symlink_to(outside / "secret.json")
    (corrupt / "todir.json").symlink_to(outside, target_is_directory=True)
    (corrupt / "dir.json").mkdir()
    (corrupt / "bad.json").write_bytes(b"<html>")
    for name in ("fifo.json", "link.json", "todir.json", "dir.json", "bad.json"):
        (corrupt / f"{name}.reason").write_text(f"incoming/{name}: set aside\n")
    paths = ["/app/corrupt", "/api/corrupt", "/api/status?stage=corrupt"]
    paths += [f"/app/corrupt/edit?name={name}" for name in ("fifo.json", "link.json", "dir.json")]

    def get(path: str) -> tuple[str, int, str]:
        with fresh.client() as http:
            answer = http.get(path, timeout=30)
        return path, answer.status_code, answer.text

    with ThreadPoolExecutor(max_workers=12) as pool:
        answers = list(pool.map(get, itertools.islice(itertools.cycle(paths), REQUESTS)))
    for path, status, text in answers:
        assert status < 500, (path, status, text[:500])
        assert SECRET not in text, path
    by_path = {path: (status, text) for path, status, text in answers}
    listed = httpx.Response(200, text=by_path["/api/corrupt"][1]).json()
    assert {f["name"]: f["kind"] for f in listed} == {
        "bad.json": None,
        "dir.json": "a directory",
        "fifo.json": "a FIFO",
        "link.json": "a symbolic link",
        "todir.json": "a symbolic link",
    }
    status, text = by_path["/app/corrupt/edit?name=fifo.json"]
    assert status == 400 and "a FIFO; not shown" in text
    assert "(a symbolic link; not shown)" in by_path["/app/corrupt"][1]
    with fresh.client() as http:
        assert http.get("/app/table", timeout=30).status_code == 200
