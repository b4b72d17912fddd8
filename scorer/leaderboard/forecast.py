"""Before the reveal, from the public board alone: 90% intervals of private rank and score.

Most of a shake-up is the noise of the public/private split (Roelofs et al., NeurIPS 2019):
the public and the private boards are two independent samples of users around the same truth,
the competition's population. So a team's private score differs from its public one by the
noise of both samples, not of one. The forecast is a two-level (predictive) bootstrap:

1. the truth: n draws with replacement from the n public users, the uncertainty of the
   public means themselves (where the population's means may be, given the public sample);
2. the private board: `private_users` draws with replacement from that truth, the noise of
   the private sample itself. Each candidate's private score is its mean over those draws,
   a team's score the best of its candidates, and the resample's ranks 1..T follow from the
   scores (higher first, an equal score ranked by team index, as the boards do).

The realised private mean minus the public mean then varies as var/n + var/m, the sum of two
independent samples' variances; a one-level bootstrap (step 2 alone, the public means taken as
the truth) forgets the first term and is about √2 too narrow when m = n. The draws are the
same users for every column (paired), so the correlations between teams, the reason close
teams swap places and distant ones do not, are kept. A score interval is the equal-tailed
percentiles of the resampled scores; a rank interval the shortest run of places that holds
`level` of the resampled ranks (equal tails waste coverage at the ends of the board).

Large boards (`groups`): with more than GROUPS public users, the users are dealt at random
(seeded) into GROUPS groups of equal size (± 1), and groups are resampled instead of users: a
mean is Σ count·sum / Σ count·size, and the private board draws round(private_users · GROUPS / n)
groups. Users are iid draws from the population, so the groups of a random deal are iid too,
and a mean over k groups of n / GROUPS users has the variance of a mean over k·n / GROUPS
users: both levels keep their variance, with GROUPS - 1 degrees of freedom left to estimate
it (about 1% on a standard deviation at 4,096 groups). The cost then no longer grows with n.

Assumptions: the users are an iid sample, split at random; the private board has
`private_users` users of the same population. Not corrected for: a team that picked its
candidates among many submissions by their public score (the public scores of picked
candidates are biased upwards, the forecast takes them at face value), and any difference
between the public and the private populations.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

import numpy as np

from scorer.leaderboard.groups import grouped

#: Coverage of the forecast's intervals.
LEVEL = 0.90

#: Resamples of the two-level bootstrap: a 5% tail then rests on 50 of them.
RESAMPLES = 1_000

#: The default seed: the same input and seed give the same forecast, bit for bit.
SEED = 0

#: Cells (8 bytes each) of one chunk of resamples held at once: bounds memory, not
#: results.
CHUNK_CELLS = 4_000_000


@dataclass(frozen=True)
class Forecast:
    """Per team, in the order of team indices (the public board's order). Ranks are 1-based
    int64, each an observed resampled rank: `rank_low`..`rank_high` is the shortest run of
    places holding at least `level` of the team's resampled ranks and its median (`shortest`:
    ranks are discrete, so it holds more than `level` when a few places share them);
    `rank_mass` the share of resamples it holds, the coverage the forecast itself expects;
    `rank_median` numpy's "lower" median. `score_low` is numpy's "lower" quantile of the
    resampled private scores at (1 - level) / 2, `score_high` its "higher" quantile at
    1 - (1 - level) / 2: equal tails, on scores that are all but continuous. `groups`: how
    many groups of users were resampled, 0 when users were resampled one by one."""

    rank_low: np.ndarray
    rank_high: np.ndarray
    rank_median: np.ndarray
    rank_mass: np.ndarray
    score_low: np.ndarray
    score_high: np.ndarray
    level: float
    resamples: int
    seed: int
    groups: int


def forecast(
    public: np.ndarray,
    teams: np.ndarray,
    private_users: int,
    *,
    level: float = LEVEL,
    resamples: int = RESAMPLES,
    seed: int = SEED,
) -> Forecast:
    """`public`: per-user public scores, one row a public user and one column a candidate
    submission (the same users in every column: paired). `teams`: each column's team index,
    0..T-1, every team with at least one column; index order is the public board's order and
    breaks ties. `private_users`: how many users the private board has.

    With no public user nothing is known: every team's rank interval is 1..T (holding every
    resample, `rank_mass` 1), its median the middle rank (T + 1) // 2, its score interval NaN.
    """
    public = np.asarray(public)
    teams = np.asarray(teams)
    count = check(public, teams, private_users, level=level, resamples=resamples)
    users = public.shape[0]
    if users == 0 or count == 0:
        return nothing(count, level=level, resamples=resamples, seed=seed)
    sums, sizes = grouped(public, seed=seed)
    units = sums.shape[0]
    if units < users:  # groups of a random deal (`groups`): as many of them drawn a board
        draws, groups = max(1, round(private_users * units / users)), units
    else:
        draws, groups = private_users, 0
    if not np.isfinite(sums).all():
        raise ValueError("public has a score that is not a finite number")
    chunk = max(1, CHUNK_CELLS // max(sums.shape[0], sums.shape[1]))
    private = boards(sums.shape[0], draws, resamples=resamples, chunk=chunk, seed=seed)
    scores = resample(sums, sizes, teams, count, private)
    return summarise(within(scores, public, teams), level=level, seed=seed, groups=groups)


def within(scores: np.ndarray, public: np.ndarray, teams: np.ndarray) -> np.ndarray:
    """Each team's resampled scores (resamples x teams) kept within what its columns allow:
    a team's score is the largest of its columns' means, and a mean lies within its values,
    so between the largest of its columns' smallest values and the largest of their largest.
    Only rounding puts one outside, by an ulp (one user's 0.989... resampled as a mean of
    three copies of it); a published interval never does."""
    order = np.argsort(teams, kind="stable")
    starts = np.flatnonzero(np.r_[True, np.diff(teams[order]) != 0])
    low = np.maximum.reduceat(public.min(axis=0)[order], starts)
    high = np.maximum.reduceat(public.max(axis=0)[order], starts)
    clipped: np.ndarray = np.clip(scores, low, high)
    return clipped


def check(
    public: np.ndarray, teams: np.ndarray, private_users: int, *, level: float, resamples: int
) -> int:
    """The number of teams, once every argument is as `forecast` expects; else ValueError."""
    if public.ndim != 2:
        raise ValueError(f"public has {public.ndim} dimensions; expected users × columns")
    if not np.issubdtype(public.dtype, np.number) or np.issubdtype(
        public.dtype, np.complexfloating
    ):
        raise ValueError(f"public holds {public.dtype}; expected real numbers")
    if teams.ndim != 1 or teams.shape[0] != public.shape[1]:
        raise ValueError(
            f"teams has shape {teams.shape}; expected one team index a column ({public.shape[1]},)"
        )
    if teams.size and not np.issubdtype(teams.dtype, np.integer):
        raise ValueError(f"teams holds {teams.dtype}; expected integer team indices")
    if teams.size and teams.min() < 0:
        raise ValueError(f"teams has index {teams.min()}; expected indices 0..T-1")
    columns = np.bincount(teams.astype(np.int64), minlength=0) if teams.size else teams
    if (columns == 0).any():
        missing = int(np.flatnonzero(columns == 0)[0])
        raise ValueError(f"team {missing} has no column; expected every team 0..T-1 to have one")
    if isinstance(private_users, bool) or not isinstance(private_users, int | np.integer):
        raise ValueError(f"private_users = {private_users!r}; expected an integer")
    if private_users < 1:
        raise ValueError(f"private_users = {private_users}; expected at least 1")
    if not 0 < level < 1:
        raise ValueError(f"level = {level}; expected it in (0, 1)")
    if resamples < 1:
        raise ValueError(f"resamples = {resamples}; expected at least 1")
    return int(columns.shape[0])


def nothing(teams: int, *, level: float, resamples: int, seed: int) -> Forecast:
    """The forecast that knows nothing: every rank 1..teams possible, no score."""
    return Forecast(
        rank_low=np.ones(teams, dtype=np.int64),
        rank_high=np.full(teams, teams, dtype=np.int64),
        rank_median=np.full(teams, (teams + 1) // 2, dtype=np.int64),
        rank_mass=np.ones(teams),
        score_low=np.full(teams, np.nan),
        score_high=np.full(teams, np.nan),
        level=level,
        resamples=resamples,
        seed=seed,
        groups=0,
    )


def boards(
    units: int, draws: int, *, resamples: int, chunk: int, seed: int
) -> Iterator[np.ndarray]:
    """The resamples' private boards, `chunk` resamples at a time (rows x units): how many
    times each unit (a user, or a group of users) is on each board.

    A resample's truth is `units` draws with replacement from the units, held as counts
    (bincount of the drawn indices); its private board is `draws` draws from the truth, a
    multinomial with the truth's counts / units as probabilities: the same law as drawing
    `draws` indices from the truth's multiset one by one, without materialising it."""
    rng = np.random.default_rng([seed, 3])
    for start in range(0, resamples, chunk):  # chunks of resamples, never a loop over users
        rows = min(chunk, resamples - start)
        picks = rng.integers(0, units, size=(rows, units)) + (np.arange(rows) * units)[:, None]
        truth = np.bincount(picks.ravel(), minlength=rows * units).reshape(rows, units)
        yield rng.multinomial(draws, truth / units)


