"""The read layer's cell rules: how a cell of text becomes a typed value, or is refused."""

from __future__ import annotations

import re

import polars as pl
from hypothesis import given, settings
from hypothesis import strategies as st

from scorer.read.cells import _INTEGER, integer


@settings(max_examples=300, deadline=None)
@given(
    cells=st.lists(
        st.text(alphabet=[*"0123456789+- \t.e_x", "１", "٣", "\u200b", "\xa0"], max_size=22),
        min_size=1,
        max_size=50,
    )
)
def test_an_integer_cell_is_read_as_its_rule_says(cells: list[str]) -> None:
    """`integer` (polars' parser, a minus sign refused) reads a cell exactly as its rule
    reads it: spaces or tabs around an optional '+' and ASCII digits, within Int64."""

    def by_rule(cell: str) -> int | None:
        text = cell.strip(" \t")
        if not re.fullmatch(_INTEGER.strip("^$"), text, flags=re.ASCII):
            return None
        value = int(text)
        return value if value < 2**63 else None

    read = pl.select(integer(pl.lit(pl.Series(cells, dtype=pl.String)))).to_series().to_list()
    assert read == [by_rule(cell) for cell in cells]
