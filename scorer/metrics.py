"""Ranking metrics of one list: the gains, discounts and ideal that every score is built from.

Positions are 1-based ranks. A grade (relevance) is a non-negative integer; binary relevance is
the special case of grades 0 and 1, so the competition's NDCG@20 is `ndcg_at_k` with those.

    gain(g)     = 2**g - 1                  (1 for a binary hit, 0 for a miss)
    discount(r) = 1 / log2(r + 1)           (1 at rank 1, 1/log2(3) at rank 2, …)
    DCG@k       = Σ_{r=1..k} gain(g_r) · discount(r)
    IDCG@k      = DCG@k of all grades sorted from highest to lowest
    NDCG@k      = DCG@k / IDCG@k, or 0.0 when IDCG@k = 0
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache

#: Highest grade accepted: 2**10 - 1 keeps every gain exact in a float.
MAX_GRADE = 10


def gain(grade: int) -> float:
    """The gain of one item: 2**grade - 1, so a binary hit gains exactly 1."""
    return 2.0**grade - 1.0


@cache
def discount(rank: int) -> float:
    """The discount of a 1-based rank: 1 / log2(rank + 1)."""
    return 1.0 / math.log2(rank + 1)


def discounts(k: int) -> list[float]:
    """`discount(r)` for r = 1..k, the table the vectorised path looks ranks up in."""
    return [discount(r) for r in range(1, k + 1)]


def _is_integer(value: object) -> bool:
    """An int or any other integral number (numpy's integers too), but not a bool."""
    if type(value) is int:  # the common case, without the slower abstract-class check
        return True
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)


def _check_grades(rels: Sequence[int], name: str = "rels") -> list[int]:
    grades = list(rels)
    for i, g in enumerate(grades):
        if not _is_integer(g) or not 0 <= g <= MAX_GRADE:
            raise ValueError(f"{name}[{i}] = {g!r}; expected an integer grade 0..{MAX_GRADE}")
    return [int(g) for g in grades]


def _check_k(k: int) -> int:
    if not _is_integer(k) or k < 1:
        raise ValueError(f"k = {k!r}; expected an integer >= 1")
    return int(k)


def dcg_at_k(rels: Sequence[int], k: int) -> float:
    """Σ over the first k grades of gain · discount, summed exactly (`math.fsum`).
    A list shorter than k is used whole."""
    grades = _check_grades(rels)
    _check_k(k)
    return math.fsum(gain(g) * discount(r) for r, g in enumerate(grades[:k], start=1) if g)


def idcg_at_k(ideal: Sequence[int], k: int) -> float:
    """DCG@k of the grades sorted from highest to lowest: the best any ranking can do."""
    return dcg_at_k(sorted(_check_grades(ideal, "ideal"), reverse=True), k)


def ndcg_at_k(rels: Sequence[int], k: int, ideal: Sequence[int] | None = None) -> float:
    """DCG@k / IDCG@k, or 0.0 when IDCG@k is 0 (nothing relevant: no ranking can score).

    `rels` are the grades of the returned items in returned order; `ideal` are the grades of
    every relevant item (default `rels`), so relevant items missing from the list still count
    in the ideal.

    >>> round(ndcg_at_k([3, 2, 3, 0, 1, 2], 6), 4)
    0.9488
    """
    best = idcg_at_k(rels if ideal is None else ideal, k)
    return dcg_at_k(rels, k) / best if best > 0 else 0.0


def hits_at_k(rels: Sequence[int], k: int) -> list[int]:
    """1 where the item at that rank is relevant (grade > 0), for the first k ranks."""
    return [1 if g > 0 else 0 for g in _check_grades(rels)[: _check_k(k)]]


def precision_at_k(rels: Sequence[int], k: int) -> float:
    """Relevant items among the first k, divided by k (a shorter list still divides by k)."""
    return sum(hits_at_k(rels, k)) / k


