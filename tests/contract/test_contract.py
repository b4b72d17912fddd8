"""The file contract: each rule's code, reports with every problem, host errors, and the fast
screen against the reference validator."""

from __future__ import annotations

import dataclasses
import gzip
import io
import re
import tempfile
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support import reference as ref
from support.paths import CORPUS
from support.strategies import SolutionRows, broken_solutions, user_ids
from support.submissions import HEADER, text

import scorer
from scorer import Code, HostError, Report, SubmissionError
from scorer.competition import LOST_ITEMS
from scorer.contract import Role, Solution, read_submission, solution_of
from scorer.contract.files import read_as
from scorer.contract.submission import _passes_screen, _row_problems
from scorer.keys import keyed, packable, ranked
from scorer.read import DEFAULT_LIMITS

TARGETS = [1, 2, 3]


def user_lines(user: int, start: int | None = None) -> list[str]:
    """20 valid lines of one user: editions start+1.. at ranks 1..20."""
    base = 100 * user if start is None else start
    return [f"{user},{base + r},{r}" for r in range(1, 21)]


def valid_lines(users: list[int] = TARGETS) -> list[str]:
    return [line for u in users for line in user_lines(u)]


def targets_frame(users: list[int] = TARGETS) -> pl.DataFrame:
    return pl.DataFrame({"user_id": users}, schema={"user_id": pl.Int64})


def solution_frame(users: list[int] = TARGETS) -> pl.DataFrame:
    """User u lost editions 100u+1 and 100u+2 (ranks 1 and 2 of `user_lines`); u's split is
    public for odd u, private for even."""
    rows = [(u, 100 * u + r, "public" if u % 2 else "private") for u in users for r in (1, 2)]
    return pl.DataFrame(rows, schema=["user_id", "edition_id", "stage"], orient="row")


def rejected(submission: object, **against: object) -> Report:
    """The report of a rejected submission (against the default targets unless told)."""
    if not against:
        against = {"targets": targets_frame()}
    with pytest.raises(SubmissionError) as info:
        scorer.validate(submission, **against)  # type: ignore[arg-type]
    return info.value.report


def counts(report: Report) -> Counter[str]:
    """Occurrences a code, summed over the report's problems."""
    found: Counter[str] = Counter()
    for problem in report.problems:
        found[str(problem.code)] += problem.count
    return found


def messages(report: Report) -> list[str]:
    return [issue.message for p in report.problems for issue in p.examples]


@pytest.fixture
def write(tmp_path: Path) -> Callable[..., Path]:
    def write(content: str | bytes, name: str = "submission.csv") -> Path:
        path = tmp_path / name
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content, encoding="utf-8", newline="")
        return path

    return write


# ---------------------------------------------------------------------------------------------
# A valid file, in every form the contract accepts
# ---------------------------------------------------------------------------------------------


def test_a_valid_file_passes_and_returns_its_row_count(write: Callable[..., Path]) -> None:
    path = write(text(valid_lines()))
    assert scorer.validate(path, targets=targets_frame()).rows == 60
    assert scorer.validate(path, solution=solution_frame()).rows == 60


def test_validate_returns_what_it_checked(write: Callable[..., Path]) -> None:
    """A small frozen value: the ranked items, the target users and the rules kept; its repr
    names the competition, not the spec's every field."""
    path = write(text(valid_lines()))
    checked = scorer.validate(path, targets=targets_frame())
    assert checked == scorer.Validation(
        rows=20 * len(TARGETS), users=len(TARGETS), competition=LOST_ITEMS
    )
    assert repr(checked) == "Validation(rows=60, users=3, competition='lost items')"
    assert scorer.validate(path, solution=solution_frame()) == checked
    targets = path.with_name("targets.csv")
    targets_frame().write_csv(targets)
    assert scorer.validate(path, targets=targets, parts=3) == checked  # summed over the parts
    with pytest.raises(dataclasses.FrozenInstanceError):
        checked.rows = 0  # type: ignore[misc]


