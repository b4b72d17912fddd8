"""What every `--json` output shares: schema and scorer versions, the command, a status."""

from __future__ import annotations

from enum import StrEnum
from typing import Any

from scorer.version import __version__

#: Raised when a key is removed or changes meaning; adding a key keeps the version.
SCHEMA_VERSION = 1


class Status(StrEnum):
    """`status` of every JSON output; each goes with one exit code. A failure's output holds
    `error`, the object `scorer.errors.error_object` makes."""

    OK = "ok"  # exit 0
    REJECTED = "rejected"  # exit 1
    ERROR = "error"  # exit 2
    INTERRUPTED = "interrupted"  # exit 130


def envelope(command: str, status: Status, payload: dict[str, Any]) -> dict[str, Any]:
    """A command's JSON output: what every output has first, then the command's own keys."""
    return {
        "schema_version": SCHEMA_VERSION,
        "scorer_version": __version__,
        "command": command,
        "status": str(status),
        **payload,
    }


#: The commands that hold commands (`scorer leaderboard score`, `scorer serve team add`), as
#: scorer/cli.py adds them.
GROUPS = ("leaderboard", "serve", "team")


def command_of(argv: list[str]) -> str:
    """The command a command line runs, as typed after `scorer` (`leaderboard score`)."""
    words = argv[:1]
    while words and words[-1] in GROUPS and len(argv) > len(words):
        words.append(argv[len(words)])
    return " ".join(word for word in words if not word.startswith("-"))


#: What an interrupted command says when nothing of it had run, or nothing said why.
INTERRUPTED_EARLY = "interrupted before the command finished; nothing was recorded"
