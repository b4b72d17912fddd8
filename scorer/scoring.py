"""Vectorised scores: per-user metrics of a valid submission, and their means per split."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from fractions import Fraction
from functools import cache
from itertools import accumulate
from typing import Any

import numpy as np
import polars as pl

from scorer.competition import (
    LOST_ITEMS,
    RANK,
    USER,
    Competition,
    EmptyUsers,
    Metric,
    Split,
    Stage,
)
from scorer.contract import Solution, check_against
from scorer.keys import ITEM_BITS, user_of
from scorer.metrics import discounts
from scorer.read import Table

#: Up to this k, a binary user's DCG and AP are looked up by the bit mask of its hit ranks
#: (tables of 2**k entries: 8 MB each at k = 20); above it they are added up rank by rank,
#: in the same order, so both give the same bits.
MASK_MAX_K = 20


#: The empty-user rule's former name, kept for callers: the same enum, not a second one.
NoLost = EmptyUsers


@dataclass(frozen=True)
class SplitScore:
    """Means of every metric over the users of one split (macro average: users weigh the same)."""

    users: int
    ndcg: float
    recall: float
    precision: float
    hit_rate: float
    mrr: float
    map: float

    def value(self, metric: Metric | str) -> float:
        return float(getattr(self, Metric(metric).value))

    def to_dict(self, competition: Competition = LOST_ITEMS) -> dict[str, float | int]:
        """The users and every metric, named as reports name them (`ndcg@20`)."""
        labels = competition.labels
        return {"users": self.users, **{label: self.value(m) for m, label in labels.items()}}


@dataclass(frozen=True)
class ScoreResult:
    """Scores of one submission: `overall`, `public` and `private` are the competition's
    metric (None where the solution has no such split, or the split scored no user: a mean
    over no users has no value); `splits` has every metric; `per_user` one row a scored
    user, the user in the competition's user column."""

    splits: Mapping[Split, SplitScore | None]
    #: Left out of the repr: a million users' rows are no summary.
    per_user: pl.DataFrame = field(repr=False)
    #: The empty-user rule applied: the competition's, or the caller's override.
    no_lost: EmptyUsers
    ignored: int
    competition: Competition = LOST_ITEMS
    #: How many parts the files were scored in (1: whole).
    parts: int = 1

    def __post_init__(self) -> None:
        # The per-user table leaves the scorer as the competition's files name the user
        # (`user_id` in lost items, `customer_id` in data/hm): it is written as a file.
        name = self.competition.columns.user
        if USER in self.per_user.columns and name != USER:
            object.__setattr__(self, "per_user", self.per_user.rename({USER: name}))

    @property
    def overall(self) -> float | None:
        # None, as `metrics` says, when no user is scored (every one ignored, or excluded
        # under `exclude`): 0.0 would read as a submission that found nothing.
        split = self.splits[Split.OVERALL]
        return split.value(self.competition.metric) if split else None

    @property
    def public(self) -> float | None:
        split = self.splits[Split.PUBLIC]
        return split.value(self.competition.metric) if split else None

    @property
    def private(self) -> float | None:
        split = self.splits[Split.PRIVATE]
        return split.value(self.competition.metric) if split else None

    def to_dict(self) -> dict[str, Any]:
        competition = self.competition
        return {
            "metric": competition.label(competition.metric),
            "k": competition.k,
            "overall": self.overall,
            "public": self.public,
            "private": self.private,
            "users": {
                **{s: (v.users if v else 0) for s, v in self.splits.items()},
                "ignored": self.ignored,
            },
            "metrics": {s: (v.to_dict(competition) if v else None) for s, v in self.splits.items()},
            "no_lost": str(self.no_lost),
            "parts": self.parts,
        }