def test_row_and_column_order_do_not_matter(write: Callable[..., Path]) -> None:
    lines = valid_lines()[::-1]
    swapped = [",".join(reversed(line.split(","))) for line in lines]
    path = write(text(swapped, header="rank,edition_id,user_id"))
    assert scorer.validate(path, targets=targets_frame()).rows == 60


def test_an_excel_file_is_the_same_data(write: Callable[..., Path]) -> None:
    """UTF-8 BOM, CRLF line ends, quoted fields: the same scores as the plain file."""
    plain = write(text(valid_lines()), "plain.csv")
    quoted = ['"' + line.replace(",", '","') + '"' for line in valid_lines()]
    excel = write("\ufeff" + text(quoted, header='"user_id","edition_id","rank"', end="\r\n"))
    a = scorer.score(plain, solution_frame())
    b = scorer.score(excel, solution_frame())
    assert a.per_user.equals(b.per_user)
    assert a.to_dict() == b.to_dict()


def test_gzip_and_parquet_files_are_read_by_their_suffix(write: Callable[..., Path]) -> None:
    plain = write(text(valid_lines()), "plain.csv")
    gz = write(gzip.compress(plain.read_bytes()), "submission.csv.gz")
    parquet = plain.with_name("submission.parquet")
    pl.read_csv(plain).write_parquet(parquet)
    expected = scorer.score(plain, solution_frame()).to_dict()
    assert scorer.score(gz, solution_frame()).to_dict() == expected
    assert scorer.score(parquet, solution_frame()).to_dict() == expected


def test_polars_and_pandas_frames_are_accepted() -> None:
    frame = pl.read_csv(text(valid_lines()).encode())
    assert scorer.validate(frame, targets=targets_frame()).rows == 60
    assert scorer.validate(frame.to_pandas(), targets=targets_frame().to_pandas()).rows == 60


# ---------------------------------------------------------------------------------------------
# Each rule, its code, its count and where it points
# ---------------------------------------------------------------------------------------------


def _replace(lines: list[str], old: str, new: str) -> list[str]:
    assert old in lines
    return [new if line == old else line for line in lines]


RULES: dict[str, tuple[Callable[[list[str]], list[str]], dict[str, int]]] = {
    "wrong_row_count": (lambda ls: ls[:-1], {"wrong_row_count": 1}),
    "invalid_rank_range": (lambda ls: _replace(ls, "1,120,20", "1,120,21"), {"invalid_rank": 1}),
    "invalid_rank_zero": (lambda ls: _replace(ls, "1,120,20", "1,120,0"), {"invalid_rank": 1}),
    "invalid_rank_float": (lambda ls: _replace(ls, "1,120,20", "1,120,1.0"), {"invalid_rank": 1}),
    "invalid_rank_empty": (lambda ls: _replace(ls, "1,120,20", "1,120,"), {"invalid_rank": 1}),
    "invalid_rank_sign": (lambda ls: _replace(ls, "1,120,20", "1,120,+-20"), {"invalid_rank": 1}),
    "duplicate_rank": (lambda ls: _replace(ls, "1,120,20", "1,120,19"), {"duplicate_rank": 1}),
    "duplicate_edition": (
        lambda ls: _replace(ls, "1,120,20", "1,119,20"),
        {"duplicate_edition": 1},
    ),
    "duplicate_row": (
        lambda ls: [*ls, ls[0]],
        {"duplicate_rank": 1, "duplicate_edition": 1, "wrong_row_count": 1},
    ),
    "missing_user": (lambda ls: ls[:40], {"missing_user": 1}),
    "unknown_user": (lambda ls: ls + user_lines(9), {"unknown_user": 1}),
    "invalid_edition_id": (lambda ls: _replace(ls, "1,120,20", "1,abc,20"), {"invalid_id": 1}),
    "invalid_edition_float": (lambda ls: _replace(ls, "1,120,20", "1,120.0,20"), {"invalid_id": 1}),
    "invalid_edition_empty": (lambda ls: _replace(ls, "1,120,20", "1,,20"), {"invalid_id": 1}),
    "invalid_edition_negative": (
        lambda ls: _replace(ls, "1,120,20", "1,-120,20"),
        {"invalid_id": 1},
    ),
    "invalid_edition_too_big": (
        lambda ls: _replace(ls, "1,120,20", "1,99999999999999999999,20"),
        {"invalid_id": 1},
    ),
    # A row whose user cannot be read belongs to no user: user 1 has 19 rows.
    "invalid_user_id": (
        lambda ls: _replace(ls, "1,120,20", "x1,120,20"),
        {"invalid_id": 1, "wrong_row_count": 1},
    ),
    "field_count_more": (
        lambda ls: _replace(ls, "1,120,20", "1,120,20,5"),
        {"field_count": 1, "wrong_row_count": 1},
    ),
    "field_count_fewer": (
        lambda ls: _replace(ls, "1,120,20", "1,120"),
        {"field_count": 1, "wrong_row_count": 1},
    ),
}


