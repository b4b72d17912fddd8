"""Parquet files decoded a few row groups at a time, into the C allocator: the same tables,
the same refusals and row numbers as a file read whole (scorer/read/parquet.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from polars.testing import assert_frame_equal

import scorer
from scorer.contract.files import Role, spec_of
from scorer.read import Limits, Rejected, read_table
from scorer.read import parquet as parquet_module
from scorer.synthetic import CompetitionFiles, make_competition


@pytest.fixture(scope="module")
def comp() -> CompetitionFiles:
    return make_competition(120, seed=5)


def written(frame: pl.DataFrame, path: Path, group: int) -> Path:
    """`frame` as a Parquet file of row groups of `group` rows (pyarrow, as pandas writes)."""
    pq.write_table(frame.to_arrow(), path, row_group_size=group)
    return path


def test_row_groups_are_read_in_runs_of_at_least_the_batch_size() -> None:
    batches = parquet_module.batches
    assert batches([]) == []
    assert batches([5, 5, 5], rows=10) == [[0, 1], [2]]
    assert batches([5, 5, 5, 5], rows=10) == [[0, 1], [2, 3]]
    assert batches([25, 1, 1, 30], rows=10) == [[0], [1, 2, 3]]
    assert batches([3] * 7, rows=1) == [[i] for i in range(7)]
    assert batches([0, 0, 4], rows=4) == [[0, 1, 2]]


@pytest.mark.parametrize("role", [Role.SUBMISSION, Role.SOLUTION])
def test_a_file_of_many_row_groups_reads_as_one_of_a_single_group(
    comp: CompetitionFiles, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, role: Role
) -> None:
    """Groups of 7 rows read in runs of at least 50 (a run's groups are joined by pyarrow,
    the runs by polars as chunks): the same typed table, stage dictionaries included."""
    frame = comp.submission if role is Role.SUBMISSION else comp.solution
    one = written(frame, tmp_path / "one.parquet", frame.height)
    many = written(frame, tmp_path / "many.parquet", 7)
    assert pq.ParquetFile(many).num_row_groups == -(-frame.height // 7)
    monkeypatch.setattr(parquet_module, "BATCH_ROWS", 50)
    runs_read: list[list[int]] = []
    read_row_groups = pq.ParquetFile.read_row_groups

    def spy(self: pq.ParquetFile, groups: list[int], **options: Any) -> pa.Table:
        runs_read.append(list(groups))
        return read_row_groups(self, groups, **options)

    monkeypatch.setattr(pq.ParquetFile, "read_row_groups", spy)
    whole = read_table(one, spec_of(role))
    runs = read_table(many, spec_of(role))
    assert not runs.problems and not whole.problems
    sizes = [len(run) for run in runs_read]  # groups of 7 rows in runs of 50 rows or more
    assert sizes == [8] * (len(sizes) - 1) + [sizes[-1]] and sum(sizes) == -(-frame.height // 7)
    assert_frame_equal(runs.frame, whole.frame, categorical_as_str=True)


def test_a_submission_in_row_groups_scores_as_its_csv(
    comp: CompetitionFiles, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    comp.solution.write_csv(tmp_path / "solution.csv")
    comp.submission.write_csv(tmp_path / "submission.csv")
    solution = written(comp.solution, tmp_path / "solution.parquet", 11)
    submission = written(comp.submission, tmp_path / "submission.parquet", 13)
    monkeypatch.setattr(parquet_module, "BATCH_ROWS", 100)
    expected = scorer.score(tmp_path / "submission.csv", tmp_path / "solution.csv")
    got = scorer.score(submission, solution)
    assert got.splits == expected.splits
    assert_frame_equal(got.per_user, expected.per_user)


def test_text_ids_in_row_groups_are_judged_as_csv_cells_with_their_rows(
    comp: CompetitionFiles, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Digits in a text column are ids as in a CSV file; a cell that is not one is named by
    its row in the file, whichever run of groups holds it."""
    text = comp.submission.with_columns(pl.col("edition_id").cast(pl.String))
    bad = text.with_columns(
        pl.when(pl.int_range(pl.len()) == 136)
        .then(pl.lit("12x"))
        .otherwise(pl.col("edition_id"))
        .alias("edition_id")
    )
    monkeypatch.setattr(parquet_module, "BATCH_ROWS", 40)
    plain = read_table(
        written(comp.submission, tmp_path / "ints.parquet", 10**6), spec_of(Role.SUBMISSION)
    )
    digits = read_table(written(text, tmp_path / "text.parquet", 9), spec_of(Role.SUBMISSION))
    assert_frame_equal(digits.frame, plain.frame)
    broken = read_table(written(bad, tmp_path / "bad.parquet", 9), spec_of(Role.SUBMISSION))
    (found,) = broken.problems
    assert str(found.code) == "invalid_id" and found.count == 1
    assert found.examples[0].line == 137


def test_a_long_text_cell_is_named_by_its_row_across_row_groups(
    comp: CompetitionFiles, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Cells are measured from each chunk's dictionary before they are expanded; the rows of
    the long ones count across the chunks of every run."""
    cells = comp.submission.with_columns(pl.col("edition_id").cast(pl.String))
    long = "7" * 300
    cells = cells.with_columns(
        pl.when(pl.int_range(pl.len()).is_in([58, 1001]))
        .then(pl.lit(long))
        .otherwise(pl.col("edition_id"))
        .alias("edition_id")
    )
    path = written(cells, tmp_path / "long.parquet", 25)
    monkeypatch.setattr(parquet_module, "BATCH_ROWS", 60)
    with pytest.raises(Rejected) as caught:
        read_table(path, spec_of(Role.SUBMISSION), Limits(max_line_bytes=200))
    (found,) = caught.value.report.problems
    assert str(found.code) == "line_too_long" and found.count == 2
    assert [issue.line for issue in found.examples] == [59, 1002]
    assert found.examples[0].message == (
        "row 59: edition_id holds 300 bytes; at most 200 are accepted"
    )


def test_pages_are_decoded_into_the_c_allocator_and_the_default_pool_is_kept(
    comp: CompetitionFiles, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The reader's buffers come from `malloc`, which gives them back to the system when
    freed; the default pool is the caller's again after a read, and after a refusal."""
    path = written(comp.submission, tmp_path / "s.parquet", 100)
    system = pa.system_memory_pool()
    given = pa.default_memory_pool()
    pa.set_memory_pool(pa.mimalloc_memory_pool())  # what pyarrow's wheels default to
    try:
        before = system.bytes_allocated()
        table = read_table(path, spec_of(Role.SUBMISSION))
        # the id and rank columns, decoded as 8-byte integers, held by the frame
        assert system.bytes_allocated() - before >= 3 * 8 * comp.submission.height
        assert pa.default_memory_pool().backend_name == "mimalloc"
        del table

        def broken(*args: Any, **kwargs: Any) -> None:
            raise OSError("unreadable")

        limits = Limits()
        footer = parquet_module.inspect(path, "s.parquet", limits)
        monkeypatch.setattr(pq, "ParquetFile", broken)  # the reader fails while swapped
        with pytest.raises(Rejected) as caught:
            parquet_module.read(path, "s.parquet", footer, limits)
        assert caught.value.report.codes == ["file_corrupt"]
        assert pa.default_memory_pool().backend_name == "mimalloc"
    finally:
        pa.set_memory_pool(given)
