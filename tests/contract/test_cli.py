"""The `scorer` command through Typer's runner: outputs, exit codes and, one test a code, the
exact wording of every message."""

from __future__ import annotations

import gzip
import io
import json
import subprocess
import sys
import zipfile
from math import log2
from pathlib import Path

import polars as pl
import pytest
from support.paths import ROOT
from typer.testing import CliRunner

import scorer
from scorer.cli import app
from scorer.read.files import READABLE

runner = CliRunner()

HEADER = "user_id,edition_id,rank"

#: User 1 (public) lost 101 and 102; user 2 (private) lost 202.
SOLUTION = "user_id,edition_id,stage\n1,101,public\n1,102,public\n2,202,private\n"
TARGETS = "user_id\n1\n2\n"


def user_lines(user: int) -> list[str]:
    """Editions 100u+1.. at ranks 1..20: user 1 has 101, 102 at ranks 1, 2 (perfect) and user
    2 has 202 at rank 2."""
    return [f"{user},{100 * user + r},{r}" for r in range(1, 21)]


VALID = user_lines(1) + user_lines(2)


def text(lines: list[str], header: str = HEADER) -> str:
    return "\n".join([header, *lines]) + "\n"


def replace(lines: list[str], old: str, new: str) -> list[str]:
    assert old in lines
    return [new if line == old else line for line in lines]


def parquet(frame: pl.DataFrame) -> bytes:
    buffer = io.BytesIO()
    frame.write_parquet(buffer)
    return buffer.getvalue()


@pytest.fixture
def files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A folder (the working directory) with solution.csv, targets.csv, submission.csv."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "solution.csv").write_text(SOLUTION)
    (tmp_path / "targets.csv").write_text(TARGETS)
    (tmp_path / "submission.csv").write_text(text(VALID))
    return tmp_path


# ---------------------------------------------------------------------------------------------
# score
# ---------------------------------------------------------------------------------------------

#: The scores of `VALID`: user 1 perfect, user 2's one lost edition at rank 2.
PUBLIC = 1.0
PRIVATE = 1 / log2(3)


def test_score_prints_a_table_for_people(files: Path) -> None:
    # a terminal wide enough for every metric on one line (80 columns:
    # tests/contract/test_messages.py)
    result = runner.invoke(
        app, ["score", "submission.csv", "--solution", "solution.csv"], env={"COLUMNS": "120"}
    )
    assert result.exit_code == 0
    assert result.stderr == ""
    assert result.stdout == (
        "split      users       ndcg@20     recall@20  precision@20   hit_rate@20        mrr@20"
        "        map@20\n"
        "overall        2      0.815465      1.000000      0.075000      1.000000      0.750000"
        "      0.750000\n"
        "public         1      1.000000      1.000000      0.100000      1.000000      1.000000"
        "      1.000000\n"
        "private        1      0.630930      1.000000      0.050000      1.000000      0.500000"
        "      0.500000\n"
    )
    assert f"{(PUBLIC + PRIVATE) / 2:.6f}" == "0.815465"
    assert f"{PRIVATE:.6f}" == "0.630930"


def test_the_table_says_ignored_users_were_checked_not_scored(files: Path) -> None:
    (files / "solution.csv").write_text(SOLUTION + "3,301,Ignored\n")
    (files / "submission.csv").write_text(text(VALID + user_lines(3)))
    result = runner.invoke(
        app, ["score", "submission.csv", "--solution", "solution.csv"], env={"COLUMNS": "120"}
    )
    assert result.exit_code == 0
    lines = result.stdout.splitlines()
    assert [line.split()[:2] for line in lines[1:4]] == [
        ["overall", "2"],
        ["public", "1"],
        ["private", "1"],
    ]
    assert lines[4] == (
        "ignored        1  user of the solution's ignored stage: checked, not scored"
    )


#: Every user of the solution in its ignored stage, or without lost pairs: none is scored
#: (the second under `--no-lost exclude` only).
NO_ONE_SCORED = {
    "ignored": ("user_id,edition_id,Usage\n1,101,Ignored\n2,202,Ignored\n", []),
    "exclude": ("user_id,edition_id,stage\n1,,public\n2,,private\n", ["--no-lost", "exclude"]),
}

#: What the table says in their place: why, and that the means have no value.
NO_ONE_SCORED_TABLE = {
    "ignored": "no user scored (every target user is in the solution's ignored stage): "
    "a mean over no users has no value, null in --json\n"
    "ignored        2  users of the solution's ignored stage: checked, not scored\n",
    "exclude": "no user scored (no target user has a relevant item, and empty_users = "
    "exclude leaves such users out): a mean over no users has no value, null in --json\n",
}


@pytest.mark.parametrize("case", NO_ONE_SCORED)
def test_the_table_says_when_no_user_is_scored(files: Path, case: str) -> None:
    solution, options = NO_ONE_SCORED[case]
    (files / "solution.csv").write_text(solution)
    result = runner.invoke(app, ["score", "submission.csv", "--solution", "solution.csv", *options])
    assert result.exception is None or isinstance(result.exception, SystemExit)
    assert (result.exit_code, result.stderr) == (0, "")
    assert result.stdout == NO_ONE_SCORED_TABLE[case]


