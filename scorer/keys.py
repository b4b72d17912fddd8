"""One key per (user, item) pair, so joins and uniqueness look at one column."""

from __future__ import annotations

import numpy as np
import polars as pl

from scorer.competition import ITEM, RANK, USER

#: Bits for the item id in a packed key: packing is exact while ids fit (checked by `packable`).
ITEM_BITS = 32


def packable(*frames: pl.DataFrame) -> bool:
    """Whether every user id is below 2**31 and every item id below 2**32 in these frames,
    so `pair_key` is a one-to-one Int64 (ids are known to be non-negative here); never for
    text ids (a table reported in the file's own words)."""
    for frame in frames:
        if not all(frame.schema[c].is_integer() for c in (USER, ITEM)):
            return False
        top = frame.select(pl.col(USER).max(), pl.col(ITEM).max()).row(0)
        if (top[0] or 0) >= 1 << (63 - ITEM_BITS) or (top[1] or 0) >= 1 << ITEM_BITS:
            return False
    return True


def pair_key(packed: bool) -> pl.Expr:
    """The pair as one Int64 when `packed`, else as a struct of both ids (slower, any ids).
    Either sorts by user first, then item."""
    if packed:
        return (pl.col(USER) * (1 << ITEM_BITS) + pl.col(ITEM)).alias("pair")
    return pl.struct(USER, ITEM).alias("pair")


def packed_keys(frame: pl.DataFrame, rank_bits: int = 0) -> np.ndarray:
    """The packed pair keys of a frame's rows (`pair_key(True)`), with the rank less 1 in the
    `rank_bits` low bits when they are given (`ranked`), as one new array the caller may sort
    in place. Written chunk by chunk from numpy views of the read columns: one allocation and
    a few passes over it, where a polars expression and its copy to numpy make two of each.
    The ids must fit (`packable`, `rank_rides`) and no cell may be null."""
    columns = [USER, ITEM, RANK] if rank_bits else [USER, ITEM]
    series = [frame.get_column(c) for c in columns]
    chunks = [s.get_chunks() for s in series]
    if any([c.len() for c in part] != [c.len() for c in chunks[0]] for part in chunks):
        chunks = [[s.rechunk()] for s in series]  # chunked apart: one copy each, then views
    keys = np.empty(frame.height, np.int64)
    at = 0
    for pieces in zip(*chunks, strict=True):
        views = [p.to_numpy() for p in pieces]
        # a slice at a time, so that the shifted items' temporary stays small: a fresh
        # column-sized one costs more in page faults than the arithmetic
        for start in range(0, pieces[0].len(), _SLICE):
            user, item, *rank = (v[start : start + _SLICE] for v in views)
            out = keys[at : at + user.size]
            np.left_shift(user, ITEM_BITS + rank_bits, out=out, casting="unsafe")
            shifted = item << rank_bits if rank_bits else item
            np.bitwise_or(out, shifted, out=out, casting="unsafe")
            if rank:
                np.add(out, rank[0], out=out, casting="unsafe")
                out -= 1
            at += user.size
    return keys


#: Rows `packed_keys` computes at a time.
_SLICE = 1 << 18


def keyed(
    frame: pl.DataFrame,
    *columns: str | pl.Expr,
    packed: bool,
    users: bool = True,
    grouped: bool | None = None,
) -> pl.DataFrame:
    """`pair`, `columns` and (with `users`) the user of the frame's rows, sorted by pair, and
    so by user too (both flagged sorted): a repeated pair sits next to its twin, a join of
    two keyed frames merges instead of hashing, and a group-by on the user takes the sorted
    path, whatever the order of the file. Rows already in pair order are not sorted again.
    `grouped`: whether the rows come in user order, when the caller has looked already."""
    whole = not any(frame.get_column(c).has_nulls() for c in (USER, ITEM))
    if packed and grouped and whole and not columns:  # the usual solution: numpy alone
        values = packed_keys(frame)
        if not (values[1:] >= values[:-1]).all():
            values.sort(kind="stable")  # short runs out of order: close to linear (`_sorted`)
        keys = pl.Series("pair", values).set_sorted().to_frame()
        return keys.with_columns(user_of(packed).alias(USER).set_sorted()) if users else keys
    keys = frame.select(pair_key(packed), *columns)
    pair = keys.get_column("pair")
    if pair.is_sorted():  # one pass, cheap next to a sort
        keys = keys.with_columns(pair.set_sorted())
    elif columns:
        keys = keys.sort("pair")
    else:  # the key alone sorts in place, without gathering rows
        if grouped is None:
            grouped = frame.get_column(USER).is_sorted()
        keys = _sorted(pair, grouped).to_frame()
    if not users:
        return keys
    # the user from the sorted key: cheaper than sorting it along
    return keys.with_columns(user_of(packed).alias(USER).set_sorted())


