"""Every command's `--help` in one convention, generated from the command table: a command
or an option added later is held to it without being named here.

- An option that takes a value names what the value is, in upper case (`--data FILE`,
  `--timeout SECONDS`, `--handler STAGE=HANDLER`), never a type (`<str>`, `<float range>`).
- An argument is named the same way, with `...` when it repeats (`ID...`); the usage line
  puts an optional one in brackets (`[ID...]`) and never writes `{ID}`.
- The list of commands gives each one's whole summary, never cut short.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pytest
import typer

from riddlectl.cli.app import COMMANDS, _load, app
from riddlectl.cli.common import summary

NAME = r"[A-Z][A-Z0-9_]*"
VALUE = re.compile(rf"^{NAME}(=({NAME}))?(\|{NAME})*$")  # FILE, STAGE=HANDLER, PATH|URL
TYPE_METAVAR = re.compile(r"<[a-z ]+>|\b(INTEGER|FLOAT|BOOLEAN)( RANGE)?\b")


def every_command() -> Iterator[tuple[str, Any]]:
    """(`riddlectl …` words, click command) of every command, groups' commands included."""

    def walk(words: str, command: Any) -> Iterator[tuple[str, Any]]:
        yield words, command
        for name, sub in getattr(command, "commands", {}).items():
            yield from walk(f"{words} {name}", sub)

    for name in COMMANDS:
        yield from walk(name, _load(name))


COMMANDS_AND_GROUPS = dict(every_command())


def help_text(words: str, command: Any) -> str:
    """What `riddlectl WORDS --help` prints."""
    root = typer.main.get_command(app)
    ctx = root.context_class(root, info_name="riddlectl")
    for depth, word in enumerate(words.split(), start=1):
        current = COMMANDS_AND_GROUPS[" ".join(words.split()[:depth])]
        ctx = current.context_class(current, info_name=word, parent=ctx)
    return str(command.get_help(ctx))


def takes_a_value(param: Any) -> bool:
    return not (param.is_flag or param.count or param.type.name == "boolean")


@pytest.mark.parametrize("words", sorted(COMMANDS_AND_GROUPS))
def test_every_value_and_argument_is_named_by_what_it_is(words: str) -> None:
    command = COMMANDS_AND_GROUPS[words]
    bad = []
    for param in command.params:
        if param.param_type_name == "option" and takes_a_value(param):
            if not VALUE.match(param.metavar or ""):
                bad.append(f"{'/'.join(param.opts)} {param.metavar!r}")
        elif param.param_type_name == "argument":
            name = (param.metavar or "").removesuffix("...")
            repeats = (param.metavar or "").endswith("...")
            if not re.fullmatch(NAME, name) or repeats != (param.nargs == -1):
                bad.append(f"argument {param.name}: {param.metavar!r}")
    assert not bad, f"riddlectl {words}: name it by what it is, in upper case: {bad}"


@pytest.mark.parametrize("words", sorted(COMMANDS_AND_GROUPS))
def test_help_shows_no_type_names_and_one_bracket_convention(words: str) -> None:
    text = help_text(words, COMMANDS_AND_GROUPS[words])
    usage = text.splitlines()[0]
    assert usage.startswith(f"Usage: riddlectl {words} ")
    assert "{" not in usage and "}" not in usage, usage
    for param in COMMANDS_AND_GROUPS[words].params:
        if param.param_type_name == "argument" and param.nargs == -1:
            assert f"{param.metavar}" in usage and "..." in usage, usage
    assert not TYPE_METAVAR.search(text), TYPE_METAVAR.search(text)


@pytest.mark.parametrize(
    "group", ["riddlectl", *(w for w, c in COMMANDS_AND_GROUPS.items() if hasattr(c, "commands"))]
)
def test_command_lists_give_whole_summaries(group: str) -> None:
    if group == "riddlectl":
        root = typer.main.get_command(app)
        text = str(root.get_help(root.context_class(root, info_name="riddlectl")))
        listed = {name: _load(name) for name in COMMANDS}
    else:
        text = help_text(group, COMMANDS_AND_GROUPS[group])
        listed = COMMANDS_AND_GROUPS[group].commands
    flowing = " ".join(text.split("Commands:", 1)[1].split())
    for name, command in listed.items():
        whole = summary(command)
        assert whole.endswith("."), f"{name}: a summary is a whole sentence: {whole!r}"
        assert f"{name} {whole}" in flowing, f"{group}: {name}'s summary is cut: {whole!r}"
    assert "..." not in flowing and "…" not in flowing.replace("http://…", "")