@pytest.mark.parametrize("case", NO_ONE_SCORED)
def test_score_json_has_null_for_every_mean_when_no_user_is_scored(files: Path, case: str) -> None:
    solution, options = NO_ONE_SCORED[case]
    (files / "solution.csv").write_text(solution)
    result = runner.invoke(
        app, ["score", "submission.csv", "--solution", "solution.csv", "--json", *options]
    )
    assert result.exit_code == 0
    data = json.loads(result.stdout)
    assert (data["overall"], data["public"], data["private"]) == (None, None, None)
    assert data["metrics"] == {"overall": None, "public": None, "private": None}
    ignored = 2 if case == "ignored" else 0
    assert data["users"] == {"overall": 0, "public": 0, "private": 0, "ignored": ignored}


def test_score_json_has_the_keys_and_the_numbers(files: Path) -> None:
    result = runner.invoke(app, ["score", "submission.csv", "--solution", "solution.csv", "--json"])
    assert result.exit_code == 0
    data = json.loads(result.stdout)
    assert {"overall", "public", "private", "metric", "users", "metrics"} <= set(data)
    assert (data["command"], data["status"]) == ("score", "ok")
    assert data["metric"] == "ndcg@20"
    assert data["public"] == PUBLIC
    assert data["private"] == pytest.approx(PRIVATE, rel=1e-12)
    assert data["overall"] == pytest.approx((PUBLIC + PRIVATE) / 2, rel=1e-12)
    assert data["users"] == {"overall": 2, "public": 1, "private": 1, "ignored": 0}
    assert set(data["metrics"]) == {"overall", "public", "private"}
    assert set(data["metrics"]["private"]) == {
        "users",
        "ndcg@20",
        "recall@20",
        "precision@20",
        "hit_rate@20",
        "mrr@20",
        "map@20",
    }
    assert data["metrics"]["private"]["mrr@20"] == 0.5


def test_score_json_without_a_split_column_has_null_public_and_private(files: Path) -> None:
    (files / "solution.csv").write_text("user_id,edition_id\n1,101\n1,102\n2,202\n")
    result = runner.invoke(app, ["score", "submission.csv", "--solution", "solution.csv", "--json"])
    data = json.loads(result.stdout)
    assert (data["public"], data["private"]) == (None, None)
    assert data["overall"] == pytest.approx((PUBLIC + PRIVATE) / 2, rel=1e-12)


@pytest.mark.parametrize("name", ["per_user.csv", "per_user.parquet", "per_user.csv.gz"])
def test_per_user_writes_the_table_by_its_suffix(files: Path, name: str) -> None:
    result = runner.invoke(
        app, ["score", "submission.csv", "--solution", "solution.csv", "--per-user", name]
    )
    assert result.exit_code == 0
    table = pl.read_parquet(name) if name.endswith(".parquet") else pl.read_csv(files / name)
    assert {"user_id", "stage", "ndcg", "recall", "precision", "hit_rate", "mrr", "map"} <= set(
        table.columns
    )
    assert table.get_column("user_id").to_list() == [1, 2]
    assert table.get_column("stage").to_list() == ["public", "private"]
    assert table.get_column("ndcg").to_list() == pytest.approx([PUBLIC, PRIVATE], rel=1e-12)


def test_per_user_with_an_unknown_suffix_is_a_usage_error_before_any_work(files: Path) -> None:
    result = runner.invoke(
        app, ["score", "submission.csv", "--solution", "solution.csv", "--per-user", "out.txt"]
    )
    assert result.exit_code == 2
    assert (
        result.stderr
        == "Error: out.txt: expected an output name ending in .csv, .csv.gz or .parquet\n"
    )
    assert not (files / "out.txt").exists()


def test_a_rejected_submission_writes_no_per_user_table(files: Path) -> None:
    (files / "submission.csv").write_text(text(VALID[:-1]))
    result = runner.invoke(
        app, ["score", "submission.csv", "--solution", "solution.csv", "--per-user", "out.csv"]
    )
    assert result.exit_code == 1
    assert not (files / "out.csv").exists()


def test_no_lost_exclude_leaves_users_without_lost_pairs_out(files: Path) -> None:
    (files / "solution.csv").write_text(SOLUTION + "3,,private\n")
    (files / "submission.csv").write_text(text(VALID + user_lines(3)))
    zero = json.loads(
        runner.invoke(
            app, ["score", "submission.csv", "--solution", "solution.csv", "--json"]
        ).stdout
    )
    exclude = json.loads(
        runner.invoke(
            app,
            [
                "score",
                "submission.csv",
                "--solution",
                "solution.csv",
                "--json",
                "--no-lost",
                "exclude",
            ],
        ).stdout
    )
    assert zero["private"] == pytest.approx((PRIVATE + 0.0) / 2, rel=1e-12)
    assert exclude["private"] == pytest.approx(PRIVATE, rel=1e-12)
    assert (zero["users"]["overall"], exclude["users"]["overall"]) == (3, 2)