@pytest.mark.parametrize("rule", list(RULES))
def test_each_rule_has_its_code(rule: str, write: Callable[..., Path]) -> None:
    mutate, expected = RULES[rule]
    lines = mutate(valid_lines())
    report = rejected(write(text(lines)))
    assert counts(report) == expected
    assert counts(report) == ref.problems(text(lines), TARGETS)  # the reference agrees
    assert report.total == sum(expected.values())


def test_a_row_problem_names_the_line_user_column_and_value(write: Callable[..., Path]) -> None:
    report = rejected(write(text(_replace(valid_lines(), "2,210,10", "2,210,33"))))
    (problem,) = report.problems
    (issue,) = problem.examples
    assert (issue.code, issue.line, issue.user, issue.column, issue.value) == (
        Code.INVALID_RANK,
        2 + 20 + 9,  # header, user 1's 20 lines, then user 2's tenth
        "2",
        "rank",
        "33",
    )
    assert issue.message == "line 31: rank '33' is not an integer 1..20 (user 2)"


def test_line_numbers_are_lines_of_the_file_blank_lines_included(
    write: Callable[..., Path],
) -> None:
    lines = valid_lines()
    lines.insert(5, "")  # a blank line after line 6
    lines = _replace(lines, "1,115,15", "1,115,15.5")
    report = rejected(write(text(lines, end="\r\n")))
    (issue,) = report.problems[0].examples
    assert issue.line == 2 + 15  # line 16 in the list, one blank line before it


def test_a_repeat_names_the_line_it_repeats(write: Callable[..., Path]) -> None:
    lines = _replace(valid_lines(), "3,305,5", "3,302,5")
    report = rejected(write(text(lines)))
    (issue,) = report.problems[0].examples
    assert issue.code == Code.DUPLICATE_EDITION
    assert issue.line == 2 + 40 + 4
    assert issue.message == "line 46: edition 302 repeats line 43 for user 3"


def test_row_problems_of_a_frame_name_the_row() -> None:
    frame = pl.read_csv(text(valid_lines()).encode()).with_columns(
        rank=pl.when(pl.int_range(pl.len()) == 4).then(0).otherwise(pl.col("rank"))
    )
    report = rejected(frame)
    (issue,) = report.problems[0].examples
    assert (issue.code, issue.line) == (Code.INVALID_RANK, 5)
    assert issue.message == "row 5: rank '0' is not an integer 1..20 (user 1)"