def resample(
    sums: np.ndarray,
    sizes: np.ndarray,
    teams: np.ndarray,
    count: int,
    private: Iterable[np.ndarray],
) -> np.ndarray:
    """Each team's private score on each board of `private` (resamples x teams).

    The units are held as sums (units x columns) and sizes; a board, as `boards` yields them,
    is each unit's count on it. A column's mean is then counts @ sums / counts @ sizes, a
    matrix product for a chunk of boards, and a team's score the max over its columns. Apart
    from `boards` so that a test can hand it boards drawn another way."""
    order = np.argsort(teams, kind="stable")
    starts = np.flatnonzero(np.r_[True, np.diff(teams[order]) != 0])
    ordered, size = sums[:, order], sizes.astype(np.float64)
    chunks = []
    for counts in private:
        weights = np.asarray(counts, dtype=np.float64)
        means = (weights @ ordered) / (weights @ size)[:, None]
        chunks.append(np.maximum.reduceat(means, starts, axis=1))
    return np.concatenate(chunks) if chunks else np.empty((0, count))


def summarise(scores: np.ndarray, *, level: float, seed: int, groups: int) -> Forecast:
    """The forecast from the resampled private scores (resamples x teams): percentiles of
    each team's scores and of its ranks, as `Forecast` says."""
    ranks = rank(scores)
    low, high = shortest(ranks, level)
    tail = (1 - level) / 2
    return Forecast(
        rank_low=low,
        rank_high=high,
        rank_median=np.quantile(ranks, 0.5, axis=0, method="lower").astype(np.int64),
        rank_mass=((ranks >= low) & (ranks <= high)).mean(axis=0),
        score_low=np.quantile(scores, tail, axis=0, method="lower"),
        score_high=np.quantile(scores, 1 - tail, axis=0, method="higher"),
        level=level,
        resamples=scores.shape[0],
        seed=seed,
        groups=groups,
    )