def test_the_specs_empty_user_rule_applies_and_no_lost_overrides_it(files: Path) -> None:
    """`empty_users = "exclude"` in the TOML is `--no-lost exclude` without the option; an
    explicit `--no-lost` wins over the spec, either way."""
    (files / "solution.csv").write_text(SOLUTION + "3,,private\n")
    (files / "submission.csv").write_text(text(VALID + user_lines(3)))
    (files / "exclude.toml").write_text('empty_users = "exclude"\n')
    (files / "zero.toml").write_text('empty_users = "zero"\n')
    base = ["score", "submission.csv", "--solution", "solution.csv", "--json"]

    def scored(*more: str) -> tuple[int, str, float]:
        result = runner.invoke(app, [*base, *more])
        assert result.exit_code == 0, result.output
        data = json.loads(result.stdout)
        return data["users"]["overall"], data["no_lost"], data["private"]

    excluded = (2, "exclude", pytest.approx(PRIVATE, rel=1e-12))
    counted = (3, "zero", pytest.approx((PRIVATE + 0.0) / 2, rel=1e-12))
    assert scored("--competition", "exclude.toml") == excluded
    assert scored("--competition", "zero.toml") == counted
    assert scored("--competition", "exclude.toml", "--no-lost", "zero") == counted
    assert scored("--competition", "zero.toml", "--no-lost", "exclude") == excluded
    assert scored() == counted  # lost items' rule


# ---------------------------------------------------------------------------------------------
# validate, exit codes
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("against", [["--targets", "targets.csv"], ["--solution", "solution.csv"]])
def test_validate_a_valid_file(files: Path, against: list[str]) -> None:
    result = runner.invoke(app, ["validate", "submission.csv", *against])
    assert (result.exit_code, result.stdout, result.stderr) == (
        0,
        "submission.csv: valid (40 rows)\n",
        "",
    )
    result = runner.invoke(app, ["validate", "submission.csv", *against, "--json"])
    assert json.loads(result.stdout) == {
        "schema_version": 1,
        "scorer_version": scorer.__version__,
        "command": "validate",
        "status": "ok",
        "file": "submission.csv",
        "rows": 40,
    }


BROKEN = {
    "row_count": text(VALID[:-1]),
    "several": text(replace(VALID[:20], "1,105,5", "1,105,55") + user_lines(7) + user_lines(8)),
    "header": text(["1,2,3,4"], HEADER + ",score"),
    "unknown_only": text(VALID + user_lines(9)),
}


@pytest.mark.parametrize("content", list(BROKEN.values()), ids=list(BROKEN))
def test_validate_with_targets_or_solution_gives_the_same_report(files: Path, content: str) -> None:
    (files / "submission.csv").write_text(content)
    by_targets = runner.invoke(app, ["validate", "submission.csv", "--targets", "targets.csv"])
    by_solution = runner.invoke(app, ["validate", "submission.csv", "--solution", "solution.csv"])
    scored = runner.invoke(app, ["score", "submission.csv", "--solution", "solution.csv"])
    assert by_targets.exit_code == by_solution.exit_code == scored.exit_code == 1
    assert by_targets.stderr == by_solution.stderr == scored.stderr
    assert by_targets.stdout == by_solution.stdout == scored.stdout == ""
    as_json = [
        runner.invoke(app, ["validate", "submission.csv", *a, "--json"]).stdout
        for a in (["--targets", "targets.csv"], ["--solution", "solution.csv"])
    ]
    assert as_json[0] == as_json[1]
    data = json.loads(as_json[0])
    assert (data["status"], data["error"]["code"]) == ("rejected", "submission_rejected")


def test_validate_json_report_of_a_rejected_file(files: Path) -> None:
    (files / "submission.csv").write_text(BROKEN["several"])
    result = runner.invoke(
        app, ["validate", "submission.csv", "--targets", "targets.csv", "--json"]
    )
    assert result.exit_code == 1
    report = json.loads(result.stdout)["error"]
    assert report["message"] == "submission rejected: submission.csv: 4 problems found"
    assert report["file"] == "submission.csv"
    assert report["total"] == 4
    assert [(p["code"], p["count"]) for p in report["problems"]] == [
        ("invalid_rank", 1),
        ("missing_user", 1),
        ("unknown_user", 2),
    ]
    (example,) = report["problems"][0]["examples"]
    assert example == {
        "code": "invalid_rank",
        "line": 6,
        "user": "1",
        "column": "rank",
        "value": "55",
        "message": "line 6: rank '55' is not an integer 1..20 (user 1)",
    }


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["validate", "submission.csv"], "Error: give exactly one of --targets or --solution\n"),
        (
            [
                "validate",
                "submission.csv",
                "--targets",
                "targets.csv",
                "--solution",
                "solution.csv",
            ],
            "Error: give exactly one of --targets or --solution\n",
        ),
    ],
    ids=["neither", "both"],
)
def test_usage_errors_exit_2(files: Path, args: list[str], message: str) -> None:
    result = runner.invoke(app, args)
    assert (result.exit_code, result.stderr) == (2, message)


