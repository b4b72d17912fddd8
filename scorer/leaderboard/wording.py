"""Wording shared by every human-readable format: columns, cells, titles and notes."""

from __future__ import annotations

from collections.abc import Iterator

from scorer.competition import Split
from scorer.leaderboard.boards import Board, Boards, Phase, Row
from scorer.leaderboard.schema import Status

#: Decimals of a score on a board meant for people (JSON and CSV keep every digit).
SCORE_DECIMALS = 6
INTERVAL_DECIMALS = 4


def score(value: float) -> str:
    return f"{value:.{SCORE_DECIMALS}f}"


def interval(row: Row) -> str:
    if row.low is None or row.high is None:
        return ""
    return f"{row.low:.{INTERVAL_DECIMALS}f} – {row.high:.{INTERVAL_DECIMALS}f}"


def versus(row: Row) -> str:
    """The test against the next team below: 'tie (p = 0.41)' or 'p = 0.003'."""
    if row.p_next is None:
        return ""
    text = "p < 0.001" if row.p_next < 0.001 else f"p = {row.p_next:.3f}"
    return f"tie ({text})" if row.tie_next else text


def shake(row: Row) -> str:
    if row.shake is None:
        return ""
    return f"+{row.shake}" if row.shake > 0 else "0" if row.shake == 0 else f"−{-row.shake}"


def when(row: Row) -> str:
    return row.submitted_at.strftime("%Y-%m-%d %H:%M:%S")


def title(board: Board) -> str:
    metric = board.metric.upper()
    split = "Public" if board.name == Split.PUBLIC else "Private"
    return f"{split} leaderboard — {metric} on {board.users:,} {board.name} users"


def notes(boards: Boards) -> list[str]:
    """Lines under the boards: the method, who is not ranked, and what is hidden or pending."""
    lines = [
        f"Intervals: 95% bootstrap over users ({boards.resamples:,} resamples, seed "
        f"{boards.seed}).",
        "tie: a paired permutation test cannot tell the team from the next one below (p ≥ 0.05).",
        "Equal scores: the earlier submission ranks first.",
    ]
    if boards.phase is Phase.PUBLIC:
        lines.append("Private leaderboard: hidden until the final phase.")
    for team in boards.unranked:
        why = [
            f"{n} {what}"
            for n, what in (
                (team.rejected, Status.REJECTED),
                (team.failed, Status.FAILED),
                (team.pending, Status.PENDING),
            )
            if n
        ]
        lines.append(f"Not ranked: {team.team} ({', '.join(why) or 'no submission'}).")
    if boards.pending:
        lines.append(
            f"{boards.pending} submission(s) not yet scored under the current solution, "
            "scorer version and options: run `scorer leaderboard score` again."
        )
    return lines


def columns(board: Board) -> list[tuple[str, str]]:
    """(header, justification) of a board's human-readable columns."""
    cols = [
        ("Rank", "right"),
        ("Team", "left"),
        ("NDCG@20", "right"),
        ("95% interval", "center"),
        ("vs next", "left"),
    ]
    if board.name == Split.PRIVATE:
        cols += [("Public rank", "right"), ("Shake-up", "right"), ("Pick", "left")]
    return [*cols, ("Submitted (UTC)", "left"), ("Entries", "right")]


def cells(board: Board, row: Row) -> list[str]:
    values = [str(row.rank), row.team, score(row.score), interval(row), versus(row)]
    if board.name == Split.PRIVATE:
        values += [str(row.public_rank), shake(row), str(row.pick)]
    return [*values, when(row), str(row.entries)]


def boards_of(boards: Boards) -> Iterator[Board]:
    yield boards.public
    if boards.private is not None:
        yield boards.private
