"""Reading the commands out of the documents, for the tests that run them."""

from __future__ import annotations

import re

FENCE = re.compile(r"```console\n(.*?)```", re.S)


def console_commands(text: str) -> list[tuple[str, str]]:
    """(command, expected output) for every `$ ` line of every console block, in order."""
    found = []
    for block in FENCE.findall(text):
        lines = block.rstrip("\n").split("\n")
        starts = [i for i, line in enumerate(lines) if line.startswith("$ ")]
        for n, i in enumerate(starts):
            end = starts[n + 1] if n + 1 < len(starts) else len(lines)
            found.append((lines[i][2:], "\n".join(lines[i + 1 : end])))
    return found
