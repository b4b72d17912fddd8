"""What a team writes with an upload: its description (`--message`, the `description` field)
and the file name it sends. Both are data in every output; a description is checked where it
is given, by the client before it sends it and by the server before it keeps it."""

from __future__ import annotations

from scorer.leaderboard.names import escaped, normal, refused

#: The longest description kept, in characters: a line on the team's page, a cell of the
#: export's manifest. A longer one is refused (`description_too_long`), not cut: what is
#: kept is what the team wrote.
MAX_DESCRIPTION_CHARS = 200

#: The longest uploaded file name kept (most file systems' own limit, 255 bytes of a name).
MAX_FILENAME_CHARS = 255


class BadDescription(ValueError):
    """A description refused: `code` is `description_too_long` or `bad_description`."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code


def description(text: str) -> str:
    """A description as it is kept: NFC, without the spaces around it, one line of at most
    `MAX_DESCRIPTION_CHARS` characters. A control, format or line-separator character (the
    team names' rule: a terminal's escape, a newline, a bidirectional override) is refused
    rather than dropped, so that no output ever meets one and the team sees why."""
    kept = normal(text).strip()
    if len(kept) > MAX_DESCRIPTION_CHARS:
        raise BadDescription(
            "description_too_long",
            f"the description has {len(kept)} characters; at most {MAX_DESCRIPTION_CHARS}",
        )
    bad = [char for char in kept if refused(char)]
    if bad:
        raise BadDescription(
            "bad_description",
            f"the description holds {escaped(bad[0])!s}, a control or invisible character: "
            "write it as one line of plain text",
        )
    return kept


def filename(given: str) -> str:
    """The name an upload was sent as, to show: its last part (a browser may send a whole
    path), its control and invisible characters written as visible escapes, cut to
    `MAX_FILENAME_CHARS` characters."""
    base = given.replace("\\", "/").rsplit("/", 1)[-1]
    return escaped(normal(base))[:MAX_FILENAME_CHARS]
