"""`open_spool` chooses the spool from the `--spool` value: a directory, or a URL."""

from __future__ import annotations

from pathlib import Path

import pytest

from riddlectl.cli import main
from riddlectl.errors import ExitCode, SpoolUnusable
from riddlectl.spool import open_spool
from riddlectl.spool.contract import Spool


def test_a_directory_is_a_filesystem_spool(tmp_path: Path) -> None:
    spool = open_spool(tmp_path / "spool")
    assert isinstance(spool, Spool)
    assert (tmp_path / "spool" / "incoming").is_dir()
    assert isinstance(open_spool(str(tmp_path / "spool"), create=False), Spool)


def test_a_missing_spool_is_not_made_unless_asked(tmp_path: Path) -> None:
    with pytest.raises(SpoolUnusable, match="no spool here"):
        open_spool(tmp_path / "none", create=False)
    assert not (tmp_path / "none").exists()


@pytest.mark.parametrize(
    "target",
    ["postgresql://riddler:secret@127.0.0.1:1/riddles", Path("postgres://u:secret@127.0.0.1:1/r")],
)
def test_a_postgresql_server_that_cannot_be_reached_is_named_without_its_password(
    target: str | Path, tmp_path: Path
) -> None:
    with pytest.raises(SpoolUnusable) as refused:
        open_spool(target)
    message = str(refused.value)
    assert ": the spool cannot be used: " in message and "\n" not in message
    assert message.startswith("postgres") and "://" in message and "secret" not in message
    assert list(tmp_path.iterdir()) == []


def test_a_schema_that_is_no_plain_name_is_refused() -> None:
    with pytest.raises(SpoolUnusable, match=r"\?schema=Bad%20Name: schema must be lower-case"):
        open_spool("postgresql://u@127.0.0.1:1/db?schema=Bad%20Name")


def test_the_command_says_so_in_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["--spool", "postgresql://riddler:secret@127.0.0.1:1/riddles", "status"])
    assert exited.value.code == ExitCode.SPOOL_UNUSABLE
    err = capsys.readouterr().err
    assert err.startswith(
        "riddlectl: postgresql://riddler:…@127.0.0.1:1/riddles: the spool cannot be used: "
    )
    assert err.count("\n") == 1