def test_every_problem_is_reported_together(write: Callable[..., Path]) -> None:
    lines = valid_lines([1, 2]) + user_lines(9) + user_lines(8)
    lines = _replace(lines, "1,120,20", "1,120,21")
    lines = _replace(lines, "1,119,19", "1,118,19")
    lines = lines[:22] + lines[23:]  # user 2 loses a row
    report = rejected(write(text(lines)))
    assert report.codes == [
        "invalid_rank",
        "duplicate_edition",
        "wrong_row_count",
        "missing_user",
        "unknown_user",
    ]
    assert counts(report) == {
        "invalid_rank": 1,
        "duplicate_edition": 1,
        "wrong_row_count": 1,
        "missing_user": 1,
        "unknown_user": 2,
    }
    assert report.total == 6
    assert counts(report) == ref.problems(text(lines), TARGETS)
    rendered = report.render()
    assert rendered.splitlines()[0] == "submission.csv: 6 problems found"
    assert "  [unknown_user] 2 times" in rendered.splitlines()


def test_examples_are_capped_at_five_and_the_count_is_complete(
    write: Callable[..., Path],
) -> None:
    strangers = [10 + i for i in range(8)]
    lines = valid_lines() + [line for u in strangers for line in user_lines(u)]
    lines = [
        re.sub(r",(\d+)$", r",\g<1>0", line) if line.startswith("2,") else line for line in lines
    ]
    report = rejected(write(text(lines)))
    by_code = {str(p.code): p for p in report.problems}
    unknown = by_code["unknown_user"]
    assert (unknown.count, len(unknown.examples)) == (8, 5)
    assert [i.user for i in unknown.examples] == ["10", "11", "12", "13", "14"]  # first in file
    # User 2's ranks 10, 20, …, 200: 18 of them are out of range, and the in-range 10 and 20
    # sit at the ranks of rows 1 and 2.
    invalid = by_code["invalid_rank"]
    assert (invalid.count, len(invalid.examples)) == (18, 5)
    assert [i.line for i in invalid.examples] == [24, 25, 26, 27, 28]
    assert "    … and 3 more" in report.render().splitlines()
    assert "    … and 13 more" in report.render().splitlines()


@pytest.mark.parametrize(
    ("content", "code"),
    [
        (text(["1,2,3,4", "1,2,x,4"], header="user_id,edition_id,rank,score"), "unknown_column"),
        (text(["1,2", "x,y"], header="user_id,edition_id"), "missing_column"),
        (text(["1,2,3,4"], header="user_id,edition_id,rank,rank"), "duplicate_column"),
        ("user_id;edition_id;rank\n1;2;3\nx;y\n", "bad_delimiter"),
        ("", "file_empty"),
        ("\r\n\r\n", "file_empty"),
        (HEADER + "\n", "no_rows"),
        (b"PK\x03\x04 a workbook", "file_format"),
        (b"user_id,edition_id,rank\n1,\xff,3\n1,1,x\n", "file_encoding"),
    ],
    ids=[
        "unknown-column",
        "missing-column",
        "duplicate-column",
        "semicolons",
        "empty",
        "blank-lines-only",
        "header-only",
        "workbook",
        "latin-1",
    ],
)
def test_structural_problems_are_reported_alone(
    content: str | bytes, code: str, write: Callable[..., Path]
) -> None:
    report = rejected(write(content))
    assert report.codes == [code]
    assert report.total == 1


def test_unknown_and_missing_columns_are_reported_together_and_alone(
    write: Callable[..., Path],
) -> None:
    report = rejected(write(text(["1,2,3", "x,y,z"], header="user_id,edition,rank")))
    assert report.codes == ["missing_column", "unknown_column"]


def test_a_missing_file_and_a_wrong_suffix_are_rejected(write: Callable[..., Path]) -> None:
    path = write(text(valid_lines()), "submission.txt")
    assert rejected(path).codes == ["file_format"]
    assert rejected(path.with_name("absent.csv")).codes == ["file_not_found"]


def test_targets_and_solution_give_the_same_report(write: Callable[..., Path]) -> None:
    lines = valid_lines([1, 3]) + user_lines(7)
    lines = _replace(lines, "1,103,3", "1,103,4")
    path = write(text(lines))
    by_targets = rejected(path, targets=targets_frame())
    by_solution = rejected(path, solution=solution_frame())
    assert by_targets == by_solution
    assert by_targets.render() == by_solution.render()


