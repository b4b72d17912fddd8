"""The boards as one self-contained static HTML page: inline CSS and SVG, no external asset."""

from __future__ import annotations

from html import escape

from scorer.leaderboard.boards import Board, Boards, Phase, Row
from scorer.leaderboard.wording import (
    INTERVAL_DECIMALS,
    boards_of,
    cells,
    columns,
    notes,
    title,
)

#: Size of each row's interval chart, in CSS pixels.
CHART_WIDTH, CHART_HEIGHT = 240, 18
PAD = 8

_STYLE = """
body { font-family: system-ui, -apple-system, "Segoe UI", sans-serif; margin: 2rem auto;
       max-width: 80rem; padding: 0 1rem; color: #1f2328; }
h1 { font-size: 1.6rem; } h2 { font-size: 1.2rem; margin-top: 2rem; }
table { border-collapse: collapse; margin: .5rem 0 1rem; }
th, td { padding: .3rem .6rem; border-bottom: 1px solid #d0d7de; white-space: nowrap; }
th { text-align: left; background: #f6f8fa; }
td.right { text-align: right; font-variant-numeric: tabular-nums; }
td.center { text-align: center; font-variant-numeric: tabular-nums; }
tr.tie td { background: #fff8c5; }
td.chart { padding: 0 .6rem; }
svg .range { stroke: #0969da; stroke-width: 3; stroke-linecap: round; }
svg .point { fill: #1f2328; }
svg .axis { stroke: #d0d7de; stroke-width: 1; }
.axis-label { display: flex; justify-content: space-between; font-weight: normal;
              font-size: .8rem; color: #57606a; }
.phase { font-weight: bold; }
.notes p { color: #57606a; font-size: .9rem; margin: .3rem 0; }
"""


def page(boards: Boards) -> str:
    """A complete HTML document showing the boards of `boards.phase` with interval charts."""
    phase = (
        "Public phase: the private leaderboard is hidden."
        if boards.phase is Phase.PUBLIC
        else "Final phase: public and private leaderboards."
    )
    body = [
        "<h1>Leaderboard</h1>",
        f'<p class="phase">{escape(phase)}</p>',
        *[_section(board) for board in boards_of(boards)],
        '<section class="notes">',
        *[f"<p>{escape(line)}</p>" for line in notes(boards)],
        "</section>",
    ]
    return "\n".join(
        [
            "<!DOCTYPE html>",
            '<html lang="en">',
            "<head>",
            '<meta charset="utf-8">',
            '<meta name="viewport" content="width=device-width, initial-scale=1">',
            f"<title>Leaderboard ({escape(str(boards.phase))} phase)</title>",
            f"<style>{_STYLE}</style>",
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
    head = "".join(f"<th>{escape(h)}</th>" for h, _ in cols)
    axis = (
        f"<span>{lo:.{INTERVAL_DECIMALS}f}</span><span>{hi:.{INTERVAL_DECIMALS}f}</span>"
        if board.rows
        else ""
    )
    head += f'<th>Interval chart<div class="axis-label">{axis}</div></th>'
    rows = []
    for row in board.rows:
        tds = "".join(
            f'<td class="{j}">{escape(c)}</td>'
            for (_, j), c in zip(cols, cells(board, row), strict=True)
        )
        tds += f'<td class="chart">{_chart(row, lo, hi)}</td>'
        css = ' class="tie"' if row.tie_next else ""
        rows.append(f"<tr{css}>{tds}</tr>")
    if not board.rows:
        rows.append(f'<tr><td colspan="{len(cols) + 1}">No scored submission yet.</td></tr>')
    return "\n".join(
        [
            f'<section id="{escape(board.name)}">',
            f"<h2>{escape(title(board))}</h2>",
            "<table>",
            f"<thead><tr>{head}</tr></thead>",
            "<tbody>",
            *rows,
            "</tbody>",
            "</table>",
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
    label = f"{row.team}: {row.score:.6f}"
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
