"""The boards and a run's summaries for a terminal (rich): every name a `Text`, never markup,
and a layout that never cuts a rank or a score."""

from __future__ import annotations

import io
from typing import Any

from rich.cells import cell_len
from rich.console import Console, Group, RenderableType
from rich.table import Table
from rich.text import Text

from scorer.errors import Report
from scorer.leaderboard.boards import Board, Boards
from scorer.leaderboard.literal import shown
from scorer.leaderboard.names import escaped
from scorer.leaderboard.results import BatchResult
from scorer.leaderboard.wording import (
    SHADING,
    boards_of,
    cells,
    columns,
    forecast_cells,
    forecast_columns,
    forecast_title,
    notes,
    title,
)

#: Width of the plain-text table when the output is not a terminal.
TEXT_WIDTH = 160

#: The columns a narrow terminal leaves out, first to last; Rank, Team and the score are
#: always shown, whole.
DROP_ORDER = (
    "Submitted (UTC)",
    "Entries",
    "Pick",
    "Public rank",
    "95% interval",
    "vs next",
    "Shake-up",
)

#: The narrowest the Team column gets before another column is left out; a longer name
#: wraps onto more lines.
TEAM_MIN = 12


def renderables(boards: Boards, width: int = TEXT_WIDTH, shading: bool = False) -> RenderableType:
    """Both boards (the private one in the final phase) as rich tables `width` characters
    wide at most, then the notes. `shading`: every other tier is drawn in yellow, and the
    notes say so."""
    parts: list[RenderableType] = []
    left_out: list[str] = []
    for board in boards_of(boards):
        table, dropped = _table(board, width)
        parts.append(table)
        left_out += [header for header in dropped if header not in left_out]
    if boards.forecast is not None:
        found = boards.forecast
        rows = [forecast_cells(found, row) for row in found.rows]
        table, dropped = _grid(
            forecast_title(found), forecast_columns(found), rows, [None] * len(rows), width
        )
        parts.append(table)
        left_out += [header for header in dropped if header not in left_out]
    lines = notes(boards)
    if shading:
        lines = [
            f"{line} Rows in yellow: {SHADING}." if line.startswith("Tiers:") else line
            for line in lines
        ]
    if left_out:
        lines.append(
            f"Left out to fit {width} columns: {', '.join(left_out)} (a wider terminal, or "
            "--format md, shows them)."
        )
    parts.extend(Text(line, style="dim") for line in lines)
    return Group(*parts)


def table_text(boards: Boards, width: int = TEXT_WIDTH) -> str:
    """The terminal table as plain text (no colour), for a pipe or a file."""
    buffer = io.StringIO()
    console = Console(file=buffer, width=width, color_system=None, force_terminal=False)
    console.print(renderables(boards, width))
    return "".join(line.rstrip() + "\n" for line in buffer.getvalue().splitlines())


def _table(board: Board, width: int) -> tuple[Table, list[str]]:
    rows = [cells(board, row) for row in board.rows]
    styles = ["yellow" if row.tier % 2 == 0 else None for row in board.rows]
    table, dropped = _grid(title(board), columns(board), rows, styles, width)
    if not board.rows:
        table.caption = Text("No scored submission yet.")
    return table, dropped


def _grid(
    heading: str,
    cols: list[tuple[str, str]],
    rows: list[list[str]],
    styles: list[str | None],
    width: int,
) -> tuple[Table, list[str]]:
    """A table of `rows` under `cols` that fits `width` (`_fit`), and the headers left out."""
    kept = _fit(cols, rows, width)
    table = Table(title=Text(heading), title_justify="left", header_style="bold")
    for i in kept:
        header, justify = cols[i]
        team = header == "Team"
        table.add_column(
            Text(header),
            justify=justify,  # type: ignore[arg-type]
            no_wrap=not team,
            overflow="fold" if team else "ellipsis",
            min_width=min(TEAM_MIN, _widest(header, rows, i)) if team else None,
        )
    for values, style in zip(rows, styles, strict=True):
        table.add_row(*(Text(values[i]) for i in kept), style=style)
    return table, [cols[i][0] for i in range(len(cols)) if i not in kept]


def _widest(header: str, rows: list[list[str]], i: int) -> int:
    return max([cell_len(header), *(cell_len(row[i]) for row in rows)])


def _fit(cols: list[tuple[str, str]], rows: list[list[str]], width: int) -> list[int]:
    """The columns that fit in `width` with every cell whole (the Team column at its
    narrowest), leaving out columns in `DROP_ORDER`."""
    need = [_widest(header, rows, i) + 2 for i, (header, _) in enumerate(cols)]  # + padding
    team = [h for h, _ in cols].index("Team")
    need[team] = min(need[team], TEAM_MIN + 2)
    kept = list(range(len(cols)))
    for header in DROP_ORDER:
        if sum(need[i] for i in kept) + len(kept) + 1 <= width:  # + the borders
            break
        kept = [i for i in kept if cols[i][0] != header]
    return kept


# -- a scoring run ----------------------------------------------------------------------------


def counts_line(result: BatchResult, source: str) -> str:
    """`manifest.csv: 12 submissions: 10 scored, 0 cached, 2 rejected, 0 failed`: the parts
    add up to the total (a reused rejection counts once, as rejected)."""
    c = result.counts
    reused = sum(1 for o in result.failures if o.cached and o.status == "rejected")
    parts = [
        f"{c['scored']} scored",
        f"{c['cached']} cached",
        f"{c['rejected']} rejected" + (f" ({reused} from the cache)" if reused else ""),
        f"{c['failed']} failed",
    ]
    if c["pending"]:
        parts.append(f"{c['pending']} pending")
    removed = f"; {c['removed']} removed from the boards" if c["removed"] else ""
    return f"{source}: {c['total']} submissions: {', '.join(parts)}{removed}"


def batch_text(result: BatchResult, source: str) -> str:
    """A run's summary for the organiser, then every rejected or failed submission with its
    report. Any control or invisible character of a name is shown escaped."""
    lines = [counts_line(result, source)]
    if result.failures:
        lines += ["", f"Rejected or failed ({len(result.failures)}):"]
    for outcome in result.failures:
        again = " (cached verdict)" if outcome.cached else ""
        lines.append(f"  {shown(outcome.team)} / {outcome.path}: {outcome.status}{again}")
        lines += [f"    {line}" for line in error_text(outcome.error).splitlines()]
    return "\n".join(escaped(line) for line in lines)


def summary_text(result: BatchResult, source: str) -> str:
    """A run's summary that may be published: the counts, then each team's scored
    submissions and best public score. No file, no report, no other score."""
    table = Table(box=None, header_style="bold", pad_edge=False)
    table.add_column("Team", overflow="fold")
    table.add_column("Entries", justify="right", no_wrap=True)
    table.add_column("Best public score", justify="right", no_wrap=True)
    for tally in result.teams():
        best = "" if tally.best_public is None else f"{tally.best_public:.6f}"
        table.add_row(Text(shown(tally.team)), Text(str(tally.entries)), Text(best))
    buffer = io.StringIO()
    Console(file=buffer, width=TEXT_WIDTH, color_system=None).print(table)
    lines = [counts_line(result, source), "", *buffer.getvalue().splitlines()]
    return "\n".join(line.rstrip() for line in lines)


def error_text(error: dict[str, Any] | None) -> str:
    """A stored error (a rejection report, or an internal failure) as the scorer prints it."""
    if not error:
        return ""
    stored = error.get("report", error)  # before schema version 1, the report was nested
    if not stored.get("problems"):
        return str(error.get("message", error))
    return Report.from_dict(stored).render()