def test_a_missing_option_or_a_bad_choice_exits_2(files: Path) -> None:
    assert runner.invoke(app, ["score", "submission.csv"]).exit_code == 2
    bad = ["score", "submission.csv", "--solution", "solution.csv", "--no-lost", "sometimes"]
    assert runner.invoke(app, bad).exit_code == 2


def test_a_missing_solution_is_the_organisers_problem(files: Path) -> None:
    result = runner.invoke(app, ["score", "submission.csv", "--solution", "absent.csv"])
    assert result.exit_code == 2
    assert result.stderr == (
        "Error: the solution file is broken (an organiser's problem, not the participant's): "
        "absent.csv: 1 problem found\n"
        "  [file_not_found] 1 time\n"
        "    absent.csv: no such file\n"
    )


# ---------------------------------------------------------------------------------------------
# One test a code: the exact wording
# ---------------------------------------------------------------------------------------------

REJECTED = "Error: submission rejected: {file}: {n} problem{s} found\n"

#: code → (submission file name, its content (None: no file), extra options, the report after
#: the headline).
SUBMISSION_CASES: dict[str, tuple[str, str | bytes | None, list[str], str]] = {
    "file_not_found": (
        "absent.csv",
        None,
        [],
        "  [file_not_found] 1 time\n    absent.csv: no such file\n",
    ),
    "file_too_large": (
        "submission.csv",
        text(VALID),
        ["--max-bytes", "100"],
        "  [file_too_large] 1 time\n"
        "    submission.csv: the file has 366 bytes; at most 100 are accepted\n",
    ),
    "file_empty": (
        "submission.csv",
        "",
        [],
        "  [file_empty] 1 time\n    submission.csv: the file is empty\n",
    ),
    "file_format": (
        "submission.csv",
        b"PK\x03\x04workbook",
        [],
        "  [file_format] 1 time\n"
        "    submission.csv: expected CSV text, found a ZIP archive or Excel workbook\n",
    ),
    "file_encoding": (
        "submission.csv",
        b"user_id,edition_id,rank\n1,\xe9,1\n",
        [],
        "  [file_encoding] 1 time\n"
        "    submission.csv: line 2: byte 0xe9 is not UTF-8 text; save the file as UTF-8\n",
    ),
    "file_corrupt": (
        "submission.csv.gz",
        gzip.compress(text(VALID).encode(), mtime=0)[:-20],
        [],
        "  [file_corrupt] 1 time\n"
        "    submission.csv.gz: the gzip data is truncated or corrupt (the data ends in the "
        "middle of a compressed member)\n",
    ),
    "too_many_rows": (
        "submission.csv",
        text(VALID),
        ["--max-rows", "30"],
        "  [too_many_rows] 1 time\n"
        "    submission.csv: the file has 40 rows; at most 30 are accepted\n",
    ),
    "no_rows": (
        "submission.csv",
        HEADER + "\n",
        [],
        "  [no_rows] 1 time\n    submission.csv: the file has a header but no rows\n",
    ),
    "bad_delimiter": (
        "submission.csv",
        "user_id;edition_id;rank\n1;101;1\n",
        [],
        "  [bad_delimiter] 1 time\n"
        "    submission.csv: line 1: the columns are separated by ';'; expected ',' "
        "(header user_id, edition_id, rank)\n"
        "    hint: write the file with df.to_csv(path, index=False), which separates columns "
        "with ','\n",
    ),
    "missing_column": (
        "submission.csv",
        text(["1,101"], "user_id,edition_id"),
        [],
        "  [missing_column] 1 time\n"
        "    submission.csv: line 1: column 'rank' is missing; expected the header "
        "user_id,edition_id,rank\n"
        "    hint: if each edition_id cell holds a list of ids, that is the wide format: name the "
        "columns user_id,edition_ids and write each list in rank order separated by spaces, "
        '" ".join(map(str, ids))\n',
    ),
    "unknown_column": (
        "submission.csv",
        text(["1,101,1,0.5"], HEADER + ",score"),
        [],
        "  [unknown_column] 1 time\n"
        "    submission.csv: line 1: unexpected column 'score'; expected only user_id, "
        "edition_id, rank\n",
    ),
    "duplicate_column": (
        "submission.csv",
        text(["1,101,1,1"], HEADER + ",rank"),
        [],
        "  [duplicate_column] 1 time\n"
        "    submission.csv: line 1: column 'rank' appears more than once\n",
    ),
    "column_type": (
        "submission.parquet",
        parquet(pl.DataFrame({"user_id": [1], "edition_id": [1.5], "rank": [1]})),
        [],
        "  [column_type] 1 time\n"
        "    submission.parquet: column 'edition_id' holds Float64; expected integers\n",
    ),
    "line_too_long": (
        "submission.csv",
        text(replace(VALID, "1,105,5", "1," + "5" * 40 + ",5")),
        ["--max-line", "32"],
        "  [line_too_long] 1 time\n"
        "    line 6: the line has 44 bytes; at most 32 are accepted\n"
        "  [wrong_row_count] 1 time\n"
        "    line 2: user 1 has 19 rows (lines 2–21); expected exactly 20\n",
    ),
    "field_count": (
        "submission.csv",
        text(replace(VALID, "1,105,5", "1,105,5,")),
        [],
        "  [field_count] 1 time\n"
        "    line 6: found 4 fields, expected 3 (user_id,edition_id,rank): '1,105,5,'\n"
        "  [wrong_row_count] 1 time\n"
        "    line 2: user 1 has 19 rows (lines 2–21); expected exactly 20\n",
    ),
    "invalid_id": (
        "submission.csv",
        text(replace(VALID, "1,105,5", "1,105.0,5")),
        [],
        "  [invalid_id] 1 time\n"
        "    line 6: edition_id '105.0' is not a non-negative integer written in digits "
        "(user 1)\n",
    ),
    "invalid_rank": (
        "submission.csv",
        text(replace(VALID, "1,105,5", "1,105,1.0")),
        [],
        "  [invalid_rank] 1 time\n    line 6: rank '1.0' is not an integer 1..20 (user 1)\n",
    ),
    "duplicate_rank": (
        "submission.csv",
        text(replace(VALID, "2,207,7", "2,207,6")),
        [],
        "  [duplicate_rank] 1 time\n    line 28: rank 6 repeats line 27 for user 2\n",
    ),
    "duplicate_edition": (
        "submission.csv",
        text(replace(VALID, "2,207,7", "2,203,7")),
        [],
        "  [duplicate_edition] 1 time\n    line 28: edition 203 repeats line 24 for user 2\n",
    ),
    "wrong_row_count": (
        "submission.csv",
        text(VALID[:-1]),
        [],
        "  [wrong_row_count] 1 time\n"
        "    line 22: user 2 has 19 rows (lines 22–40); expected exactly 20\n",
    ),
    "repeated_header": (
        "submission.csv",
        text([*VALID[:20], HEADER, *VALID[20:]]),
        [],
        "  [repeated_header] 1 time\n"
        "    line 22 repeats the header\n"
        '    hint: a file written in chunks with df.to_csv(path, mode="a") repeats its header '
        "before each chunk: write every chunk after the first with header=False\n",
    ),
    "missing_user": (
        "submission.csv",
        text(VALID[:20]),
        [],
        "  [missing_user] 1 time\n    user 2 is missing; expected 20 rows for every target user\n",
    ),
    "unknown_user": (
        "submission.csv",
        text(VALID + [line.replace("1,", "5,", 1) for line in user_lines(1)]),
        [],
        "  [unknown_user] 1 time\n    line 42: user 5 is not a target user (20 rows)\n",
    ),
}


