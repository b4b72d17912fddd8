"""The library's entry points: validate a submission, or validate and score it."""

from __future__ import annotations

from pathlib import Path

from scorer.competition import LOST_ITEMS, Competition
from scorer.contract import (
    Role,
    Solution,
    check_against,
    check_submission,
    read_solution,
    read_submission,
    read_targets,
)
from scorer.errors import UsageError
from scorer.parts import parts_for, score_in_parts, validate_in_parts
from scorer.read import DEFAULT_LIMITS, Limits, TableLike
from scorer.scoring import NoLost, ScoreResult, aggregate, ignored, per_user


def validate(
    submission: TableLike,
    *,
    targets: TableLike | None = None,
    solution: TableLike | Solution | None = None,
    competition: Competition = LOST_ITEMS,
    limits: Limits = DEFAULT_LIMITS,
    parts: int | None = None,
) -> int:
    """Check a submission against the target users (from a targets file or a solution).

    Returns the number of rows checked; raises `SubmissionError` listing every problem of the
    submission, or `HostError` when the targets or solution file itself is broken. `parts`
    as for `score`.
    """
    if (targets is None) == (solution is None):
        raise UsageError("give exactly one of targets or solution")
    truth = targets if targets is not None else solution
    role = Role.TARGETS if targets is not None else Role.SOLUTION
    competition = _competition(solution, competition)
    count = _parts(submission, parts)
    if count > 1 and isinstance(submission, str | Path) and isinstance(truth, str | Path):
        checked = validate_in_parts(Path(submission), Path(truth), role, count, competition, limits)
        if checked is not None:
            return checked
    if solution is not None:
        users = _solution(solution, competition, limits).targets
    elif targets is not None:
        users = read_targets(targets, limits, competition=competition)
    table = read_submission(submission, limits, competition=competition)
    check_submission(table, users)
    return table.frame.height


def score(
    submission: TableLike,
    solution: TableLike | Solution,
    *,
    competition: Competition = LOST_ITEMS,
    no_lost: NoLost | str = NoLost.ZERO,
    limits: Limits = DEFAULT_LIMITS,
    parts: int | None = None,
) -> ScoreResult:
    """Validate a submission against the solution, then score it: the competition's metric
    (NDCG@20 by default) for the public and private splits and overall, the other metrics,
    and the per-user table.

    `competition`: the rules (`scorer.Competition`; a `Solution` already read carries its
    own). `no_lost` says how a target user with no lost pairs counts: "zero" (default) or
    "exclude". `parts`: split two CSV files by user into this many parts and score them one
    at a time, in memory bounded by one part (same rules, messages and bits); by default 1 up
    to a 1 GiB submission, then one part a 256 MiB (`scorer.parts`).
    Nothing is scored unless every rule holds (`SubmissionError` otherwise).
    """
    policy = NoLost.of(no_lost)
    competition = _competition(solution, competition)
    count = _parts(submission, parts)
    if count > 1 and isinstance(submission, str | Path) and isinstance(solution, str | Path):
        result = score_in_parts(
            Path(submission), Path(solution), count, policy, competition, limits
        )
        if result is not None:
            return result
    truth = _solution(solution, competition, limits)
    table = read_submission(submission, limits, competition=competition)
    users = per_user(check_against(table, truth), truth, policy)
    return ScoreResult(
        splits=aggregate(users, truth.has_split),
        per_user=users,
        no_lost=policy,
        ignored=ignored(truth),
        competition=competition,
    )


def _competition(solution: object, competition: Competition) -> Competition:
    """The rules to apply: a `Solution` read already was read by its competition's."""
    if isinstance(solution, Solution):
        if competition is not LOST_ITEMS and competition != solution.competition:
            raise UsageError("the solution was read for another competition")
        return solution.competition
    return competition


def _solution(solution: TableLike | Solution, competition: Competition, limits: Limits) -> Solution:
    if isinstance(solution, Solution):
        return solution
    return read_solution(solution, limits, competition=competition)


def _parts(submission: TableLike, parts: int | None) -> int:
    """The number of parts asked for, or the default for this submission (`parts_for`)."""
    if parts is None:
        return parts_for(submission)
    if parts < 1:
        raise UsageError(f"parts = {parts}; expected 1 or more")
    return parts
