"""Pair keys: packed or not, with the rank in the key or beside it, the same rows in pair order."""

from __future__ import annotations

from itertools import groupby

import polars as pl
from hypothesis import given, settings
from hypothesis import strategies as st
from support.strategies import user_ids

from scorer.competition import LOST_ITEMS
from scorer.keys import ITEM_BITS, keyed, largest_user, packable, ranked, repeats

RANK_BITS = LOST_ITEMS.rank_bits

#: The largest user_id whose rank still fits in the key's low bits, and the next one.
ROOM = (1 << (63 - ITEM_BITS - RANK_BITS)) - 1


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
        editions = (pair % (1 << ITEM_BITS)).to_list()
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


@st.composite
def laid_out_in_blocks(draw: st.DrawFn) -> tuple[pl.DataFrame, pl.Series, int]:
    """A submission of k rows a user, each user's rows together, users in any order, and its
    targets; then, maybe, one flaw: a rank or an edition repeated, a user's rows apart, a
    user on two blocks, a user missing or not a target, or an id past the packed range."""
    k = draw(st.sampled_from([1, 2, 3, 5]))
    users = draw(user_ids(0, 60, max_size=8))
    rows = []
    for user in users:
        editions = draw(st.lists(st.integers(0, 9), min_size=k, max_size=k, unique=True))
        ranks = draw(st.permutations(range(1, k + 1)))
        rows += [[user, e, r] for e, r in zip(editions, ranks, strict=True)]
    targets = list(users)
    flaw = draw(st.sampled_from(["none", "rank", "edition", "apart", "twice", "set", "far"]))
    at = draw(st.integers(0, len(rows) - 1))
    if flaw == "rank" and k > 1:
        rows[at][2] = rows[at - 1 if at % k else at + 1][2]
    elif flaw == "edition" and k > 1:
        rows[at][1] = rows[at - 1 if at % k else at + 1][1]
    elif flaw == "apart" and len(users) > 1:
        rows.append(rows.pop(0))  # the first user's first row after every other user
    elif flaw == "twice" and len(users) > 1:
        for row in rows[:k]:
            row[0] = users[1]
    elif flaw == "set":
        targets[draw(st.integers(0, len(targets) - 1))] = 61
    elif flaw == "far":
        for row in rows[:k]:
            row[0] = ROOM + 1
    frame = pl.DataFrame(rows, schema=["user_id", "edition_id", "rank"], orient="row")
    return frame, pl.Series("user_id", targets), k


@settings(max_examples=300, deadline=None)
@given(case=laid_out_in_blocks())
def test_a_file_in_blocks_is_keyed_as_the_general_path_keys_it(
    case: tuple[pl.DataFrame, pl.Series, int],
) -> None:
    """The matrix path (`_in_blocks`) answers only for a file that passes every rule, with
    the very pairs and ranks `ranked` gives (the user is in the pair: scoring reads it from
    there); for every other file it steps aside, and it never steps aside for a valid file
    laid out in blocks."""
    from dataclasses import replace

    from scorer.contract.submission import _in_blocks, _passes_screen

    frame, targets, k = case
    competition = replace(LOST_ITEMS, k=k)
    general = ranked(frame, True, competition.rank_bits)
    valid = _passes_screen(general, targets, competition)
    fast = _in_blocks(frame, targets, competition, largest_user(frame))
    users = frame.get_column("user_id").to_list()
    runs = [len(list(run)) for _, run in groupby(users)]
    in_blocks = all(n == k for n in runs) and len(set(users)) == len(runs)
    packed = max(users) < 1 << (63 - ITEM_BITS - competition.rank_bits)
    assert (fast is not None) == (valid and in_blocks and packed)
    if fast is not None:
        assert fast.equals(general.select("pair", "rank"))
        assert fast.get_column("pair").flags["SORTED_ASC"]