@pytest.mark.parametrize("code", list(SUBMISSION_CASES))
def test_each_submission_code_has_its_message(files: Path, code: str) -> None:
    name, content, options, body = SUBMISSION_CASES[code]
    if isinstance(content, str):
        (files / name).write_text(content)
    elif content is not None:
        (files / name).write_bytes(content)
    result = runner.invoke(app, ["validate", name, "--solution", "solution.csv", *options])
    n = body.count("\n  [") + 1  # one problem a code in these cases
    headline = REJECTED.format(file=name, n=n, s="" if n == 1 else "s")
    assert result.exit_code == 1
    assert result.stdout == ""
    assert result.stderr == headline + body
    assert f"[{code}]" in result.stderr


HOST = "Error: the {role} file is broken (an organiser's problem, not the participant's): "

#: code → (solution or targets content, the message after the headline).
HOST_CASES: dict[str, tuple[str, str]] = {
    "invalid_stage": (
        "user_id,edition_id,stage\n1,101,public\n2,202,hidden\n",
        "    line 3: stage 'hidden' is not public, private or ignored (user 2)\n",
    ),
    "mixed_stage": (
        "user_id,edition_id,stage\n1,101,public\n1,102,private\n2,202,private\n",
        "    line 2: user 1 has rows in more than one stage; a user's stage must be the same on "
        "all its rows\n",
    ),
    "duplicate_pair": (
        "user_id,edition_id,stage\n1,101,public\n1,101,public\n2,202,private\n",
        "    line 3: pair (user 1, edition 101) repeats line 2 for user 1\n",
    ),
    "invalid_grade": (
        "user_id,edition_id,grade\n1,101,1\n2,202,12\n",
        "    line 3: grade '12' is not an integer 0..10 (user 2)\n",
    ),
    "empty_and_pairs": (
        "user_id,edition_id,stage\n1,101,public\n1,,public\n2,202,private\n",
        "    line 3: user 1 has an empty edition_id (no lost pairs) and lost pairs on other rows\n",
    ),
}


