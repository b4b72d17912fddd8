"""Hints: files written by pandas by mistake get their problem and one line on the fix."""

from __future__ import annotations

import re
import zipfile
from collections.abc import Callable
from pathlib import Path

import pandas as pd
import pytest
from support.messages import BRACKETS, LISTS, REPEATED, RESET_INDEX, WIDE, empty_floats
from support.paths import ROOT
from typer.testing import CliRunner

import scorer
from scorer.cli import app
from scorer.errors import MAX_EXAMPLES, Code, Issue, Problem, Report, SubmissionError, merge

TARGETS = ROOT / "data" / "targets.csv"
SAMPLE = ROOT / "data" / "sample_submission.csv"
SOLUTION = ROOT / "data" / "solution.csv"

runner = CliRunner()

INDEX_CSV = (
    "the pandas index was saved as a column: write the file with df.to_csv(path, index=False)"
)
INDEX_PARQUET = (
    "the pandas index was saved as a column: write the file with df.to_parquet(path, index=False)"
)
READ_BACK = (
    "'Unnamed: 0' is a pandas index read back as a column: "
    'df = df.drop(columns="Unnamed: 0"), then write with index=False'
)
FLOAT_EDITION = (
    'edition_id was written as floats: df["edition_id"] = df["edition_id"].astype("int64")'
)
FLOAT_USER = 'user_id was written as floats: df["user_id"] = df["user_id"].astype("int64")'
FLOAT_BOTH = (
    "user_id and edition_id were written as floats: "
    'df = df.astype({"user_id": "int64", "edition_id": "int64"})'
)
FLOAT_RANK = 'rank was written as floats: df["rank"] = df["rank"].astype("int64")'
ZERO_ALL = 'the ranks are counted from 0; count them from 1: df["rank"] += 1'
ZERO_SOME = "34 users have ranks counted from 0; count them from 1 (add 1 to their ranks)"
ZERO_ONE = "1 user has ranks counted from 0; count them from 1 (add 1 to its ranks)"
DELIMITER = "write the file with df.to_csv(path, index=False), which separates columns with ','"
EXCEL = 'save it as CSV: pd.read_excel(path).to_csv("submission.csv", index=False)'
ZIP = (
    "name the file .zip (a zip holding one .csv or .parquet file is read), "
    "or write plain CSV: df.to_csv(path, index=False)"
)
GZIP = "name the file .csv.gz, or write plain CSV: df.to_csv(path, index=False)"
PARQUET_NAME = "name the file .parquet"
SPLIT = "read the CSV with pd.read_csv(path, sep=';')"


@pytest.fixture(scope="module")
def sample() -> pd.DataFrame:
    """The valid sample submission: 1,000 target users (10000, 10003, …), 20 rows each."""
    return pd.read_csv(SAMPLE)


def report_of(path: Path, parts: int | None = None) -> Report:
    with pytest.raises(SubmissionError) as info:
        scorer.validate(path, targets=TARGETS, parts=parts)
    return info.value.report


def found(report: Report) -> dict[str, tuple[int, str | None]]:
    """Each code's count and hint."""
    return {str(p.code): (p.count, p.hint) for p in report.problems}


