"""The wide submission format: user_id,edition_ids with a space-separated ranked list."""

from __future__ import annotations

import gzip
from pathlib import Path

import polars as pl
import pytest
from typer.testing import CliRunner

import scorer
from scorer.cli import app
from scorer.competition import LOST_ITEMS
from scorer.contract import Role, read_submission, spec_of
from scorer.errors import SubmissionError
from scorer.read import TableLike, to_wide
from scorer.read.source import header_names
from scorer.read.wide import is_wide as header_is_wide
from scorer.synthetic import CompetitionFiles, make_competition

K = LOST_ITEMS.k


def is_wide(source: TableLike) -> bool:
    """Whether the read layer takes a submission for wide, from its header alone."""
    if isinstance(source, pl.DataFrame):
        header = source.columns
    elif not Path(source).is_file():
        return False
    elif str(source).endswith(".parquet"):
        header = list(pl.read_parquet_schema(source))
    else:
        opened = gzip.open if str(source).endswith(".gz") else open
        with opened(source, "rt", encoding="utf-8") as handle:
            header = header_names(handle.readline())
    return header_is_wide(header, spec_of(Role.SUBMISSION))


runner = CliRunner()


@pytest.fixture(scope="module")
def comp() -> CompetitionFiles:
    return make_competition(1000, seed=1, empty_share=0.02)