def per_user(ranked: pl.DataFrame, solution: Solution, no_lost: EmptyUsers) -> pl.DataFrame:
    """Every metric of every scored user, from one join of the submission's `ranked` rows
    (as `check_submission` returns them: keyed by pair) with the lost pairs.

    Each user's sums are exact integers, or added in rank order, so the result is the same
    bit for bit whatever the order of rows or the number of threads.
    """
    k = solution.competition.k
    packed = ranked.schema["pair"] == pl.Int64
    # Both sides sorted by pair: a merge join; its rows stay sorted by pair, so by user.
    # Eager steps: polars' lazy engine took twice as long over the same steps here.
    # The user is read back from the pair, on the matched rows alone.
    matched = ranked.select("pair", RANK).join(solution.lost(packed), on="pair")
    if solution.graded or k > MASK_MAX_K:
        hits = _ordered_hits(matched.with_columns(user_of(packed).alias(USER).set_sorted()), k)
    else:
        hits = _binary_hits(matched, k, packed)
    users = solution.users.filter(
        pl.col("stage").is_null() | (pl.col("stage") != str(Stage.IGNORED))
    )
    every = list(range(k + 1))  # the possible numbers of hits, and of ranks
    if no_lost is EmptyUsers.EXCLUDE:
        users = users.filter(pl.col("n_relevant") > 0)
    relevant = pl.col("n_relevant")
    n_hits = pl.col("hits").fill_null(0)
    # Users in order (the usual solution; text ids' codes always) and hits in user order
    # (the join's rows, in pair order), each flagged so: the joins below then merge, some
    # 15 times faster than hashing a million users.
    if users.get_column(USER).is_sorted():
        users = users.with_columns(pl.col(USER).set_sorted())
    hits = hits.with_columns(pl.col(USER).set_sorted())
    return (
        users.join(hits, on=USER, how="left")
        .join(_idcg(solution), on=USER, how="left")
        .select(
            USER,
            "stage",
            "n_relevant",
            n_hits.alias("hits"),
            pl.when(pl.col("idcg") > 0)
            .then(pl.col("dcg").fill_null(0.0) / pl.col("idcg"))
            .otherwise(0.0)
            .alias("ndcg"),
            pl.when(relevant > 0).then(n_hits / relevant).otherwise(0.0).alias("recall"),
            # Lookups of h / k and 1 / r computed in Python: polars may turn a division by a
            # constant into a multiplication by its inverse, which rounds differently.
            n_hits.replace_strict(every, [h / k for h in every], return_dtype=pl.Float64).alias(
                "precision"
            ),
            (n_hits > 0).cast(pl.Float64).alias("hit_rate"),
            pl.col("first")
            .replace_strict(every, [0.0, *(1 / r for r in every[1:])], return_dtype=pl.Float64)
            .fill_null(0.0)
            .alias("mrr"),
            pl.when(relevant > 0)
            .then(pl.col("ap_sum").fill_null(0.0) / pl.min_horizontal(relevant, pl.lit(k)))
            .otherwise(0.0)
            .alias("map"),
        )
        .sort(USER)
    )


def _binary_hits(matched: pl.DataFrame, k: int, packed: bool) -> pl.DataFrame:
    """Per user, the ranks of its hits as one bit mask (an integer OR of 2**(rank - 1): exact
    in any order), then DCG and AP's numerator looked up by mask in tables built in rank
    order. `matched` is sorted by pair (a merge join's rows), so by user: each user's hits
    are one run, reduced in numpy without a group-by."""
    dcg, ap = _mask_tables(k)
    pairs = matched.get_column("pair")
    users = pairs.to_numpy() >> ITEM_BITS if packed else pairs.struct.field(USER).to_numpy()
    starts = np.flatnonzero(np.concatenate(([users.size > 0], users[1:] != users[:-1])))
    bits = np.left_shift(1, matched.get_column(RANK).to_numpy().astype(np.int64) - 1)
    mask = np.bitwise_or.reduceat(bits, starts) if bits.size else bits
    lowest = mask & -mask  # the first hit's bit
    return pl.DataFrame(
        {
            USER: users[starts],
            "dcg": dcg[mask],
            "hits": np.bitwise_count(mask).astype(np.int64),
            "first": np.bitwise_count(lowest - 1).astype(np.int64) + 1,
            "ap_sum": ap[mask],
        },
        schema={
            USER: pl.Int64,
            "dcg": pl.Float64,
            "hits": pl.Int64,
            "first": pl.Int64,
            "ap_sum": pl.Float64,
        },
    )


