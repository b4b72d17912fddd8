"""Wording shared by every human-readable format: columns, cells, titles and notes. A team
name goes through the format's own function (`literal`): it is data, never markup."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from datetime import UTC, datetime

from scorer.board import BoardRules, Correction
from scorer.competition import Split
from scorer.leaderboard.boards import Board, Boards, Row
from scorer.leaderboard.literal import shown
from scorer.leaderboard.outlook import METHOD, Forecasted, Outlook
from scorer.leaderboard.schema import Phase, Status

#: Decimals of a score on a board meant for people (JSON and CSV keep every digit).
SCORE_DECIMALS = 6
INTERVAL_DECIMALS = 4

#: How a format writes a piece of text: a team name, or the scorer's own words.
Writer = Callable[[str], str]

#: What the shading of rows means, in the legend of every format that shades them.
SHADING = "every other tier is shaded"

#: The corrections' names as notes say them.
CORRECTIONS = {Correction.HOLM: "Holm's correction", Correction.BH: "Benjamini–Hochberg's"}


def same(text: str) -> str:
    return text


def score(value: float) -> str:
    return f"{value:.{SCORE_DECIMALS}f}"


def interval(row: Row) -> str:
    if row.low is None or row.high is None:
        return ""
    return f"{row.low:.{INTERVAL_DECIMALS}f} – {row.high:.{INTERVAL_DECIMALS}f}"


def versus(row: Row) -> str:
    """The test against the next team below, corrected: 'p = 0.41' or 'p < 0.001'."""
    if row.p_adjusted is None:
        return ""
    return "p < 0.001" if row.p_adjusted < 0.001 else f"p = {row.p_adjusted:.3f}"


def tier_rule(rules: BoardRules) -> str:
    """How the tiers were made, as every format's notes say it."""
    return (
        "a new tier starts below a gap between neighbours that a paired t-test over the "
        f"users finds significant after {CORRECTIONS[rules.correction]} (α = {rules.alpha:g}; "
        f"'vs next' is that corrected p) and that is at least {rules.tie_margin:g}; teams in "
        "one tier cannot be told apart"
    )


def shake(row: Row) -> str:
    if row.shake is None:
        return ""
    return f"+{row.shake}" if row.shake > 0 else "0" if row.shake == 0 else f"−{-row.shake}"


def when(row: Row) -> str:
    return row.submitted_at.strftime("%Y-%m-%d %H:%M:%S")


def title(board: Board) -> str:
    metric = board.metric.upper()
    split = "Public" if board.name == Split.PUBLIC else "Private"
    if not board.rows:  # the users a board counts are those every ranked team scored on
        return f"{split} leaderboard — {metric}"
    return f"{split} leaderboard — {metric} on {board.users:,} {board.name} users"


def heading(boards: Boards, chosen: str | None = None) -> str:
    """The name a page or a post gives the boards: `--title`, or the competition's."""
    return chosen or f"{boards.competition[:1].upper()}{boards.competition[1:]} leaderboard"


def notes(boards: Boards, team: Writer = shown, plain: Writer = same) -> list[str]:
    """Lines under the boards: whether they are stale, the method, who is not ranked, and
    what is hidden. Team names go through `team`, the scorer's own words through `plain`."""
    lines = []
    if boards.stale is not None:
        lines.append(plain(stale(boards)))
    lines += [
        plain(
            f"Intervals: 95% bootstrap over users ({boards.resamples:,} resamples, seed "
            f"{boards.seed})."
        ),
        plain(f"Tiers: {tier_rule(boards.rules)}."),
        plain("Equal scores: the earlier submission ranks first."),
    ]
    if boards.forecast is not None:
        lines += [plain(line) for line in forecast_notes(boards.forecast)]
    if boards.phase is Phase.PUBLIC:
        lines.append(plain("Private leaderboard: hidden until the final phase."))
    for entry in boards.unranked:
        why = [
            f"{n} {what}"
            for n, what in ((entry.rejected, Status.REJECTED), (entry.failed, Status.FAILED))
            if n
        ]
        if entry.unscored:
            why.append(f"{entry.unscored} scored with no user to score")
        reason = ", ".join(why) or "no submission"
        lines.append(plain("Not ranked: ") + team(entry.team) + plain(f" ({reason})."))
    return lines


