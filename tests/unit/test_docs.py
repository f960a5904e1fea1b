"""The documentation stands alone: the repository is all a user has.

Nothing in the README, docs/, the package or the tests points outside the repository (a
contract document kept elsewhere, a shared folder, a numbered ticket), and every relative
link of the README and docs/*.md, and every docs/ section a comment cites, leads to a
file (and heading) that exists.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import ROOT

TEXT_SUFFIXES = {".py", ".md", ".toml", ".json", ".txt", ".sh", ".cfg", ".ini", ".yml", ".yaml"}

# Written in pieces, so that this file does not trip over its own patterns.
OUTSIDE = {
    "the contract document kept outside": re.compile(r"\bS" + r"PEC\b"),
    "a section sign with a number": re.compile("\u00a7" + r"\s*\d"),
    "the shared folder": re.compile(r"\.\./" + "shared"),
    "the peers' folder": re.compile("shared" + r"/peers"),
    "a numbered issue": re.compile(r"\bissues?\s*#?\s*" + r"\d+", re.IGNORECASE),
}


def swept_files() -> Iterator[Path]:
    """README.md, docs/, the package, the tests, CI and the project file."""
    yield ROOT / "README.md"
    yield ROOT / "pyproject.toml"
    for folder in ("docs", "riddlectl", "tests", ".ci", "examples"):
        for path in sorted((ROOT / folder).rglob("*")):
            if "__pycache__" in path.parts or not path.is_file():
                continue
            if path.suffix in TEXT_SUFFIXES or path.parent.name == ".ci":
                yield path


def markdown_files() -> list[Path]:
    return [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def test_nothing_points_outside_the_repository() -> None:
    found = []
    for path in swept_files():
        for number, line in enumerate(path.read_text("utf-8").splitlines(), start=1):
            for what, pattern in OUTSIDE.items():
                if pattern.search(line):
                    found.append(f"{path.relative_to(ROOT)}:{number}: {what}: {line.strip()}")
    assert not found, "say it in the repository's own words:\n" + "\n".join(found)


def test_the_docs_exist() -> None:
    names = {p.name for p in markdown_files()}
    assert {"reference.md", "design.md", "performance.md"} <= names


# -- links --------------------------------------------------------------------------------

FENCE = re.compile(r"^\s*(```|~~~)")
INLINE_LINK = re.compile(r"!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
REFERENCE_LINK = re.compile(r"^\s*\[[^\]]+\]:\s*<?(\S+?)>?(?:\s+\"[^\"]*\")?\s*$")
CODE_SPAN = re.compile(r"`+[^`]*`+")
HEADING = re.compile(r"^\s{0,3}(#{1,6})\s+(.*?)\s*#*\s*$")
CITED = re.compile(r"\bdocs/[\w./-]+\.md(?:#[\w-]+)?")


def prose_lines(text: str) -> Iterator[str]:
    """The lines of a markdown text outside fenced code blocks."""
    fenced = False
    for line in text.splitlines():
        if FENCE.match(line):
            fenced = not fenced
            continue
        if not fenced:
            yield line


def slug(heading: str) -> str:
    """The anchor GitHub gives a heading: links reduced to their text, lower case, every
    character but letters, digits, `_`, `-` and spaces dropped, spaces made `-`."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading).strip().lower()
    text = "".join(c for c in text if c.isalnum() or c in "_- ")
    return text.replace(" ", "-")


def anchors(path: Path) -> set[str]:
    seen: dict[str, int] = {}
    out = set()
    for line in prose_lines(path.read_text("utf-8")):
        match = HEADING.match(line)
        if not match:
            continue
        base = slug(match.group(2))
        count = seen.get(base, 0)
        seen[base] = count + 1
        out.add(base if count == 0 else f"{base}-{count}")
    return out


def links(path: Path) -> Iterator[str]:
    for line in prose_lines(path.read_text("utf-8")):
        reference = REFERENCE_LINK.match(line)
        if reference:
            yield reference.group(1)
            continue
        yield from INLINE_LINK.findall(CODE_SPAN.sub("", line))


def broken(source: Path, target: str) -> str | None:
    """Why the relative link `target` in `source` leads nowhere; None when it is good."""
    if re.match(r"^[a-z][a-z0-9+.-]*:", target, re.IGNORECASE):
        return None  # a URL (https:, mailto:): not a file of the repository
    name, _, anchor = target.partition("#")
    path = (source.parent / name).resolve() if name else source
    if not path.is_relative_to(ROOT):
        return "leads out of the repository"
    if not path.exists():
        return "no such file"
    if anchor and path.suffix == ".md" and anchor not in anchors(path):
        return f"no heading #{anchor} in {path.relative_to(ROOT)}"
    return None


@pytest.mark.parametrize("source", markdown_files(), ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_leads_to_a_file_that_exists(source: Path) -> None:
    bad = [f"{target}: {why}" for target in links(source) if (why := broken(source, target))]
    assert not bad, f"{source.relative_to(ROOT)}: " + "; ".join(bad)


def test_every_docs_section_a_comment_cites_exists() -> None:
    bad = []
    for path in swept_files():
        if path.suffix == ".md":
            continue  # their links are checked above, relative to where they are
        for cited in CITED.findall(path.read_text("utf-8")):
            why = broken(ROOT / "README.md", cited)  # cited from the repository's root
            if why:
                bad.append(f"{path.relative_to(ROOT)}: {cited}: {why}")
    assert not bad, "\n".join(bad)


def test_slugs_follow_github() -> None:
    assert slug("Exit codes") == "exit-codes"
    assert slug("What `riddlectl bench` measures") == "what-riddlectl-bench-measures"
    assert slug("Bad input is refused, never half-taken") == "bad-input-is-refused-never-half-taken"
    heading = "`riddlectl hold` and `riddlectl release`"
    assert slug(heading) == "riddlectl-hold-and-riddlectl-release"


def test_the_readme_activates_the_venv_before_it_calls_bare_riddlectl() -> None:
    """The quick start runs `.venv/bin/riddlectl`; the tour after it calls `riddlectl` as
    a user types it, which works only once the venv is activated: the README says how
    before the first such line, and the quick start stays one command."""
    readme = (ROOT / "README.md").read_text()
    blocks = re.findall(r"```sh\n(.*?)```", readme, re.S)
    quick = blocks[0].strip()
    assert "\n" not in quick and ".venv/bin/riddlectl result" in quick, quick
    first_bare = re.search(r"^riddlectl ", readme, re.M)
    assert first_bare is not None
    assert "source .venv/bin/activate" in readme[: first_bare.start()]
