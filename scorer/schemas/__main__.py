"""`python -m scorer.schemas`: write each command's JSON Schema beside this module, after a
change of an output's shape (tests/contract/test_json_contract.py checks the files are current)."""

from __future__ import annotations

import json
from pathlib import Path

from scorer.schemas import COMMANDS, build, file_name

if __name__ == "__main__":
    for command in COMMANDS:
        path = Path(__file__).with_name(file_name(command))
        path.write_text(json.dumps(build(command), indent=2) + "\n", encoding="utf-8")
        print(f"wrote {path}")
