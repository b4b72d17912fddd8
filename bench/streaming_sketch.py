"""A sketch, not the scorer: NDCG@20 of a valid submission as one lazy polars plan, to measure
what the streaming engine costs in time and memory and to check it gives the scorer's bits.

    .venv/bin/python bench/streaming_sketch.py --users 1000000 [--engine streaming|in-memory]

What it does, in the order the plan runs:
1. scans both files with typed schemas (no eager read, no line numbers);
2. a validation screen by aggregates, as `scorer` does: per user the row count, the OR of
   1 << (rank - 1) and the distinct editions; every target user present and no other;
3. marks hits with a semi-join of the submission on the lost pairs, keyed by one packed
   integer (user_id * 2**32 + edition_id, after range checks);
4. per user, the ranks of its hits as one bit mask (an integer sum: exact in any order);
5. NDCG from one lookup table: the DCG of every mask (2**20 entries, built by adding the
   discounts in rank order, so the bits equal `scorer`'s running sum over the hits in rank
   order); IDCG of n lost pairs is the entry of the mask of ranks 1..min(n, K);
6. means per split, exact whatever the order of rows or threads: the plan counts users per
   (stage, mask, n_relevant) and Python sums count x value as exact fractions, rounded once,
   which gives the same bits as `math.fsum` over the per-user values.
Prints one JSON line with the scores, the seconds and the peak RSS of this process.
"""

from __future__ import annotations

import argparse
import json
import math
import resource
import shutil
import sys
import time
from pathlib import Path

import numpy as np
import polars as pl
from generate import DEFAULT_WORK, SCHEMAS, generate

K = 20
ALL_RANKS = (1 << K) - 1


def dcg_table() -> np.ndarray:
    """DCG of every hit mask (bit r-1 set when rank r is a hit), the discounts added in rank
    order: table[m] = table[m without its highest bit] + discount(highest rank)."""
    table = np.zeros(1 << K, dtype=np.float64)
    for r in range(K):
        table[1 << r : 1 << (r + 1)] = table[: 1 << r] + 1.0 / math.log2(r + 2)
    return table


def plans(sub: pl.LazyFrame, sol: pl.LazyFrame) -> tuple[pl.LazyFrame, pl.LazyFrame]:
    """The screen (one row: counts of bad users, which must all be 0, and the id ranges the
    packed key needs) and the users counted per (stage, mask, n_relevant)."""
    per_user = sub.group_by("user_id").agg(
        pl.len().alias("n"),
        pl.lit(2, pl.Int64).pow(pl.col("rank") - 1).bitwise_or().alias("ranks"),
        pl.col("edition_id").n_unique().alias("editions"),
        pl.col("edition_id").min().alias("e_min"),
        pl.col("edition_id").max().alias("e_max"),
    )
    users = sol.group_by("user_id").agg(
        pl.col("stage").first(),
        pl.col("edition_id").count().alias("n_relevant"),
        pl.col("edition_id").min().alias("s_min"),
        pl.col("edition_id").max().alias("s_max"),
    )
    screen = per_user.join(users, on="user_id", how="full", coalesce=False).select(
        ((pl.col("n") != K) | (pl.col("ranks") != ALL_RANKS) | (pl.col("editions") != K))
        .sum()
        .alias("bad_users"),
        pl.col("user_id_right").is_null().sum().alias("unknown_users"),
        pl.col("user_id").is_null().sum().alias("missing_users"),
        pl.min_horizontal(pl.col("user_id").min(), pl.col("user_id_right").min()).alias("u_min"),
        pl.max_horizontal(pl.col("user_id").max(), pl.col("user_id_right").max()).alias("u_max"),
        pl.min_horizontal(pl.col("e_min").min(), pl.col("s_min").min()).alias("e_min"),
        pl.max_horizontal(pl.col("e_max").max(), pl.col("s_max").max()).alias("e_max"),
    )
    packed = (pl.col("user_id") * (1 << 32) + pl.col("edition_id")).alias("key")
    lost = sol.filter(pl.col("edition_id").is_not_null()).select(packed)
    hits = (
        sub.select(packed, "user_id", "rank")
        .join(lost, on="key", how="semi")
        .group_by("user_id")
        .agg(pl.lit(2, pl.Int64).pow(pl.col("rank") - 1).sum().alias("mask"))
    )
    counts = (
        users.join(hits, on="user_id", how="left")
        .with_columns(pl.col("mask").fill_null(0), pl.min_horizontal("n_relevant", pl.lit(K)))
        .group_by("stage", "mask", "n_relevant")
        .len()
    )
    return screen, counts


def means(counts: pl.DataFrame) -> dict[str, float | None]:
    """Mean NDCG per split from the users counted per (stage, mask, n_relevant): each value
    times its count, split into value * 2**k over the bits of the count (each product exact),
    summed by `math.fsum`: the exact sum rounded once, as `math.fsum` over per-user values."""
    table = dcg_table()
    # IDCG of n lost pairs is the DCG of ranks 1..min(n, K) all hits, added the same way.
    ideal = table[(1 << np.arange(K + 1)) - 1]
    result: dict[str, float | None] = {}
    for split in ("overall", "public", "private"):
        part = counts if split == "overall" else counts.filter(pl.col("stage") == split)
        if part.height == 0:
            result[split] = None
            continue
        mask = part.get_column("mask").to_numpy()
        n = part.get_column("n_relevant").to_numpy()
        count = part.get_column("len").to_numpy().astype(np.int64)
        with np.errstate(divide="ignore", invalid="ignore"):
            value = np.where(ideal[n] > 0, table[mask] / ideal[n], 0.0)
        terms = [
            value[(count >> k) & 1 == 1] * float(1 << k)
            for k in range(int(count.max()).bit_length())
        ]
        result[split] = math.fsum(np.concatenate(terms).tolist()) / int(count.sum())
    return result


