"""Time every top-level statement of a few `scorer` functions, to see which polars operation
inside a step costs what (a finer cut than bench/profile_score.py; needs no change to scorer).

    .venv/bin/python bench/profile_statements.py --users 1000000 [--parquet]

Each listed function is recompiled from its source with a timer around each statement of its
body (a statement that is one long polars chain counts as one), then `scorer.api.score` runs
once. Prints the statements that took at least 1% of the run, slowest first, with wall and
CPU seconds.
"""

from __future__ import annotations

import argparse
import ast
import importlib
import inspect
import sys
import textwrap
import time
from pathlib import Path

from generate import DEFAULT_WORK, generate

FUNCTIONS = [
    ("scorer.contract.solution", "read_solution"),
    ("scorer.contract.submission", "check_submission"),
    ("scorer.contract.submission", "_passes_screen"),
    ("scorer.read.long", "_typed_read"),
    ("scorer.read.cells", "judge"),
    ("scorer.scoring", "per_user"),
    ("scorer.scoring", "_exact_sums"),
    ("scorer.api", "score"),
]

TIMES: dict[tuple[str, int], list[float]] = {}


def instrument(module_name: str, name: str) -> list[str]:
    module = importlib.import_module(module_name)
    fn = getattr(module, name, None)
    if fn is None:
        print(f"(no {module_name}.{name}: skipped)", file=sys.stderr)
        return []
    source = textwrap.dedent(inspect.getsource(fn))
    first = inspect.getsourcelines(fn)[1]
    tree = ast.parse(source)
    node = tree.body[0]
    assert isinstance(node, ast.FunctionDef)
    body: list[ast.stmt] = []
    for stmt in node.body:
        key = (f"{module_name}.{name}", stmt.lineno + first - 1)
        if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant):
            body.append(stmt)  # the docstring
            continue
        start = ast.parse("__t = (__wall(), __cpu())").body[0]
        stop = ast.parse(f"__record({key!r}, __t)").body[0]
        wrapper = ast.Try(body=[stmt], handlers=[], orelse=[], finalbody=[stop])
        body += [start, wrapper]
    node.body = body
    node.decorator_list = []
    ast.fix_missing_locations(tree)
    namespace = vars(module)
    namespace.update(__wall=time.perf_counter, __cpu=time.process_time, __record=record)
    exec(compile(tree, inspect.getsourcefile(fn) or "<scorer>", "exec"), namespace)
    new = namespace[name]
    for other in [m for n, m in sys.modules.items() if n.split(".")[0] == "scorer"]:
        for attr, value in list(vars(other).items()):
            if value is fn:
                setattr(other, attr, new)
    return source.splitlines()


def record(key: tuple[str, int], started: tuple[float, float]) -> None:
    wall, cpu = time.perf_counter() - started[0], time.process_time() - started[1]
    total = TIMES.setdefault(key, [0.0, 0.0, 0])
    total[0] += wall
    total[1] += cpu
    total[2] += 1


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--users", type=int, default=1_000_000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--work", type=Path, default=DEFAULT_WORK)
    parser.add_argument("--parquet", action="store_true")
    args = parser.parse_args(argv)
    data = generate(args.users, seed=args.seed, work=args.work)
    suffix = "parquet" if args.parquet else "csv"
    import scorer.api  # noqa: F401 - loads every module before instrumenting

    files = {}
    for module_name, name in FUNCTIONS:
        instrument(module_name, name)
        module = importlib.import_module(module_name)
        files[f"{module_name}.{name}"] = inspect.getsourcefile(module)
    api = importlib.import_module("scorer.api")
    wall = time.perf_counter()
    api.score(data / f"submission.{suffix}", data / f"solution.{suffix}")
    total = time.perf_counter() - wall
    print(f"# statements of `scorer.api.score`, {args.users:,} users, {suffix}: {total:.2f} s")
    print("| function:line | statement | wall s | cpu s | calls |")
    print("|---|---|---:|---:|---:|")
    rows = sorted(TIMES.items(), key=lambda kv: -kv[1][0])
    for (function, line), (w, c, n) in rows:
        if w < 0.01 * total:
            continue
        text = Path(files[function]).read_text().splitlines()[line - 1].strip()
        text = text.replace("|", "\\|")[:70]
        print(f"| {function}:{line} | `{text}` | {w:.2f} | {c:.2f} | {n} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