#: Codes whose message is known to be wrong; the reason says how.
@pytest.mark.parametrize("code", list(HOST_CASES))
def test_each_solution_code_has_its_message(files: Path, code: str) -> None:
    content, message = HOST_CASES[code]
    (files / "bad_solution.csv").write_text(content)
    result = runner.invoke(app, ["score", "submission.csv", "--solution", "bad_solution.csv"])
    assert result.exit_code == 2
    assert result.stdout == ""
    assert result.stderr == (
        HOST.format(role="solution")
        + f"bad_solution.csv: 1 problem found\n  [{code}] 1 time\n"
        + message
    )


def test_duplicate_user_in_targets_has_its_message(files: Path) -> None:
    (files / "bad_targets.csv").write_text("user_id\n1\n2\n1\n")
    result = runner.invoke(app, ["validate", "submission.csv", "--targets", "bad_targets.csv"])
    assert result.exit_code == 2
    assert result.stderr == (
        HOST.format(role="targets")
        + "bad_targets.csv: 1 problem found\n  [duplicate_user] 1 time\n"
        + "    line 4: user 1 repeats line 2\n"
    )


def test_a_broken_solution_in_json_mode_says_so(files: Path) -> None:
    (files / "bad_solution.csv").write_text(HOST_CASES["mixed_stage"][0])
    result = runner.invoke(
        app, ["score", "submission.csv", "--solution", "bad_solution.csv", "--json"]
    )
    assert result.exit_code == 2
    data = json.loads(result.stdout)
    error = data["error"]
    assert (data["status"], error["code"], error["role"]) == (
        "error",
        "organiser_file_broken",
        "solution",
    )
    assert error["problems"][0]["code"] == "mixed_stage"


# ---------------------------------------------------------------------------------------------
# scorer ndcg
# ---------------------------------------------------------------------------------------------

EXAMPLE = '{"y_true": [3, 2, 0, 1], "y_score": [0.2, 0.8, 0.8, 0.1], "K": 3}'
EXAMPLE_OUTPUT = '{"dcg":6.5,"idcg":9.392789,"ndcg":0.69202}\n'


def test_ndcg_from_a_file(tmp_path: Path) -> None:
    path = tmp_path / "list.json"
    path.write_text(EXAMPLE)
    result = runner.invoke(app, ["ndcg", str(path)])
    assert (result.exit_code, result.stdout, result.stderr) == (0, EXAMPLE_OUTPUT, "")


def test_ndcg_from_stdin() -> None:
    result = runner.invoke(app, ["ndcg", "-"], input=EXAMPLE)
    assert (result.exit_code, result.stdout, result.stderr) == (0, EXAMPLE_OUTPUT, "")


def test_ndcg_takes_k_as_a_competitions_toml_spells_it() -> None:
    """`k` (the TOML's key) or `K` (sklearn-style scripts'), one of them: the same list, the
    same output; a bad value is named as it was given."""
    lower = runner.invoke(app, ["ndcg", "-"], input=EXAMPLE.replace('"K"', '"k"'))
    assert (lower.exit_code, lower.stdout, lower.stderr) == (0, EXAMPLE_OUTPUT, "")
    bad = runner.invoke(app, ["ndcg", '{"y_true": [1], "y_score": [1], "k": 0}'])
    assert (bad.exit_code, bad.stderr) == (1, "Error: k = 0; expected an integer >= 1\n")


def test_ndcg_with_k_beyond_the_list_uses_the_whole_list() -> None:
    whole = runner.invoke(app, ["ndcg", "-"], input=EXAMPLE.replace('"K": 3', '"K": 4'))
    beyond = runner.invoke(app, ["ndcg", "-"], input=EXAMPLE.replace('"K": 3', '"K": 400'))
    assert beyond.exit_code == 0
    assert beyond.stdout == whole.stdout


