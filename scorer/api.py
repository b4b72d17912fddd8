"""The library's entry points: validate a submission, or validate and score it."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any, TypeVar, cast

from scorer.competition import LOST_ITEMS, Competition
from scorer.contract import Role, Solution, checked_rows
from scorer.errors import UsageError
from scorer.parts import Pair, plan, run
from scorer.prepared import loaded
from scorer.read import DEFAULT_LIMITS, Limits, Table, TableLike
from scorer.scoring import NoLost, ScoreResult, combined, part_scores

R = TypeVar("R")


def validate(
    submission: TableLike,
    *,
    targets: TableLike | None = None,
    solution: TableLike | Solution | None = None,
    competition: Competition | None = None,
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
        solution, rules = _rules(solution, competition)
        pair = Pair(submission, solution, Role.SOLUTION)
    else:
        rules = LOST_ITEMS if competition is None else competition
        pair = Pair(submission, cast(TableLike, targets), Role.TARGETS)
    return sum(_run(pair, rules, limits, parts, checked_rows))


def score(
    submission: TableLike,
    solution: TableLike | Solution,
    *,
    competition: Competition | None = None,
    no_lost: NoLost | str = NoLost.ZERO,
    limits: Limits = DEFAULT_LIMITS,
    parts: int | None = None,
) -> ScoreResult:
    """Validate a submission against the solution, then score it: the competition's metric
    (NDCG@20 by default) for the public and private splits and overall, the other metrics,
    and the per-user table.

    `solution`: a file, a frame, a `Solution` already read, or a prepared file
    (`scorer.prepared`, loaded whole). `competition`: the rules (`scorer.Competition`; by default a
    `Solution`'s own, or lost items'). `no_lost` says how a target user with no lost
    pairs counts: "zero" (default) or "exclude". `parts`: read two CSV files by user in this
    many parts, one at a time, in memory bounded by one part (same rules, messages and
    bits); by default as many as keep the estimated memory within `limits.max_memory`
    (`scorer.parts.plan`).
    Nothing is scored unless every rule holds (`SubmissionError` otherwise).
    """
    policy = NoLost.of(no_lost)
    solution, rules = _rules(solution, competition)
    pair = Pair(submission, solution, Role.SOLUTION)
    done = _run(pair, rules, limits, parts, partial(part_scores, no_lost=policy))
    return combined(done, policy, rules)


def _rules(
    solution: TableLike | Solution, competition: Competition | None
) -> tuple[TableLike | Solution, Competition]:
    """The solution as the API takes it (a prepared file loaded whole, a `Solution`) and the
    rules to apply: those given, else a `Solution`'s own (it was read by them), else lost
    items'. Rules given that differ from a `Solution`'s are a usage error."""
    solution = loaded(solution, LOST_ITEMS if competition is None else competition)
    if isinstance(solution, Solution):
        if competition is not None and competition != solution.competition:
            raise UsageError("the solution was read for another competition")
        return solution, solution.competition
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
        planned = plan(pair.submission, pair.truth, parts, limits, pair.role)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    return run(pair, competition, planned, limits, check)
