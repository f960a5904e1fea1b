"""The hostile entries: every kind of directory entry another program may leave where
riddlectl reads, each made by one line of `KINDS`, and the places riddlectl reads
entries, each one line of `PLACES`. The matrix (tests/integration/test_entry_matrix.py,
and the web's in tests/web/test_entry_matrix_web.py) runs every command that looks in a
place over every kind there, so a new kind, place or command joins by one line.

What no case may do, whatever the command: hang, exit 70 or answer 500, print a
traceback, print what lies outside the spool (`SECRET`, in every file a link leads
to), change anything outside the spool, or lose a riddle."""

from __future__ import annotations

import os
import shutil
import socket
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import orjson

SECRET = "hostile-secret-3b9e"  # in the files links lead to: never in any output
GOOD = "good1"  # a riddle submitted before the entries were made: never lost


def riddle_bytes(question: str = "1 + 1 =") -> bytes:
    return orjson.dumps({"riddle": {"question": question}})


@dataclass(frozen=True)
class Kind:
    """One kind of entry: its name (as a riddle file, `.json`, or as a data file, `.txt`:
    `stem` and the place's extension) and how it is made at a path."""

    key: str
    make: Callable[[Path, Path], None]  # (path, outside) -> None
    name: str = ""  # the entry's own name, when not `{key}` + the place's extension

    def entry_name(self, ext: str) -> str:
        return self.name or f"{self.key}{ext}"


def _regular(path: Path, outside: Path) -> None:
    path.write_bytes(riddle_bytes())


def _empty(path: Path, outside: Path) -> None:
    path.write_bytes(b"")


def _fifo(path: Path, outside: Path) -> None:
    os.mkfifo(path)


def _socket(path: Path, outside: Path) -> None:
    # bound under a short path (AF_UNIX allows 107 bytes), then moved into place
    short = tempfile.mkdtemp(prefix="sock", dir="/tmp")
    sock = socket.socket(socket.AF_UNIX)
    sock.bind(f"{short}/s")
    sock.close()
    shutil.move(f"{short}/s", path)
    os.rmdir(short)


def _link_inside(path: Path, outside: Path) -> None:
    # to a file of the same directory (made beside it under a name no look takes)
    target = path.with_name(f".target-of-{path.name}")
    target.write_bytes(riddle_bytes())
    path.symlink_to(target.name)


def _link_outside(path: Path, outside: Path) -> None:
    path.symlink_to(outside / "secret.json")


def _link_dangling(path: Path, outside: Path) -> None:
    path.symlink_to(outside / "nothing-here")


def _link_dir(path: Path, outside: Path) -> None:
    path.symlink_to(outside, target_is_directory=True)


def _directory(path: Path, outside: Path) -> None:
    path.mkdir()
    (path / "inner.json").write_bytes(riddle_bytes())


def _unreadable(path: Path, outside: Path) -> None:
    path.write_bytes(riddle_bytes())
    path.chmod(0)


def _huge(path: Path, outside: Path) -> None:
    with open(path, "wb") as out:  # sparse: costs no disk, reads as 40 MiB of zeros
        out.truncate(40 << 20)


KINDS = [
    Kind("regular", _regular),
    Kind("empty", _empty),
    Kind("fifo", _fifo),
    Kind("socket", _socket),
    Kind("link-inside", _link_inside),
    Kind("link-outside", _link_outside),
    Kind("link-dangling", _link_dangling),
    Kind("link-dir", _link_dir),
    Kind("directory", _directory),
    Kind("unreadable", _unreadable),
    Kind("non-utf8", _regular, name=os.fsdecode(b"non-utf8-\xff\xfe.json")),
    Kind("no-id", _regular, name="no id here ü.json"),
    Kind("dotfile", _regular, name=".hidden.json"),
    Kind("huge", _huge),
]


def make_outside(base: Path) -> Path:
    """The directory outside the spool that links lead to, holding the secret."""
    outside = base / "outside"
    outside.mkdir()
    (outside / "secret.json").write_bytes(riddle_bytes(SECRET))
    (outside / "secret.txt").write_text(f"x = 1\n{SECRET}\n")
    return outside


def outside_state(outside: Path) -> dict[str, bytes]:
    """What lies outside the spool, to compare before and after: nothing may change."""
    return {p.name: p.read_bytes() for p in sorted(outside.iterdir())}


def make_entries(
    directory: Path, outside: Path, ext: str = ".json", named: Callable[[str], str] = str
) -> list[str]:
    """Every kind of entry in `directory`, each kind without a name of its own named
    `named(KEY + ext)`; their names."""
    directory.mkdir(parents=True, exist_ok=True)
    names = []
    for kind in KINDS:
        name = kind.name or named(kind.entry_name(ext))
        kind.make(directory / name, outside)
        names.append(name)
    return names


def tidy(directory: Path) -> None:
    """Give back the read permission taken from unreadable entries, so that the test's
    temporary directory can be removed."""
    for root, dirs, files in os.walk(directory):
        for name in dirs + files:
            path = os.path.join(root, name)
            if not os.path.islink(path):
                os.chmod(path, 0o755)