def test_a_report_never_reveals_the_hidden_truth(write: Callable[..., Path]) -> None:
    """No split names and no lost edition the submission does not hold itself."""
    lines = [line for line in valid_lines() if not line.startswith("2,")]
    lines = _replace(lines, "1,120,20", "1,120,19")
    with pytest.raises(SubmissionError) as info:
        scorer.score(write(text(lines)), solution_frame())
    shown = str(info.value) + repr(info.value.to_dict())
    assert "public" not in shown and "private" not in shown
    assert "201" not in shown and "202" not in shown  # user 2's lost editions


def test_nothing_is_scored_unless_every_rule_holds(write: Callable[..., Path]) -> None:
    path = write(text(valid_lines()[:-1]))
    with pytest.raises(SubmissionError):
        scorer.score(path, solution_frame())


@pytest.mark.parametrize(
    ("old", "new", "code"),
    [
        (("1,119,19", "1,119,x"), ("1,120,20", "1,120,21"), "invalid_rank"),
        (("1,119,19", "x,119,19"), ("1,120,20", "1,abc,20"), "invalid_id"),
    ],
    ids=["rank-text-and-range", "user-and-edition"],
)
def test_one_code_is_one_problem(
    old: tuple[str, str], new: tuple[str, str], code: str, write: Callable[..., Path]
) -> None:
    """Cells that fail to parse and cells out of range, or bad cells in two columns of one
    kind, are counted under one code with their examples in line order."""
    lines = _replace(_replace(valid_lines(), *old), *new)
    report = rejected(write(text(lines)))
    assert report.codes.count(code) == 1
    assert [i.line for p in report.problems if p.code == code for i in p.examples] == [20, 21]


# ---------------------------------------------------------------------------------------------
# The organiser's files: any problem is a HostError, never the participant's
# ---------------------------------------------------------------------------------------------

SOLUTIONS = {
    "duplicate_pair": "user_id,edition_id,stage\n1,101,public\n1,101,public\n",
    "mixed_stage": "user_id,edition_id,stage\n1,101,public\n1,102,private\n",
    "invalid_stage": "user_id,edition_id,stage\n1,101,public\n2,201,secret\n",
    "empty_and_pairs": "user_id,edition_id,stage\n1,101,public\n1,,public\n",
    "invalid_grade": "user_id,edition_id,grade\n1,101,3\n1,102,11\n",
    "invalid_id": "user_id,edition_id\n1,101\nx,102\n",
    "duplicate_column": "user_id,edition_id,stage,Usage\n1,101,public,Public\n",
    # the user column alone is a targets file given as the solution (a usage error, below)
    "missing_column": "user_id,stage\n1,public\n",
}


@pytest.mark.parametrize("code", list(SOLUTIONS))
def test_a_broken_solution_is_a_host_error(code: str, write: Callable[..., Path]) -> None:
    submission = write(text(valid_lines([1])))
    solution = write(SOLUTIONS[code], "solution.csv")
    for call in (
        lambda: scorer.score(submission, solution),
        lambda: scorer.validate(submission, solution=solution),
    ):
        with pytest.raises(HostError) as info:
            call()
        assert info.value.role == "solution"
        assert code in info.value.report.codes
        assert info.value.exit_code == 2


def test_a_broken_targets_file_is_a_host_error(write: Callable[..., Path]) -> None:
    submission = write(text(valid_lines()))
    targets = write("user_id\n1\n2\n2\n3\n", "targets.csv")
    with pytest.raises(HostError) as info:
        scorer.validate(submission, targets=targets)
    assert (info.value.role, info.value.report.codes) == ("targets", ["duplicate_user"])


def test_the_solution_is_judged_before_the_submission(write: Callable[..., Path]) -> None:
    """A broken submission against a broken solution: the organiser hears first."""
    with pytest.raises(HostError):
        scorer.score(write("nonsense"), write(SOLUTIONS["mixed_stage"], "solution.csv"))


