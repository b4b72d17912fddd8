"""Vectorised scores: per-user metrics of a valid submission, and their means per split."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

import polars as pl

from scorer.contract import Solution
from scorer.metrics import discounts, idcg_at_k
from scorer.parse import K

#: The leaderboard metric; the others are diagnostics reported beside it.
PRIMARY = "ndcg"

#: Per-user metric columns, in report order, with the names reports give them.
METRICS: Mapping[str, str] = {
    "ndcg": f"ndcg@{K}",
    "recall": f"recall@{K}",
    "precision": f"precision@{K}",
    "hit_rate": f"hit_rate@{K}",
    "mrr": f"mrr@{K}",
    "map": f"map@{K}",
}

SPLITS = ("overall", "public", "private")


class NoLost(StrEnum):
    """How a target user with no lost pairs counts (IDCG = 0, so no ranking can score).

    `zero`: the formula's own rule, NDCG = 0, and the user counts in every mean (default: every
    target user weighs the same, and a submission cannot profit from such users).
    `exclude`: the user is left out of every mean and of the per-user table.
    """

    ZERO = "zero"
    EXCLUDE = "exclude"


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

    def to_dict(self) -> dict[str, float | int]:
        return {"users": self.users, **{METRICS[m]: getattr(self, m) for m in METRICS}}


@dataclass(frozen=True)
class ScoreResult:
    """Scores of one submission: `overall`, `public` and `private` are NDCG@20 (None where the
    solution has no such split); `splits` has every metric; `per_user` one row a scored user."""

    splits: Mapping[str, SplitScore | None]
    per_user: pl.DataFrame
    no_lost: NoLost
    ignored: int

    @property
    def overall(self) -> float:
        split = self.splits["overall"]
        return split.ndcg if split else 0.0

    @property
    def public(self) -> float | None:
        split = self.splits["public"]
        return split.ndcg if split else None

    @property
    def private(self) -> float | None:
        split = self.splits["private"]
        return split.ndcg if split else None

    def to_dict(self) -> dict[str, Any]:
        return {
            "metric": METRICS[PRIMARY],
            "k": K,
            "overall": self.overall,
            "public": self.public,
            "private": self.private,
            "users": {
                **{s: (v.users if v else 0) for s, v in self.splits.items()},
                "ignored": self.ignored,
            },
            "metrics": {s: (v.to_dict() if v else None) for s, v in self.splits.items()},
            "no_lost": str(self.no_lost),
        }


def per_user(submission: pl.DataFrame, solution: Solution, no_lost: NoLost) -> pl.DataFrame:
    """Every metric of every scored user, from one join of the submission with the lost pairs.

    DCG sums each user's gains in rank order (one column a rank, added left to right), so the
    result is the same bit for bit whatever the order of rows or the number of threads.
    """
    table = pl.DataFrame({"rank": range(1, K + 1), "discount": discounts(K)})
    hits = (
        submission.lazy()
        .select("user_id", "edition_id", "rank")
        .join(solution.pairs.lazy(), on=["user_id", "edition_id"], how="inner")
        .join(table.lazy(), on="rank", how="left")
        .with_columns(
            ((pl.lit(2.0).pow(pl.col("grade")) - 1.0) * pl.col("discount")).alias("contrib")
        )
        .group_by("user_id")
        .agg(
            *[
                pl.col("contrib").filter(pl.col("rank") == r).sum().alias(f"c{r}")
                for r in range(1, K + 1)
            ],
            *[(pl.col("rank") == r).any().cast(pl.Int64).alias(f"h{r}") for r in range(1, K + 1)],
        )
    )
    users = solution.users.lazy().filter(pl.col("stage").is_null() | (pl.col("stage") != "ignored"))
    if no_lost is NoLost.EXCLUDE:
        users = users.filter(pl.col("n_relevant") > 0)
    frame = (
        users.join(hits, on="user_id", how="left")
        .with_columns(pl.col(f"c{r}").fill_null(0.0) for r in range(1, K + 1))
        .with_columns(pl.col(f"h{r}").fill_null(0) for r in range(1, K + 1))
    )
    idcg = _idcg(solution).lazy()
    frame = frame.join(idcg, on="user_id", how="left")
    hit_cols = [pl.col(f"h{r}") for r in range(1, K + 1)]
    cumulative = [pl.sum_horizontal(hit_cols[:r]) for r in range(1, K + 1)]
    n_hits = pl.sum_horizontal(hit_cols)
    ap_sum = pl.sum_horizontal([hit_cols[r - 1] * cumulative[r - 1] / r for r in range(1, K + 1)])
    first = pl.coalesce(
        [pl.when(hit_cols[r - 1] == 1).then(pl.lit(1.0 / r)) for r in range(1, K + 1)]
    )
    relevant = pl.col("n_relevant")
    result = frame.select(
        "user_id",
        "stage",
        "n_relevant",
        n_hits.alias("hits"),
        pl.when(pl.col("idcg") > 0)
        .then(pl.sum_horizontal([pl.col(f"c{r}") for r in range(1, K + 1)]) / pl.col("idcg"))
        .otherwise(0.0)
        .alias("ndcg"),
        pl.when(relevant > 0).then(n_hits / relevant).otherwise(0.0).alias("recall"),
        (n_hits / K).alias("precision"),
        (n_hits > 0).cast(pl.Float64).alias("hit_rate"),
        first.fill_null(0.0).alias("mrr"),
        pl.when(relevant > 0)
        .then(ap_sum / pl.min_horizontal(relevant, pl.lit(K)))
        .otherwise(0.0)
        .alias("map"),
    )
    return result.collect().sort("user_id")


def _idcg(solution: Solution) -> pl.DataFrame:
    """IDCG@K per user. Binary grades: a lookup by the number of lost pairs, from the same
    `idcg_at_k` the list functions use. Graded: each user's grades, highest first."""
    if not solution.graded:
        lookup = pl.DataFrame(
            {"n": range(K + 1), "idcg": [idcg_at_k([1] * n, K) for n in range(K + 1)]}
        )
        return (
            solution.users.select("user_id", pl.min_horizontal("n_relevant", pl.lit(K)).alias("n"))
            .join(lookup, on="n", how="left")
            .select("user_id", "idcg")
        )
    table = pl.DataFrame({"position": range(1, K + 1), "discount": discounts(K)})
    ranked = (
        solution.pairs.lazy()
        .with_columns(
            pl.col("grade").rank("ordinal", descending=True).over("user_id").alias("position")
        )
        .filter(pl.col("position") <= K)
        .with_columns(pl.col("position").cast(pl.Int64))
        .join(table.lazy(), on="position", how="left")
        .with_columns(
            ((pl.lit(2.0).pow(pl.col("grade")) - 1.0) * pl.col("discount")).alias("contrib")
        )
        .group_by("user_id")
        .agg(
            pl.col("contrib").filter(pl.col("position") == p).sum().alias(f"c{p}")
            for p in range(1, K + 1)
        )
        .select(
            "user_id", pl.sum_horizontal(pl.col(f"c{p}") for p in range(1, K + 1)).alias("idcg")
        )
    )
    return (
        solution.users.lazy()
        .select("user_id")
        .join(ranked, on="user_id", how="left")
        .with_columns(pl.col("idcg").fill_null(0.0))
        .collect()
    )


def aggregate(per_user_frame: pl.DataFrame, has_split: bool) -> dict[str, SplitScore | None]:
    """Mean of each metric per split, summed exactly (`math.fsum`): the same bits whatever the
    order of users. A split with no users, or any split without a split column, is None."""
    splits: dict[str, SplitScore | None] = {"overall": _mean(per_user_frame)}
    for stage in ("public", "private"):
        part = per_user_frame.filter(pl.col("stage") == stage)
        splits[stage] = _mean(part) if has_split and part.height else None
    return splits


def _mean(frame: pl.DataFrame) -> SplitScore | None:
    n = frame.height
    if n == 0:
        return None
    return SplitScore(
        users=n,
        **{m: math.fsum(frame.get_column(m).to_list()) / n for m in METRICS},
    )
