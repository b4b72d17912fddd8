"""Text ids numbered once against the solution's, so every rule and metric runs on integers."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import ClassVar

import numpy as np
import polars as pl

from scorer.competition import ITEM, USER, Competition, IdKind
from scorer.read import Table


@dataclass(frozen=True)
class Codes:
    """The dictionaries of a competition's text ids: the users in the order the solution
    first lists them, the items sorted. `users`/`items` is None where that id is an
    integer, and needs none. A submission written in the solution's order of users (one
    made from the targets file) then has its users' codes in order, as the fast paths of
    the rules want them, as an integer file usually has.

    A value not in a dictionary gets a code past its end, one code a distinct text: such an
    item can never be relevant, and two of them are still two items (a repeat is a repeat),
    as such a user is still a user who is no target."""

    users: pl.Series | None
    items: pl.Series | None

    #: The names `frames` gives the dictionaries, as a prepared file stores them.
    FRAMES: ClassVar[tuple[str, str]] = ("user_ids", "item_ids")

    @classmethod
    def of(cls, frame: pl.DataFrame, competition: Competition) -> Codes:
        """The dictionaries of a frame's text ids (a solution's, or a targets file's users;
        with no item column, the items' dictionary is empty)."""
        users = None
        if competition.ids.user is IdKind.TEXT:  # a user's rows come together, as a rule
            users = _heads(frame.get_column(USER)).drop_nulls().unique(maintain_order=True)
        return cls(users=users, items=_items(frame, competition))

    @classmethod
    def number(cls, table: Table) -> tuple[Codes, Table]:
        """The dictionaries of a table's text ids (`of`) and the table numbered by them
        (`table`), in one pass where they can share one: a solution whose users each come
        in one run is numbered by its runs alone."""
        frame = table.frame
        if table.competition.ids.user is not IdKind.TEXT:
            codes = cls.of(frame, table.competition)
            return codes, codes.table(table)
        users = frame.get_column(USER)
        run, starts = _runs(users)
        heads = users.filter(starts)
        if heads.has_nulls() or heads.n_unique() != heads.len():
            codes = cls.of(frame, table.competition)
            return codes, codes.table(table)
        codes = cls(users=heads, items=_items(frame, table.competition))
        run = run.alias(USER)
        numbered = replace(codes, users=None).encode(frame).with_columns(run).rechunk()
        return codes, replace(table, frame=numbered)  # one chunk a column, as `table` says

    def frames(self) -> dict[str, pl.DataFrame]:
        """The dictionaries as frames of one column `id`, named by `FRAMES`."""
        known = dict(zip(self.FRAMES, (self.users, self.items), strict=True))
        return {name: ids.alias("id").to_frame() for name, ids in known.items() if ids is not None}

    @classmethod
    def of_frames(cls, frames: dict[str, pl.DataFrame], competition: Competition) -> Codes | None:
        """The dictionaries `frames` gave back, for `competition` (None when its ids are
        integers); a `ValueError` when they are not the ones its ids need."""
        ids = competition.ids
        wanted = dict(zip(cls.FRAMES, (ids.user, ids.item), strict=True))
        if any((kind is IdKind.TEXT) != (name in frames) for name, kind in wanted.items()):
            raise ValueError("its dictionaries of text ids are not those its rules need")
        if not ids.text:
            return None
        found = {name: frame.to_series() for name, frame in frames.items() if name in wanted}
        return cls(*(found.get(name) for name in cls.FRAMES))

    def encode(self, frame: pl.DataFrame) -> pl.DataFrame:
        """A frame's text ids as their codes (Int64; nulls stay null)."""
        pairs = [(USER, self.users), (ITEM, self.items)]
        return frame.with_columns(
            _encode(frame.get_column(name), known, runs=name == USER)
            for name, known in pairs
            if known is not None and name in frame.columns
        )

    def table(self, table: Table) -> Table:
        """A table with its text ids as codes; its cells' problems are the text's. Its
        columns in one chunk each: the codes come in one, and polars' arithmetic over
        columns chunked differently (a reader's hundreds beside one) costs 5 to 10 times
        that over columns chunked alike."""
        return replace(table, frame=self.encode(table.frame).rechunk())

    def users_of(self, codes: pl.Series) -> pl.Series:
        """Target users' codes as their text again (integer users as they are)."""
        return _decode(codes, self.users)

    def decode(self, frame: pl.DataFrame) -> pl.DataFrame:
        """A frame of the solution's own ids (its users and items) as their text again."""
        pairs = [(USER, self.users), (ITEM, self.items)]
        return frame.with_columns(
            _decode(frame.get_column(name), known) for name, known in pairs if name in frame.columns
        )


def _items(frame: pl.DataFrame, competition: Competition) -> pl.Series | None:
    """The items' dictionary: a frame's distinct text items, sorted (none without an item
    column); None for integer items."""
    if competition.ids.item is not IdKind.TEXT:
        return None
    if ITEM not in frame.columns:
        return pl.Series(ITEM, [], pl.String)
    return frame.get_column(ITEM).drop_nulls().unique().sort()


def _decode(codes: pl.Series, known: pl.Series | None) -> pl.Series:
    return codes if known is None else known.gather(codes).alias(codes.name)


def _encode(values: pl.Series, known: pl.Series, runs: bool = True) -> pl.Series:
    """Each value's place in `known` (distinct values), or for a value not in it a place
    past its end, the same for the same text. A file lists a user's rows together, as a
    rule: each run of one value is looked up once (`runs`: the users; a user's items are
    no runs)."""
    if not runs:
        return _encode_all(values, known)
    run, starts = _runs(values)
    if (int(run[-1]) + 1 if run.len() else 0) * 4 > values.len():
        return _encode_all(values, known)
    heads = values.filter(starts)
    if heads.equals(known, check_names=False):  # the runs are the dictionary, in order
        return run.alias(values.name)
    return _encode_all(heads, known).gather(run).alias(values.name)


def _runs(values: pl.Series) -> tuple[pl.Series, pl.Series]:
    """Each row's run of one value (0, 1, ...: nulls make runs too) and where each run
    starts (the first row always does). polars numbers the runs in one pass over the text,
    three times faster than comparing each value with the one before."""
    run = values.rle_id().cast(pl.Int64)
    ids = run.to_numpy()
    starts = np.concatenate((ids[:1] == 0, ids[1:] != ids[:-1]))
    return run, pl.Series(starts)


def _heads(values: pl.Series) -> pl.Series:
    """One value a run: all the distinct values, far fewer than the rows when a file
    lists each user's rows together."""
    return values.filter(_runs(values)[1])


def _encode_all(values: pl.Series, known: pl.Series) -> pl.Series:
    codes = values.cast(pl.Enum(known), strict=False).to_physical().cast(pl.Int64)
    missing = codes.is_null() & values.is_not_null()
    if missing.any():
        others = values.filter(missing)
        extra = others.unique().sort()
        placed = others.cast(pl.Enum(extra)).to_physical().cast(pl.Int64) + known.len()
        codes = codes.scatter(missing.arg_true(), placed)
    return codes.alias(values.name)