MALFORMED = {
    "not-json": (
        "{y_true: [1]}",
        "Error: malformed JSON: Expecting property name enclosed in "
        "double quotes at line 1, column 2\n",
    ),
    "truncated": (
        '{"y_true": [3, 2',
        "Error: malformed JSON: Expecting ',' delimiter at line 1, column 17\n",
    ),
    "empty": ("", "Error: malformed JSON: Expecting value at line 1, column 1\n"),
    "not-an-object": (
        "[1, 2]",
        'Error: expected a JSON object {"y_true": [...], "y_score": [...], "K": k}\n',
    ),
    "missing-k": ('{"y_true": [1], "y_score": [1]}', "Error: missing field: K (or k)\n"),
    "missing-two": ('{"K": 1}', "Error: missing fields: y_true, y_score\n"),
    "extra": (EXAMPLE[:-1] + ', "top": 3}', "Error: unexpected field: top\n"),
    "both-cutoffs": (
        EXAMPLE[:-1] + ', "k": 3}',
        "Error: both K and k given; expected one of them (they name the same cut-off)\n",
    ),
    "scores-not-a-list": (
        '{"y_true": [1], "y_score": 1, "K": 1}',
        "Error: y_score must be a list, got int\n",
    ),
    "lengths": (
        '{"y_true": [1, 0], "y_score": [1], "K": 1}',
        "Error: y_true has 2 items but y_score has 1; expected the same\n",
    ),
    "nan": (
        '{"y_true": [1, 0], "y_score": [1, NaN], "K": 1}',
        "Error: y_score[1] = nan; expected a number (not NaN)\n",
    ),
    "text-score": (
        '{"y_true": [1], "y_score": ["1"], "K": 1}',
        "Error: y_score[0] = '1'; expected a number (not NaN)\n",
    ),
    "negative-grade": (
        '{"y_true": [1, -1], "y_score": [1, 2], "K": 1}',
        "Error: y_true[1] = -1; expected an integer grade 0..10\n",
    ),
    "float-grade": (
        '{"y_true": [1.0], "y_score": [1], "K": 1}',
        "Error: y_true[0] = 1.0; expected an integer grade 0..10\n",
    ),
    "k-zero": (
        '{"y_true": [1], "y_score": [1], "K": 0}',
        "Error: K = 0; expected an integer >= 1\n",
    ),
    "k-bool": (
        '{"y_true": [1], "y_score": [1], "K": true}',
        "Error: K = true; expected an integer >= 1\n",
    ),
    "k-float": (
        '{"y_true": [1], "y_score": [1], "K": 3.0}',
        "Error: K = 3.0; expected an integer >= 1\n",
    ),
    "k-null": (
        '{"y_true": [1], "y_score": [1], "K": null}',
        "Error: K = null; expected an integer >= 1\n",
    ),
    "huge-int-score": (
        '{"y_true": [1], "y_score": [1' + "0" * 400 + '], "K": 1}',
        "Error: y_score[0] is an integer of 401 digits; expected a number that fits a float\n",
    ),
    "deeply-nested": ("[" * 100_000, "Error: malformed JSON: nested too deeply\n"),
}


@pytest.mark.parametrize("case", list(MALFORMED))
def test_ndcg_malformed_input_exits_1_with_one_line(case: str) -> None:
    source, message = MALFORMED[case]
    result = runner.invoke(app, ["ndcg", "-"], input=source)
    assert result.exit_code == 1
    assert result.stdout == ""
    assert result.stderr == message
    assert result.stderr.count("\n") == 1


def test_ndcg_of_a_missing_file_exits_2_with_one_line(tmp_path: Path) -> None:
    absent = tmp_path / "absent.json"
    result = runner.invoke(app, ["ndcg", str(absent)])
    assert result.exit_code == 2
    assert result.stderr == f"Error: {absent}: No such file or directory\n"


def test_ndcg_takes_the_json_inline_from_a_file_or_from_stdin(tmp_path: Path) -> None:
    (tmp_path / "list.json").write_text(EXAMPLE)
    inline = runner.invoke(app, ["ndcg", EXAMPLE])
    from_file = runner.invoke(app, ["ndcg", str(tmp_path / "list.json")])
    from_stdin = runner.invoke(app, ["ndcg", "-"], input=EXAMPLE)
    assert inline.exit_code == from_file.exit_code == from_stdin.exit_code == 0
    assert inline.stdout == from_file.stdout == from_stdin.stdout
    assert json.loads(inline.stdout)["ndcg"] > 0


def test_ndcg_of_bytes_that_are_not_utf8_exits_1_with_one_line(tmp_path: Path) -> None:
    path = tmp_path / "list.json"
    path.write_bytes(b'{"y_true": [1], "y_score": [1], "K": 1, "\xff": 0}')
    result = runner.invoke(app, ["ndcg", str(path)])
    assert result.exit_code == 1
    assert result.stderr.startswith("Error: ")
    assert result.stderr.count("\n") == 1


def test_version_short_help_and_python_m() -> None:
    version = runner.invoke(app, ["--version"])
    assert (version.exit_code, version.stdout) == (0, f"scorer {scorer.__version__}\n")
    for args in (["-h"], ["score", "-h"], ["leaderboard", "show", "-h"]):
        shown = runner.invoke(app, args)
        assert shown.exit_code == 0 and "Usage: " in shown.stdout, args
    module = subprocess.run(
        [sys.executable, "-m", "scorer", "--help"], capture_output=True, text=True, check=False
    )
    assert module.returncode == 0 and "Usage: scorer" in module.stdout


#: Every command, as `scorer --help` lists them: where each was registered.
COMMANDS = [
    "submit",
    "score",
    "validate",
    "prepare",
    "verify",
    "ndcg",
    "schema",
    "leaderboard",
    "codabench",
    "kit",
    "serve",
]


def test_help_lists_every_command_where_it_was_registered() -> None:
    """The commands built when first named (`shell.LAZY`) are listed among the others."""
    shown = runner.invoke(app, ["--help"])
    listed = shown.stdout.split("Commands:\n", 1)[1].splitlines()
    assert [line.split()[0] for line in listed if line.startswith("  ")] == COMMANDS


