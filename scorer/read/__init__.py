"""The read layer: a path or a frame in, a typed table with line numbers out.

`read_table` opens a source within `Limits` (`source`), scans a CSV's bytes (`text`), checks
the header (`header`), picks the layout from it (`long` or `wide`) and judges every cell
(`cells`); `split` streams a CSV file into parts by user, each read the same way. A file whose
rows cannot be judged at all raises `Rejected`; every problem of its cells is in the table's
`problems`. Nothing outside this package reads a file's format.
"""

from __future__ import annotations

from pathlib import Path

import polars as pl

from scorer.read import long, parquet, wide
from scorer.read.cells import ITEM, RANK, USER, Kind, Spec, Table, id_kind
from scorer.read.files import (
    check_regular,
    digest,
    inside,
    kind_of,
    kind_of_file,
    open_regular,
    refusal,
    snapshot,
    walk,
)
from scorer.read.frames import to_polars
from scorer.read.header import UsersOnly
from scorer.read.hints import Clues, hinted, reset_index_hint
from scorer.read.limits import DEFAULT_LIMITS, Bound, Limits, NeedsParts, Rejected
from scorer.read.source import TableLike, describe, expanded_size, footprint, opened
from scorer.read.split import Parts, split
from scorer.read.text import scan_text
from scorer.read.wide import to_wide

__all__ = [
    "DEFAULT_LIMITS",
    "ITEM",
    "RANK",
    "USER",
    "Bound",
    "Clues",
    "Kind",
    "Limits",
    "NeedsParts",
    "Parts",
    "Rejected",
    "Spec",
    "Table",
    "TableLike",
    "UsersOnly",
    "check_regular",
    "describe",
    "digest",
    "expanded_size",
    "footprint",
    "hinted",
    "id_kind",
    "inside",
    "kind_of",
    "kind_of_file",
    "open_regular",
    "read_table",
    "refusal",
    "snapshot",
    "split",
    "to_wide",
    "walk",
]


def read_table(
    source: TableLike, spec: Spec, limits: Limits = DEFAULT_LIMITS, *, careful: bool = False
) -> Table:
    """Read a path (CSV, CSV.gz, Parquet) or a polars/pandas frame in the layout its header
    shows; raise `Rejected` for a file whose rows cannot be judged at all. A Parquet file is
    judged from its footer (columns, rows, sizes, header) before any page is decoded.
    `careful`: a CSV file skips the fast paths and is judged line by line as text (the same
    table, slower), as the differential tests need (like sklearn's `ignore_ties`)."""
    file = describe(source)
    limits = limits.for_competition(spec.competition)
    if not isinstance(source, str | Path):
        try:
            return _from_frame(file, to_polars(source, file, limits), spec, limits)
        except Rejected as exc:  # a column kept as the pandas index is named so
            raise Rejected(reset_index_hint(exc.report, source)) from None
    with opened(Path(source), file, limits) as (kind, content):
        if kind == "parquet":
            footer = parquet.inspect(content, file, limits)
            layout = wide if wide.is_wide(footer.names, spec) else long
            layout.check_names(file, footer.names, spec, frame=True)
            frame = parquet.read(content, file, footer, limits, words=spec.of_kind("stage"))
            return _from_frame(file, frame, spec, limits)
        text = scan_text(file, content, limits, blank_long=True, texts=spec.texts)
        if wide.is_wide(text.header, spec):
            return wide.from_text(file, text, spec, limits, careful=careful)
        return long.from_text(file, text, spec, limits, careful=careful)


def _from_frame(file: str, frame: pl.DataFrame, spec: Spec, limits: Limits) -> Table:
    if wide.is_wide(frame.columns, spec):
        return wide.from_frame(file, frame, spec, limits)
    return long.from_frame(file, frame, spec, limits)
