"""One integer key per (user_id, edition_id) pair, so joins and uniqueness hash one column."""

from __future__ import annotations

import polars as pl

#: Bits for edition_id in a packed key: packing is exact while ids fit (checked by `packable`).
EDITION_BITS = 32


def packable(*frames: pl.DataFrame) -> bool:
    """Whether every user_id is below 2**31 and every edition_id below 2**32 in these frames,
    so `pair_key` is a one-to-one Int64 (ids are known to be non-negative here)."""
    for frame in frames:
        top = frame.select(pl.col("user_id").max(), pl.col("edition_id").max()).row(0)
        if (top[0] or 0) >= 1 << (63 - EDITION_BITS) or (top[1] or 0) >= 1 << EDITION_BITS:
            return False
    return True


def pair_key(packed: bool) -> pl.Expr:
    """The pair as one Int64 when `packed`, else as a struct of both ids (slower, any ids)."""
    if packed:
        return (pl.col("user_id") * (1 << EDITION_BITS) + pl.col("edition_id")).alias("pair")
    return pl.struct("user_id", "edition_id").alias("pair")
