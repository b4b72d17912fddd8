"""How sure a board is: seeded bootstrap intervals, paired tests between neighbours and the
tiers they make."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from scorer.board import BoardRules, Correction
from scorer.leaderboard.groups import grouped

#: Coverage of each team's interval.
LEVEL = 0.95

#: Bootstrap resamples.
RESAMPLES = 1_000

#: The default seed: the same database and seed give the same intervals.
SEED = 0

#: Resamples x users held in memory at once (8 bytes each): bounds memory, not results.
CHUNK_CELLS = 4_000_000

#: The name of the test between neighbours, as outputs state it.
TEST = "paired t-test over the board's users, two-sided"

#: Slack under which a mean difference counts as none, so that float rounding never makes
#: two identical submissions look different.
TOLERANCE = 1e-12


@dataclass(frozen=True)
class Confidence:
    """In board order: `low`/`high`, each team's interval; `p_next[i]`, the paired test of
    team i against team i + 1 (the next one below), and `p_adjusted[i]` the same corrected
    for the board's number of tests (`rules.correction`); `tier[i]`, team i's tier, 1 at the
    top, one more below each gap that is significant and at least `rules.tie_margin`."""

    low: np.ndarray
    high: np.ndarray
    p_next: np.ndarray
    p_adjusted: np.ndarray
    tier: np.ndarray
    level: float
    resamples: int
    seed: int
    rules: BoardRules


def analyse(
    values: np.ndarray,
    *,
    resamples: int = RESAMPLES,
    seed: int = SEED,
    level: float = LEVEL,
    rules: BoardRules | None = None,
) -> Confidence:
    """`values`: per-user scores, one row a user and one column a team in board order (the
    users of one split, the same users for every team, so every comparison is paired)."""
    if values.ndim != 2:
        raise ValueError(f"values has {values.ndim} dimensions; expected users × teams")
    if resamples < 1:
        raise ValueError(f"resamples = {resamples}; expected at least 1")
    if not 0 < level < 1:
        raise ValueError(f"level = {level}; expected it in (0, 1)")
    rules = rules if rules is not None else BoardRules()
    low, high = bootstrap_interval(values, resamples=resamples, seed=seed, level=level)
    p_next = paired_p(values)
    p_adjusted = adjusted(p_next, rules.correction)
    return Confidence(
        low=low,
        high=high,
        p_next=p_next,
        p_adjusted=p_adjusted,
        tier=tiers(values.mean(axis=0) if len(values) else low, p_adjusted, rules),
        level=level,
        resamples=resamples,
        seed=seed,
        rules=rules,
    )


def bootstrap_means(values: np.ndarray, *, resamples: int, seed: int) -> np.ndarray:
    """Each team's mean over `resamples` bootstrap samples of the users (resamples x teams).

    A sample draws n users with replacement; the same sample serves every team (paired). It is
    held as counts, one row a sample, so a team's mean is a matrix product: counts @ values / n.
    Beyond `groups.GROUPS` users, groups of a random deal are drawn instead (`groups`): a mean
    is then counts @ sums / counts @ sizes, at a cost that no longer grows with the users.
    """
    n, teams = values.shape
    means = np.full((resamples, teams), np.nan)
    if n == 0 or teams == 0:
        return means
    sums, sizes = grouped(values, seed=seed)
    units = sums.shape[0]
    rng = np.random.default_rng([seed, 0])
    step = max(1, CHUNK_CELLS // units)
    for start in range(0, resamples, step):  # chunks of samples, never a loop over users
        rows = min(step, resamples - start)
        picks = rng.integers(0, units, size=(rows, units)) + (np.arange(rows) * units)[:, None]
        counts = np.bincount(picks.ravel(), minlength=rows * units).reshape(rows, units)
        weights = counts.astype(np.float64)
        drawn = n if units == n else (weights @ sizes)[:, None]
        means[start : start + rows] = weights @ sums / drawn
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


def paired_p(values: np.ndarray) -> np.ndarray:
    """Two-sided p-values of the paired t-test between each team (column i) and the next one
    (column i + 1), over the users (rows): t = mean(d) / (sd(d) / sqrt(n)), n - 1 degrees of
    freedom, d each user's difference. No users, one user, or no difference: p = 1; the same
    nonzero difference for every user: p = 0."""
    n, teams = values.shape
    if teams < 2:
        return np.empty(0)
    if n < 2:
        return np.ones(teams - 1)
    means = values.mean(axis=0)
    mean = means[:-1] - means[1:]  # mean(d), exactly 0 between identical columns
    squares = np.zeros(teams - 1)
    step = max(1, CHUNK_CELLS // teams)
    for start in range(0, n, step):  # chunks of users: the differences never held whole
        block = values[start : start + step]
        squares += np.square(block[:, :-1] - block[:, 1:] - mean).sum(axis=0)
    sd = np.sqrt(squares / (n - 1))
    p = np.ones(teams - 1)
    for i in range(teams - 1):  # one test a gap, never a loop over users
        if abs(mean[i]) <= TOLERANCE:
            continue
        if sd[i] <= TOLERANCE:
            p[i] = 0.0
            continue
        t = mean[i] / (sd[i] / math.sqrt(n))
        p[i] = student_p(t, n - 1)
    return p


def student_p(t: float, df: int) -> float:
    """P(|T| >= |t|) for Student's t with `df` degrees of freedom: the regularised incomplete
    beta I_x(df/2, 1/2) at x = df / (df + t^2)."""
    square = t * t
    return _incomplete_beta(df / (df + square), square / (df + square), df / 2, 0.5)


def _incomplete_beta(x: float, y: float, a: float, b: float) -> float:
    """I_x(a, b), with y = 1 - x given as computed (not as 1 - x, which loses the digits of
    a small y), by its continued fraction (Lentz's method, as in Numerical Recipes §6.4)
    taken on the side where it converges fast."""
    if x <= 0:
        return 0.0
    if y <= 0:
        return 1.0
    log_x = math.log1p(-y) if x > 0.5 else math.log(x)  # the digits of the smaller of x, y
    log_y = math.log1p(-x) if y > 0.5 else math.log(y)
    front = math.exp(a * log_x + b * log_y - _log_beta(a, b))
    if x < (a + 1) / (a + b + 2):
        return front * _fraction(x, a, b) / a
    return 1.0 - front * _fraction(y, b, a) / b


def _log_beta(a: float, b: float) -> float:
    """log B(a, b). For b = 1/2 and a large (Student's t at many degrees of freedom),
    lgamma(a) - lgamma(a + 1/2) cancels all but the last digits of two numbers near a·log(a);
    there log Γ(a + 1/2) / Γ(a) = log(a)/2 - 1/(8a) + 1/(192a³) + O(a⁻⁵) keeps every digit."""
    if b == 0.5 and a > 1_000:
        return math.lgamma(0.5) - (0.5 * math.log(a) - 1 / (8 * a) + 1 / (192 * a**3))
    return math.lgamma(a) + math.lgamma(b) - math.lgamma(a + b)


def _fraction(x: float, a: float, b: float) -> float:
    tiny, c, d = 1e-300, 1.0, 1.0 - (a + b) * x / (a + 1)
    d = 1.0 / (d if abs(d) > tiny else tiny)
    result = d
    for m in range(1, 10_000):
        for numerator in (
            m * (b - m) * x / ((a + 2 * m - 1) * (a + 2 * m)),
            -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 2 * m + 1)),
        ):
            d = 1.0 + numerator * d
            d = 1.0 / (d if abs(d) > tiny else tiny)
            c = 1.0 + numerator / c
            c = c if abs(c) > tiny else tiny
            result *= c * d
        if abs(c * d - 1.0) < 1e-15:
            break
    return result


def adjusted(p: np.ndarray, correction: Correction) -> np.ndarray:
    """The p-values corrected for being m tests at once: Holm's step-down (Holm 1979) or
    Benjamini and Hochberg's step-up (1995), as adjusted p-values (compared with alpha)."""
    m = len(p)
    if m == 0:
        return p.copy()
    order = np.argsort(p, kind="stable")
    ranked = p[order]
    if correction is Correction.HOLM:
        steps = np.maximum.accumulate(ranked * (m - np.arange(m)))
    else:
        steps = np.minimum.accumulate((ranked * m / np.arange(1, m + 1))[::-1])[::-1]
    out = np.empty(m)
    out[order] = np.minimum(steps, 1.0)
    return out


def tiers(scores: np.ndarray, p_adjusted: np.ndarray, rules: BoardRules) -> np.ndarray:
    """Each team's tier in board order: 1 at the top, and one more below each gap between
    neighbours whose corrected p-value is under `alpha` and which is at least `tie_margin`
    (a gap under the margin is one tier whatever the test says)."""
    gaps = np.abs(np.diff(scores)) if len(scores) else np.empty(0)
    split = (p_adjusted < rules.alpha) & (gaps >= rules.tie_margin - TOLERANCE)
    return np.concatenate([[1], 1 + np.cumsum(split)]).astype(np.int64)[: len(scores)]
