"""A defence against probing the public board: the parameter-free Ladder (rounded scores are
`BoardRules.shown`'s)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

# The parameter-free Ladder: Avrim Blum and Moritz Hardt, "The Ladder: A Reliable Leaderboard for
# Machine Learning Competitions", ICML 2015 (arXiv:1502.04585v1, §4 "Parameter-free Ladder", as
# secondary summaries number and quote it; the PDF itself was out of reach), and the authors'
# code, `score!(l::FreeLadder, …)` in github.com/mrtzh/Ladder.jl, src/Ladder.jl (read).
# In losses (lower is better), for a team's submissions f_1, f_2, … on the n public examples:
#
#     R_0 = ∞; no leader
#     for t = 1, 2, …:
#         s = sample standard deviation of the n differences  loss(f_t) - loss(leader)
#         if R_S(f_t) < R_S(leader) - s/√n:        (a one-sided paired t-test: t > 1)
#             leader = f_t;  R_t = [R_S(f_t)]_{1/n}   (the nearest integer multiple of 1/n)
#         else:
#             R_t = R_{t-1}
#
# The first submission always passes (R_0 = ∞). Two readings differ by at most 1/(2n) in the
# threshold: the paper, as quoted, compares with the released R_{t-1}, already rounded; the
# authors' code compares with the leader's exact loss (and releases it unrounded). We compare
# with the leader's exact score, as the code does: the test is then the paired t-test the paper
# names, a submission identical to the leader is never an improvement, and the shown score is a
# function of the leader alone (a server holds only the leader's per-user scores). We round the
# shown score to 1/n, as the paper does: it reveals about log2(n) bits per improvement.
#
# For scores (higher is better), with d = new - leader per user, S = Σd and Q = Σd²:
#     mean(d) > s/√n  ⇔  S > 0 and S²/n > (Q - S²/n)/(n - 1)  ⇔  S > 0 and S² > Q,
# that is Σ_{i≠j} d_i d_j > 0. No square root and no division: the test is exact whenever the
# sums are (scores on a binary grid, as in the tests).


def climb(best: np.ndarray | None, new: np.ndarray) -> tuple[float, bool]:
    """The public score shown for a team's new submission, and whether it became the team's
    best, given the per-user public scores of its best so far (None before its first) and of
    the new one (the same users in the same order).

    The shown score is the best's mean public score rounded to the nearest multiple of 1/n
    (n users; a tie goes to the lower score). Raises ValueError for empty, non-1-D or
    non-finite scores, or scores of unequal length. With one user the standard deviation is
    undefined: as in the authors' code (where it is NaN and compares false), the first
    submission is then shown for good.
    """
    scores = _checked(new, "new")
    if best is None:
        return on_grid(scores), True
    leader = _checked(best, "best")
    if leader.size != scores.size:
        raise ValueError(
            f"best has scores for {leader.size} users and new for {scores.size}; "
            "expected the same users"
        )
    if improves(leader, scores):
        return on_grid(scores), True
    return on_grid(leader), False


def ladder(submissions: Sequence[np.ndarray]) -> list[float]:
    """The shown public score of each of a team's submissions, in submission order: `climb`
    folded over them, each given the per-user public scores of one submission."""
    shown: list[float] = []
    best: np.ndarray | None = None
    for scores in submissions:
        score, became_best = climb(best, scores)
        if became_best:
            best = scores
        shown.append(score)
    return shown


def improves(best: np.ndarray, new: np.ndarray) -> bool:
    """The parameter-free Ladder's test: the mean per-user gain of `new` over `best` exceeds
    its standard error s/√n (s with n - 1 degrees of freedom), computed as S > 0 and S² > Q
    (see above). Arguments as `climb`'s, already checked."""
    gain = new - best
    total = float(np.sum(gain))
    return total > 0 and total * total > float(np.dot(gain, gain))


def on_grid(scores: np.ndarray) -> float:
    """The mean of `scores` rounded to the nearest integer multiple of 1/n, n = len(scores);
    exactly half-way goes down (to the lower score, the larger loss): never flattering."""
    n = scores.size
    total = float(np.sum(scores))
    return float(np.ceil(total - 0.5)) / n


def _checked(values: np.ndarray, name: str) -> np.ndarray:
    """`values` as a 1-D float64 array of at least one finite score, or a ValueError."""
    array = np.asarray(values, dtype=np.float64)
    if array.ndim != 1:
        raise ValueError(f"{name} has {array.ndim} dimensions; expected one score per user")
    if array.size == 0:
        raise ValueError(f"{name} has no users; expected at least one score")
    bad = int(np.count_nonzero(~np.isfinite(array)))
    if bad:
        raise ValueError(f"{name} has {bad} scores that are NaN or infinite; expected numbers")
    return array
