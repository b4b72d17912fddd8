"""How sure a board is: seeded bootstrap intervals and paired permutation tests over users."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

#: Coverage of each team's interval.
LEVEL = 0.95

#: A gap whose two-sided p-value is at least this is flagged as a statistical tie.
ALPHA = 0.05

#: Bootstrap resamples and random sign flips; p-values then move in steps of 1/1001.
RESAMPLES = 1_000

#: The default seed: the same database and seed give the same intervals and p-values.
SEED = 0

#: Resamples x users held in memory at once (8 bytes each): bounds memory, not results.
CHUNK_CELLS = 4_000_000

#: Slack when comparing a permuted mean difference with the observed one, so that float
#: rounding never makes two identical submissions look different.
TOLERANCE = 1e-12


@dataclass(frozen=True)
class Confidence:
    """`low`/`high`: each team's interval, in board order. `p_next[i]`: the paired test of team
    i against team i + 1 (the next one below); `tie_next[i]`: p_next[i] >= alpha."""

    low: np.ndarray
    high: np.ndarray
    p_next: np.ndarray
    tie_next: np.ndarray
    level: float
    resamples: int
    seed: int
    alpha: float


def analyse(
    values: np.ndarray,
    *,
    resamples: int = RESAMPLES,
    seed: int = SEED,
    level: float = LEVEL,
    alpha: float = ALPHA,
) -> Confidence:
    """`values`: per-user scores, one row a user and one column a team in board order (the
    users of one split, the same users for every team, so every comparison is paired)."""
    if values.ndim != 2:
        raise ValueError(f"values has {values.ndim} dimensions; expected users × teams")
    if resamples < 1:
        raise ValueError(f"resamples = {resamples}; expected at least 1")
    if not 0 < level < 1 or not 0 < alpha < 1:
        raise ValueError(f"level = {level}, alpha = {alpha}; expected both in (0, 1)")
    low, high = bootstrap_interval(values, resamples=resamples, seed=seed, level=level)
    p_next = permutation_p(values, resamples=resamples, seed=seed)
    return Confidence(
        low=low,
        high=high,
        p_next=p_next,
        tie_next=p_next >= alpha,
        level=level,
        resamples=resamples,
        seed=seed,
        alpha=alpha,
    )


def bootstrap_means(values: np.ndarray, *, resamples: int, seed: int) -> np.ndarray:
    """Each team's mean over `resamples` bootstrap samples of the users (resamples x teams).

    A sample draws n users with replacement; the same sample serves every team (paired). It is
    held as counts, one row a sample, so a team's mean is a matrix product: counts @ values / n.
    """
    n, teams = values.shape
    means = np.full((resamples, teams), np.nan)
    if n == 0 or teams == 0:
        return means
    rng = np.random.default_rng([seed, 0])
    step = max(1, CHUNK_CELLS // n)
    for start in range(0, resamples, step):  # chunks of samples, never a loop over users
        rows = min(step, resamples - start)
        picks = rng.integers(0, n, size=(rows, n)) + (np.arange(rows) * n)[:, None]
        counts = np.bincount(picks.ravel(), minlength=rows * n).reshape(rows, n)
        means[start : start + rows] = counts.astype(np.float64) @ values / n
    return means


def bootstrap_interval(
    values: np.ndarray, *, resamples: int, seed: int, level: float = LEVEL
) -> tuple[np.ndarray, np.ndarray]:
    """The percentile interval of each team's bootstrap means (2.5% and 97.5% for 95%)."""
    means = bootstrap_means(values, resamples=resamples, seed=seed)
    if values.shape[0] == 0 or values.shape[1] == 0:
        empty = np.full(values.shape[1], np.nan)
        return empty, empty.copy()
    tail = (1 - level) / 2
    low, high = np.quantile(means, [tail, 1 - tail], axis=0)
    return low, high


def permutation_p(values: np.ndarray, *, resamples: int, seed: int) -> np.ndarray:
    """Two-sided p-values of a paired sign-flip permutation test between each team (column i)
    and the next one (column i + 1).

    Null hypothesis: for every user the two teams' scores are exchangeable, so each user's
    difference is as likely to have either sign. Each permutation flips the sign of every
    user's difference at random; p = (1 + permutations whose |mean difference| reaches the
    observed one) / (1 + permutations).
    """
    n, teams = values.shape
    if teams < 2:
        return np.empty(0)
    if n == 0:
        return np.ones(teams - 1)
    diffs = values[:, :-1] - values[:, 1:]
    observed = np.abs(diffs.mean(axis=0)) - TOLERANCE
    reached = np.zeros(teams - 1, dtype=np.int64)
    rng = np.random.default_rng([seed, 1])
    step = max(1, CHUNK_CELLS // n)
    for start in range(0, resamples, step):
        rows = min(step, resamples - start)
        signs = rng.integers(0, 2, size=(rows, n)).astype(np.float64) * 2.0 - 1.0
        permuted = np.abs(signs @ diffs / n)
        reached += (permuted >= observed).sum(axis=0)
    return (reached + 1) / (resamples + 1)
