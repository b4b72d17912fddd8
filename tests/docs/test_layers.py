"""The layers of `scorer/`, bottom first, and the imports that keep to them: no module imports
one above it, none imports the package top, and no import loop hides inside a layer.

`LAYERS` is the one statement of the order: `scripts/trace_calls.py` counts a traced call
into a higher layer as a climb by it. A pattern is a module (`scorer.api`) or a package with
everything under it (`scorer.read.*`); modules of one layer may import each other, as long as
the imports make no loop. Imports under `if TYPE_CHECKING:` are exempt: they never run, and
name a type for an annotation only."""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "scorer"

#: Bottom first. `platforms.*` holds each platform's runtime and kit (issue 21 merged the old
#: `adapters` and `kits` into it).
LAYERS: tuple[tuple[str, ...], ...] = (
    ("scorer.version",),
    ("scorer.errors",),
    ("scorer.envelope", "scorer.metrics"),
    ("scorer.competition",),
    ("scorer.keys",),  # packs (user, item) keys: the spec names their columns
    ("scorer.read.*",),
    ("scorer.write", "scorer.synthetic", "scorer.ndcg_json"),
    ("scorer.contract.*",),
    ("scorer.scoring",),
    ("scorer.parts",),
    ("scorer.prepared",),
    ("scorer.api",),
    ("scorer.shell",),
    ("scorer.leaderboard.*",),
    ("scorer.platforms.*",),
    ("scorer.serve.*",),
    ("scorer.schemas.*",),  # describes every command's output, the leaderboard's included
    ("scorer.cli", "scorer.__main__"),
    ("scorer",),  # the package top: the public API, imported by no module of its own
)


def matches(pattern: str, module: str) -> bool:
    if pattern.endswith(".*"):
        package = pattern[:-2]
        return module == package or module.startswith(package + ".")
    return module == pattern


def layer_of(module: str) -> int | None:
    """The index in `LAYERS` of a module of `scorer/` (0: the bottom); None if none holds it."""
    found = [i for i, layer in enumerate(LAYERS) for p in layer if matches(p, module)]
    return found[0] if len(found) == 1 else None


def modules() -> dict[str, Path]:
    """Every module of `scorer/` by its dotted name (a package by its own name)."""
    found = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = list(path.relative_to(ROOT).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


def _type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _nodes(tree: ast.AST) -> Iterator[ast.AST]:
    """Every node, except what sits under `if TYPE_CHECKING:`."""
    for child in ast.iter_child_nodes(tree):
        if isinstance(child, ast.If) and _type_checking(child):
            for other in child.orelse:
                yield other
                yield from _nodes(other)
            continue
        yield child
        yield from _nodes(child)


def imports(module: str, path: Path, known: dict[str, Path]) -> Iterator[tuple[int, str]]:
    """(line, module) of each `scorer` module that `module` imports at run time, at its top
    or inside a function. `from scorer.x import y` is an import of `scorer.x.y` when that is a
    module, of `scorer.x` otherwise; `from scorer import x` likewise."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    for node in _nodes(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name == "scorer" or alias.name.startswith("scorer."):
                    yield node.lineno, alias.name
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:  # relative: from the module's own package up
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            if base != "scorer" and not base.startswith("scorer."):
                continue
            for alias in node.names:
                full = f"{base}.{alias.name}"
                yield node.lineno, full if full in known else base


def edges() -> list[tuple[str, int, str]]:
    """(importer, line, imported) for every run-time import between modules of `scorer/`."""
    known = modules()
    found = {
        (module, line, imported)
        for module, path in known.items()
        for line, imported in imports(module, path, known)
        if imported != module
    }
    return sorted(found)


def test_every_module_has_one_layer() -> None:
    for module in modules():
        held = [p for layer in LAYERS for p in layer if matches(p, module)]
        assert len(held) == 1, f"{module}: in {held or 'no layer'}; add it to LAYERS"


def test_no_module_imports_a_module_above_it() -> None:
    climbs = [
        f"{module}:{line} imports {imported}"
        for module, line, imported in edges()
        if imported != "scorer" and (layer_of(imported) or 0) > (layer_of(module) or 0)
    ]
    assert climbs == []


def test_no_module_imports_the_package_top() -> None:
    """`import scorer` or `from scorer import __version__` runs the public API's module and
    everything it imports; `scorer.version` holds the version at the bottom."""
    tops = [f"{module}:{line}" for module, line, imported in edges() if imported == "scorer"]
    assert tops == []


def test_no_import_loop() -> None:
    """A loop is a layer's modules importing each other both ways, which only a late import
    inside a function keeps from failing."""
    graph: dict[str, set[str]] = {}
    for module, _, imported in edges():
        graph.setdefault(module, set()).add(imported)
    loops: list[list[str]] = []
    state: dict[str, int] = {}  # 1: on the path being walked, 2: done

    def walk(module: str, path: list[str]) -> None:
        state[module] = 1
        for imported in sorted(graph.get(module, ())):
            if state.get(imported) == 1:
                loops.append([*path[path.index(imported) :], imported])
            elif imported not in state:
                walk(imported, [*path, imported])
        state[module] = 2

    for module in sorted(graph):
        if module not in state:
            walk(module, [module])
    assert [" -> ".join(loop) for loop in loops] == []


def test_the_readme_map_lists_every_module() -> None:
    """README's "The code" names every module: by its path (`scorer/api.py`), or by its
    name in backticks on the row of its package (`scorer/read/` … `limits`); a package's
    `__init__.py` by the package's path."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    section = re.split(r"\n(?=## )", text.split("\n## The code", 1)[1])[0]
    rows = section.splitlines()
    unlisted = []
    for path in modules().values():
        relative = path.relative_to(ROOT)
        folder = f"{relative.parent.as_posix()}/"
        if f"`{relative.as_posix()}`" in section:
            continue
        if path.name == "__init__.py" and path.parent != PACKAGE and f"`{folder}`" in section:
            continue
        if any(f"`{folder}`" in row and f"`{path.stem}`" in row for row in rows):
            continue
        unlisted.append(relative.as_posix())
    assert unlisted == []


def test_only_the_spec_names_the_lost_items_columns() -> None:
    """Frames inside the scorer name their columns by the spec's constants (`USER`, `ITEM`,
    `RANK`) and files by the competition's columns: the lost-items names are written where
    that competition is defined, and nowhere else. Kaggle's metric (`kaggle_metric`) is the
    one exception: a file that runs without scorer, its `SPEC` written by the kit; the lost
    items values it holds until then are tests/test_kit_kaggle.py's to keep equal to the spec."""
    found = [
        f"{path.relative_to(ROOT).as_posix()}:{number}"
        for path in modules().values()
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1)
        if re.search(r"[\"'](user_id|edition_id)[\"']", line)
    ]
    files = [place.split(":")[0] for place in found]
    assert files == ["scorer/competition.py"] * 3 + ["scorer/platforms/kaggle_metric.py"], found


def test_no_module_is_over_400_lines() -> None:
    """A module a newcomer can read at one sitting (the house style's bound)."""
    long = {
        name: count
        for name, path in modules().items()
        if (count := len(path.read_text(encoding="utf-8").splitlines())) > 400
    }
    assert long == {}
