"""Deterministic synthetic competitions, for the bundled data, the tests and the benchmark."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import polars as pl

from scorer.parse import K


@dataclass(frozen=True)
class Competition:
    """A solution (user_id, edition_id, stage; empty edition_id for a user with no lost
    pairs), its targets (user_id) and a valid submission (user_id, edition_id, rank)."""

    solution: pl.DataFrame
    targets: pl.DataFrame
    submission: pl.DataFrame


def make_competition(
    n_users: int,
    *,
    seed: int = 0,
    min_lost: int = 1,
    max_lost: int = 30,
    empty_share: float = 0.0,
    hit_share: float = 0.3,
    n_editions: int = 50_000,
) -> Competition:
    """Build a competition of `n_users` target users, split 50/50 public/private.

    Each user loses `min_lost..max_lost` editions drawn from a skewed popularity curve (a
    share `empty_share` lose none); the submission ranks K distinct editions a user, each lost
    edition recalled with probability `hit_share`, the rest filled with popular editions.
    Everything is vectorised, so a million users take a few seconds.
    """
    rng = np.random.default_rng(seed)
    users = 100_000 + np.arange(n_users, dtype=np.int64) * 7
    stage = np.where(rng.permutation(n_users) < n_users // 2, "public", "private")
    n_lost = rng.integers(min_lost, max_lost + 1, size=n_users)
    n_lost[rng.random(n_users) < empty_share] = 0
    ids, weights = _popular(rng, n_editions)

    owner = np.repeat(np.arange(n_users), n_lost)
    # Draw more than needed and keep each user's first distinct editions.
    lost = (
        pl.DataFrame(
            {
                "u": np.concatenate([owner, owner]),
                "edition_id": rng.choice(ids, size=2 * owner.size, p=weights),
            }
        )
        .unique(subset=["u", "edition_id"], keep="first", maintain_order=True)
        .with_columns(pl.int_range(pl.len()).over("u").alias("j"))
        .join(pl.DataFrame({"u": np.arange(n_users), "n": n_lost}), on="u")
        .filter(pl.col("j") < pl.col("n"))
        .select("u", "edition_id")
    )
    frame_users = pl.DataFrame({"u": np.arange(n_users), "user_id": users, "stage": stage})
    solution = (
        frame_users.join(lost, on="u", how="left")
        .sort("u", maintain_order=True)
        .select("user_id", "edition_id", "stage")
    )

    recalled = lost.filter(pl.Series(rng.random(lost.height) < hit_share)).with_columns(
        pl.lit(0).alias("source")
    )
    # 2K distinct popular editions a user, from a random offset into the most popular ones.
    top = ids[: max(2 * K, min(n_editions, 2_000))]
    offsets = np.repeat(rng.integers(0, top.size, size=n_users), 2 * K)
    filler = pl.DataFrame(
        {
            "u": np.repeat(np.arange(n_users), 2 * K),
            "edition_id": top[(offsets + np.tile(np.arange(2 * K), n_users)) % top.size],
            "source": np.ones(n_users * 2 * K, dtype=np.int64),
        }
    )
    ranked = (
        pl.concat([recalled.with_columns(pl.col("source").cast(pl.Int64)), filler])
        .with_columns(pl.Series("noise", rng.random(recalled.height + filler.height)))
        .sort("u", "source", "noise")
        .unique(subset=["u", "edition_id"], keep="first", maintain_order=True)
        .with_columns(pl.int_range(pl.len()).over("u").alias("slot"))
        .filter(pl.col("slot") < K)
        # Recalled editions land at random ranks, not always on top.
        .with_columns(pl.Series("shuffle", rng.random(n_users * K)))
        .with_columns((pl.col("shuffle").rank("ordinal").over("u")).cast(pl.Int64).alias("rank"))
        .join(frame_users, on="u")
        .sort("u", "rank")
        .select("user_id", pl.col("edition_id").cast(pl.Int64), "rank")
    )
    return Competition(
        solution=solution.with_columns(pl.col("edition_id").cast(pl.Int64)),
        targets=frame_users.select("user_id"),
        submission=ranked,
    )


def _popular(rng: np.random.Generator, n_editions: int) -> tuple[np.ndarray, np.ndarray]:
    """Distinct edition ids from most to least popular, with Zipf-like probabilities."""
    ids = rng.permutation(n_editions).astype(np.int64) + 1_000_000
    weights = 1.0 / np.arange(1, n_editions + 1) ** 0.8
    return ids, weights / weights.sum()