def test_usage_values_are_case_insensitive_and_ignored_users_are_validated(
    write: Callable[..., Path],
) -> None:
    solution = write(
        "user_id,edition_id,Usage\n1,101,PUBLIC\n2,201,private\n3,301,Ignored\n", "sol.csv"
    )
    assert rejected(write(text(valid_lines([1, 2]))), solution=solution).codes == ["missing_user"]
    result = scorer.score(write(text(valid_lines())), solution)
    assert (result.ignored, result.splits["overall"].users) == (1, 2)  # type: ignore[union-attr]


def test_a_user_without_lost_pairs_needs_no_grade(write: Callable[..., Path]) -> None:
    solution = write("user_id,edition_id,grade\n1,101,3\n2,,\n", "solution.csv")
    result = scorer.score(write(text(valid_lines([1, 2]))), solution)
    assert result.splits["overall"].users == 2  # type: ignore[union-attr]


# ---------------------------------------------------------------------------------------------
# The fast screen and the detailed rules against the reference, on near-valid files
# ---------------------------------------------------------------------------------------------

BAD_RANKS = ["0", "21", "1.0", "x", "", "-3", "+1", " 5", "5 ", "99999999999999999999", "２"]
BAD_IDS = ["abc", "", "1.5", "-7", "+7", "99999999999999999999", "1e3", " 12", "0x1F"]
MUTATIONS = [
    "drop",
    "duplicate",
    "repeat_rank",
    "repeat_edition",
    "bad_rank",
    "bad_edition",
    "bad_user",
    "move_to_stranger",
    "drop_user",
    "add_stranger",
    "more_fields",
    "fewer_fields",
    "blank_line",
    "quote",
    "shuffle",
]


@st.composite
def near_valid(draw: st.DrawFn) -> tuple[str, list[int], list[list[str]] | None]:
    """A valid submission with up to four mistakes: its CSV text, the targets, and its rows
    as text cells when they can also be a frame (no line-level mistakes)."""
    targets = draw(user_ids(1, 10**6, max_size=5))
    columns = draw(st.permutations(["user_id", "edition_id", "rank"]))
    rows: list[dict[str, str] | str] = []
    for user in targets:
        editions = draw(st.lists(st.integers(0, 10**9), min_size=20, max_size=20, unique=True))
        rows += [
            {"user_id": str(user), "edition_id": str(e), "rank": str(r)}
            for r, e in enumerate(editions, start=1)
        ]
    line_level = False
    for mutation in draw(st.lists(st.sampled_from(MUTATIONS), max_size=4)):
        cells = [i for i, row in enumerate(rows) if isinstance(row, dict)]
        if not cells:
            break
        i = draw(st.sampled_from(cells))
        row = rows[i]
        assert isinstance(row, dict)
        if mutation == "drop":
            del rows[i]
        elif mutation == "duplicate":
            rows.insert(draw(st.integers(0, len(rows))), dict(row))
        elif mutation == "repeat_rank":
            row["rank"] = str(draw(st.integers(1, 20)))
        elif mutation == "repeat_edition":
            same = [r for r in rows if isinstance(r, dict) and r["user_id"] == row["user_id"]]
            row["edition_id"] = draw(st.sampled_from(same))["edition_id"]
        elif mutation == "bad_rank":
            row["rank"] = draw(st.sampled_from(BAD_RANKS))
        elif mutation == "bad_edition":
            row["edition_id"] = draw(st.sampled_from(BAD_IDS))
        elif mutation == "bad_user":
            row["user_id"] = draw(st.sampled_from(BAD_IDS))
        elif mutation == "move_to_stranger":
            row["user_id"] = str(draw(st.integers(10**6 + 1, 10**6 + 3)))
        elif mutation == "drop_user":
            gone = row["user_id"]
            rows = [r for r in rows if not (isinstance(r, dict) and r["user_id"] == gone)]
        elif mutation == "add_stranger":
            stranger = draw(st.integers(10**6 + 1, 10**6 + 3))
            rows += [
                {"user_id": str(stranger), "edition_id": str(7 * r), "rank": str(r)}
                for r in range(1, 21)
            ]
        elif mutation in ("more_fields", "fewer_fields"):
            fields = [row[c] for c in columns]
            fields = [*fields, "9"] if mutation == "more_fields" else fields[:-1]
            rows[i] = ",".join(fields)
            line_level = True
        elif mutation == "blank_line":
            rows.insert(draw(st.integers(0, len(rows))), draw(st.sampled_from(["", "  "])))
            line_level = True
        elif mutation == "quote":
            column = draw(st.sampled_from(columns))
            row[column] = f'"{row[column]}"'
            line_level = True
        elif mutation == "shuffle":
            rows = draw(st.permutations(rows))
    lines = [row if isinstance(row, str) else ",".join(row[c] for c in columns) for row in rows]
    end = draw(st.sampled_from(["\n", "\r\n"]))
    content = end.join([",".join(columns), *lines]) + end
    table = None if line_level else [[row[c] for c in columns] for row in rows]  # type: ignore[index]
    return content, targets, table


