"""Files too large to hold at once: split both by user into parts, then check and score each
part as if it were the whole file, and combine exactly.

Every rule and every score is decided within one user's rows, and a user's rows land in the
same part of both files (part = user_id modulo the number of parts), so the parts' problems
added up are the file's problems, and their per-user tables put together are the file's. The
means are exact sums (see `scoring.aggregate`): the same bits as scoring the files whole.
"""

from __future__ import annotations

import math
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

import polars as pl

from scorer.competition import Competition
from scorer.contract import (
    Role,
    Solution,
    check_against,
    check_submission,
    solution_of,
    spec_of,
    targets_of,
)
from scorer.errors import HostError, Problem, Report, SubmissionError
from scorer.read import Limits, Rejected, Spec, Table, TableLike, describe
from scorer.read.cells import DTYPE, judge, merge
from scorer.read.header import check_header
from scorer.read.source import open_path, peek_header
from scorer.read.text import scan_text
from scorer.read.wide import is_wide
from scorer.scoring import NoLost, ScoreResult, aggregate, ignored, per_user

T = TypeVar("T")
R = TypeVar("R")

#: A CSV submission larger than this is scored in parts, of about `PART_BYTES` each: at 1M
#: users (368 MB) the whole-file scorer peaks near 2 GB, so a part's peak stays near 1.5 GB.
IN_PARTS_ABOVE = 1 << 30
PART_BYTES = 256 << 20


def parts_for(submission: TableLike) -> int:
    """How many parts `scorer.score` splits a submission into by default: 1 (whole) for
    frames and for files up to `IN_PARTS_ABOVE` bytes, else one a `PART_BYTES`."""
    if not isinstance(submission, str | Path) or not Path(submission).is_file():
        return 1
    size = Path(submission).stat().st_size
    return 1 if size <= IN_PARTS_ABOVE else math.ceil(size / PART_BYTES)


@dataclass(frozen=True)
class _Split:
    """A file streamed into parts: the name reports give it, its header and its folder."""

    file: str
    spec: Spec
    header: list[str]
    folder: Path

    def table(self, part: int) -> Table | None:
        """One part as a table with the file's own line numbers; None when a cell is empty
        where it may not be (the whole-file reader then names it)."""
        kinds = self.spec.kinds(self.header)
        files = sorted((self.folder / f"_part={part}").glob("*.parquet"))
        schema: dict[str, type[pl.DataType]] = {"line": pl.Int64}
        schema.update((n, _stream_dtype(DTYPE[k])) for n, k in kinds.items())
        frame = (
            pl.read_parquet(files).with_columns(pl.col("line").cast(pl.Int64))
            if files
            else pl.DataFrame(schema=schema)
        ).with_columns(pl.col(n).cast(DTYPE[k]) for n, k in kinds.items() if k == "stage")
        required = [n for n in kinds if n not in self.spec.nullable]
        if frame.select(pl.any_horizontal(pl.col(required).is_null()).any()).item():
            return None
        return judge(self.file, frame.sort("line"), kinds, self.spec, "line", [])


def score_in_parts(
    submission: Path,
    solution: Path,
    parts: int,
    no_lost: NoLost,
    competition: Competition,
    limits: Limits,
) -> ScoreResult | None:
    """Score two CSV files part by part, in memory bounded by one part (and the per-user
    table). None when either file needs the careful whole-file reader (lenient bytes, long
    lines, empty or unparsable cells, a wide or compressed file): the caller reads it whole."""

    def score_part(lost: Solution, entry: Table) -> tuple[pl.DataFrame, int, bool]:
        return per_user(check_against(entry, lost), lost, no_lost), ignored(lost), lost.has_split

    done = _in_parts(
        submission, solution, Role.SOLUTION, competition, parts, limits, solution_of, score_part
    )
    if done is None:
        return None
    users = pl.concat([frame for frame, _, _ in done]).sort("user_id")
    return ScoreResult(
        splits=aggregate(users, any(has_split for _, _, has_split in done)),
        per_user=users,
        no_lost=no_lost,
        ignored=sum(left_out for _, left_out, _ in done),
        competition=competition,
        parts=parts,
    )


