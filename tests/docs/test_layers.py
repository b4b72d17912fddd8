"""The layers of `scorer/` (`LAYERS` of tests/support/layers.py, bottom first), and the imports
that keep to them: no module imports one above it, none imports the package top, and no import
loop hides inside a layer."""

from __future__ import annotations

import re

from support.layers import LAYERS, PACKAGE, edges, layer_of, matches, modules
from support.paths import ROOT


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
    items values it holds until then are tests/platforms/test_kit_kaggle.py's to keep equal to
    the spec."""
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
