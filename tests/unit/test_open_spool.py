"""`open_spool` chooses the spool from the `--spool` value: a directory, or a URL."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from riddlectl.cli import main
from riddlectl.errors import ExitCode, SpoolUnusable
from riddlectl.spool import open_spool, schemes
from riddlectl.spool.contract import Spool
from tests.contract import conftest as contract_fixture
from tests.helpers import toy_backend


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


# -- the scheme table is the one door ------------------------------------------------------


@pytest.fixture
def toy_scheme(monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """`toy://` registered as a third kind of spool, for this test only."""
    monkeypatch.setitem(schemes.SCHEMES, "toy", schemes.Backend("toy", "tests.helpers.toy_backend"))
    yield "toy://one"
    toy_backend.OPENED.clear()


def test_a_scheme_registered_in_the_table_opens_its_own_kind_of_spool(toy_scheme: str) -> None:
    spool = open_spool(toy_scheme)
    assert isinstance(spool, toy_backend.ToySpool)
    assert spool.name == "toy spool one" and spool.local_root is None


def test_the_commands_reach_a_registered_scheme_through_the_table(
    toy_scheme: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["--spool", toy_scheme, "init"])
    assert exited.value.code in (0, None)
    assert capsys.readouterr().err == "spool ready at toy spool one\n"
    with pytest.raises(SystemExit) as exited:
        main(["--spool", toy_scheme, "status", "--json"])
    assert exited.value.code in (0, None)
    assert '"spool": "toy spool one"' in capsys.readouterr().out


def test_an_unknown_scheme_is_refused_in_one_line_naming_the_known_ones(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["--spool", "redis://127.0.0.1/0", "status"])
    assert exited.value.code == ExitCode.SPOOL_UNUSABLE
    assert capsys.readouterr().err == (
        "riddlectl: redis://127.0.0.1/0: unknown kind of spool redis:// "
        "(known: a directory, file, postgres, postgresql)\n"
    )


def test_a_file_url_is_a_directory_spool(tmp_path: Path) -> None:
    spool = open_spool(f"file://{tmp_path}/spool")
    assert spool.local_root == tmp_path / "spool"
    assert (tmp_path / "spool" / "incoming").is_dir()


def test_a_directory_spool_says_where_it_is(tmp_path: Path) -> None:
    spool = open_spool(tmp_path / "spool")
    assert spool.local_root == tmp_path / "spool" and spool.name == str(tmp_path / "spool")


def test_the_scheme_table_and_the_contract_suite_know_the_same_back_ends() -> None:
    """A new back end is a row in the table and a parameter of the contract suite's
    fixture (tests/contract/conftest.py), or this fails."""
    in_table = {backend.kind for backend in schemes.SCHEMES.values()} | {schemes.DIRECTORY.kind}
    assert in_table == set(contract_fixture.BACKEND_OF_PARAM.values())
    params = {getattr(param, "values", (param,))[0] for param in contract_fixture.SPOOLS}
    assert set(contract_fixture.BACKEND_OF_PARAM) <= params
