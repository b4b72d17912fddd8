"""The library's entry points: validate a submission, or validate and score it."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from functools import partial
from typing import Any, TypeVar, cast

import polars as pl

from scorer.competition import LOST_ITEMS, Competition, EmptyUsers
from scorer.contract import Role, Solution, checked_rows
from scorer.errors import UsageError
from scorer.parts import Pair, plan, run
from scorer.prepared import loaded
from scorer.read import DEFAULT_LIMITS, Limits, Table, TableLike
from scorer.scoring import ScoreResult, combined, part_scores

R = TypeVar("R")


@dataclass(frozen=True)
class Validation:
    """What `validate` checked of a valid submission: its ranked items (`rows`, as the long
    format counts them), its users (every target user, the ignored ones included) and the
    competition whose rules it keeps."""

    rows: int
    users: int
    competition: Competition

    def __repr__(self) -> str:
        # The spec's name, not its every field: a summary, as repr(ScoreResult) is.
        return (
            f"Validation(rows={self.rows}, users={self.users}, "
            f"competition={self.competition.name!r})"
        )


def validate(
    submission: TableLike,
    *,
    targets: TableLike | None = None,
    solution: TableLike | Solution | None = None,
    competition: Competition | None = None,
    limits: Limits = DEFAULT_LIMITS,
    parts: int | None = None,
) -> Validation:
    """Check a submission against the target users (from a targets file or a solution).

    Returns a `Validation`: the ranked items checked (rows of the long format), the users
    and the competition; raises
    `SubmissionError` listing every problem of the submission, or `HostError` when the targets
    or solution file itself is broken. `parts` as for `score`.
    """
    if (targets is None) == (solution is None):
        raise UsageError("give exactly one of targets or solution")
    if solution is not None:
        solution, rules = _rules(solution, competition)
        pair = Pair(submission, solution, Role.SOLUTION)
    else:
        rules = LOST_ITEMS if competition is None else competition
        pair = Pair(submission, cast(TableLike, targets), Role.TARGETS)
    done = _run(pair, rules, limits, parts, _rows_and_users)
    return Validation(sum(r for r, _ in done), sum(u for _, u in done), rules)


def _rows_and_users(truth: Solution | pl.Series, table: Table) -> tuple[int, int]:
    """One part's ranked items, and its target users (a valid part lists every one)."""
    users = truth.targets if isinstance(truth, Solution) else truth
    return checked_rows(truth, table), len(users)


def score(
    submission: TableLike,
    solution: TableLike | Solution,
    *,
    competition: Competition | None = None,
    no_lost: EmptyUsers | str | None = None,
    limits: Limits = DEFAULT_LIMITS,
    parts: int | None = None,
) -> ScoreResult:
    """Validate a submission against the solution, then score it: the competition's metric
    (NDCG@20 by default) for the public and private splits and overall, the other metrics,
    and the per-user table.

    `solution`: a file, a frame, a `Solution` already read, or a prepared file
    (`scorer.prepared`, loaded whole). `competition`: the rules (`scorer.Competition`; by default a
    `Solution`'s own, or lost items'). `no_lost` says how a target user with no relevant
    item counts, "zero" or "exclude", overriding the competition's `empty_users`; None (the
    default) applies the competition's rule. `parts`: read two CSV files by user in this
    many parts, one at a time, in memory bounded by one part (same rules, messages and
    bits); by default as many as keep the estimated memory within `limits.max_memory`
    (`scorer.parts.plan`).
    Nothing is scored unless every rule holds (`SubmissionError` otherwise).
    """
    given = None if no_lost is None else EmptyUsers.of(no_lost)  # refused before any reading
    solution, rules = _rules(solution, competition)
    policy = rules.empty_users if given is None else given
    pair = Pair(submission, solution, Role.SOLUTION)
    done = _run(pair, rules, limits, parts, partial(part_scores, no_lost=policy))
    return combined(done, policy, rules)


def _rules(
    solution: TableLike | Solution, competition: Competition | None
) -> tuple[TableLike | Solution, Competition]:
    """The solution as the API takes it (a prepared file loaded whole, a `Solution`) and the
    rules to apply: those given, else a `Solution`'s own (it was read by them), else lost
    items'. Rules given that differ from a `Solution`'s are a usage error, but for the
    empty-user rule, which reading a solution does not use: the rules given apply."""
    solution = loaded(solution, LOST_ITEMS if competition is None else competition)
    if isinstance(solution, Solution):
        if competition is None:
            return solution, solution.competition
        read = solution.competition
        if replace(competition, empty_users=read.empty_users) != read:
            raise UsageError("the solution was read for another competition")
        return replace(solution, competition=competition), competition
    return solution, LOST_ITEMS if competition is None else competition


def _run(
    pair: Pair,
    competition: Competition,
    limits: Limits,
    parts: int | None,
    check: Callable[[Any, Table], R],
) -> list[R]:
    """`check` the submission against the organiser's file in the parts `plan` gives: what
    each part gave (more parts than planned if the careful reader needed them)."""
    try:
        planned = plan(pair.submission, pair.truth, parts, limits, pair.role, competition)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    return run(pair, competition, planned, limits, check)
