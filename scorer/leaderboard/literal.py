"""Text a participant chose (team names, file names) as data in every output: never markup,
a link, a formula or a terminal's escape sequence."""

from __future__ import annotations

import re

from scorer.leaderboard.names import MAX_TEAM_CHARS, escaped

#: The most characters of a team name a human-readable output shows. The log refuses longer
#: names; a name that was never checked (a database written before the check) is cut here,
#: visibly, so that it cannot push the scores off a terminal or a page.
SHOWN_CHARS = MAX_TEAM_CHARS + 16

#: A spreadsheet evaluates a cell that starts with one of these (OWASP, "CSV Injection"):
#: such a cell is written with a `'` before it, so that it is shown as text.
FORMULA_START = ("=", "+", "-", "@", "\t", "\r")

#: ASCII punctuation that Markdown (CommonMark and GitHub's extensions) can read as syntax
#: inside a table cell: links and images ([]()!), emphasis (*_~), code (`), the cell's end
#: (|), autolinks (https: and a@b), math ($) and escapes (\). Each is escaped with a
#: backslash, as is the dot of `www.` (an autolink too).
_MARKDOWN = re.compile(r"([\\`*_\[\]()#!|~:@$])")
_WWW = re.compile(r"(?i)\b(www)\.")


def shown(text: str, limit: int = SHOWN_CHARS) -> str:
    """A name for people: every control, bidirectional or invisible character escaped
    visibly (`\\u202e`), and cut to `limit` characters with an ellipsis."""
    visible = escaped(text)
    return visible if len(visible) <= limit else visible[: limit - 1] + "…"


def neutralised(text: str) -> tuple[str, bool]:
    """A CSV cell a spreadsheet shows as text, and whether a `'` was added: one is added
    when the text, after any `'` it starts with, starts with `FORMULA_START`, so that a
    reader removes exactly one `'` from a cell it marks and gets the name back."""
    if text.lstrip("'").startswith(FORMULA_START):
        return "'" + text, True
    return text, False


def markdown(text: str, limit: int = SHOWN_CHARS) -> str:
    """A name in a Markdown table cell or heading: shown (cut to `limit` characters), `<`,
    `>` and `&` as HTML entities, every other syntax character escaped with a backslash:
    `[x](https://…)` stays text, not a link, and `# x` not a heading."""
    cell = _WWW.sub(r"\1\\.", _MARKDOWN.sub(r"\\\1", shown(text, limit)))
    return cell.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def code_span(text: str, *, table: bool = False) -> str:
    """A name as a Markdown code span, shown (controls escaped visibly) and otherwise as it
    is: nothing inside a code span is read as an escape (`customer\\_id` would show its
    backslash), so none is added. Its fence is one backtick longer than the name's longest
    run of them, with a space inside each end when the name starts or ends with a backtick
    or a space (CommonMark strips one). In a `table` cell a `|` is escaped: GFM ends a
    cell there before it reads a span, and drops the backslash."""
    inner = shown(text)
    if table:
        inner = inner.replace("|", "\\|")
    fence = "`" * (max((len(run) for run in re.findall(r"`+", inner)), default=0) + 1)
    pad = " " if inner[:1] in ("`", " ") or inner[-1:] in ("`", " ") else ""
    return f"{fence}{pad}{inner}{pad}{fence}"
