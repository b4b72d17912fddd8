"""Deterministic synthetic competitions, for the bundled data, the tests and the benchmark."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

import numpy as np
import polars as pl

from scorer.competition import LOST_ITEMS

#: The demo and the synthetic competitions are lost items: 20 ranked editions a user,
#: written with lost items' columns.
K = LOST_ITEMS.k
COLUMNS = LOST_ITEMS.columns

#: Users drawn from one random stream. Block b of a seed is the same whatever the size of the
#: competition, so a large competition can be written in parts of whole blocks (`offset`).
BLOCK = 100_000

#: Resolution of the popularity lookup table (draws are integers into it, not `choice(p=…)`).
_TABLE = 1 << 20

#: How many popular editions the filler of a submission is taken from.
_TOP = 2_000


@dataclass(frozen=True)
class CompetitionFiles:
    """The frames of a competition's files, in lost items' columns: a solution (user,
    item, stage; an empty item for a user with no lost pairs), its targets (user) and a
    valid submission (user, item, rank)."""

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
    n_items: int = 50_000,
    offset: int = 0,
) -> CompetitionFiles:
    """Build a competition of `n_users` target users, split 50/50 public/private.

    Each user loses `min_lost..max_lost` distinct editions drawn from a skewed (Zipf-like)
    popularity curve (a share `empty_share` lose none: one row with an empty edition_id); the
    submission ranks exactly K distinct editions a user at ranks 1..K in random order: each lost
    edition recalled with probability `hit_share` (at most K), the rest filled with popular
    editions, some of which are lost ones too. The same arguments give the same frames.

    `offset` (a multiple of `BLOCK`) skips that many users: the users of
    `make_competition(n, offset=o)` are users o..o+n-1 of a larger competition with the same
    seed, row for row when `n` is a multiple of `BLOCK` too, so files too large for memory can
    be written part by part. Vectorised in numpy: a million users take a few seconds.
    """
    if n_users < 0 or offset < 0 or offset % BLOCK:
        raise ValueError(
            f"n_users = {n_users}, offset = {offset}; expected n_users >= 0 and "
            f"offset a non-negative multiple of {BLOCK}"
        )
    if not 0 <= min_lost <= max_lost <= 10 * K:
        raise ValueError(
            f"min_lost = {min_lost}, max_lost = {max_lost}; expected "
            f"0 <= min_lost <= max_lost <= {10 * K}"
        )
    if not (0.0 <= empty_share <= 1.0 and 0.0 <= hit_share <= 1.0):
        raise ValueError("empty_share and hit_share must lie in 0..1")
    if not max(2 * K, max_lost) <= n_items <= 1 << 24:
        raise ValueError(
            f"n_items = {n_items}; expected {max(2 * K, max_lost)}..{1 << 24} (at least "
            "2K, and at least max_lost)"
        )
    ids, table = _catalogue(seed, n_items)
    parts = [
        _block(
            np.random.default_rng([seed, 1, (offset + start) // BLOCK]),
            offset + start,
            min(BLOCK, n_users - start),
            ids=ids,
            table=table,
            min_lost=min_lost,
            max_lost=max_lost,
            empty_share=empty_share,
            hit_share=hit_share,
        )
        # An empty competition still gets one (empty) block, for frames of the right schema.
        for start in range(0, max(n_users, 1), BLOCK)
    ]
    return CompetitionFiles(
        solution=pl.concat([p.solution for p in parts], rechunk=True),
        targets=pl.concat([p.targets for p in parts], rechunk=True),
        submission=pl.concat([p.submission for p in parts], rechunk=True),
    )


def _catalogue(seed: int, n_items: int) -> tuple[np.ndarray, np.ndarray]:
    """Edition ids from most to least popular, and a lookup table from a uniform integer
    0.._TABLE-1 to a popularity index, for Zipf-like weights 1 / rank**0.8."""
    rng = np.random.default_rng([seed, 0])
    ids = rng.permutation(n_items).astype(np.int64) + 1_000_000
    weights = 1.0 / np.arange(1, n_items + 1) ** 0.8
    cdf = np.cumsum(weights) / weights.sum()
    table = np.searchsorted(cdf, (np.arange(_TABLE) + 0.5) / _TABLE, side="right")
    return ids, np.minimum(table, n_items - 1).astype(np.int32)


def _block(
    rng: np.random.Generator,
    first: int,
    m: int,
    *,
    ids: np.ndarray,
    table: np.ndarray,
    min_lost: int,
    max_lost: int,
    empty_share: float,
    hit_share: float,
) -> CompetitionFiles:
    """Users first..first+m-1 of a competition: the lost pairs, then a submission for them."""
    user_ids = 100_000 + (first + np.arange(m, dtype=np.int64)) * 7
    public = rng.permutation(m) < m // 2
    n_lost = rng.integers(min_lost, max_lost + 1, size=m)
    n_lost[rng.random(m) < empty_share] = 0
    owner, lost = _distinct_draws(rng, n_lost, table)  # sorted by owner

    # The solution: a user's lost pairs, or one row with an empty item.
    rows = np.maximum(n_lost, 1)
    row_start = np.cumsum(rows) - rows
    item = np.zeros(rows.sum(), dtype=np.int64)
    present = np.zeros(rows.sum(), dtype=bool)
    j = _cumcount(owner, m)
    item[row_start[owner] + j] = ids[lost]
    present[row_start[owner] + j] = True
    row_owner = np.repeat(np.arange(m), rows)
    solution = pl.DataFrame(
        {
            COLUMNS.user: user_ids[row_owner],
            COLUMNS.item: item,
            "stage": public[row_owner],
        }
    ).with_columns(
        pl.when(pl.Series(present)).then(pl.col(COLUMNS.item)).alias(COLUMNS.item),
        pl.when(pl.col("stage")).then(pl.lit("public")).otherwise(pl.lit("private")).alias("stage"),
    )

    # Recalled lost editions (at most K a user, in draw order), then filler from a window of
    # 2K consecutive popular editions that skips any edition already recalled.
    recalled = rng.random(owner.size) < hit_share
    r_owner, r_lost = owner[recalled], lost[recalled]
    slot = _cumcount(r_owner, m)
    keep = slot < K
    r_owner, r_lost, slot = r_owner[keep], r_lost[keep], slot[keep]
    n_recalled = np.bincount(r_owner, minlength=m)
    top = max(2 * K, min(ids.size, _TOP))
    start = rng.integers(0, top, size=m)
    taken = np.zeros((m, 2 * K), dtype=bool)
    position = (r_lost - start[r_owner]) % top
    inside = (r_lost < top) & (position < 2 * K)
    taken[r_owner[inside], position[inside]] = True
    free = ~taken
    order = np.cumsum(free, axis=1)
    use = free & (order <= (K - n_recalled)[:, None])
    f_owner, f_pos = np.nonzero(use)
    chosen = np.empty((m, K), dtype=np.int64)
    chosen[r_owner, slot] = r_lost
    chosen[f_owner, n_recalled[f_owner] + order[f_owner, f_pos] - 1] = (
        start[f_owner] + f_pos
    ) % top
    # Random ranks: recalled editions do not always come first.
    shuffle = rng.permuted(np.broadcast_to(np.arange(K), (m, K)), axis=1)
    ranked = np.take_along_axis(chosen, shuffle, axis=1)
    submission = pl.DataFrame(
        {
            COLUMNS.user: np.repeat(user_ids, K),
            COLUMNS.item: ids[ranked.ravel()],
            COLUMNS.rank: np.tile(np.arange(1, K + 1, dtype=np.int64), m),
        }
    )
    return CompetitionFiles(
        solution=solution,
        targets=pl.DataFrame({COLUMNS.user: user_ids}),
        submission=submission,
    )


def _distinct_draws(
    rng: np.random.Generator, counts: np.ndarray, table: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """`counts[u]` distinct popularity indices for every user u, sorted by user, each user's in
    the order they were first drawn. Draws twice as many as needed with replacement and keeps
    the first distinct ones; the rare user left short is drawn again with more."""
    owner, index, got = _first_distinct(rng, counts, 2, table)
    factor = 4
    while (short := np.flatnonzero(got < counts)).size:
        o2, i2, g2 = _first_distinct(rng, counts[short], factor, table)
        drop = np.isin(owner, short)
        owner = np.concatenate([owner[~drop], short[o2]])
        index = np.concatenate([index[~drop], i2])
        order = np.argsort(owner, kind="stable")
        owner, index = owner[order], index[order]
        got[short] = g2
        factor *= 2
        if factor > 1 << 12:
            raise ValueError("the catalogue is too small for that many lost pairs a user")
    return owner, index


def _first_distinct(
    rng: np.random.Generator, counts: np.ndarray, factor: int, table: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    m = counts.size
    draws = factor * counts
    total = int(draws.sum())
    owner = np.repeat(np.arange(m, dtype=np.int64), draws)
    pos = np.arange(total, dtype=np.int64) - np.repeat(np.cumsum(draws) - draws, draws)
    index = table[rng.integers(0, table.size, size=total)].astype(np.int64)
    # Bit fields of one int64 key: owner | index | position (two sorts, no division).
    ib = int(table[-1]).bit_length()
    pb = (int(draws.max()) if m else 1).bit_length()
    imask, pmask = (1 << ib) - 1, (1 << pb) - 1
    # Sort by (owner, index, position) and keep each pair's first draw...
    key = np.sort((owner << (ib + pb)) | (index << pb) | pos, kind="stable")
    pair = key >> pb
    first = np.empty(key.size, dtype=bool)
    first[:1] = True
    np.not_equal(pair[1:], pair[:-1], out=first[1:])
    key = key[first]
    # ...then put each user's distinct editions back in the order they were drawn.
    key = np.sort(
        ((key >> (ib + pb)) << (ib + pb)) | ((key & pmask) << ib) | ((key >> pb) & imask),
        kind="stable",
    )
    owner, index = key >> (ib + pb), key & imask
    keep = _cumcount(owner, m) < counts[owner]
    owner, index = owner[keep], index[keep]
    return owner, index, np.bincount(owner, minlength=m)


def _cumcount(owner: np.ndarray, m: int) -> np.ndarray:
    """0, 1, 2, … within each run of a sorted owner array."""
    sizes = np.bincount(owner, minlength=m)
    return np.arange(owner.size, dtype=np.int64) - np.repeat(np.cumsum(sizes) - sizes, sizes)


#: H&M's competition (Kaggle, 2022): its customers, articles and list length.
HM_USERS, HM_ARTICLES, HM_K = 1_371_980, 105_542, 12


def hm_shaped(n_users: int = HM_USERS, *, seed: int = 3) -> tuple[pl.DataFrame, pl.DataFrame]:
    """A submission at H&M's shape (`customer_id`, `prediction`) and its targets, both sorted
    by customer as a server lists them: `n_users` customers of 64-hex ids (the sha256 of
    their number), each with `HM_K` articles of 10 digits with a leading zero, drawn from
    `HM_ARTICLES` with `make_competition`'s skewed popularity. What the kept form of an
    upload is measured on (`scorer.kept`: its test and bench/kept_bench.py)."""
    made = make_competition(n_users, n_items=HM_ARTICLES, seed=seed)
    hexes = [hashlib.sha256(str(i).encode()).hexdigest() for i in range(n_users)]
    user, item, rank = COLUMNS.user, COLUMNS.item, COLUMNS.rank
    users = pl.DataFrame({user: made.targets[user], "customer_id": hexes})
    article = pl.format("0{}", pl.col(item) - 1_000_000 + 100_000_000)
    submission = (
        made.submission.filter(pl.col(rank) <= HM_K)
        .sort([user, rank])
        .group_by(user, maintain_order=True)
        .agg(article.str.join(" ").alias("prediction"))
        .join(users, on=user)
        .select("customer_id", "prediction")
        .sort("customer_id")
    )
    return submission, users.select("customer_id").sort("customer_id")