@pytest.fixture(scope="module")
def files(comp: CompetitionFiles, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The competition's solution and its submission, long and wide, in every format."""
    root = tmp_path_factory.mktemp("wide")
    wide = to_wide(comp.submission)
    paths = {
        "solution": root / "solution.csv",
        "long": root / "long.csv",
        "csv": root / "wide.csv",
        "gz": root / "wide.csv.gz",
        "parquet": root / "wide.parquet",
    }
    comp.solution.write_csv(paths["solution"])
    comp.submission.write_csv(paths["long"])
    wide.write_csv(paths["csv"])
    with gzip.open(paths["gz"], "wb") as handle:
        wide.write_csv(handle)
    wide.write_parquet(paths["parquet"])
    return paths


def wide_lines(comp: CompetitionFiles) -> list[str]:
    """The wide submission as CSV lines, header first, without line ends."""
    return to_wide(comp.submission).write_csv().splitlines()


def write(tmp_path: Path, lines: list[str], name: str = "sub.csv") -> Path:
    path = tmp_path / name
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def reject(source: object, solution: object) -> scorer.Report:
    with pytest.raises(SubmissionError) as info:
        scorer.validate(source, solution=solution)
    return info.value.report


def messages(report: scorer.Report, code: str) -> list[str]:
    return [i.message for p in report.problems if p.code == code for i in p.examples]


# The same scores as the long format, from every kind of source.


@pytest.mark.parametrize("kind", ["csv", "gz", "parquet"])
def test_wide_file_scores_as_the_long_file(files: dict[str, Path], kind: str) -> None:
    long = scorer.score(files["long"], files["solution"])
    wide = scorer.score(files[kind], files["solution"])
    assert (wide.overall, wide.public, wide.private) == (long.overall, long.public, long.private)
    assert wide.per_user.equals(long.per_user)


def test_wide_frames_score_as_the_long_file(comp: CompetitionFiles, files: dict[str, Path]) -> None:
    truth = scorer.read_solution(files["solution"])
    long = scorer.score(files["long"], truth)
    wide = to_wide(comp.submission)
    for frame in (wide, wide.lazy(), wide.to_pandas()):
        assert scorer.score(frame, truth).overall == long.overall


def test_list_columns_are_read_as_lists(comp: CompetitionFiles, files: dict[str, Path]) -> None:
    long = scorer.score(files["long"], files["solution"])
    lists = comp.submission.group_by("user_id", maintain_order=True).agg(
        pl.col("edition_id").sort_by("rank").alias("edition_ids")
    )
    assert lists.schema["edition_ids"] == pl.List(pl.Int64)
    assert scorer.score(lists, files["solution"]).overall == long.overall


def test_the_table_has_line_position_and_rank(files: dict[str, Path]) -> None:
    table = read_submission(files["csv"])
    assert table.frame.columns == ["line", "user_id", "edition_id", "rank", "position"]
    assert table.frame.height == 1000 * K
    first = table.frame.filter(pl.col("line") == 2)
    assert first.get_column("position").to_list() == list(range(1, K + 1))
    assert first.get_column("rank").to_list() == list(range(1, K + 1))
    assert table.unit == "line"
    assert read_submission(files["parquet"]).unit == "row"


def test_to_wide_keeps_rank_order() -> None:
    long = pl.DataFrame(
        {"user_id": [7, 7, 7, 5], "edition_id": [30, 10, 20, 1], "rank": [3, 1, 2, 1]}
    )
    assert to_wide(long).rows() == [(7, "10 20 30"), (5, "1")]


def test_runs_of_spaces_tabs_and_excel_quoting_are_the_same_list(
    comp: CompetitionFiles, files: dict[str, Path], tmp_path: Path
) -> None:
    lines = wide_lines(comp)
    user, ids = lines[1].split(",")
    lines[1] = f'"{user}","  {ids.replace(" ", "  ", 3).replace(" ", chr(9), 1)} "'
    path = tmp_path / "excel.csv"
    path.write_bytes(b"\xef\xbb\xbf" + "\r\n".join(lines).encode() + b"\r\n")
    assert (
        scorer.score(path, files["solution"]).overall
        == scorer.score(files["long"], files["solution"]).overall
    )


def test_a_quoted_list_with_commas_is_its_space_separated_twin(
    comp: CompetitionFiles, files: dict[str, Path], tmp_path: Path
) -> None:
    """RFC 4180: a quoted field may hold commas (as pandas writes a list joined with commas)
    and a doubled quote; read whole or in parts, such a file scores as its twin with spaces,
    and a broken one gets the twin's messages and lines."""
    frame = to_wide(comp.submission).to_pandas()
    commas = frame.assign(edition_ids=frame["edition_ids"].str.replace(" ", ","))
    paths = {"spaces": tmp_path / "spaces.csv", "commas": tmp_path / "commas.csv"}
    frame.to_csv(paths["spaces"], index=False)
    commas.to_csv(paths["commas"], index=False)
    assert paths["commas"].read_text().splitlines()[1].count('"') == 2  # pandas quotes it
    for parts in (1, 3):
        twin = scorer.score(paths["spaces"], files["solution"], parts=parts)
        quoted = scorer.score(paths["commas"], files["solution"], parts=parts)
        assert quoted.to_dict() == twin.to_dict()
        assert quoted.per_user.equals(twin.per_user)
    as_text = scorer.score(pl.from_pandas(commas), files["solution"])  # Parquet-like text
    assert as_text.overall == twin.overall
    for name, data in (("spaces", frame), ("commas", commas)):
        broken = data.copy()
        broken.loc[1, "edition_ids"] = 'x1"2' + broken.loc[1, "edition_ids"][6:]
        broken.loc[3, "edition_ids"] = broken.loc[3, "edition_ids"][:20]
        broken.to_csv(paths[name], index=False)
    twin_report = reject(paths["spaces"], files["solution"])
    assert twin_report.codes == ["invalid_id", "wrong_row_count"]
    for parts in (1, 3):
        with pytest.raises(SubmissionError) as info:
            scorer.validate(paths["commas"], solution=files["solution"], parts=parts)
        assert info.value.report.problems == twin_report.problems


# Detection from the header.


def test_detection_from_the_header(files: dict[str, Path], tmp_path: Path) -> None:
    assert is_wide(files["csv"]) and is_wide(files["gz"]) and is_wide(files["parquet"])
    assert not is_wide(files["long"])
    assert is_wide(write(tmp_path, ['"user_id","edition_ids"', "1,2"]))
    assert is_wide(write(tmp_path, ["edition_ids,user_id,extra", "2,1,x"]))
    assert not is_wide(write(tmp_path, ["user_id,edition_id,rank,edition_ids", "1,2,3,4"]))
    assert not is_wide(tmp_path / "missing.csv")
    assert not is_wide(pl.DataFrame({"user_id": [1], "edition_id": [2], "rank": [1]}))


def test_an_extra_column_is_named_in_wide_terms(files: dict[str, Path], tmp_path: Path) -> None:
    report = reject(write(tmp_path, ["user_id,edition_ids,score", "1,2,0.5"]), files["solution"])
    assert report.codes == ["unknown_column"]
    assert "expected only user_id, edition_ids" in report.problems[0].examples[0].message


# Rules and messages: the long format's codes, with the line and the position.


def test_broken_wide_file_reports_every_problem(
    comp: CompetitionFiles, files: dict[str, Path], tmp_path: Path
) -> None:
    lines = wide_lines(comp)
    users = [line.split(",")[0] for line in lines]
    ids = [line.split(",")[1].split(" ") for line in lines]
    lines[1] = f"{users[1]},{' '.join([ids[1][0], 'x12', *ids[1][2:]])}"  # bad id at position 2
    lines[2] = f"{users[2]},{' '.join(ids[2][:19])}"  # 19 ids
    lines[3] = f"{users[3]},{' '.join([*ids[3][:19], ids[3][4]])}"  # position 20 repeats 5
    lines[4] = f"abc,{' '.join(ids[4])}"  # bad user id: that user is then missing
    lines[5] = f"{users[5]},"  # an empty list
    lines.append(lines[6])  # a user on two lines
    lines.append("1,2,3")  # commas inside the list
    report = reject(write(tmp_path, lines), files["solution"])
    assert report.codes == [
        "field_count",
        "invalid_id",
        "duplicate_edition",
        "wrong_row_count",
        "missing_user",
    ]
    bad = messages(report, "invalid_id")
    assert bad[0] == (
        f"line 2, position 2: edition_id 'x12' is not a non-negative integer written in "
        f"digits (user {users[1]})"
    )
    assert bad[1].startswith("line 5: user_id 'abc' is not")
    dup = messages(report, "duplicate_edition")[0]
    assert dup == (
        f"line 4, position 20: edition {ids[3][4]} repeats line 4, position 5 for user {users[3]}"
    )
    counts = messages(report, "wrong_row_count")
    assert counts == [
        f"line 3: user {users[2]} has 19 editions; expected exactly {K}",
        f"line 6: user {users[5]} has 0 editions; expected exactly {K}",
        f"line 7: user {users[6]} is listed on more than one line (lines 7–{len(lines) - 1}, "
        f"40 editions in all); expected one line of exactly {K}",
    ]
    assert messages(report, "missing_user") == [
        f"user {users[4]} is missing; expected {K} editions for every target user"
    ]
    assert messages(report, "field_count")[0].startswith(f"line {len(lines)}: found 3 fields")


def test_too_many_ids_and_signs(
    comp: CompetitionFiles, files: dict[str, Path], tmp_path: Path
) -> None:
    lines = wide_lines(comp)
    user, ids = lines[1].split(",")
    lines[1] = f"{user},{ids} 99999999999999999999 -5"
    report = reject(write(tmp_path, lines), files["solution"])
    assert report.codes == ["invalid_id", "wrong_row_count"]
    bad = messages(report, "invalid_id")
    assert bad[0].startswith("line 2, position 21: edition_id '99999999999999999999' is too large")
    assert bad[1].startswith("line 2, position 22: edition_id '-5' is not a non-negative")
    assert messages(report, "wrong_row_count") == [
        f"line 2: user {user} has 22 editions; expected exactly {K}"
    ]


def test_unknown_user_on_a_wide_line(
    comp: CompetitionFiles, files: dict[str, Path], tmp_path: Path
) -> None:
    lines = wide_lines(comp)
    lines.append("42," + lines[1].split(",")[1])
    report = reject(write(tmp_path, lines), files["solution"])
    assert report.codes == ["unknown_user"]
    assert messages(report, "unknown_user") == [f"line {len(lines)}: user 42 is not a target user"]


def test_parquet_and_frames_name_rows(comp: CompetitionFiles, files: dict[str, Path]) -> None:
    wide = to_wide(comp.submission).with_columns(
        pl.when(pl.int_range(pl.len()) == 2)
        .then(pl.lit("1 2 3"))
        .otherwise(pl.col("edition_ids"))
        .alias("edition_ids")
    )
    report = reject(wide, files["solution"])
    assert report.codes == ["wrong_row_count"]
    assert messages(report, "wrong_row_count")[0].startswith("row 3: user ")
    lists = pl.DataFrame({"user_id": [1], "edition_ids": [[1, None, -3]]})
    bad = messages(reject(lists, files["solution"]), "invalid_id")
    assert bad[0] == (
        "row 1, position 2: edition_id empty is not a non-negative integer written in digits "
        "(user 1)"
    )
    assert bad[1].startswith("row 1, position 3: edition_id '-3' is not")


def test_a_wrong_column_type_is_a_structural_problem(files: dict[str, Path]) -> None:
    frame = pl.DataFrame({"user_id": [1.5], "edition_ids": ["1 2"]})
    assert reject(frame, files["solution"]).codes == ["column_type"]
    frame = pl.DataFrame({"user_id": [1], "edition_ids": [1.5]})
    assert reject(frame, files["solution"]).codes == ["column_type"]


def test_header_only_and_blank_files(files: dict[str, Path], tmp_path: Path) -> None:
    assert reject(write(tmp_path, ["user_id,edition_ids"]), files["solution"]).codes == ["no_rows"]
    with pytest.raises(SubmissionError) as info:
        read_submission(pl.DataFrame({"user_id": [], "edition_ids": []}))
    assert info.value.report.codes == ["no_rows"]


def test_an_overlong_line_is_named(
    comp: CompetitionFiles, files: dict[str, Path], tmp_path: Path
) -> None:
    lines = wide_lines(comp)
    lines[1] = lines[1] + " 1" * 3000
    report = reject(write(tmp_path, lines), files["solution"])
    assert report.codes == ["line_too_long"]  # its user is in the file: not missing too
    assert messages(report, "line_too_long")[0].startswith("line 2: the line has ")


# The CLI reads the wide format as it reads the long one.


def test_cli_validate_and_score_a_wide_file(files: dict[str, Path]) -> None:
    ok = runner.invoke(app, ["validate", str(files["csv"]), "--solution", str(files["solution"])])
    assert ok.exit_code == 0, ok.output
    assert "wide.csv: valid" in ok.output
    scored = runner.invoke(app, ["score", str(files["gz"]), "--solution", str(files["solution"])])
    assert scored.exit_code == 0, scored.output
    assert "ndcg@20" in scored.output


def test_cli_rejects_a_broken_wide_file(
    comp: CompetitionFiles, files: dict[str, Path], tmp_path: Path
) -> None:
    lines = wide_lines(comp)
    user, ids = lines[1].split(",")
    lines[1] = f"{user},{ids.replace(' ', ' oops ', 1)}"
    path = write(tmp_path, lines)
    result = runner.invoke(app, ["validate", str(path), "--solution", str(files["solution"])])
    assert result.exit_code == 1
    assert "line 2, position 2: edition_id 'oops' is not a non-negative integer" in result.output


@pytest.mark.parametrize("suffix", [".csv", ".csv.gz", ".parquet"])
def test_cli_per_user_table_from_a_wide_file(
    files: dict[str, Path], tmp_path: Path, suffix: str
) -> None:
    out = tmp_path / f"per_user{suffix}"
    args = ["score", str(files["parquet"]), "--solution", str(files["solution"])]
    result = runner.invoke(app, [*args, "--json", "--per-user", str(out)])
    assert result.exit_code == 0, result.output
    table = pl.read_parquet(out) if suffix == ".parquet" else pl.read_csv(out)
    expected = scorer.score(files["long"], files["solution"]).per_user
    assert table.select("user_id", "ndcg").equals(expected.select("user_id", "ndcg"))