def largest_user(frame: pl.DataFrame) -> int:
    """The largest user id of a frame's rows (0 for none): whether keys have room for more."""
    return int(frame.select(pl.col(USER).max()).item() or 0)


def rank_rides(top: int, rank_bits: int) -> bool:
    """Whether ranks of `rank_bits` ride below packed pairs whose largest user is `top`."""
    return top < 1 << (63 - ITEM_BITS - rank_bits)


def ranked(
    frame: pl.DataFrame, packed: bool, rank_bits: int, top: int | None = None
) -> pl.DataFrame:
    """`keyed` rows of a submission with their rank (an Int8: ranks are at most 100). When
    user ids leave `rank_bits` free below a packed pair (below 2**26 for k = 20, 2**24 for
    k = 100), the rank rides in the low bits of one Int64 key, so one column is sorted and
    the others are read back from it; otherwise rows are sorted with their rank. `top`:
    the frame's `largest_user`, when the caller knows it already."""
    if packed and top is None:
        top = largest_user(frame)
    if not packed or not rank_rides(top or 0, rank_bits):
        return keyed(frame, pl.col(RANK).cast(pl.Int8), packed=packed)
    key = (pair_key(True) * (1 << rank_bits) + (pl.col(RANK) - 1)).alias("key")
    shift = 1 << rank_bits
    grouped = frame.get_column(USER).is_sorted()
    return (
        _sorted(frame.select(key).get_column("key"), grouped)
        .to_frame()
        .select(
            (pl.col("key") // shift).set_sorted().alias("pair"),
            (pl.col("key") % shift + 1).cast(pl.Int8).alias(RANK),
            (pl.col("key") // (shift << ITEM_BITS)).set_sorted().alias(USER),
        )
    )


def _sorted(keys: pl.Series, grouped: bool) -> pl.Series:
    """Integer keys sorted. When their rows come in user order (`grouped`: the usual
    solution file), only each user's own keys are out of order, in short runs that numpy's
    timsort ('stable') merges in close to linear time: 0.2 s for 15.5M keys, where polars'
    sort takes 0.4 s; in any other order, polars' sort (timsort would take 1.5 s)."""
    if not grouped or not keys.dtype.is_integer():
        return keys.sort()
    values = keys.to_numpy(writable=True)  # one copy (a read column's view is one anyway)
    values.sort(kind="stable")
    return pl.Series(keys.name, values).set_sorted()


def user_of(packed: bool) -> pl.Expr:
    """The user back from a `pair_key`."""
    if packed:
        return pl.col("pair") // (1 << ITEM_BITS)
    return pl.col("pair").struct.field(USER)


def item_of(packed: bool) -> pl.Expr:
    """The item back from a `pair_key`."""
    if packed:
        return pl.col("pair") % (1 << ITEM_BITS)
    return pl.col("pair").struct.field(ITEM)


def repeats(frame: pl.DataFrame) -> bool:
    """Whether a `keyed` frame holds a pair twice."""
    pair = frame.get_column("pair")
    if pair.dtype.is_integer():  # without a shifted copy of the column
        values = pair.to_numpy()
        return bool((values[1:] == values[:-1]).any())
    return bool(frame.select((pl.col("pair") == pl.col("pair").shift(1)).any()).item())
