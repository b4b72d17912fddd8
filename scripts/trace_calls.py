"""Trace one `scorer score` of the 1,000-user sample in-process and count the scorer modules
it touches, the calls between them, and the climbs (calls into a higher layer).

    python scripts/trace_calls.py [SUBMISSION SOLUTION]

A `sys.setprofile` hook sees every Python call; a call counts when its caller and callee are
functions of two different `scorer` modules, and is a climb when the callee's layer is above
the caller's in `LAYERS` of tests/support/layers.py (the one statement of the order). Module
bodies run by imports are left out: everything `scorer score` imports is imported first.
To measure another tree, put it first on the path: `PYTHONPATH=/tmp/base python …`."""

from __future__ import annotations

import contextlib
import io
import sys
from collections import Counter
from pathlib import Path
from types import FrameType
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from support.layers import layer_of  # noqa: E402  (tests/ is put on the path just above)


def _module(frame: FrameType | None) -> str | None:
    if frame is None:
        return None
    name = frame.f_globals.get("__name__", "")
    return name if name == "scorer" or name.startswith("scorer.") else None


def trace(args: list[str]) -> tuple[set[str], Counter[tuple[str, str, str, str]], int]:
    """Run `scorer ARGS` under the hook: (modules touched, calls between modules by (caller
    module, caller function, callee module, callee function), exit code)."""
    from scorer.cli import app  # imported before the hook: import-time code is not traced

    touched: set[str] = set()
    calls: Counter[tuple[str, str, str, str]] = Counter()

    def hook(frame: FrameType, event: str, arg: Any) -> None:
        if event != "call" or frame.f_code.co_name == "<module>":
            return
        callee = _module(frame)
        if callee is None:
            return
        touched.add(callee)
        caller = _module(frame.f_back)
        if caller is not None and caller != callee:
            back = frame.f_back
            assert back is not None
            calls[(caller, back.f_code.co_name, callee, frame.f_code.co_name)] += 1

    out = io.StringIO()
    sys.setprofile(hook)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
            code = app(args, standalone_mode=False)
    finally:
        sys.setprofile(None)
    return touched, calls, int(code or 0)


def main() -> None:
    submission, solution = sys.argv[1:3] or [
        str(ROOT / "data" / "sample_submission.csv"),
        str(ROOT / "data" / "solution.csv"),
    ]
    import scorer.cli

    touched, calls, code = trace(["score", submission, "--solution", solution])
    climbs = {
        key: n for key, n in calls.items() if (layer_of(key[2]) or 0) > (layer_of(key[0]) or 0)
    }
    unplaced = sorted(m for m in touched if layer_of(m) is None)
    print(f"scorer from {Path(scorer.cli.__file__).parent}; `scorer score` exit {code}")
    print()
    print("| measure | distinct | calls |")
    print("|---|---:|---:|")
    print(f"| scorer modules touched | {len(touched)} | |")
    print(f"| calls between modules (caller -> callee function) | {len(calls)} | {calls.total()} |")
    print(f"| climbs (callee in a higher layer) | {len(climbs)} | {sum(climbs.values())} |")
    pairs = {(a, c) for a, _, c, _ in calls}
    print(f"| module pairs called across | {len(pairs)} | |")
    for (caller, f, callee, g), n in sorted(climbs.items()):
        print(f"climb: {caller}.{f} -> {callee}.{g} ({n}x)")
    if unplaced:
        print(f"modules in no layer of tests/support/layers.py: {', '.join(unplaced)}")


if __name__ == "__main__":
    main()
