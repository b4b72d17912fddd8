"""The tests' own layout (the house style's "Tests, laid out"): every test module in a folder
of its area, what they share in the one package `support`, and no test module importing
another, so that each module can be read, run and moved alone."""

from __future__ import annotations

import ast
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

from support.paths import TESTS

#: The areas, each a folder of `tests/`: where a newcomer looks for the tests of a part.
AREAS = ("read", "contract", "scoring", "leaderboard", "platforms", "serve", "docs")
SUPPORT = TESTS / "support"


def modules_of_tests() -> list[Path]:
    return sorted(p for p in TESTS.rglob("test_*.py") if "__pycache__" not in p.parts)


def python_files() -> list[Path]:
    """Every Python file of the tests: test modules, conftest files and helpers."""
    return sorted(
        p for p in TESTS.rglob("*.py") if "__pycache__" not in p.parts and "corpus" not in p.parts
    )


def imported(path: Path) -> Iterator[tuple[int, str]]:
    """(line, module) of every import of a file, at its top or inside a function."""
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            yield from ((node.lineno, alias.name) for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            yield node.lineno, node.module


def test_every_test_module_is_in_the_folder_of_its_area() -> None:
    misplaced = [
        p.relative_to(TESTS).as_posix()
        for p in modules_of_tests()
        if p.parent.parent != TESTS or p.parent.name not in AREAS
    ]
    assert misplaced == []
    assert {p.parent.name for p in modules_of_tests()} == set(AREAS)


def test_test_module_names_are_unique() -> None:
    """The folders are no packages: pytest imports each test module by its own name."""
    counts = Counter(p.name for p in modules_of_tests())
    assert [name for name, n in counts.items() if n > 1] == []


def test_no_test_module_imports_another() -> None:
    """What two modules share lives in `support`, not in one of them; `tests` itself is no
    package to import from."""
    found = [
        f"{p.relative_to(TESTS).as_posix()}:{line} imports {module}"
        for p in python_files()
        for line, module in imported(p)
        if module.split(".")[0].startswith("test_") or module.split(".")[0] in ("tests", "conftest")
    ]
    assert found == []


def test_support_is_one_package_of_helpers_without_tests() -> None:
    """pytest collects no test from `support` (its modules are not named test_*), and none
    hides there under another name."""
    assert (SUPPORT / "__init__.py").is_file()
    assert [p for p in SUPPORT.rglob("*.py") if p.name.startswith(("test_", "conftest"))] == []
    tests = [
        f"{p.name}:{node.name}"
        for p in sorted(SUPPORT.glob("*.py"))
        for node in ast.parse(p.read_text(encoding="utf-8")).body
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)
        and node.name.startswith(("test_", "Test"))
    ]
    assert tests == []


def test_the_only_other_python_files_of_tests_are_conftest_files() -> None:
    """At `tests/` and in the areas, a Python file is a test module or a conftest.py."""
    others = [
        p.relative_to(TESTS).as_posix()
        for p in python_files()
        if SUPPORT not in p.parents and not p.name.startswith("test_") and p.name != "conftest.py"
    ]
    assert others == []