def test_score_imports_neither_the_server_nor_the_leaderboard() -> None:
    """`scorer score` runs without the server's and the leaderboard's commands (0.17 s of
    imports every run); `scorer serve` loads them when named."""
    code = (
        "import atexit, sys; from scorer.cli import app; "
        "atexit.register(lambda: print(sorted(m for m in sys.modules if m.startswith("
        "('scorer.serve', 'scorer.leaderboard.cli', 'scorer.leaderboard.boards'))))); app()"
    )
    score = ["score", "data/sample_submission.csv", "--solution", "data/solution.csv", "--json"]
    for args, loaded in ((score, False), (["serve", "--help"], True)):
        done = subprocess.run(
            [sys.executable, "-c", code, *args],
            cwd=ROOT,
            capture_output=True,
            text=True,
            check=True,
        )
        last = done.stdout.splitlines()[-1]
        assert ("'scorer.serve.cli'" in last) is loaded, last
        assert ("'scorer.leaderboard.cli'" in last) is loaded, last
        assert ("'scorer.leaderboard.boards'" in last) is loaded, last


@pytest.mark.parametrize(
    ("command", "options"),
    [
        (["score"], ["SUBMISSION", "--solution"]),
        (["validate"], ["SUBMISSION", "--targets"]),
        (["prepare"], ["SOLUTION"]),
        (["leaderboard", "score"], ["--solution"]),
    ],
    ids=" ".join,
)
def test_help_names_every_format_read(command: list[str], options: list[str]) -> None:
    """Each file a command reads names the formats the readers take: .zip and a bare .gz or
    no suffix (read by content) too, in the one wording of `READABLE`."""
    shown = runner.invoke(app, [*command, "--help"], env={"COLUMNS": "100"})
    assert shown.exit_code == 0
    flat = " ".join(shown.stdout.split())
    assert flat.count(f": {READABLE}.") == len(options)
    for option in options:
        assert f"{option} " in flat


@pytest.mark.parametrize("name", ["solution.zip", "solution.gz", "solution"])
def test_a_solution_is_read_in_every_format_the_help_names(files: Path, name: str) -> None:
    """The help is true: a solution in a zip, or gzip-compressed under a bare .gz or no
    suffix at all, scores as its CSV does."""
    (files / "submission.csv").write_text(text(VALID))
    csv = SOLUTION.encode()
    if name.endswith(".zip"):
        with zipfile.ZipFile(files / name, "w") as archive:
            archive.writestr("solution.csv", csv)
    else:
        (files / name).write_bytes(gzip.compress(csv))
    (files / "plain.csv").write_bytes(csv)
    args = ["score", "submission.csv", "--json", "--solution"]
    packed = runner.invoke(app, [*args, name])
    plain = runner.invoke(app, [*args, "plain.csv"])
    assert packed.exit_code == plain.exit_code == 0, packed.output
    assert json.loads(packed.stdout) == json.loads(plain.stdout)


@pytest.mark.parametrize(
    "command",
    [
        [],
        ["score"],
        ["validate"],
        ["ndcg"],
        ["schema"],
        ["leaderboard", "score"],
        ["leaderboard", "show"],
        ["leaderboard", "demo"],
        ["codabench"],
    ],
    ids=lambda words: " ".join(words) or "scorer",
)
def test_help_reads_cleanly(command: list[str]) -> None:
    """Plain help: no boxes, no `<bool>` on flags, sizes in binary units, metavars in capitals."""
    shown = runner.invoke(app, [*command, "--help"], env={"COLUMNS": "100"})
    assert shown.exit_code == 0
    assert "<bool>" not in shown.stdout
    assert not set("╭│╰") & set(shown.stdout)
    if command == ["score"]:
        assert "--solution FILE" in shown.stdout
        assert "[default: (4 GiB); x>=1]" in shown.stdout


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="no /dev/full on this system")
@pytest.mark.parametrize(
    "args",
    [
        ["score", "data/sample_submission.csv", "--solution", "data/solution.csv"],
        ["validate", "data/sample_submission.csv", "--targets", "data/targets.csv", "--json"],
        ["leaderboard", "show", "--db", "{db}"],
        ["leaderboard", "show", "--db", "{db}", "--json"],
    ],
    ids=["score", "validate-json", "show", "show-json"],
)
def test_an_output_that_cannot_be_written_is_an_error_not_a_traceback(
    args: list[str], tmp_path: Path
) -> None:
    """stdout on a full disk (issue 24): one line on stderr saying why, exit 2."""
    root = ROOT
    if "{db}" in args:
        demo = tmp_path / "demo"
        assert CliRunner().invoke(app, ["leaderboard", "demo", str(demo)]).exit_code == 0
        scored = CliRunner().invoke(
            app,
            [
                "leaderboard",
                "score",
                str(demo / "manifest.csv"),
                "--solution",
                str(demo / "solution.csv"),
                "--db",
                str(demo / "b.db"),
            ],
        )
        assert scored.exit_code == 0, scored.output
        args = [a.replace("{db}", str(demo / "b.db")) for a in args]
    with open("/dev/full", "w") as full:
        done = subprocess.run(
            [sys.executable, "-m", "scorer", *args],
            cwd=root,
            stdout=full,
            stderr=subprocess.PIPE,
            text=True,
            check=False,
        )
    assert done.returncode == 2
    assert done.stderr == "Error: cannot write the output: No space left on device\n"
