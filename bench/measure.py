"""Run one command and write its wall time, CPU time and peak RSS to a JSON file.

    python -S bench/measure.py RESULT.json TIMEOUT_SECONDS -- COMMAND [ARG ...]

A small stdlib-only wrapper, so the peak RSS that `os.wait4` reports is the command's own: a
child forked straight from a large process (the benchmark driver, with polars loaded) would
start its high-water mark at the parent's size. Exits with the command's exit code.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


def fresh(command: list[str], result: Path, out: Path, timeout: float = 7200) -> dict[str, float]:
    """Run `command` through this script from the repository root, its output into `out`;
    its figures (wall, cpu, rss_mb, exit), as `main` writes them into `result`."""
    wrapper = [sys.executable, "-S", str(HERE / "measure.py"), str(result), str(timeout)]
    with out.open("w") as stdout:
        subprocess.run(
            [*wrapper, "--", *command],
            stdout=stdout,
            check=True,
            cwd=HERE.parent,
        )
    figures: dict[str, float] = json.loads(result.read_text())
    return figures


def main() -> int:
    result, timeout, sep, *argv = sys.argv[1:]
    if sep != "--" or not argv:
        sys.exit(__doc__)
    started = time.perf_counter()
    child = subprocess.Popen(argv)
    while True:
        pid, status, usage = os.wait4(child.pid, os.WNOHANG)
        if pid:
            break
        if time.perf_counter() - started > float(timeout):
            child.kill()
            pid, status, usage = os.wait4(child.pid, 0)
            break
        time.sleep(0.002)
    wall = time.perf_counter() - started
    child.returncode = code = os.waitstatus_to_exitcode(status)
    with open(result, "w", encoding="utf-8") as handle:
        json.dump(
            {
                "wall": wall,
                "cpu": usage.ru_utime + usage.ru_stime,
                "rss_mb": usage.ru_maxrss / 1024,  # Linux reports KiB
                "exit": code,
            },
            handle,
        )
    return code


if __name__ == "__main__":
    sys.exit(main())
