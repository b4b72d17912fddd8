"""The library's entry points: validate a submission, or validate and score it."""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar, cast

import polars as pl

from scorer.competition import LOST_ITEMS, Competition
from scorer.contract import (
    Role,
    Solution,
    check_against,
    check_submission,
    solution_of,
    targets_of,
)
from scorer.errors import UsageError
from scorer.parts import Plan, plan, run
from scorer.prepared import loaded
from scorer.read import DEFAULT_LIMITS, Limits, Table, TableLike
from scorer.scoring import NoLost, ScoreResult, aggregate, ignored, per_user

R = TypeVar("R")


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

    Returns the number of ranked items checked (rows of the long format); raises
    `SubmissionError` listing every problem of the submission, or `HostError` when the targets
    or solution file itself is broken. `parts` as for `score`.
    """
    if (targets is None) == (solution is None):
        raise UsageError("give exactly one of targets or solution")
    if solution is not None:
        solution = loaded(solution, competition)
    competition = _competition(solution, competition)

    def check(users: pl.Series, table: Table) -> int:
        return check_submission(table, users).height  # the ranked items, in either format

    if solution is None:
        count = _plan(submission, targets, parts, limits, Role.TARGETS)
        done = run(
            submission,
            cast(TableLike, targets),
            Role.TARGETS,
            competition,
            count,
            limits,
            targets_of,
            check,
            len,
        )
    else:
        _, done = _against(
            submission,
            solution,
            competition,
            limits,
            parts,
            lambda truth, table: check(truth.targets, table),
        )
    return sum(done)


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

    `solution`: a file, a frame, a `Solution` already read, or a prepared file
    (`scorer.prepared`, loaded whole). `competition`: the rules (`scorer.Competition`; a
    `Solution` already read carries its own). `no_lost` says how a target user with no lost
    pairs counts: "zero" (default) or "exclude". `parts`: read two CSV files by user in this
    many parts, one at a time, in memory bounded by one part (same rules, messages and
    bits); by default as many as keep the estimated memory within `limits.max_memory`
    (`scorer.parts.plan`).
    Nothing is scored unless every rule holds (`SubmissionError` otherwise).
    """
    policy = NoLost.of(no_lost)
    solution = loaded(solution, competition)  # a prepared file is a `Solution`, read whole
    competition = _competition(solution, competition)

    def score_part(truth: Solution, table: Table) -> tuple[pl.DataFrame, int, bool]:
        return per_user(check_against(table, truth), truth, policy), ignored(truth), truth.has_split

    count, done = _against(submission, solution, competition, limits, parts, score_part)
    users = pl.concat([frame for frame, _, _ in done]).sort("user_id") if count > 1 else done[0][0]
    return ScoreResult(
        splits=aggregate(users, any(has_split for _, _, has_split in done)),
        per_user=users,
        no_lost=policy,
        ignored=sum(left_out for _, left_out, _ in done),
        competition=competition,
        parts=count,
    )


def _against(
    submission: TableLike,
    solution: TableLike | Solution,
    competition: Competition,
    limits: Limits,
    parts: int | None,
    check: Callable[[Solution, Table], R],
) -> tuple[int, list[R]]:
    """`check` the submission against the solution in the parts `plan` gives (a `Solution`
    read already is used as it is); the number of parts and what each gave."""
    ready = isinstance(solution, Solution)
    done = run(
        submission,
        solution,
        Role.SOLUTION,
        competition,
        _plan(submission, solution, parts, limits, Role.SOLUTION),
        limits,
        solution_of,
        check,
        lambda truth: truth.targets.len(),
        ready=ready,
    )
    return len(done), done  # the parts read: more than planned if the careful reader needed them


def _competition(solution: object, competition: Competition) -> Competition:
    """The rules to apply: a `Solution` read already was read by its competition's."""
    if isinstance(solution, Solution):
        if competition is not LOST_ITEMS and competition != solution.competition:
            raise UsageError("the solution was read for another competition")
        return solution.competition
    return competition


def _plan(
    submission: TableLike, truth: object, parts: int | None, limits: Limits, role: Role
) -> Plan:
    try:
        return plan(submission, truth, parts, limits, role)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