@cache
def _mask_tables(k: int) -> tuple[np.ndarray, np.ndarray]:
    """For every mask of hit ranks (bit r-1 for rank r): its DCG (gain 1 · discount, added in
    rank order) and AP's numerator (Σ over hit ranks r of hits up to r / r, in rank order).
    A mask's highest rank is added last: table[m] = table[m without it] + its term."""
    if k > MASK_MAX_K:
        raise ValueError(f"k = {k}: mask tables are for k <= {MASK_MAX_K}")
    disc = discounts(k)
    dcg = np.zeros(1 << k)
    ap = np.zeros(1 << k)
    found = np.zeros(1 << k, dtype=np.int64)
    for r in range(k):  # k ranks, each filling the masks whose highest hit it is
        low, high = 1 << r, 1 << (r + 1)
        dcg[low:high] = dcg[:low] + disc[r]
        found[low:high] = found[:low] + 1
        ap[low:high] = ap[:low] + found[low:high] / (r + 1)
    return dcg, ap


def _ordered_hits(matched: pl.DataFrame, k: int) -> pl.DataFrame:
    """Per user, DCG and AP's numerator of its hits added one by one in rank order: graded
    relevance (a gain per grade), or lists too long for mask tables."""
    return (
        matched.select(USER, RANK, "grade")
        .sort(USER, RANK)
        .group_by(USER, maintain_order=True)
        .agg(
            _ordered_dcg(RANK, k).alias("dcg"),
            pl.len().cast(pl.Int64).alias("hits"),
            pl.col(RANK).first().alias("first"),
            # precision at each hit's rank, added in rank order: AP's numerator
            (pl.int_range(1, pl.len() + 1) / pl.col(RANK)).cum_sum().last().alias("ap_sum"),
        )
    )


def _ordered_dcg(position: str, k: int) -> pl.Expr:
    """Inside a group sorted by `position`: Σ gain(grade) · discount(position), added in
    position order (a cumulative sum is sequential by definition), for positions 1..k."""
    contrib = (pl.lit(2.0).pow(pl.col("grade")) - 1.0) * pl.col(position).replace_strict(
        list(range(1, k + 1)), discounts(k), return_dtype=pl.Float64
    )
    return contrib.cum_sum().last()


def _idcg(solution: Solution) -> pl.DataFrame:
    """IDCG@K per user, added in position order exactly as DCG is, so a perfect ranking scores
    1.0 to the bit. Binary grades: the running sum of the discounts, looked up by the number of
    lost pairs (at most k). Graded: each user's grades, highest first. The binary table's
    users are flagged sorted when they are (the usual solution), for `per_user`'s join."""
    k = solution.competition.k
    if not solution.graded:
        n = pl.min_horizontal("n_relevant", pl.lit(k))
        sums = list(accumulate(discounts(k), initial=0.0))
        idcg = n.replace_strict(list(range(k + 1)), sums, return_dtype=pl.Float64)
        ordered = solution.users.get_column(USER).is_sorted()
        user = pl.col(USER).set_sorted() if ordered else pl.col(USER)
        return solution.users.select(user, idcg.alias("idcg"))
    ideal = (
        solution.pairs.lazy()
        .select(USER, "grade")
        .sort(USER, pl.col("grade"), descending=[False, True])
        .group_by(USER, maintain_order=True)
        .agg(pl.col("grade").head(k), pl.int_range(1, pl.len() + 1).head(k).alias("position"))
        .explode("grade", "position")
        .group_by(USER, maintain_order=True)
        .agg(_ordered_dcg("position", k).alias("idcg"))
    )
    return (
        solution.users.lazy()
        .select(USER)
        .join(ideal, on=USER, how="left")
        .with_columns(pl.col("idcg").fill_null(0.0))
        .collect()
    )


#: What one part's scoring gives: its per-user table, the target users it leaves out of
#: every split, and whether its solution has a split.
PartScores = tuple[pl.DataFrame, int, bool]


