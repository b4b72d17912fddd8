"""The boards in every format: the terminal table (`terminal`), CSV, JSON, Markdown and the
HTML page (`page`); and the format an output file's name asks for."""

from __future__ import annotations

import csv
import io
import json
from datetime import datetime
from enum import StrEnum
from pathlib import Path
from typing import Any

from scorer.envelope import Status, envelope
from scorer.errors import UsageError
from scorer.leaderboard.boards import Boards
from scorer.leaderboard.literal import markdown, neutralised
from scorer.leaderboard.page import page
from scorer.leaderboard.wording import (
    boards_of,
    cells,
    columns,
    forecast_cells,
    forecast_columns,
    forecast_title,
    heading,
    notes,
    same,
    title,
)


class Format(StrEnum):
    TABLE = "table"
    CSV = "csv"
    JSON = "json"
    MD = "md"
    HTML = "html"


FORMATS = tuple(str(f) for f in Format)

#: The format an output file's suffix asks for (`--output board.html`).
SUFFIXES = {
    ".txt": Format.TABLE,
    ".csv": Format.CSV,
    ".json": Format.JSON,
    ".md": Format.MD,
    ".markdown": Format.MD,
    ".html": Format.HTML,
    ".htm": Format.HTML,
}

#: The CSV's text columns that a participant's choice can start with a formula character.
CSV_TEXT = ("team", "submission")


def format_for(chosen: Format | None, output: Path | None) -> Format:
    """The format to write: the one chosen, or the one the output's suffix names (a table
    without either). A chosen format that the suffix contradicts is a usage error, so that
    `board.html` never holds a text table."""
    named = SUFFIXES.get(output.suffix.lower()) if output is not None else None
    if chosen is not None and named is not None and chosen != named:
        raise UsageError(
            f"{output}: the name says {named} but the format is {chosen}; name the file "
            f"*{_suffix(chosen)}, or drop --format"
        )
    if chosen is not None:
        return chosen
    if output is not None and named is None:
        raise UsageError(
            f"{output}: cannot tell the format from the name; end it in "
            f"{', '.join(SUFFIXES)}, or add --format"
        )
    return named or Format.TABLE


def _suffix(fmt: Format) -> str:
    return next(suffix for suffix, named in SUFFIXES.items() if named == fmt)


def render(
    boards: Boards, fmt: str, *, heading_text: str | None = None, now: datetime | None = None
) -> str:
    """The boards in one of `FORMATS`, as text. `heading_text` names the page and the
    Markdown post (`--title`; the competition's name without it); `now` is the page's
    generation time (the current time without it)."""
    if fmt == "table":
        from scorer.leaderboard.terminal import table_text  # rich: only when asked for

        return table_text(boards)
    if fmt == "csv":
        return to_csv(boards)
    if fmt == "json":
        data = envelope("leaderboard show", Status.OK, boards.to_dict())
        return json.dumps(data, indent=2, ensure_ascii=False) + "\n"
    if fmt == "md":
        return to_markdown(boards, heading_text)
    if fmt == "html":
        return page(boards, heading(boards, heading_text), now)
    raise ValueError(f"format {fmt!r}; expected one of {', '.join(FORMATS)}")


def to_csv(boards: Boards) -> str:
    """One row a team and board, every digit kept. The private-only columns exist only in
    the final phase, and the submission's path only there (a public output names no file).
    Every text cell is quoted; a name a spreadsheet would evaluate as a formula gets a `'`
    before it, and the `neutralised` column names the cells that got one."""
    final = boards.private is not None
    header = ["board", "rank", "team", "score", "low", "high", "p_next", "p_adjusted", "tier"]
    if final:
        header += ["public_rank", "shake", "pick", "submission"]
    header += ["submitted_at", "entries", "neutralised"]
    buffer = io.StringIO()
    writer = csv.DictWriter(
        buffer,
        fieldnames=header,
        lineterminator="\n",
        extrasaction="ignore",
        quoting=csv.QUOTE_NONNUMERIC,  # a quoted cell stays one cell in a `;` locale
    )
    writer.writeheader()
    for board in boards_of(boards):
        for row in board.rows:
            data: dict[str, Any] = {"board": str(board.name), **row.to_dict(paths=final)}
            marked = []
            for key in CSV_TEXT:
                if key in data:
                    data[key], changed = neutralised(data[key])
                    marked += [key] if changed else []
            data["neutralised"] = " ".join(marked)
            writer.writerow({k: "" if v is None else v for k, v in data.items()})
    return buffer.getvalue()


def _md_table(heading: str, cols: list[tuple[str, str]], rows: list[list[str]]) -> list[str]:
    """A Markdown table under its heading: the Team column as data (`markdown`), every other
    cell the scorer's own words (`_md`); an empty table keeps one empty row."""
    marks = {"right": "---:", "left": ":---", "center": ":---:"}
    team = [header for header, _ in cols].index("Team")
    lines = [f"### {heading}", "", "| " + " | ".join(h for h, _ in cols) + " |"]
    lines.append("|" + "|".join(marks[j] for _, j in cols) + "|")
    for values in rows or [["" for _ in cols]]:
        cells_ = [markdown(c) if i == team and c else _md(c) for i, c in enumerate(values)]
        lines.append("| " + " | ".join(cells_) + " |")
    return [*lines, ""]


def _md(text: str) -> str:
    """A Markdown table cell of the scorer's own words: HTML escaped, pipes escaped."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace("|", "\\|")


#: The most characters of a `--title` a Markdown post shows.
TITLE_CHARS = 200


def to_markdown(boards: Boards, heading_text: str | None = None) -> str:
    """Both boards (and the forecast, when asked) as Markdown tables, ready for a forum
    post; team names are text, never a link or an image."""
    lines: list[str] = []
    if heading_text:  # the organiser's words, yet data: never a link, an image or markup
        lines += [f"## {markdown(heading_text, TITLE_CHARS)}", ""]
    for board in boards_of(boards):
        rows = [cells(board, row, team=same) for row in board.rows]
        lines += _md_table(title(board), columns(board), rows)
    if boards.forecast is not None:
        found = boards.forecast
        rows = [forecast_cells(found, row, team=same) for row in found.rows]
        lines += _md_table(forecast_title(found), forecast_columns(found), rows)
    lines += [f"- {line}" for line in notes(boards, team=markdown, plain=_md)]
    return "\n".join(lines) + "\n"