def _found(report_of: Callable[[], object]) -> Counter[str]:
    try:
        report_of()
    except SubmissionError as exc:
        return counts(exc.report)
    return Counter()


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=near_valid())
def test_validate_agrees_with_the_reference(
    case: tuple[str, list[int], list[list[str]] | None],
) -> None:
    content, targets, table = case
    expected = ref.problems(content, targets)
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "submission.csv"
        path.write_bytes(content.encode())
        assert _found(lambda: scorer.validate(path, targets=targets_frame(targets))) == expected
        # The screen alone, on a file whose rows can be judged and whose cells all parse: it
        # passes exactly when the detailed rules find nothing.
        if not (expected.keys() & ref.STRUCTURAL):
            read = read_submission(path)
            users = targets_frame(targets).get_column("user_id")
            if not read.problems:
                detailed = [p for p in _row_problems(read, users) if p.count]
                for packed in {packable(read.frame), False}:  # both key forms
                    for rows in (
                        ranked(read.frame, packed, LOST_ITEMS.rank_bits),
                        keyed(read.frame, "rank", packed=packed),
                    ):
                        assert _passes_screen(rows, users, LOST_ITEMS) == (not detailed)
    if table is not None:
        columns = content.split("\r\n" if "\r\n" in content else "\n", 1)[0].split(",")
        frame = pl.DataFrame(table, schema=dict.fromkeys(columns, pl.String), orient="row")
        assert _found(lambda: scorer.validate(frame, targets=targets_frame(targets))) == expected
        if all(re.fullmatch(r"[0-9]{1,18}", cell) for row in table for cell in row):
            typed = frame.with_columns(pl.all().cast(pl.Int64))
            assert (
                _found(lambda: scorer.validate(typed, targets=targets_frame(targets))) == expected
            )


#: Integer cells as pandas' `read_csv` (the official script's reader) takes them, and what the
#: scorer makes of each (task.md, "Values"): the same number, or an `invalid_id`.
READ_AS_PANDAS_DOES = [" 7", "+7", "\t7 ", "007", "+0", " +7 "]
REFUSED = [
    "-0",  # pandas: 0; no id carries a minus sign
    "-1",  # pandas: -1; ids are non-negative
    "9223372036854775808",  # pandas: uint64; an id fits a signed 64-bit integer
    "7.0",  # pandas: float64
    "1e2",  # pandas: float64
    "1_000",  # pandas: text
    "+ 7",  # pandas: text
    "１０１",  # pandas: text (full-width digits)
    "0x10",  # pandas: text
]


