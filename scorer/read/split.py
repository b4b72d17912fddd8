"""A CSV file split by user into parts, each read as if it were the whole file.

One streaming pass writes every line below the header, with its line number, into the Parquet
part of its user; a user's lines all land in the same part of every file, because the part is
the user id modulo the number of parts (a cell that is not an id goes by its hash: its line is
a problem wherever it lands). A part is then read by the same readers as a whole file, with
the file's own line numbers, so its problems and scores are the file's, user by user.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import polars as pl

from scorer.errors import Problem
from scorer.read import long, wide
from scorer.read.cells import Spec, Table
from scorer.read.header import no_rows
from scorer.read.limits import Limits, Rejected
from scorer.read.source import describe, open_path
from scorer.read.text import (
    Text,
    cut_to,
    encoding_report,
    long_lines,
    misreadable,
    scan_text,
)
from scorer.read.textcells import fields

#: An id in digits that surely fits an Int64 (leading zeros aside): its value picks the part.
_ID = r"^0*[0-9]{1,18}$"


@dataclass(frozen=True)
class Parts:
    """A file split into `count` parts in `folder`: its name, header, and the problems of the
    file as a whole (lines over the length cap, left out of every part)."""

    file: str
    spec: Spec
    text: Text
    folder: Path
    count: int
    problems: tuple[Problem, ...]

    def table(self, part: int, limits: Limits) -> Table:
        """One part as a table with the file's own line numbers (perhaps with no row)."""
        limits = limits.for_competition(self.spec.competition)
        files = sorted((self.folder / f"_part={part}").glob("*.parquet"))
        if files:  # one user's rows may fill a part: counted from the footers, before reading
            count = pl.scan_parquet(files).select(pl.len()).collect().item()
            limits.check_whole(self.file, count, "one part of the file (by user) has {count} rows")
        lines = (
            pl.read_parquet(files).sort("line")
            if files
            else pl.DataFrame(schema={"line": pl.Int64, "text": pl.String, "cut": pl.Boolean})
        )
        head = ",".join(self.text.header)  # names a spec allows hold no comma nor quote
        body = lines.get_column("text").str.join("\n").item().encode() if lines.height else b""
        data = b"\n".join((head.encode(), body))  # the body's bytes copied once
        text = Text(
            source=data,
            header=self.text.header,
            lines=lines.height + 1,
            # A quote left open anywhere sends the part to the careful reader, as a file.
            lenient=misreadable(body) or data.count(b'"') % 2 == 1,
            quoted=b'"' in data,
            numbers=lines.get_column("line"),
            # its lines over the cap, cut as a whole file's are (reported for the file)
            cut=tuple(lines.filter("cut").get_column("line")),
            plain=self.text.plain,  # its lines are some of the file's
        )
        if wide.is_wide(text.header, self.spec):
            return wide.from_text(self.file, text, self.spec, limits)
        return long.from_text(self.file, text, self.spec, limits)


def split(source: Path, spec: Spec, count: int, folder: Path, limits: Limits) -> Parts:
    """Stream a CSV or CSV.gz file into `count` parts by user (a gzip file is decompressed
    once, into `folder`). A file refused as a whole raises `Rejected`, as when read whole."""
    file = describe(source)
    limits = limits.for_competition(spec.competition)
    folder.mkdir(parents=True, exist_ok=True)
    kind, content = open_path(source, file, limits, inflate_to=folder / "inflated.csv")
    if kind not in ("csv", "csv.gz") or not isinstance(content, Path):
        raise ValueError(f"{file}: only CSV files are read in parts")
    text = scan_text(file, content, limits, texts=spec.texts)
    if isinstance(text.source, bytes):  # bare CR line ends, made newlines: split that text
        content = folder / "newlines.csv"
        content.write_bytes(text.source)
    if wide.is_wide(text.header, spec):
        wide.check(file, text, spec)
    else:
        long.check(file, text, spec)
    user = text.header.index(spec.user)
    line = pl.col("text").str.strip_suffix("\r")
    # Text with no quote splits on every comma: only as far as the user's cell, not a list
    # of every field of 200 million lines (as `fields` would, then `list.get`).
    found = (
        line.str.splitn(",", user + 2).struct.field(f"field_{user}")
        if not text.quoted
        else fields(line, True).list.get(user, null_on_oob=True)
    )
    cell = (
        found.str.strip_chars(" \t")
        .str.strip_chars('"')
        .str.strip_chars(" \t")
        .str.strip_prefix("+")
        .str.replace(r"\.0*$", "")  # '10000.0' is user 10000's row, if a bad cell
    )
    part = (
        pl.when(cell.str.contains(_ID))
        .then(cell.str.to_integer(strict=False) % count)
        .otherwise(cell.hash() % count)
    )
    try:
        (
            pl.scan_lines(content, name="text", row_index_name="line", row_index_offset=1)
            .filter(pl.col("line") > 1, pl.col("text").str.strip_chars().str.len_bytes() > 0)
            # A line over the cap is cut as a whole file's is (`scan_text`): its user cell
            # puts it in its user's part, and there tells that the user is in the file.
            .with_columns(cut=pl.col("text").str.len_bytes() > limits.line_cap)
            .with_columns(
                pl.when("cut")
                .then(_cut(pl.col("text"), cut_to(limits.line_cap)))
                .otherwise(pl.col("text"))
            )
            .select(pl.col("line").cast(pl.Int64), "text", "cut", _part=part.cast(pl.Int64))
            # lz4: the parts are read once, soon; zstd's smaller files cost more time here
            .sink_parquet(
                pl.PartitionBy(folder / "lines", key="_part", include_key=False),
                compression="lz4",
            )
        )
    except pl.exceptions.ComputeError:
        raise Rejected(encoding_report(file, text)) from None
    written = list((folder / "lines").glob("_part=*/*.parquet"))
    if not written:
        raise Rejected(no_rows(file))  # only blank lines below the header
    return Parts(
        file=file,
        spec=spec,
        text=text,
        folder=folder / "lines",
        count=count,
        problems=tuple(long_lines(text, limits)),
    )


def _cut(line: pl.Expr, keep: int) -> pl.Expr:
    """A line's first characters within `keep` bytes, as `scan_text` cuts a long line of a
    whole file (a character takes up to 4 bytes: a quarter of `keep` always fits)."""
    head = line.str.head(keep)
    return pl.when(head.str.len_bytes() <= keep).then(head).otherwise(line.str.head(keep // 4))