def validate_in_parts(
    submission: Path,
    truth: Path,
    role: Role,
    parts: int,
    competition: Competition,
    limits: Limits,
) -> int | None:
    """Check a CSV submission against a CSV targets file or solution (`role`) part by part;
    the number of rows checked, or None as `score_in_parts`."""

    def users_of(table: Table) -> pl.Series:
        return solution_of(table).targets if role is Role.SOLUTION else targets_of(table)

    def check_part(users: pl.Series, entry: Table) -> int:
        check_submission(entry, users)
        return entry.frame.height

    done = _in_parts(submission, truth, role, competition, parts, limits, users_of, check_part)
    return None if done is None else sum(done)


def _in_parts(
    submission: Path,
    truth: Path,
    role: Role,
    competition: Competition,
    parts: int,
    limits: Limits,
    read: Callable[[Table], T],
    check: Callable[[T, Table], R],
) -> list[R] | None:
    """Split both files, then for each part `read` the organiser's part and `check` the
    submission's against it. Problems of every part are reported together, the organiser's
    first and alone (as when the files are read whole). Returns what `check` gave for each
    part, or None when a file needs the whole-file reader."""
    spec = spec_of(role, competition)
    with tempfile.TemporaryDirectory(prefix="scorer-parts-") as folder:
        host = _split(truth, spec, parts, Path(folder) / "truth", limits)
        if host is None or len(set(spec.of_kind("stage")) & set(host.header)) > 1:
            return None  # two split columns: one problem of the file, not one a part
        entry = _split(
            submission,
            spec_of(Role.SUBMISSION, competition),
            parts,
            Path(folder) / "submission",
            limits,
        )
        if entry is None:
            return None
        broken: list[Problem] = []
        rejected: list[Problem] = []
        results: list[R] = []
        for part in range(parts):
            host_table, entry_table = host.table(part), entry.table(part)
            if host_table is None or entry_table is None:
                return None
            try:
                known = read(host_table)
                if not broken:
                    results.append(check(known, entry_table))
            except HostError as exc:
                broken += exc.report.problems
            except SubmissionError as exc:
                rejected += exc.report.problems
    if broken:
        raise HostError(spec.role, Report.of(host.file, merge(broken)))
    if rejected:
        raise SubmissionError(Report.of(entry.file, merge(rejected)))
    return results


def _split(source: Path, spec: Spec, parts: int, folder: Path, limits: Limits) -> _Split | None:
    """Stream a clean CSV file into Parquet parts by user, each row with its line; None when
    the file needs the careful reader. A file that is refused outright raises, as the
    whole-file reader would."""
    file = describe(source)
    try:
        kind, content = open_path(source, file, limits)
        if kind != "csv" or is_wide(peek_header(source, limits) or [], spec):
            return None
        text = scan_text(file, content, limits)
        check_header(file, text.header, list(spec.required), list(spec.optional))
    except Rejected as exc:
        if spec.role != Role.SUBMISSION:
            raise HostError(spec.role, exc.report) from None
        raise SubmissionError(exc.report) from None
    if text.lenient or text.long_count or text.rows == 0:
        return None
    kinds = spec.kinds(text.header)
    schema = {name: _stream_dtype(DTYPE[kind]) for name, kind in kinds.items()}
    try:
        (
            pl.scan_csv(
                source,
                schema=schema,
                has_header=True,
                row_index_name="line",
                row_index_offset=2,
            )
            .with_columns(_part=pl.col(spec.user) % parts)
            .sink_parquet(pl.PartitionBy(folder, key="_part", include_key=False))
        )
    except (pl.exceptions.PolarsError, pl.exceptions.PanicException):
        return None
    written = sum(
        pl.scan_parquet(path).select(pl.len()).collect().item()
        for path in folder.glob("_part=*/*.parquet")
    )
    if written != text.rows or any(
        not name.name.removeprefix("_part=").isdigit() for name in folder.glob("_part=*")
    ):
        return None  # lines that are not rows (blank lines, quoted newlines) or empty user ids
    return _Split(file, spec, text.header, folder)


def _stream_dtype(dtype: type[pl.DataType]) -> type[pl.DataType]:
    """Stages stream as text (categories are made per part, after reading)."""
    return pl.String if dtype == pl.Categorical else dtype
