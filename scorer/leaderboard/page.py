"""The boards as one self-contained static HTML page: inline CSS and SVG, no script, no
external file; it fits a 1280-pixel window, both boards and their charts."""

from __future__ import annotations

from datetime import UTC, datetime
from html import escape

from scorer.leaderboard.boards import Board, Boards, Row
from scorer.leaderboard.literal import shown
from scorer.leaderboard.outlook import Forecasted
from scorer.leaderboard.schema import Phase
from scorer.leaderboard.wording import (
    INTERVAL_DECIMALS,
    SHADING,
    boards_of,
    cells,
    columns,
    forecast_cells,
    forecast_columns,
    forecast_title,
    notes,
    stale,
    title,
    utc,
)
from scorer.version import __version__

#: Size of each row's interval chart, in CSS pixels.
CHART_WIDTH, CHART_HEIGHT = 180, 18
PAD = 8

#: Columns whose cells may wrap at a space in a window narrower than 1200 pixels (the rest
#: never wrap: a rank or a score is never split).
WRAPS = frozenset({"95% interval", "vs next", "Pick", "Submitted (UTC)"})

_STYLE = """
body { font-family: system-ui, -apple-system, "Segoe UI", sans-serif; margin: 1.5rem auto;
       max-width: 1240px; padding: 0 1rem; color: #1f2328; font-size: 15px; }
h1 { font-size: 1.6rem; margin-bottom: .3rem; } h2 { font-size: 1.15rem; margin-top: 1.8rem; }
.meta { color: #57606a; margin: .2rem 0; }
.stale { background: #ffebe9; border: 1px solid #ff8182; padding: .5rem .8rem; }
.legend { display: flex; flex-wrap: wrap; gap: .4rem 1.5rem; color: #57606a; font-size: .9rem; }
.swatch { display: inline-block; width: 1.6em; height: 1em; vertical-align: -.15em;
          background: #fff8c5; border: 1px solid #d4a72c; margin-right: .3em; }
.board { overflow-x: auto; max-width: 100%; }
table { border-collapse: collapse; margin: .5rem 0 1rem; width: 100%; font-size: 14px; }
th, td { padding: .3rem .4rem; border-bottom: 1px solid #d0d7de; white-space: nowrap;
         vertical-align: top; }
th { text-align: left; background: #f6f8fa; white-space: normal; }
th.right { text-align: right; } th.center { text-align: center; }
td.team { white-space: normal; overflow-wrap: anywhere; min-width: 7rem; }
@media (max-width: 1200px) { td.wraps { white-space: normal; } }
td.right { text-align: right; font-variant-numeric: tabular-nums; }
td.center { text-align: center; font-variant-numeric: tabular-nums; }
tr.shaded td { background: #fff8c5; }
td.chart { padding: .2rem .4rem 0; width: 180px; }
svg { display: block; }
svg .range { stroke: #0969da; stroke-width: 3; stroke-linecap: round; }
svg .point { fill: #1f2328; }
svg .axis { stroke: #d0d7de; stroke-width: 1; }
.axis-label { display: flex; justify-content: space-between; font-weight: normal;
              font-size: .8rem; color: #57606a; }
.notes p { color: #57606a; font-size: .9rem; margin: .3rem 0; }
"""


def page(boards: Boards, heading: str, now: datetime | None = None) -> str:
    """A complete HTML document showing the boards of `boards.phase` with interval charts,
    named `heading`, stamped with when it was generated (`now`) and what it shows."""
    generated = now if now is not None else datetime.now(UTC)
    phase = (
        "Public phase: the private leaderboard is hidden."
        if boards.phase is Phase.PUBLIC
        else "Final phase: public and private leaderboards."
    )
    source = (
        f"Scores of the run that finished at {utc(boards.as_of)}"
        if boards.as_of is not None
        else "No scoring run has finished yet"
    )
    body = [
        f"<header><h1>{escape(heading)}</h1>",
        f'<p class="meta"><strong>{escape(phase)}</strong> {escape(source)}; page generated '
        f"at {escape(utc(generated))} by scorer {escape(__version__)}.</p></header>",
    ]
    if boards.stale is not None:
        body.append(f'<p class="stale" role="status">{escape(stale(boards))}</p>')
    body += boards_html(boards)
    return document(f"{heading} ({boards.phase} phase)", body)


def boards_html(boards: Boards) -> list[str]:
    """The boards' part of a page: the legend, each board, the notes (the server's page
    shows them too)."""
    return [
        '<div class="legend" id="legend">',
        f'<span><span class="swatch"></span>Tiers: {escape(SHADING)}.</span>',
        "<span>Chart: the team's score (dot) and its 95% interval (bar), on the board's "
        "common axis.</span>",
        "</div>",
        *[_section(board) for board in boards_of(boards)],
        *([] if boards.forecast is None else [_forecast(boards.forecast)]),
        '<section class="notes">',
        *[
            f"<p>{line}</p>"
            for line in notes(
                boards, team=lambda name: f"<bdi>{escape(shown(name))}</bdi>", plain=escape
            )
        ],
        "</section>",
    ]