def stale(boards: Boards) -> str:
    """Why the boards are not the latest word (see `Stale`)."""
    found = boards.stale
    if found is None:
        return ""
    if found.rescore:
        return (
            f"Being rescored: a new solution came at {utc(found.started_at)}, and every "
            f"submission is judged again against it ({found.judged:,} of {found.total:,} so "
            "far). Until they all are, these boards hold only those judged again."
        )
    source = (
        f"the run that finished at {utc(boards.as_of)}"
        if boards.as_of is not None
        else "no finished run (none has finished yet)"
    )
    return (
        f"Stale: these boards are from {source}. A run started at {utc(found.started_at)} "
        f"for {', '.join(found.reasons)} has not finished: it is under way or was interrupted "
        f"({found.judged:,} of {found.total:,} submissions judged); run `scorer leaderboard "
        "score` to finish it."
    )


def utc(moment: datetime) -> str:
    """A time as the boards print it: `2024-05-01 14:00:00 UTC`."""
    return moment.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def columns(board: Board) -> list[tuple[str, str]]:
    """(header, justification) of a board's human-readable columns."""
    cols = [
        ("Rank", "right"),
        ("Team", "left"),
        (board.metric.upper(), "right"),
        ("Tier", "right"),
        ("95% interval", "center"),
        ("vs next", "left"),
    ]
    if board.name == Split.PRIVATE:
        cols += [("Public rank", "right"), ("Shake-up", "right"), ("Pick", "left")]
    return [*cols, ("Submitted (UTC)", "left"), ("Entries", "right")]


def cells(board: Board, row: Row, team: Writer = shown) -> list[str]:
    values = [str(row.rank), team(row.team), score(row.score), str(row.tier), interval(row)]
    values.append(versus(row))
    if board.name == Split.PRIVATE:
        values += [str(row.public_rank), shake(row), str(row.pick)]
    return [*values, when(row), str(row.entries)]


def forecast_columns(forecast: Forecasted) -> list[tuple[str, str]]:
    """(header, justification) of the forecast's table; the rank got once revealed."""
    level = f"{forecast.level:.0%}"
    cols = [
        ("Public rank", "right"),
        ("Team", "left"),
        (f"Private rank, {level} forecast", "center"),
        ("Median", "right"),
        (f"Private score, {level} forecast", "center"),
    ]
    if forecast.covered is not None:
        cols += [("Private rank got", "right"), ("Inside", "left")]
    return cols


def forecast_cells(forecast: Forecasted, row: Outlook, team: Writer = shown) -> list[str]:
    low, high = row.rank_low, row.rank_high
    ranks = f"{low}" if low == high else f"{low} – {high}"
    values = [str(row.public_rank), team(row.team), ranks, str(row.rank_median)]
    values.append(f"{row.score_low:.{INTERVAL_DECIMALS}f} – {row.score_high:.{INTERVAL_DECIMALS}f}")
    if forecast.covered is not None:
        values += [str(row.private_rank), "yes" if row.inside else "no"]
    return values


def forecast_title(forecast: Forecasted) -> str:
    return f"Forecast of the private leaderboard — from {forecast.public_users:,} public users"


def forecast_notes(forecast: Forecasted) -> list[str]:
    """What the forecast is, and after the reveal how it did."""
    lines = [
        f"Forecast: {forecast.level:.0%} intervals of each team's private rank and score, made "
        f"from the public board alone ({METHOD}; {forecast.resamples:,} resamples, seed "
        f"{forecast.seed}, a private board of {forecast.private_users:,} users)."
    ]
    if forecast.covered is not None:
        lines.append(
            f"{forecast.covered} of {len(forecast.rows)} teams got a private rank inside "
            "their forecast."
        )
    return lines


def boards_of(boards: Boards) -> Iterator[Board]:
    yield boards.public
    if boards.private is not None:
        yield boards.private