def _check_relevant(n_relevant: int, rels: Sequence[int]) -> int:
    """`n_relevant` counts every relevant item, so at least those of the list: fewer would
    give a recall or an average precision above 1."""
    listed = sum(1 for g in _check_grades(rels) if g > 0)
    if not _is_integer(n_relevant) or n_relevant < listed:
        raise ValueError(
            f"n_relevant = {n_relevant!r}; expected an integer >= {listed} (the relevant "
            "items of the list)"
        )
    return int(n_relevant)


def recall_at_k(rels: Sequence[int], k: int, n_relevant: int) -> float:
    """Relevant items among the first k, divided by all relevant items; 0.0 when none are."""
    hits = sum(hits_at_k(rels, k))
    total = _check_relevant(n_relevant, rels)
    return hits / total if total else 0.0


def hit_rate_at_k(rels: Sequence[int], k: int) -> float:
    """1.0 when any of the first k items is relevant, else 0.0."""
    return 1.0 if any(hits_at_k(rels, k)) else 0.0


def reciprocal_rank_at_k(rels: Sequence[int], k: int) -> float:
    """1 / the rank of the first relevant item within the first k, or 0.0 (MRR averages it)."""
    for rank, hit in enumerate(hits_at_k(rels, k), start=1):
        if hit:
            return 1.0 / rank
    return 0.0


def average_precision_at_k(rels: Sequence[int], k: int, n_relevant: int | None = None) -> float:
    """Σ over relevant ranks r ≤ k of precision@r, divided by min(n_relevant, k) (MAP averages
    it). `n_relevant` defaults to the relevant items in `rels`; 0.0 when there are none."""
    hits = hits_at_k(rels, k)
    total = (
        sum(1 for g in rels if g > 0) if n_relevant is None else _check_relevant(n_relevant, rels)
    )
    if total == 0:
        return 0.0
    found = 0
    precisions = []
    for rank, hit in enumerate(hits, start=1):
        if hit:
            found += 1
            precisions.append(found / rank)
    return math.fsum(precisions) / min(total, k)


def _check_scores(y_score: Sequence[float]) -> list[float]:
    """Every score as a float; a bool, NaN, non-number or an integer too large for a float is
    a `ValueError` (never an `OverflowError` or a `TypeError` from the comparison)."""
    scores: list[float] = []
    for i, s in enumerate(y_score):
        value = math.nan
        if isinstance(s, numbers.Real) and not isinstance(s, bool):
            try:
                value = float(s)
            except OverflowError:
                raise ValueError(
                    f"y_score[{i}] is an integer of {len(str(s)):,} digits; expected a number "
                    "that fits a float"
                ) from None
        if math.isnan(value):
            raise ValueError(f"y_score[{i}] = {s!r}; expected a number (not NaN)")
        scores.append(value)
    return scores


@dataclass(frozen=True)
class RankingScores:
    """DCG, IDCG and NDCG of one list ranked by predicted scores."""

    dcg: float
    idcg: float
    ndcg: float


def ndcg_from_scores(y_true: Sequence[int], y_score: Sequence[float], k: int) -> RankingScores:
    """Rank items by `y_score` (highest first; ties keep the original order) and score the
    grades `y_true` at cut-off k against the ideal order (grades highest first).

    >>> ndcg_from_scores([3, 2, 0, 1], [0.2, 0.8, 0.8, 0.1], 3).dcg
    6.5
    """
    grades = _check_grades(y_true, "y_true")
    _check_k(k)
    scores = _check_scores(y_score)
    if len(scores) != len(grades):
        raise ValueError(
            f"y_true has {len(grades)} items but y_score has {len(scores)}; expected the same"
        )
    order = sorted(range(len(grades)), key=lambda i: -scores[i])  # sorted() is stable
    ranked = [grades[i] for i in order]
    dcg = dcg_at_k(ranked, k)
    idcg = idcg_at_k(grades, k)
    return RankingScores(dcg=dcg, idcg=idcg, ndcg=dcg / idcg if idcg > 0 else 0.0)