def part_scores(truth: Solution, table: Table, no_lost: EmptyUsers) -> PartScores:
    """Check one part of a submission against its part of the solution, and score it; its
    users as the files write them (text ids are numbered only while scored)."""
    users = per_user(check_against(table, truth), truth, no_lost)
    if truth.codes is not None and truth.codes.users is not None:
        # in the order of their text, as integer users are in the order of their value
        users = users.with_columns(truth.codes.users_of(users.get_column(USER))).sort(USER)
    return users, ignored(truth), truth.has_split


def combined(done: list[PartScores], no_lost: EmptyUsers, competition: Competition) -> ScoreResult:
    """The result of a submission scored in parts (one or more): the parts' per-user tables
    in user order, and the exact means over them, the same bits in any number of parts."""
    users = pl.concat([frame for frame, _, _ in done]).sort(USER) if len(done) > 1 else done[0][0]
    return ScoreResult(
        splits=aggregate(users, any(has_split for _, _, has_split in done)),
        per_user=users,
        no_lost=no_lost,
        ignored=sum(left_out for _, left_out, _ in done),
        competition=competition,
        parts=len(done),
    )


def ignored(solution: Solution) -> int:
    """How many target users the solution leaves out of every split ('ignored' stage)."""
    return int(solution.users.select((pl.col("stage") == str(Stage.IGNORED)).sum()).item() or 0)


def aggregate(per_user_frame: pl.DataFrame, has_split: bool) -> dict[Split, SplitScore | None]:
    """Mean of each metric per split: each sum exact, then rounded once (as `math.fsum`
    rounds), so the same bits whatever the order of users. A split with no users, or any
    split without a split column, is None."""
    stage = pl.col("stage")
    codes = per_user_frame.select(
        pl.when(stage == str(Stage.PUBLIC))
        .then(0)
        .when(stage == str(Stage.PRIVATE))
        .then(1)
        .otherwise(2)
    )
    code = codes.to_series().to_numpy().astype(np.int64)
    counts = np.bincount(code, minlength=3)
    sums = {m: _exact_sums(per_user_frame.get_column(m).to_numpy(), code) for m in Metric}
    splits: dict[Split, SplitScore | None] = {}
    for split, parts in ((Split.OVERALL, [0, 1, 2]), (Split.PUBLIC, [0]), (Split.PRIVATE, [1])):
        n = int(counts[parts].sum()) if split is Split.OVERALL or has_split else 0
        splits[split] = (
            SplitScore(users=n, **{m.value: float(sum(sums[m][parts])) / n for m in Metric})
            if n
            else None
        )
    return splits


#: Bits of each piece a 53-bit mantissa is cut into: float64 sums of 2**35 pieces of 18 bits
#: stay below 2**53, so they are exact.
_PIECE = 18

#: frexp's exponents of finite float64 values lie in -1073..1024.
_LOWEST, _EXPONENTS = -1073, 2098


def _exact_sums(values: np.ndarray, code: np.ndarray) -> np.ndarray:
    """The exact sum of `values` for each code 0..2, as Fractions (float() of one rounds it
    correctly, as `math.fsum` does): each value is an integer mantissa times a power of two;
    mantissas are added per (code, exponent) in 18-bit pieces, exactly, in any order."""
    if not np.isfinite(values).all():  # no metric is; kept exact and rounded once all the same
        return np.array([Fraction(math.fsum(values[code == c].tolist())) for c in range(3)])
    mantissa, exponent = np.frexp(values)
    whole = np.ldexp(mantissa, 53).astype(np.int64)
    bins = code * _EXPONENTS + (exponent - _LOWEST)
    sums = np.zeros(3, dtype=object)
    sums[:] = [Fraction(0)] * 3
    for shift in (0, _PIECE, 2 * _PIECE):
        piece = whole >> shift if shift == 2 * _PIECE else (whole >> shift) & ((1 << _PIECE) - 1)
        totals = np.bincount(bins, weights=piece, minlength=3 * _EXPONENTS)
        for at in np.flatnonzero(totals):
            c, exp = divmod(int(at), _EXPONENTS)
            sums[c] += Fraction(int(totals[at])) * Fraction(2) ** (exp + _LOWEST - 53 + shift)
    return sums