def by_partitions(
    sub: pl.LazyFrame, sol: pl.LazyFrame, parts: int, folder: Path, engine: str
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """One streaming pass writes each file as Parquet parts by user_id modulo `parts` (a
    user's rows all land in the same part of both files, so every rule and every score is
    decided within a part); then the plans run part by part and their results are combined
    exactly (counts add up, minima and maxima combine)."""
    shutil.rmtree(folder, ignore_errors=True)
    part = ((pl.col("user_id") % parts + parts) % parts).alias("part")
    for name, frame in (("submission", sub), ("solution", sol)):
        frame.with_columns(part).sink_parquet(
            pl.PartitionBy(folder / name, key="part", include_key=False)
        )
    screens, counts = [], []
    for p in range(parts):
        paths = [folder / name / f"part={p}" for name in ("submission", "solution")]
        if not all(path.is_dir() for path in paths):
            if any(path.is_dir() for path in paths):
                raise SystemExit(f"part {p}: users in one file only: not a valid submission")
            continue
        screen, count = plans(*(pl.scan_parquet(path) for path in paths))
        one_screen, one_count = pl.collect_all([screen, count], engine=engine)
        screens.append(one_screen)
        counts.append(one_count)
    shutil.rmtree(folder, ignore_errors=True)
    every = pl.concat(screens)
    screen_frame = every.select(
        pl.col("bad_users", "unknown_users", "missing_users").sum(),
        pl.col("u_min", "e_min").min(),
        pl.col("u_max", "e_max").max(),
    )
    count_frame = pl.concat(counts).group_by("stage", "mask", "n_relevant").agg(pl.col("len").sum())
    return screen_frame, count_frame


def in_memory_by_parts(users: int, seed: int) -> dict[str, float | None]:
    """The means `scorer.api.score` gives, computed part by part: each user's NDCG depends on
    that user's rows only, so the exact sum over all users is the exact sum of the parts'."""
    from generate import PART

    from scorer.api import score
    from scorer.synthetic import make_competition

    values: dict[str, list[float]] = {"public": [], "private": []}
    for offset in range(0, users, PART):
        part = make_competition(min(PART, users - offset), seed=seed, offset=offset)
        per_user = score(part.submission, part.solution).per_user
        for stage, column in values.items():
            column += per_user.filter(pl.col("stage") == stage).get_column("ndcg").to_list()
    every = values["public"] + values["private"]
    return {
        "overall": math.fsum(every) / len(every),
        "public": math.fsum(values["public"]) / len(values["public"]),
        "private": math.fsum(values["private"]) / len(values["private"]),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--users", type=int, default=1_000_000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--work", type=Path, default=DEFAULT_WORK)
    parser.add_argument("--engine", choices=["streaming", "in-memory"], default="streaming")
    parser.add_argument("--parquet", action="store_true")
    parser.add_argument(
        "--partitions",
        type=int,
        default=0,
        help="stream both files once into this many Parquet parts by user (in --work), then "
        "score part by part: memory bounded by the largest part",
    )
    parser.add_argument(
        "--verify-parts",
        action="store_true",
        help="afterwards, score the same users with `scorer.api.score` in memory, one part "
        "(generate.PART users) at a time, and check the means are the same bits",
    )
    args = parser.parse_args(argv)
    data = generate(args.users, seed=args.seed, work=args.work)
    started = time.perf_counter()
    if args.parquet:
        sub = pl.scan_parquet(data / "submission.parquet")
        sol = pl.scan_parquet(data / "solution.parquet")
    else:
        sub = pl.scan_csv(data / "submission.csv", schema=SCHEMAS["submission"])
        sol = pl.scan_csv(data / "solution.csv", schema=SCHEMAS["solution"])
    if args.partitions > 0:
        screen_frame, count_frame = by_partitions(
            sub, sol, args.partitions, data / "parts", args.engine
        )
    else:
        screen, counts = plans(sub, sol)
        screen_frame, count_frame = pl.collect_all([screen, counts], engine=args.engine)
    found = screen_frame.row(0, named=True)
    # The counts are used only if every rule holds and the ids fit the packed key (a key out
    # of range could collide, so its counts would be wrong: they are thrown away).
    if found["bad_users"] or found["unknown_users"] or found["missing_users"]:
        raise SystemExit(f"not a valid submission: {found}")
    if not (0 <= found["u_min"] <= found["u_max"] < 1 << 31):
        raise SystemExit(f"user ids out of the packed key's range: {found}")
    if not (0 <= found["e_min"] <= found["e_max"] < 1 << 32):
        raise SystemExit(f"edition ids out of the packed key's range: {found}")
    result = means(count_frame)
    done = time.perf_counter()
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    if args.verify_parts:
        reference = in_memory_by_parts(args.users, args.seed)
        if reference != result:
            raise SystemExit(f"the sketch gives {result}, scorer.api.score by parts {reference}")
    print(
        json.dumps(
            {
                "tool": f"sketch ({args.engine}"
                + (f", {args.partitions} parts" if args.partitions else "")
                + ")",
                **result,
                "users": {"overall": int(count_frame["len"].sum())},
                "distinct_combinations": count_frame.height,
                "seconds": round(done - started, 2),
                "peak_rss_mb": round(peak_mb),
                "verified_by_parts": args.verify_parts,
            }
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
