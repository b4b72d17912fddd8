"""Pair keys: packed or not, with the rank in the key or beside it, the same rows in pair order."""

from __future__ import annotations

import polars as pl
from hypothesis import given, settings
from hypothesis import strategies as st

from scorer.competition import LOST_ITEMS
from scorer.keys import EDITION_BITS, keyed, packable, ranked, repeats

RANK_BITS = LOST_ITEMS.rank_bits

#: The largest user_id whose rank still fits in the key's low bits, and the next one.
ROOM = (1 << (63 - EDITION_BITS - RANK_BITS)) - 1


def frames(users: st.SearchStrategy[int]) -> st.SearchStrategy[pl.DataFrame]:
    row = st.tuples(users, st.integers(0, 2**32 - 1), st.integers(1, 20))
    return st.lists(row, min_size=1, max_size=40).map(
        lambda rows: pl.DataFrame(rows, schema=["user_id", "edition_id", "rank"], orient="row")
    )


def plain(frame: pl.DataFrame) -> list[tuple[int, int, int]]:
    """(user_id, edition_id, rank) of every row, in pair order: the obvious way."""
    return sorted(frame.select("user_id", "edition_id", "rank").rows())


def unpacked(rows: pl.DataFrame) -> list[tuple[int, int, int]]:
    pair = rows.get_column("pair")
    if pair.dtype == pl.Int64:
        editions = (pair % (1 << EDITION_BITS)).to_list()
    else:
        editions = pair.struct.field("edition_id").to_list()
    return sorted(zip(rows["user_id"].to_list(), editions, rows["rank"].to_list(), strict=True))


@settings(max_examples=150, deadline=None)
@given(frame=st.one_of(frames(st.integers(0, 50)), frames(st.integers(ROOM - 3, 2**31 - 1))))
def test_every_key_form_holds_the_same_rows_in_pair_order(frame: pl.DataFrame) -> None:
    forms = [
        ranked(frame, False, RANK_BITS),
        keyed(frame, pl.col("rank").cast(pl.Int8), packed=False),
    ]
    if packable(frame):
        forms += [
            ranked(frame, True, RANK_BITS),
            keyed(frame, pl.col("rank").cast(pl.Int8), packed=True),
        ]
    for rows in forms:
        assert unpacked(rows) == plain(frame)
        users = rows.get_column("user_id")
        assert users.to_list() == sorted(users.to_list())
        assert users.flags["SORTED_ASC"] and rows.get_column("pair").flags["SORTED_ASC"]
        duplicated = frame.select(pl.struct("user_id", "edition_id").is_duplicated().any()).item()
        assert repeats(rows) == duplicated


def test_user_ids_past_2_to_the_26_keep_their_rank_beside_the_key() -> None:
    frame = pl.DataFrame(
        {"user_id": [ROOM + 1, ROOM], "edition_id": [7, 2**32 - 1], "rank": [20, 1]}
    )
    rows = ranked(frame, True, RANK_BITS)
    assert rows.select("user_id", "rank").rows() == [(ROOM, 1), (ROOM + 1, 20)]
