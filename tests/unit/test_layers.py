"""Imports flow one way, from the command line down to the document, and only the
filesystem spool (and the factory that opens it) knows the filesystem spool.

The layers and the ban on cycles are import-linter contracts in pyproject.toml; the
filesystem spool's privacy is also checked here directly, over every module there is or
will be, imports for type annotations included.
"""

from __future__ import annotations

import ast
import shutil
import subprocess
import sys
from pathlib import Path

import grimp

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "riddlectl"
FS = "riddlectl.spool.fs"
FACTORY = "riddlectl.spool"  # `open_spool`, which chooses the implementation


def test_the_import_contracts_hold() -> None:
    lint = shutil.which("lint-imports", path=str(Path(sys.executable).parent))
    assert lint is not None, "import-linter is in the test extra"
    proc = subprocess.run(
        [lint, "--no-cache", "--no-logo", str(ROOT / "pyproject.toml")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "0 broken" in proc.stdout


def fs_importers(graph: grimp.ImportGraph) -> list[str]:
    """Every import of the filesystem spool from outside it and its factory."""
    inside = {FS, *graph.find_descendants(FS)}
    return sorted(
        f"{importer} imports {imported} (line {detail['line_number']})"
        for imported in inside
        for importer in graph.find_modules_that_directly_import(imported)
        if importer not in inside and importer != FACTORY
        for detail in graph.get_import_details(importer=importer, imported=imported)
    )


def test_only_the_filesystem_spool_and_its_factory_import_it() -> None:
    graph = grimp.build_graph("riddlectl", cache_dir=None)
    assert fs_importers(graph) == []


def test_the_check_sees_an_import_of_the_filesystem_spool_from_outside() -> None:
    graph = grimp.build_graph("riddlectl", cache_dir=None)
    graph.add_import(
        importer="riddlectl.ops.report",
        imported=f"{FS}.fsspool",
        line_number=7,
        line_contents="from riddlectl.spool.fs.fsspool import FsSpool",
    )
    assert fs_importers(graph) == [f"riddlectl.ops.report imports {FS}.fsspool (line 7)"]


def test_no_code_outside_the_filesystem_spool_names_its_class() -> None:
    # Not even as a string (`type(spool).__name__ == "FsSpool"`): above the spool, a spool
    # is a `Spool`, whichever it is.
    named = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if (PACKAGE / "spool" / "fs") in path.parents:
            continue
        for node in ast.walk(ast.parse(path.read_text("utf-8"))):
            name = (
                getattr(node, "id", None)
                or getattr(node, "attr", None)
                or (node.value if isinstance(node, ast.Constant) else None)
            )
            if name == "FsSpool":
                named.append(f"{path.relative_to(ROOT)}:{node.lineno}")  # type: ignore[attr-defined]
    assert named == []


def import_circles(graph: grimp.ImportGraph) -> list[list[str]]:
    """Every set of modules that import each other, directly or round a circle of any
    length (Tarjan's strongly connected components over the module graph)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    circles: list[list[str]] = []

    def visit(module: str) -> None:
        index[module] = low[module] = len(index)
        stack.append(module)
        for imported in graph.find_modules_directly_imported_by(module):
            if imported not in index:
                visit(imported)
                low[module] = min(low[module], low[imported])
            elif imported in stack:
                low[module] = min(low[module], index[imported])
        if low[module] == index[module]:
            members = []
            while True:
                member = stack.pop()
                members.append(member)
                if member == module:
                    break
            if len(members) > 1:
                circles.append(sorted(members))

    for module in sorted(graph.modules):
        if module not in index:
            visit(module)
    return circles


def test_no_module_imports_itself_round_a_circle() -> None:
    """Module-level and function-level imports count; imports for annotations alone
    (`if TYPE_CHECKING:`) do not, as nothing runs them."""
    graph = grimp.build_graph("riddlectl", cache_dir=None, exclude_type_checking_imports=True)
    assert import_circles(graph) == []


def test_no_module_imports_itself_round_a_circle_even_for_annotations() -> None:
    """Imports for annotations alone count too: a helper that names its owner's class
    holds its owner, and is given the narrow collaborator it uses instead."""
    graph = grimp.build_graph("riddlectl", cache_dir=None, exclude_type_checking_imports=False)
    assert import_circles(graph) == []


def test_the_circle_check_sees_a_circle_of_three() -> None:
    graph = grimp.build_graph("riddlectl", cache_dir=None, exclude_type_checking_imports=True)
    graph.add_import(importer="riddlectl.document.ids", imported="riddlectl.ops.report")
    assert any(
        {"riddlectl.document.ids", "riddlectl.ops.report"} <= set(circle)
        for circle in import_circles(graph)
    )