def cli(path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """`scorer validate FILE --targets data/targets.csv`, rejected: its report."""
    monkeypatch.chdir(ROOT)
    result = runner.invoke(app, ["validate", str(path), "--targets", "data/targets.csv"])
    assert result.exit_code == 1, result.output
    return result.stderr


# ---------------------------------------------------------------------------------------------
# The error model: a problem's hint in JSON and in the report
# ---------------------------------------------------------------------------------------------


def issue(line: int) -> Issue:
    return Issue(Code.INVALID_RANK, f"line {line}: rank '0' is not an integer 1..20", line=line)


def test_a_problem_has_a_hint_after_its_examples_in_json() -> None:
    hinted = Problem(Code.INVALID_RANK, 1, (issue(2),), hint="count from 1")
    assert list(hinted.to_dict()) == ["code", "count", "examples", "hint"]
    assert hinted.to_dict()["hint"] == "count from 1"
    assert Problem(Code.INVALID_RANK, 1, (issue(2),)).to_dict()["hint"] is None
    assert Problem.from_dict(hinted.to_dict()) == hinted
    stored = {key: value for key, value in hinted.to_dict().items() if key != "hint"}
    assert Problem.from_dict(stored).hint is None  # a report stored before hints


def test_the_hint_is_the_problems_last_line() -> None:
    many = Problem(
        Code.INVALID_RANK, 7, tuple(issue(n) for n in range(2, 2 + MAX_EXAMPLES)), hint="fix"
    )
    plain = Problem(Code.WRONG_ROW_COUNT, 1, (issue(9),))
    lines = Report.of("f.csv", [many, plain]).render().splitlines()
    assert lines[1:9] == [
        "  [invalid_rank] 7 times",
        *[f"    line {n}: rank '0' is not an integer 1..20" for n in range(2, 7)],
        "    … and 2 more",
        "    hint: fix",
    ]
    assert lines[9:] == [
        "  [wrong_row_count] 1 time",
        "    line 9: rank '0' is not an integer 1..20",
    ]


def test_merge_keeps_the_first_hint() -> None:
    parts = [
        Problem(Code.INVALID_ID, 1, (issue(5),)),
        Problem(Code.INVALID_ID, 2, (issue(3),), hint="first"),
        Problem(Code.INVALID_ID, 1, (issue(2),), hint="second"),
    ]
    (merged,) = merge(parts)
    assert (merged.count, merged.hint) == (4, "first")
    assert [example.line for example in merged.examples] == [2, 3, 5]


# ---------------------------------------------------------------------------------------------
# The pandas index saved as a column
# ---------------------------------------------------------------------------------------------


def test_csv_with_the_index(sample: pd.DataFrame, tmp_path: Path) -> None:
    path = tmp_path / "submission.csv"
    sample.to_csv(path)  # index=True: a first column named ''
    report = report_of(path)
    assert found(report) == {"unknown_column": (1, INDEX_CSV)}


@pytest.mark.parametrize("index", [True, False])
def test_csv_with_the_index_read_back(sample: pd.DataFrame, tmp_path: Path, index: bool) -> None:
    sample.to_csv(tmp_path / "first.csv")
    path = tmp_path / "submission.csv"
    pd.read_csv(tmp_path / "first.csv").to_csv(path, index=index)  # 'Unnamed: 0'
    report = report_of(path)
    assert found(report) == {"unknown_column": (2 if index else 1, READ_BACK)}


def test_parquet_with_the_index(sample: pd.DataFrame, tmp_path: Path) -> None:
    path = tmp_path / "submission.parquet"
    sample.sort_values(["rank", "user_id"]).to_parquet(path)  # no longer a RangeIndex
    report = report_of(path)
    assert found(report) == {"unknown_column": (1, INDEX_PARQUET)}
    (example,) = report.problems[0].examples
    assert example.line is None  # a Parquet file has no lines
    assert example.message == (
        "submission.parquet: unexpected column '__index_level_0__'; expected only user_id, "
        "edition_id, rank"
    )


def test_parquet_header_problems_name_no_line(sample: pd.DataFrame, tmp_path: Path) -> None:
    sample.to_csv(tmp_path / "semicolons.csv", sep=";", index=False)
    path = tmp_path / "submission.parquet"
    pd.read_csv(tmp_path / "semicolons.csv").to_parquet(path)  # read with the wrong sep
    report = report_of(path)
    assert found(report) == {"bad_delimiter": (1, SPLIT)}
    (example,) = report.problems[0].examples
    assert (example.line, example.message) == (
        None,
        "submission.parquet: one column named 'user_id;edition_id;rank'; expected the columns "
        "user_id, edition_id, rank",
    )
    sample.drop(columns="rank").to_parquet(path)
    (problem,) = report_of(path).problems
    assert [(e.line, e.message) for e in problem.examples] == [
        (
            None,
            "submission.parquet: column 'rank' is missing; expected the columns "
            "user_id,edition_id,rank",
        )
    ]


def test_cli_shows_the_index_hints(
    sample: pd.DataFrame, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    sample.to_csv(tmp_path / "index.csv")
    assert cli(tmp_path / "index.csv", monkeypatch) == (
        "Error: submission rejected: index.csv: 1 problem found\n"
        "  [unknown_column] 1 time\n"
        "    index.csv: line 1: unexpected column ''; expected only user_id, edition_id, rank\n"
        f"    hint: {INDEX_CSV}\n"
    )
    sample.sort_values("rank").to_parquet(tmp_path / "index.parquet")  # sorted: not a range
    assert cli(tmp_path / "index.parquet", monkeypatch) == (
        "Error: submission rejected: index.parquet: 1 problem found\n"
        "  [unknown_column] 1 time\n"
        "    index.parquet: unexpected column '__index_level_0__'; expected only user_id, "
        "edition_id, rank\n"
        f"    hint: {INDEX_PARQUET}\n"
    )
    pd.read_csv(tmp_path / "index.csv").to_csv(tmp_path / "again.csv", index=False)
    assert cli(tmp_path / "again.csv", monkeypatch).endswith(f"    hint: {READ_BACK}\n")


# ---------------------------------------------------------------------------------------------
# Ids and ranks written as floats (500123.0)
# ---------------------------------------------------------------------------------------------


def floats(frame: pd.DataFrame, *columns: str) -> pd.DataFrame:
    return frame.astype(dict.fromkeys(columns, "float64"))


def test_float_editions(sample: pd.DataFrame, tmp_path: Path) -> None:
    path = tmp_path / "submission.csv"
    floats(sample, "edition_id").to_csv(path, index=False)
    assert found(report_of(path)) == {"invalid_id": (20_000, FLOAT_EDITION)}


def test_float_users_are_their_users(sample: pd.DataFrame, tmp_path: Path) -> None:
    """One problem a cell, and no false missing, unknown or miscounted user."""
    path = tmp_path / "submission.csv"
    floats(sample, "user_id").to_csv(path, index=False)
    report = report_of(path)
    assert found(report) == {"invalid_id": (20_000, FLOAT_USER)}
    assert report.problems[0].examples[0].message == (
        "line 2: user_id '10000.0' is not a non-negative integer written in digits"
    )


def test_float_users_and_users_truly_absent_or_unknown(
    sample: pd.DataFrame, tmp_path: Path
) -> None:
    frame = floats(sample, "user_id")
    frame = frame[frame["user_id"] != 10003].copy()  # a target user truly missing
    frame.loc[frame["user_id"] == 10006, "user_id"] = 7.0  # not a target user
    path = tmp_path / "submission.csv"
    frame.to_csv(path, index=False)
    report = report_of(path)
    assert found(report) == {
        "invalid_id": (19_980, FLOAT_USER),
        "missing_user": (2, None),
        "unknown_user": (1, None),
    }
    missing = [
        example.user for p in report.problems for example in p.examples if p.code == "missing_user"
    ]
    assert missing == ["10003", "10006"]


def test_float_ids_and_ranks(sample: pd.DataFrame, tmp_path: Path) -> None:
    path = tmp_path / "submission.csv"
    floats(sample, "user_id", "edition_id").to_csv(path, index=False)
    assert found(report_of(path)) == {"invalid_id": (40_000, FLOAT_BOTH)}
    floats(sample, "rank").to_csv(path, index=False)
    assert found(report_of(path)) == {"invalid_rank": (20_000, FLOAT_RANK)}


def test_float_columns_in_parquet(sample: pd.DataFrame, tmp_path: Path) -> None:
    path = tmp_path / "submission.parquet"
    floats(sample, "rank").to_parquet(path, index=False)
    assert found(report_of(path)) == {"column_type": (1, FLOAT_RANK)}
    halves = floats(sample, "rank")
    halves.loc[0, "rank"] = 1.5  # astype would change it: no hint
    halves.to_parquet(path, index=False)
    assert found(report_of(path)) == {"column_type": (1, None)}


def test_a_few_float_cells_are_typos_not_a_float_column(
    sample: pd.DataFrame, tmp_path: Path
) -> None:
    frame = sample.astype({"edition_id": "object"})
    frame.loc[3, "edition_id"] = "500123.0"
    path = tmp_path / "submission.csv"
    frame.to_csv(path, index=False)
    assert found(report_of(path)) == {"invalid_id": (1, None)}


def test_cli_shows_the_float_hint(
    sample: pd.DataFrame, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "floats.csv"
    floats(sample, "user_id").to_csv(path, index=False)
    text = cli(path, monkeypatch)
    assert text.startswith(
        "Error: submission rejected: floats.csv: 20,000 problems found\n"
        "  [invalid_id] 20,000 times\n"
        "    line 2: user_id '10000.0' is not a non-negative integer written in digits\n"
    )
    assert text.endswith(f"    … and 19,995 more\n    hint: {FLOAT_USER}\n")


# ---------------------------------------------------------------------------------------------
# Ranks counted from 0
# ---------------------------------------------------------------------------------------------


def from_zero(frame: pd.DataFrame, users: Callable[[pd.Series], pd.Series]) -> pd.DataFrame:
    frame = frame.copy()
    chosen = users(frame["user_id"])
    frame.loc[chosen, "rank"] -= 1
    return frame


def test_every_rank_from_zero(sample: pd.DataFrame, tmp_path: Path) -> None:
    path = tmp_path / "submission.csv"
    from_zero(sample, lambda user: user > 0).to_csv(path, index=False)
    assert found(report_of(path)) == {"invalid_rank": (1_000, ZERO_ALL)}


def test_some_users_ranks_from_zero(sample: pd.DataFrame, tmp_path: Path) -> None:
    path = tmp_path / "submission.csv"
    from_zero(sample, lambda user: user < 10100).to_csv(path, index=False)
    assert found(report_of(path)) == {"invalid_rank": (34, ZERO_SOME)}
    from_zero(sample, lambda user: user == 10003).to_csv(path, index=False)
    assert found(report_of(path)) == {"invalid_rank": (1, ZERO_ONE)}


def test_a_single_zero_rank_is_no_counting_from_zero(sample: pd.DataFrame, tmp_path: Path) -> None:
    frame = sample.copy()
    frame.loc[4, "rank"] = 0  # user 10000 has ranks 0, 1..4, 6..20
    path = tmp_path / "submission.csv"
    frame.to_csv(path, index=False)
    assert found(report_of(path)) == {"invalid_rank": (1, None)}


def test_cli_shows_the_zero_hints(
    sample: pd.DataFrame, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "zero.csv"
    from_zero(sample, lambda user: user > 0).to_csv(path, index=False)
    assert cli(path, monkeypatch) == (
        "Error: submission rejected: zero.csv: 1,000 problems found\n"
        "  [invalid_rank] 1,000 times\n"
        "    line 2: rank '0' is not an integer 1..20 (user 10000)\n"
        "    line 22: rank '0' is not an integer 1..20 (user 10003)\n"
        "    line 42: rank '0' is not an integer 1..20 (user 10006)\n"
        "    line 62: rank '0' is not an integer 1..20 (user 10009)\n"
        "    line 82: rank '0' is not an integer 1..20 (user 10012)\n"
        "    … and 995 more\n"
        f"    hint: {ZERO_ALL}\n"
    )
    from_zero(sample, lambda user: user < 10100).to_csv(path, index=False)
    assert cli(path, monkeypatch).endswith(f"    … and 29 more\n    hint: {ZERO_SOME}\n")


# ---------------------------------------------------------------------------------------------
# The file as a whole: another separator, an Excel workbook, a ZIP archive, gzip as .csv
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("sep", [";", "\t", "|"])
def test_another_separator(sample: pd.DataFrame, tmp_path: Path, sep: str) -> None:
    path = tmp_path / "submission.csv"
    sample.to_csv(path, sep=sep, index=False)
    assert found(report_of(path)) == {"bad_delimiter": (1, DELIMITER)}


def test_cli_shows_the_separator_hint(
    sample: pd.DataFrame, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "semicolons.csv"
    sample.to_csv(path, sep=";", index=False)
    assert cli(path, monkeypatch) == (
        "Error: submission rejected: semicolons.csv: 1 problem found\n"
        "  [bad_delimiter] 1 time\n"
        "    semicolons.csv: line 1: the columns are separated by ';'; expected ',' (header "
        "user_id, edition_id, rank)\n"
        f"    hint: {DELIMITER}\n"
    )


def workbook(frame: pd.DataFrame, path: Path) -> None:
    """The frame as pandas writes an Excel workbook (skipped without an Excel writer)."""
    pytest.importorskip("openpyxl")
    frame.to_excel(path, index=False)


@pytest.mark.parametrize("name", ["submission.xlsx", "submission.csv"])
def test_an_excel_workbook(sample: pd.DataFrame, tmp_path: Path, name: str) -> None:
    path = tmp_path / name
    workbook(sample, path)
    report = report_of(path)
    assert found(report) == {"file_format": (1, EXCEL)}
    message = report.problems[0].examples[0].message
    assert "an Excel workbook (.xlsx)" in message


def excel_like(path: Path, data: bytes) -> None:
    """A ZIP holding what openpyxl writes for a workbook, for a machine without it."""
    with zipfile.ZipFile(path, "w") as archive:
        for name in ("docProps/app.xml", "xl/worksheets/sheet1.xml", "xl/workbook.xml"):
            archive.writestr(name, data)
        archive.writestr("[Content_Types].xml", b"<Types/>")


def test_cli_shows_the_excel_hint(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    excel_like(tmp_path / "submission.xlsx", SAMPLE.read_bytes())
    assert cli(tmp_path / "submission.xlsx", monkeypatch) == (
        "Error: submission rejected: submission.xlsx: 1 problem found\n"
        "  [file_format] 1 time\n"
        "    submission.xlsx: found an Excel workbook (.xlsx); expected a .csv, .csv.gz, "
        ".parquet or .zip file\n"
        f"    hint: {EXCEL}\n"
    )
    excel_like(tmp_path / "workbook.csv", SAMPLE.read_bytes())
    assert cli(tmp_path / "workbook.csv", monkeypatch) == (
        "Error: submission rejected: workbook.csv: 1 problem found\n"
        "  [file_format] 1 time\n"
        "    workbook.csv: expected CSV text, found an Excel workbook (.xlsx)\n"
        f"    hint: {EXCEL}\n"
    )


def test_a_zip_archive(sample: pd.DataFrame, tmp_path: Path) -> None:
    sample.to_csv(tmp_path / "submission.zip", index=False)  # pandas zips a .zip name: read
    assert scorer.validate(tmp_path / "submission.zip", targets=TARGETS).rows == len(sample)
    sample.to_csv(tmp_path / "submission.csv", index=False, compression="zip")
    report = report_of(tmp_path / "submission.csv")
    assert found(report) == {"file_format": (1, ZIP)}


def test_cli_shows_the_zip_hint(
    sample: pd.DataFrame, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "zipped.csv"
    sample.to_csv(path, index=False, compression="zip")
    assert cli(path, monkeypatch) == (
        "Error: submission rejected: zipped.csv: 1 problem found\n"
        "  [file_format] 1 time\n"
        "    zipped.csv: expected CSV text, found a ZIP archive\n"
        f"    hint: {ZIP}\n"
    )


def test_a_damaged_zip_is_named_as_such_without_a_hint(tmp_path: Path) -> None:
    path = tmp_path / "submission.csv"
    path.write_bytes(b"PK\x03\x04" + bytes(100))  # no central directory to read
    report = report_of(path)
    assert found(report) == {"file_format": (1, None)}
    assert report.problems[0].examples[0].message.endswith("found a ZIP archive or Excel workbook")


def test_gzip_named_csv(
    sample: pd.DataFrame, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "packed.csv"
    sample.to_csv(path, index=False, compression="gzip")
    assert found(report_of(path)) == {"file_format": (1, GZIP)}
    assert cli(path, monkeypatch) == (
        "Error: submission rejected: packed.csv: 1 problem found\n"
        "  [file_format] 1 time\n"
        "    packed.csv: expected CSV text, found gzip-compressed data\n"
        f"    hint: {GZIP}\n"
    )


def test_wide_files_get_the_same_hints(sample: pd.DataFrame, tmp_path: Path) -> None:
    """One line a user (user_id,edition_ids): the index and float user ids, whole or in parts."""
    wide = (
        sample.sort_values(["user_id", "rank"])
        .groupby("user_id", as_index=False)["edition_id"]
        .agg(lambda ids: " ".join(map(str, ids)))
        .rename(columns={"edition_id": "edition_ids"})
    )
    path = tmp_path / "wide.csv"
    wide.to_csv(path)
    assert found(report_of(path)) == {"unknown_column": (1, INDEX_CSV)}
    floats(wide, "user_id").to_csv(path, index=False)
    for parts in (1, 3):
        assert found(report_of(path, parts)) == {"invalid_id": (1_000, FLOAT_USER)}


def test_parquet_named_csv_and_an_old_workbook(sample: pd.DataFrame, tmp_path: Path) -> None:
    path = tmp_path / "submission.csv"
    sample.to_parquet(path)  # pandas writes Parquet whatever the name
    assert found(report_of(path)) == {"file_format": (1, PARQUET_NAME)}
    old = ROOT / "tests" / "corpus" / "sub" / "xls.csv"  # an OLE2 file, as Excel 97 wrote
    assert found(report_of(old)) == {"file_format": (1, EXCEL)}


# ---------------------------------------------------------------------------------------------
# In parts, a file gets its hints, not a part's; no hint holds a hidden value
# ---------------------------------------------------------------------------------------------

#: Mistakes in CSV files, some in one part of four only (users with id % 4 == 0 are in the
#: first part): a part's own hint would then be wrong for the file. The sample's users are
#: 10000, 10003, …: all 1 modulo 3, so 3 parts put them all in one part, and 4 spread them.
IN_PARTS: dict[str, Callable[[pd.DataFrame], pd.DataFrame]] = {
    "float users": lambda f: floats(f, "user_id"),
    "float ids": lambda f: floats(f, "user_id", "edition_id"),
    "float ranks": lambda f: floats(f, "rank"),
    "float users of one part": lambda f: f.astype({"user_id": "object"}).assign(
        user_id=lambda g: g["user_id"].map(lambda u: f"{u}.0" if u % 4 == 0 else str(u))
    ),
    "every rank from zero": lambda f: from_zero(f, lambda user: user > 0),
    "some users from zero": lambda f: from_zero(f, lambda user: user < 10100),
    "the users of one part from zero": lambda f: from_zero(f, lambda user: user % 4 == 0),
    "one user from zero": lambda f: from_zero(f, lambda user: user == 10003),
}


@pytest.mark.parametrize("mistake", list(IN_PARTS))
def test_hints_and_counts_are_the_same_in_parts(
    sample: pd.DataFrame, tmp_path: Path, mistake: str
) -> None:
    path = tmp_path / "submission.csv"
    IN_PARTS[mistake](sample).to_csv(path, index=False)
    whole = report_of(path, parts=1)
    assert whole.problems
    for parts in (3, 4):
        assert report_of(path, parts=parts).to_dict() == whole.to_dict()


def test_float_users_in_one_part_are_no_float_column(sample: pd.DataFrame, tmp_path: Path) -> None:
    """Alone, the first part would be a float column; the file is not: no hint either way."""
    path = tmp_path / "submission.csv"
    IN_PARTS["float users of one part"](sample).to_csv(path, index=False)
    assert [p.hint for p in report_of(path, parts=4).problems] == [None]


def test_a_part_alone_would_hint_otherwise(sample: pd.DataFrame, tmp_path: Path) -> None:
    """The users of one part counted from 0: the file's hint counts them, where the part
    alone would say every rank is counted from 0."""
    path = tmp_path / "submission.csv"
    from_zero(sample, lambda user: user % 4 == 0).to_csv(path, index=False)
    (problem,) = report_of(path, parts=4).problems
    zero = sum(1 for user in sample["user_id"].unique() if user % 4 == 0)
    assert problem.hint == (
        f"{zero} users have ranks counted from 0; count them from 1 (add 1 to their ranks)"
    )
    only = tmp_path / "only.csv"
    from_zero(sample[sample["user_id"] % 4 == 0], lambda user: user > 0).to_csv(only, index=False)
    assert found(report_of(only))["invalid_rank"][1] == ZERO_ALL


def test_no_hint_holds_a_value_of_the_solution(sample: pd.DataFrame, tmp_path: Path) -> None:
    hidden = set(re.findall(r"[0-9]+", SOLUTION.read_text(encoding="utf-8")))
    hints = []
    for mistake, make in IN_PARTS.items():
        path = tmp_path / f"{mistake}.csv"
        make(sample).to_csv(path, index=False)
        hints += [p.hint for p in report_of(path).problems if p.hint]
    assert len(hints) >= 6
    for hint in hints:
        assert not set(re.findall(r"[0-9]+", hint)) & hidden - {"0", "1"}, hint
        assert not re.search(r"\b(public|private)\b", hint)


# ---------------------------------------------------------------------------------------------
# task.md lists every hint, and its example is real output
# ---------------------------------------------------------------------------------------------


def test_task_md_lists_every_hint() -> None:
    text = (ROOT / "task.md").read_text(encoding="utf-8")
    table = text.split("#### Hints", 1)[1].split("\n#### ", 1)[0]
    rows = re.findall(r"^\| (?!Mistake|---).* \| `([a-z_]+)` \| `(.+)` \|$", table, re.M)
    documented = [hint for _, hint in rows]
    assert sorted(documented) == sorted(
        {
            INDEX_CSV,
            READ_BACK,
            INDEX_PARQUET,
            FLOAT_EDITION,
            FLOAT_USER,
            FLOAT_BOTH,
            FLOAT_RANK,
            ZERO_ALL,
            ZERO_SOME,
            ZERO_ONE,
            DELIMITER,
            SPLIT,
            EXCEL,
            ZIP,
            GZIP,
            PARQUET_NAME,
            WIDE,
            LISTS,
            BRACKETS,
            empty_floats(8),  # tests/corpus/sub/float_ids_one_empty.csv
            REPEATED,
            RESET_INDEX,
        }
    )


def test_task_md_shows_a_real_hint() -> None:
    """task.md's example of a hint (tests/docs/test_docs.py runs it and compares its output)."""
    text = (ROOT / "task.md").read_text(encoding="utf-8")
    block = re.search(
        r"```console\n\$ scorer validate tests/corpus/sub/zero_based_ranks.csv "
        r"--targets tests/corpus/targets.csv\n(.*?)```",
        text,
        re.S,
    )
    assert block is not None
    assert block.group(1).splitlines()[-1] == f"    hint: {ZERO_ALL}"