def document(title_text: str, body: list[str], style: str = "") -> str:
    """A complete HTML document: inline CSS (the boards' and `style`), no script."""
    return "\n".join(
        [
            "<!DOCTYPE html>",
            '<html lang="en">',
            "<head>",
            '<meta charset="utf-8">',
            '<meta name="viewport" content="width=device-width, initial-scale=1">',
            f"<title>{escape(title_text)}</title>",
            f"<style>{_STYLE}{style}</style>",
            "</head>",
            "<body>",
            *body,
            "</body>",
            "</html>",
            "",
        ]
    )


def _section(board: Board) -> str:
    cols = columns(board)
    lo, hi = _scale(board)
    head = "".join(f'<th class="{justify}">{escape(h)}</th>' for h, justify in cols)
    axis = (
        f"<span>{lo:.{INTERVAL_DECIMALS}f}</span><span>{hi:.{INTERVAL_DECIMALS}f}</span>"
        if board.rows
        else ""
    )
    head += f'<th>Interval chart<div class="axis-label">{axis}</div></th>'
    rows = []
    for row in board.rows:
        tds = []
        for (header, justify), value in zip(cols, cells(board, row), strict=True):
            if header == "Team":
                tds.append(f'<td class="team"><bdi>{escape(value)}</bdi></td>')
            else:
                wraps = " wraps" if header in WRAPS else ""
                tds.append(f'<td class="{justify}{wraps}">{escape(value)}</td>')
        tds.append(f'<td class="chart">{_chart(row, lo, hi)}</td>')
        css = ' class="shaded"' if row.tier % 2 == 0 else ""
        rows.append(f"<tr{css}>{''.join(tds)}</tr>")
    if not board.rows:
        rows.append(f'<tr><td colspan="{len(cols) + 1}">No scored submission yet.</td></tr>')
    return "\n".join(
        [
            f'<section id="{escape(board.name)}">',
            f"<h2>{escape(title(board))}</h2>",
            '<div class="board">',  # a phone scrolls the table, never the page
            "<table>",
            f"<thead><tr>{head}</tr></thead>",
            "<tbody>",
            *rows,
            "</tbody>",
            "</table>",
            "</div>",
            "</section>",
        ]
    )


def _forecast(found: Forecasted) -> str:
    """The forecast of the private board as a table (after the reveal, with the ranks got)."""
    cols = forecast_columns(found)
    head = "".join(f'<th class="{justify}">{escape(h)}</th>' for h, justify in cols)
    rows = []
    for row in found.rows:
        tds = [
            f'<td class="team"><bdi>{escape(value)}</bdi></td>'
            if header == "Team"
            else f'<td class="{justify}">{escape(value)}</td>'
            for (header, justify), value in zip(cols, forecast_cells(found, row), strict=True)
        ]
        rows.append(f"<tr>{''.join(tds)}</tr>")
    return "\n".join(
        [
            '<section id="forecast">',
            f"<h2>{escape(forecast_title(found))}</h2>",
            '<div class="board">',
            f"<table><thead><tr>{head}</tr></thead><tbody>",
            *rows,
            "</tbody></table>",
            "</div>",
            "</section>",
        ]
    )


def _scale(board: Board) -> tuple[float, float]:
    """The common axis of a board's charts: from the lowest to the highest interval end."""
    values = [v for row in board.rows for v in (row.low, row.high, row.score) if v is not None]
    if not values:
        return 0.0, 1.0
    lo, hi = min(values), max(values)
    if hi - lo < 1e-9:
        lo, hi = lo - 0.01, hi + 0.01
    return lo, hi


def _x(value: float, lo: float, hi: float) -> float:
    return PAD + (value - lo) / (hi - lo) * (CHART_WIDTH - 2 * PAD)


def _chart(row: Row, lo: float, hi: float) -> str:
    mid = CHART_HEIGHT / 2
    label = f"{shown(row.team)}: {row.score:.6f}"
    if row.low is not None and row.high is not None:
        label += f" (95% interval {row.low:.4f} – {row.high:.4f})"
    parts = [
        f'<svg width="{CHART_WIDTH}" height="{CHART_HEIGHT}" '
        f'viewBox="0 0 {CHART_WIDTH} {CHART_HEIGHT}" role="img">',
        f"<title>{escape(label)}</title>",
        f'<line class="axis" x1="{PAD}" y1="{mid}" x2="{CHART_WIDTH - PAD}" y2="{mid}"/>',
    ]
    if row.low is not None and row.high is not None:
        parts.append(
            f'<line class="range" x1="{_x(row.low, lo, hi):.1f}" y1="{mid}" '
            f'x2="{_x(row.high, lo, hi):.1f}" y2="{mid}"/>'
        )
    parts.append(f'<circle class="point" cx="{_x(row.score, lo, hi):.1f}" cy="{mid}" r="4"/>')
    parts.append("</svg>")
    return "".join(parts)