def shortest(ranks: np.ndarray, level: float) -> tuple[np.ndarray, np.ndarray]:
    """Each team's shortest run of places that holds at least `level` of its resampled ranks
    (resamples x teams) and its median, as (low, high): a window of ceil(level · R) of the
    sorted ranks, the narrowest, the first (best places) among equally narrow ones.

    Not equal tails: a team near the top of the board has no lower tail to spend, so an
    equal-tailed interval holds 95% of its resamples or more (1..2 for a team first in 93% of
    them, where 1..1 holds 93%). On simulated boards (bench/trust_forecast.py) equal tails
    held 93-98% of the resamples and the realised ranks followed; the shortest run holds
    less, and never under `level`."""
    count, teams = ranks.shape
    need = max(1, min(count, math.ceil(round(level * count, 9))))
    ordered = np.sort(ranks, axis=0)
    median = (count - 1) // 2  # the "lower" median's place: every window holds it
    first = np.arange(max(0, median - need + 1), min(median, count - need) + 1)
    widths = ordered[first + need - 1] - ordered[first]
    best = first[np.argmin(widths, axis=0)]
    columns = np.arange(teams)
    low, high = ordered[best, columns], ordered[best + need - 1, columns]
    return low.astype(np.int64), high.astype(np.int64)


def rank(scores: np.ndarray) -> np.ndarray:
    """Each resample's ranks 1..T (resamples x teams): higher scores first, an equal score
    ranked by team index (a stable sort of the negated scores keeps index order)."""
    order = np.argsort(-scores, axis=1, kind="stable")
    ranks = np.empty_like(order)
    places = np.broadcast_to(np.arange(1, scores.shape[1] + 1), order.shape)
    np.put_along_axis(ranks, order, places, axis=1)
    return ranks
