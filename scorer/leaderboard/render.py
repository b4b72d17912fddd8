"""The boards as a terminal table (rich), CSV, JSON and Markdown; HTML lives in `page`."""

from __future__ import annotations

import csv
import html
import io
import json
from enum import StrEnum
from typing import Any

from rich.console import Console, Group, RenderableType
from rich.table import Table
from rich.text import Text

from scorer.errors import Report
from scorer.leaderboard.batch import BatchResult
from scorer.leaderboard.boards import Boards
from scorer.leaderboard.page import page
from scorer.leaderboard.wording import boards_of, cells, columns, notes, title
from scorer.schemas import Status, envelope


class Format(StrEnum):
    TABLE = "table"
    CSV = "csv"
    JSON = "json"
    MD = "md"
    HTML = "html"


FORMATS = tuple(str(f) for f in Format)

#: Width of the plain-text table when the output is not a terminal.
TEXT_WIDTH = 160


def render(boards: Boards, fmt: str) -> str:
    """The boards in one of `FORMATS`, as text."""
    if fmt == "table":
        return table_text(boards)
    if fmt == "csv":
        return to_csv(boards)
    if fmt == "json":
        data = envelope("leaderboard show", Status.OK, boards.to_dict())
        return json.dumps(data, indent=2, ensure_ascii=False) + "\n"
    if fmt == "md":
        return to_markdown(boards)
    if fmt == "html":
        return page(boards)
    raise ValueError(f"format {fmt!r}; expected one of {', '.join(FORMATS)}")


# -- terminal ---------------------------------------------------------------------------------


def renderables(boards: Boards) -> RenderableType:
    """Both boards (the private one in the final phase) as rich tables, then the notes."""
    parts: list[RenderableType] = []
    for board in boards_of(boards):
        table = Table(title=title(board), title_justify="left", header_style="bold")
        for header, justify in columns(board):
            table.add_column(header, justify=justify, no_wrap=True)  # type: ignore[arg-type]
        for row in board.rows:
            table.add_row(*cells(board, row), style="yellow" if row.tie_next else None)
        if not board.rows:
            table.caption = "No scored submission yet."
        parts.append(table)
    parts.extend(Text(line, style="dim") for line in notes(boards))
    return Group(*parts)


def table_text(boards: Boards, width: int = TEXT_WIDTH) -> str:
    buffer = io.StringIO()
    console = Console(file=buffer, width=width, color_system=None, force_terminal=False)
    console.print(renderables(boards))
    return "".join(line.rstrip() + "\n" for line in buffer.getvalue().splitlines())


# -- CSV and Markdown -------------------------------------------------------------------------


def to_csv(boards: Boards) -> str:
    """One row a team and board, every digit kept; the private-only columns exist only in
    the final phase."""
    final = boards.private is not None
    header = ["board", "rank", "team", "score", "low", "high", "p_next", "tie_next"]
    if final:
        header += ["public_rank", "shake", "pick"]
    header += ["submission", "submitted_at", "entries"]
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=header, lineterminator="\n", extrasaction="ignore")
    writer.writeheader()
    for board in boards_of(boards):
        for row in board.rows:
            data: dict[str, Any] = {"board": board.name, **row.to_dict()}
            writer.writerow({k: "" if v is None else v for k, v in data.items()})
    return buffer.getvalue()


def _md(text: str) -> str:
    """A Markdown table cell: HTML escaped (team names are user input), pipes escaped."""
    return html.escape(text, quote=False).replace("|", "\\|").replace("\n", " ")


def to_markdown(boards: Boards) -> str:
    lines: list[str] = []
    for board in boards_of(boards):
        cols = columns(board)
        marks = {"right": "---:", "left": ":---", "center": ":---:"}
        lines += [f"### {title(board)}", ""]
        lines.append("| " + " | ".join(h for h, _ in cols) + " |")
        lines.append("|" + "|".join(marks[j] for _, j in cols) + "|")
        for row in board.rows:
            lines.append("| " + " | ".join(_md(c) for c in cells(board, row)) + " |")
        if not board.rows:
            lines.append("| " + " | ".join("" for _ in cols) + " |")
        lines.append("")
    lines += [f"- {_md(line)}" for line in notes(boards)]
    return "\n".join(lines) + "\n"


# -- a scoring run ----------------------------------------------------------------------------


def batch_text(result: BatchResult, source: str) -> str:
    """A run's summary for people, then every rejected or failed submission with its report."""
    c = result.counts
    lines = [
        f"{source}: {c['total']} submissions: {c['scored']} scored, {c['cached']} cached, "
        f"{c['rejected']} rejected, {c['failed']} failed"
        + (f"; {c['removed']} removed from the database" if c["removed"] else "")
    ]
    if result.failures:
        lines += ["", f"Rejected or failed ({len(result.failures)}):"]
    for outcome in result.failures:
        again = " (cached verdict)" if outcome.cached else ""
        lines.append(f"  {outcome.team} / {outcome.path}: {outcome.status}{again}")
        lines += [f"    {line}" for line in error_text(outcome.error).splitlines()]
    return "\n".join(lines)


def error_text(error: dict[str, Any] | None) -> str:
    """A stored error (a rejection report, or an internal failure) as the scorer prints it."""
    if not error:
        return ""
    stored = error.get("report", error)  # before schema version 1, the report was nested
    if not stored.get("problems"):
        return str(error.get("message", error))
    return Report.from_dict(stored).render()
