"""The `scorer` command (and `python -m scorer`): Ctrl-C is handled from the first moment,
while the command's modules (polars among them) are still loading."""

from __future__ import annotations

import json
import sys
from typing import NoReturn


def main() -> None:
    try:
        from scorer.cli import app

        app(prog_name="scorer")
    except KeyboardInterrupt:  # while loading, or while Typer builds the command line
        _interrupted(sys.argv[1:])


def _interrupted(argv: list[str]) -> NoReturn:
    """Ctrl-C before the command ran: its one JSON object with `--json`, a line on stderr
    without, and exit 130, as every interrupted command (never a traceback)."""
    from scorer.envelope import INTERRUPTED_EARLY, Status, command_of, envelope
    from scorer.errors import Failure, error_object

    message = INTERRUPTED_EARLY
    if "--json" in argv:
        error = error_object(Failure.INTERRUPTED, message)
        print(json.dumps(envelope(command_of(argv), Status.INTERRUPTED, {"error": error})))
    else:
        print(f"Error: {message}", file=sys.stderr)
    sys.exit(130)


if __name__ == "__main__":
    main()
