"""Team names: what a name may hold, when two names are one team, and how a refused
character is shown if one ever reaches an output."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable

from scorer.errors import MAX_VALUE_CHARS, Code, Issue, shorten

#: The longest team name accepted, in characters (after NFC). A name is a label on a board:
#: a longer one would push the scores off a terminal or a page.
MAX_TEAM_CHARS = 64

#: Unicode categories a name may not hold: controls (ESC starts a terminal's escape
#: sequences, a newline breaks a row), format characters (bidirectional overrides and
#: isolates that reverse a name, zero-width spaces and joiners that make `alpha` and
#: `alpha` + U+200B look alike, the soft hyphen), line and paragraph separators, private use
#: (no agreed glyph) and lone surrogates.
REFUSED_CATEGORIES = frozenset({"Cc", "Cf", "Zl", "Zp", "Co", "Cs"})

#: Letters that draw nothing, so a name of them looks empty or like another one: the
#: combining grapheme joiner, the Hangul fillers and the Braille blank.
BLANK = frozenset("\u034f\u115f\u1160\u3164\uffa0\u2800")

_SPACES = re.compile(r"\s+")


def normal(name: str) -> str:
    """A name as it is stored and shown: NFC, so the same letters typed on two systems (a
    precomposed é, or e and a combining accent) are one name."""
    return unicodedata.normalize("NFC", name)


def refused(char: str) -> bool:
    """True for a character no team name may hold (it hides, reverses or controls text)."""
    return unicodedata.category(char) in REFUSED_CATEGORIES or char in BLANK


def same_team(name: str) -> str:
    """The key under which two names are one team: compatibility-normalised (NFKC:
    full-width letters are letters, a no-break space a space), case-folded, spaces
    collapsed."""
    folded = unicodedata.normalize("NFKC", unicodedata.normalize("NFKC", name).casefold())
    return _SPACES.sub(" ", folded).strip()


def describe(char: str) -> str:
    """`U+202E RIGHT-TO-LEFT OVERRIDE`, or `U+001B (a control character)`."""
    code = f"U+{ord(char):04X}"
    name = unicodedata.name(char, "")
    if name:
        return f"{code} {name}"
    return f"{code} (a control character)" if unicodedata.category(char) == "Cc" else code


def escaped(text: str) -> str:
    """`text` with every refused character written as a visible Python escape (`\\x1b`,
    `\\u202e`): what an output shows of a name that was never checked (a database written
    before the check, a file name of the folder layout)."""
    if not any(refused(char) for char in text):
        return text
    return "".join(
        char.encode("unicode_escape").decode("ascii") if refused(char) else char for char in text
    )


def quoted(name: str) -> str:
    """A name in a message: escaped and quoted, cut to MAX_VALUE_CHARS characters."""
    cut = name if len(name) <= MAX_VALUE_CHARS else name[:MAX_VALUE_CHARS] + "…"
    return repr(cut)


def name_issues(name: str, where: str, line: int | None = None) -> list[Issue]:
    """What is wrong with one team name (already NFC); `where` starts each message
    (`line 4` or `folder 'alpha'`)."""
    issues = []
    bad = list(dict.fromkeys(char for char in name if refused(char)))
    if bad:
        listed = ", ".join(describe(char) for char in bad[:3])
        more = f" and {len(bad) - 3} more" if len(bad) > 3 else ""
        issues.append(
            Issue(
                Code.TEAM_NAME_CHARACTER,
                f"{where}: team {quoted(name)} holds {listed}{more}; a team name may hold no "
                "control, bidirectional, zero-width or other invisible character",
                line=line,
                column="team",
                value=shorten(name),
            )
        )
    if len(name) > MAX_TEAM_CHARS:
        issues.append(
            Issue(
                Code.TEAM_NAME_TOO_LONG,
                f"{where}: team {quoted(name)} has {len(name):,} characters; at most "
                f"{MAX_TEAM_CHARS} are accepted",
                line=line,
                column="team",
                value=shorten(name),
            )
        )
    return issues


def clash_issues(teams: Iterable[tuple[str, str, int | None]]) -> list[Issue]:
    """Two spellings of one team (`same_team`), as (name, where, line) in log order: each
    later spelling is reported against the first."""
    first: dict[str, tuple[str, str]] = {}
    issues = []
    for name, where, line in teams:
        key = same_team(name)
        seen = first.setdefault(key, (name, where))
        if seen[0] != name:
            issues.append(
                Issue(
                    Code.TEAM_NAME_CLASH,
                    f"{where}: team {quoted(name)} is team {quoted(seen[0])} ({seen[1]}) "
                    "written differently; spell a team's name one way",
                    line=line,
                    column="team",
                    value=shorten(name),
                )
            )
    return issues