@pytest.mark.parametrize("cell", READ_AS_PANDAS_DOES + REFUSED, ids=repr)
def test_an_id_cell_is_an_integer_as_pandas_reads_it_or_refused(
    cell: str, write: Callable[..., Path]
) -> None:
    lines = valid_lines()
    lines[0] = f"1,{cell},1"  # user 1's rank 1, edition 101 in the clean file
    path = write(text(lines))
    if cell in REFUSED:
        report = rejected(path)
        assert report.codes == ["invalid_id"]
        assert report.problems[0].examples[0].value == cell.strip()
        return
    clean = text([f"1,{int(cell)},1", *valid_lines()[1:]])
    against = {"solution": solution_frame()}
    assert scorer.score(path, **against).overall == scorer.score(write(clean), **against).overall


#: How a cell may dress an integer: the typed reader takes spaces or tabs before it and a '+'
#: (as pandas does); anything else fails it or is a minus sign, and the careful reader judges.
def checked(drawn: SolutionRows, *, careful: bool) -> Solution | Report:
    """The solution `solution_of` makes of drawn rows (read as text cells, as a CSV file's
    are), or the report it refuses them with."""
    frame = pl.read_csv(io.BytesIO(drawn.csv().encode()), infer_schema=False)
    table = read_as(frame, Role.SOLUTION, LOST_ITEMS, DEFAULT_LIMITS)
    try:
        return solution_of(table, careful=careful)
    except HostError as exc:
        return exc.report


@pytest.mark.parametrize("usual", [True, False], ids=["usual", "any"])
@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_a_solution_is_checked_alike_on_its_short_paths_and_carefully(
    usual: bool, data: st.DataObject
) -> None:
    """`solution_of` takes short paths for the usual solution (users in order, binary
    grades, every item listed, one stage a user); they give what the careful path (each
    rule an aggregate of a group-by) gives, the same solution or the same report. The
    usual mode draws only such files, so the short paths run on every example."""
    drawn = data.draw(broken_solutions(usual=usual))
    if usual:  # the drawn file is the short paths' own
        users = [user for user, _, _, _ in drawn.rows]
        assert users == sorted(users)
        assert all(item is not None and grade == 1 for _, item, _, grade in drawn.rows)
    fast, careful = checked(drawn, careful=False), checked(drawn, careful=True)
    if isinstance(careful, Report):
        assert fast == careful
    else:
        assert isinstance(fast, Solution)
        assert fast.users.equals(careful.users)
        assert fast.pairs.equals(careful.pairs)
        assert (fast.has_split, fast.graded) == (careful.has_split, careful.graded)


def test_a_stage_that_cannot_be_read_between_two_others_still_mixes_them() -> None:
    """A user's stages differ though an unreadable (null) one sits between them, on the
    short path as on the careful one."""
    rows = [(1, 5, "public", 1), (1, 6, "x", 1), (1, 7, "private", 1)]
    drawn = SolutionRows(rows, "stage", graded=False)
    fast, careful = checked(drawn, careful=False), checked(drawn, careful=True)
    assert isinstance(fast, Report)
    assert fast == careful
    assert fast.codes == ["invalid_stage", "mixed_stage"]


@pytest.mark.parametrize("path", sorted((CORPUS / "sub").iterdir()), ids=lambda p: p.name)
def test_the_careful_check_answers_as_the_fast_one(path: Path) -> None:
    """`careful=True` skips the check's fast paths (the matrix, the screen): the same rows or
    the same report for every submission of the corpus."""
    targets = pl.read_csv(CORPUS / "targets.csv").get_column("user_id")

    def answer(careful: bool) -> object:
        try:
            table = read_submission(path, careful=careful)
            rows = scorer.contract.check_submission(table, targets, careful=careful)
        except SubmissionError as exc:
            return exc.report.to_dict()
        # the pairs and their ranks: the user is in the pair (a fast path has no user column)
        return rows.select("pair", "rank").sort("pair", "rank").rows()

    assert answer(careful=False) == answer(careful=True)
