"""The layers of `scorer/`, bottom first, and the run-time imports between its modules.

`LAYERS` is the one statement of the order: tests/docs/test_layers.py checks every import
against it, and `scripts/trace_calls.py` counts a traced call into a higher layer as a climb
by it. A pattern is a module (`scorer.api`) or a package with everything under it
(`scorer.read.*`); modules of one layer may import each other, as long as the imports make no
loop. Imports under `if TYPE_CHECKING:` are exempt: they never run, and name a type for an
annotation only."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

from support.paths import ROOT

PACKAGE = ROOT / "scorer"


#: Bottom first. `platforms.*` holds each platform's runtime and kit (issue 21 merged the old
#: `adapters` and `kits` into it).
LAYERS: tuple[tuple[str, ...], ...] = (
    ("scorer.version",),
    ("scorer.errors",),
    ("scorer.envelope", "scorer.metrics"),
    ("scorer.board",),  # the spec's [board] table, held by the competition
    ("scorer.competition",),
    ("scorer.keys",),  # packs (user, item) keys: the spec names their columns
    ("scorer.kept",),  # an upload's kept form: numpy, polars and pyarrow only
    ("scorer.read.*",),
    ("scorer.write", "scorer.synthetic", "scorer.ndcg_json"),
    ("scorer.contract.*",),
    ("scorer.scoring",),
    ("scorer.parts",),
    ("scorer.prepared",),
    ("scorer.api",),
    ("scorer.shell",),
    ("scorer.commitment",),  # a commitment to a solution: its file, its split, a salt
    ("scorer.leaderboard.*",),
    ("scorer.verify",),  # checks a server's export with the engine, not with the server
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
