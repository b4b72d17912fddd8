"""The read layer's fast paths (the typed read, polars' split of lines) read what the careful
reader, which judges every line as text, reads: the same cells, lines and problems."""

from __future__ import annotations

import tempfile
from pathlib import Path

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from support.submissions import text

from scorer import Report, SubmissionError
from scorer.competition import LOST_ITEMS
from scorer.contract import read_submission

PREFIXES = ["", " ", "\t", "+", " +", "\t+0", "-", "+ "]
SUFFIXES = ["", "", "", " ", "\t"]


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    cells=st.lists(
        st.tuples(
            st.sampled_from(PREFIXES), st.integers(0, 30).map(str), st.sampled_from(SUFFIXES)
        ).map("".join)
        | st.sampled_from(["", " ", "7 7"]),
        min_size=3,
        max_size=30,
    )
)
def test_the_typed_reader_reads_what_the_careful_reader_reads(cells: list[str]) -> None:
    """The fast path takes a file only where it reads each cell as the careful reader (every
    line judged as text) does: the same values, lines and problems, whatever the dress."""
    lines = [",".join(cells[i : i + 3]) for i in range(0, len(cells) - len(cells) % 3, 3)]
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "dressed.csv"
        path.write_text(text(lines))
        fast = _read_as_table(path)
        careful = _read_as_table(path, careful=True)
    assert fast == careful


def _read_as_table(path: Path, careful: bool = False) -> object:
    """A submission's rows (line and typed cells) and problems, or the report refusing it."""
    try:
        table = read_submission(path, careful=careful)
    except SubmissionError as exc:
        return exc.report.to_dict()
    return table.frame.rows(), Report.of(table.file, list(table.problems)).to_dict()


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    lines=st.lists(
        st.lists(
            st.sampled_from(["7", " 8", "9 ", "", "x", "1.5", "  "]), min_size=0, max_size=4
        ).map(",".join),
        min_size=1,
        max_size=12,
    ),
    end=st.sampled_from(["\n", "\r\n"]),
    last=st.booleans(),
)
# polars reads an empty field that ends the text as no field: '7,7,7,' at the end, 3 fields
@example(lines=["7,7,7", "7,7,7,"], end="\n", last=False)
def test_the_careful_reader_splits_lines_alike_in_rust_and_line_by_line(
    lines: list[str], end: str, last: bool
) -> None:
    """Text without a quote is split by polars' reader when it finds every line whole; the
    cells, lines and problems are the same as the line-by-line split gives."""
    from scorer.read.limits import DEFAULT_LIMITS, Rejected
    from scorer.read.text import scan_text
    from scorer.read.textcells import text_cells

    limits = DEFAULT_LIMITS.for_competition(LOST_ITEMS)  # as `read_table` sets the line cap

    def split(path: Path, careful: bool) -> object:
        text = scan_text("split.csv", path, limits, blank_long=True)
        if text.rows == 0:
            return "no rows"  # refused by the reader before any split
        try:
            cells, problems, _ = text_cells("split.csv", text, text.header, limits, careful=careful)
        except Rejected as exc:
            return exc.report.to_dict()
        return cells.rows(), Report.of("split.csv", problems).to_dict()

    content = "user_id,edition_id,rank" + end + end.join(lines) + (end if last else "")
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "split.csv"
        path.write_bytes(content.encode())
        fast, slow = split(path, careful=False), split(path, careful=True)
    assert fast == slow


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    dressed=st.dictionaries(
        st.tuples(st.integers(0, 39), st.integers(0, 2)),
        st.sampled_from(["{} ", "{}\t", " {} ", "+{}", "-{}", "{}.0", "", " ", "x{}", "{},9"]),
        min_size=1,
        max_size=3,
    ),
    blank=st.sets(st.integers(0, 39), max_size=2),  # at most 5 rows of 40: patched
    end=st.sampled_from(["\n", "\r\n"]),
)
def test_a_few_cells_polars_cannot_read_are_judged_as_the_careful_reader_judges_them(
    dressed: dict[tuple[int, int], str], blank: set[int], end: str
) -> None:
    """A file of 40 rows with a few cells polars' typed reader refuses (and perhaps blank
    lines): the typed read with those rows judged line by line (`long._typed`) gives the
    rows, lines and problems of the careful reader judging every line."""
    from unittest import mock

    import scorer.read.long as long

    rows = [[str(1 + i // 20), str(100 + i), str(1 + i % 20)] for i in range(40)]
    for (row, column), dress in dressed.items():
        rows[row][column] = dress.format(rows[row][column])
    lines = ["" if i in blank else ",".join(row) for i, row in enumerate(rows)]
    content = "user_id,edition_id,rank" + end + end.join(lines) + end
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "dressed.csv"
        path.write_bytes(content.encode())
        with mock.patch.object(long, "text_cells", wraps=long.text_cells) as split:
            fast = _read_as_table(path)
        careful = _read_as_table(path, careful=True)
    assert fast == careful
    dresses = set(dressed.values())
    if not {"-{}", "{},9"} & dresses:  # no sign to misread, no extra field: the typed read
        holes = bool(blank) or bool(dresses - {"+{}"})  # every other dress is a hole
        patched = [call for call in split.call_args_list if call.kwargs.get("only") is not None]
        assert bool(patched) == holes  # ... with its few holes judged as text


def test_a_last_line_that_ends_in_a_comma_has_four_fields_in_every_reader(
    tmp_path: Path,
) -> None:
    """polars reads '1,100,1,' at the very end of a file (no line end after it) as three
    fields; the contract says four, as it does for the same line anywhere else."""
    rows = [f"1,{100 + i},{1 + i}" for i in range(20)]
    path = tmp_path / "comma.csv"
    path.write_bytes(("user_id,edition_id,rank\n" + "\n".join(rows) + ",").encode())
    fast, careful = _read_as_table(path), _read_as_table(path, careful=True)
    assert fast == careful
    assert isinstance(fast, tuple)
    (problem,) = fast[1]["problems"]
    assert problem["code"] == "field_count"
    assert problem["examples"][0]["message"] == (
        "line 21: found 4 fields, expected 3 (user_id,edition_id,rank): '1,119,20,'"
    )
