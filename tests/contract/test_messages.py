"""Messages in the competition's words (issue 22, item 4): a wide-format attempt, Python lists,
floats made by empty cells, a repeated header, a frame's index, a targets file given as the
solution, `--problems`, and the score table in 80 columns; each under lost items and under a
competition whose every column is renamed, whose messages never say a lost-items name."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from support.messages import BRACKETS, JOIN, LISTS, REPEATED, RESET_INDEX, WIDE, empty_floats
from support.paths import ROOT
from typer.testing import CliRunner

import scorer
from scorer.cli import app
from scorer.errors import MAX_EXAMPLES, MOST_EXAMPLES, SubmissionError

TARGETS = ROOT / "data" / "targets.csv"
SAMPLE = ROOT / "data" / "sample_submission.csv"
SOLUTION = ROOT / "data" / "solution.csv"
HM = ROOT / "data" / "hm"

runner = CliRunner()

HEADER = "user_id,edition_id,rank"


#: A competition with every column renamed, a long name and k = 100 (the longest labels).
PLAYLISTS = """\
name = "Playlist continuation, sessions of the second half of the year (a long name)"
k = 100
metric = "precision"
rows = "at_most"

[columns]
user = "session_id"
item = "track_id"
rank = "place"
list = "tracks"
"""

#: Names that lost items' messages use and a renamed competition's must not (the word "rank"
#: is English too: the rank column only where a column is named).
LOST_WORDS = re.compile(r"user_id|edition|'rank'|\"rank\"|,rank\b|\brank,")


@pytest.fixture
def playlists(tmp_path: Path) -> Path:
    """The renamed competition's folder: competition.toml, solution.csv (sessions 1..3, each
    with two relevant tracks), targets.csv, submission.csv (valid, long)."""
    (tmp_path / "competition.toml").write_text(PLAYLISTS)
    solution = "session_id,track_id\n" + "".join(
        f"{s},{100 * s + t}\n" for s in (1, 2, 3) for t in (1, 2)
    )
    (tmp_path / "solution.csv").write_text(solution)
    (tmp_path / "targets.csv").write_text("session_id\n1\n2\n3\n")
    rows = "".join(f"{s},{100 * s + p},{p}\n" for s in (1, 2, 3) for p in range(1, 11))
    (tmp_path / "submission.csv").write_text("session_id,track_id,place\n" + rows)
    return tmp_path


def validate(path: Path, *args: str) -> tuple[int, str]:
    result = runner.invoke(app, ["validate", str(path), *args])
    assert result.stdout == "" or "--json" in args
    return result.exit_code, result.stderr


def in_playlists(folder: Path, path: Path, *args: str) -> tuple[int, str]:
    code, stderr = validate(
        path,
        "--targets",
        str(folder / "targets.csv"),
        "--competition",
        str(folder / "competition.toml"),
        *args,
    )
    assert not LOST_WORDS.search(stderr), stderr
    return code, stderr


# --- a header that looks like an attempt at the wide format ----------------------------------


def test_a_wide_attempt_is_told_the_wide_header_and_the_join(tmp_path: Path) -> None:
    path = tmp_path / "wide.csv"
    path.write_text("user_id,prediction\n10000,500037 500174\n")
    code, stderr = validate(path, "--targets", str(TARGETS))
    assert code == 1
    assert stderr == (
        "Error: submission rejected: wide.csv: 2 problems found\n"
        "  [missing_column] 1 time\n"
        "    wide.csv: line 1: column 'edition_ids' is missing; expected the header "
        "user_id,edition_ids (the wide format; or user_id,edition_id,rank, the long format)\n"
        f"    hint: {WIDE}\n"
        "  [unknown_column] 1 time\n"
        "    wide.csv: line 1: unexpected column 'prediction' (did you mean 'edition_ids'?); "
        "expected only user_id, edition_ids\n"
    )


def test_a_wide_attempt_under_hm_names_customer_id_and_prediction(tmp_path: Path) -> None:
    path = tmp_path / "wide.csv"
    path.write_text("customer_id,predictions\n7000001,174884004 302918011\n")
    code, stderr = validate(
        path, "--targets", str(HM / "targets.csv"), "--competition", str(HM / "competition.toml")
    )
    assert code == 1
    assert "expected the header customer_id,prediction (the wide format; or " in stderr
    assert "unexpected column 'predictions' (did you mean 'prediction'?)" in stderr
    assert "the header customer_id,prediction, each prediction cell the ids in " in stderr
    assert JOIN in stderr and not re.search("user_id|edition", stderr)  # its rank is 'rank'


def test_a_wide_attempt_in_a_renamed_competition(playlists: Path) -> None:
    path = playlists / "wide.csv"
    path.write_text("session_id,prediction\n1,101 102\n")
    code, stderr = in_playlists(playlists, path)
    assert code == 1
    assert (
        "column 'tracks' is missing; expected the header session_id,tracks (the wide format; "
        "or session_id,track_id,place, the long format)" in stderr
    )
    assert "hint: one line a user is the wide format: the header session_id,tracks" in stderr


def test_a_wide_file_without_its_header_is_told_both_headers(tmp_path: Path) -> None:
    path = tmp_path / "no_header.csv"
    path.write_text("7000001,174884004 302918011\n7000002,174884004\n")
    code, stderr = validate(
        path, "--targets", str(HM / "targets.csv"), "--competition", str(HM / "competition.toml")
    )
    assert code == 1
    assert stderr.endswith(
        "    no_header.csv: line 1 is not a header: found '7000001,174884004 302918011'; "
        "expected the first line to name the columns: customer_id,article_id,rank "
        "(or customer_id,prediction, the wide format)\n"
    )


def test_a_pandas_index_beside_the_user_column_is_no_wide_attempt(tmp_path: Path) -> None:
    """`Unnamed: 0` is the index hint's, not the wide format's."""
    path = tmp_path / "index.csv"
    path.write_text("Unnamed: 0,user_id\n0,10000\n")
    code, stderr = validate(path, "--targets", str(TARGETS))
    assert code == 1
    assert "wide format" not in stderr and "'Unnamed: 0' is a pandas index" in stderr


def test_lists_in_the_item_column_get_the_wide_hint(playlists: Path) -> None:
    path = playlists / "lists.csv"
    path.write_text('session_id,track_id\n1,"101 102"\n')
    code, stderr = in_playlists(playlists, path)
    assert code == 1
    assert stderr.endswith(
        "    lists.csv: line 1: column 'place' is missing; expected the header "
        "session_id,track_id,place\n"
        "    hint: if each track_id cell holds a list of ids, that is the wide format: name the "
        "columns session_id,tracks and write each list in rank order separated by spaces, "
        f"{JOIN}\n"
    )


def test_lists_in_edition_id_get_the_wide_hint(tmp_path: Path) -> None:
    path = tmp_path / "lists.csv"
    sample = pd.read_csv(SAMPLE)
    sample.groupby("user_id")["edition_id"].apply(lambda ids: " ".join(map(str, ids))).to_csv(path)
    code, stderr = validate(path, "--targets", str(TARGETS))
    assert code == 1
    assert stderr.endswith(
        f"column 'rank' is missing; expected the header {HEADER}\n    hint: {LISTS}\n"
    )


def python_lists(frame: pd.DataFrame, user: str, item: str, ids: str) -> pd.DataFrame:
    """A long frame as a participant's wide one whose lists pandas writes as '[1, 2, 3]'."""
    return frame.groupby(user)[item].apply(list).reset_index().rename(columns={item: ids})


def test_python_lists_are_named_and_the_join_shown(tmp_path: Path) -> None:
    path = tmp_path / "lists.csv"
    python_lists(pd.read_csv(SAMPLE), "user_id", "edition_id", "edition_ids").to_csv(
        path, index=False
    )
    code, stderr = validate(path, "--targets", str(TARGETS))
    assert code == 1
    assert "  [invalid_id] 2,000 times\n" in stderr
    assert stderr.endswith(f"    hint: {BRACKETS}\n")


def test_python_lists_in_a_renamed_competition(playlists: Path) -> None:
    long = pd.read_csv(playlists / "submission.csv")
    path = playlists / "lists.csv"
    python_lists(long, "session_id", "track_id", "tracks").to_csv(path, index=False)
    code, stderr = in_playlists(playlists, path)
    assert code == 1
    assert "found '[101': the lists were written as Python prints them" in stderr
    assert f'df["tracks"] = df["tracks"].map(lambda ids: {JOIN})' in stderr


@pytest.mark.parametrize(
    ("change", "said"),
    [
        (lambda f: f.assign(place=f["place"] - 1), 'count them from 1: df["place"] += 1'),
        (lambda f: f.assign(place=f["place"] * 1.0), 'df["place"] = df["place"].astype("int64")'),
        (
            lambda f: f.assign(session_id=f["session_id"] * 1.0, track_id=f["track_id"] * 1.0),
            'df = df.astype({"session_id": "int64", "track_id": "int64"})',
        ),
        (lambda f: f.assign(extra=1), "expected only session_id, track_id, place"),
        (lambda f: f.drop(columns="track_id"), "expected the header session_id,track_id,place"),
    ],
)
def test_the_older_hints_and_header_messages_in_a_renamed_competition(
    playlists: Path, change: Callable[[pd.DataFrame], pd.DataFrame], said: str
) -> None:
    path = playlists / "changed.csv"
    change(pd.read_csv(playlists / "submission.csv")).to_csv(path, index=False)
    code, stderr = in_playlists(playlists, path)
    assert code == 1
    assert said in stderr


# --- floats made by empty cells ----------------------------------------------------------------


def with_one_empty(frame: pd.DataFrame, column: str, row: int) -> pd.DataFrame:
    """As pandas makes it: one NaN turns the whole integer column into floats."""
    frame = frame.copy()
    frame[column] = frame[column].astype(float)
    frame.loc[row, column] = np.nan
    return frame


def test_floats_made_by_an_empty_cell_name_it_and_say_why(tmp_path: Path) -> None:
    path = tmp_path / "nan.csv"
    with_one_empty(pd.read_csv(SAMPLE), "edition_id", 7).to_csv(path, index=False)
    code, stderr = validate(path, "--targets", str(TARGETS))
    assert code == 1
    assert "  [invalid_id] 20,000 times\n" in stderr
    assert stderr.endswith(f"    … and 19,995 more\n    hint: {empty_floats(9)}\n")


def test_the_corpus_file_of_task_md_gets_the_hint() -> None:
    corpus = ROOT / "tests" / "corpus"
    path = corpus / "sub" / "float_ids_one_empty.csv"
    code, stderr = validate(path, "--targets", str(corpus / "targets.csv"))
    assert code == 1
    assert stderr.endswith(f"    hint: {empty_floats(8)}\n")


def test_floats_made_by_empty_cells_read_in_parts_name_the_first(tmp_path: Path) -> None:
    frame = with_one_empty(pd.read_csv(SAMPLE), "edition_id", 15_000)
    frame.loc[12_000, "edition_id"] = np.nan
    path = tmp_path / "nan.csv"
    frame.to_csv(path, index=False)
    code, stderr = validate(path, "--targets", str(TARGETS), "--parts", "3")
    assert code == 1
    assert "hint: edition_id has 2 empty cells (the first on line 12002)" in stderr


def test_floats_made_by_an_empty_cell_in_a_renamed_competition(playlists: Path) -> None:
    frame = with_one_empty(pd.read_csv(playlists / "submission.csv"), "track_id", 3)
    path = playlists / "nan.csv"
    frame.to_csv(path, index=False)
    code, stderr = in_playlists(playlists, path)
    assert code == 1
    assert "hint: track_id has an empty cell (the first on line 5)" in stderr
    assert 'df["track_id"] = df["track_id"].astype("int64")' in stderr


def test_a_frame_made_floats_by_an_empty_cell_names_its_row() -> None:
    frame = with_one_empty(pd.read_csv(SAMPLE), "edition_id", 7)
    with pytest.raises(SubmissionError) as info:
        scorer.validate(frame, targets=TARGETS)
    (problem,) = info.value.report.problems
    assert problem.code == "column_type"
    assert problem.hint is not None
    assert problem.hint.startswith("edition_id has an empty cell (the first on row 8), and ")


# --- a header repeated by chunks ---------------------------------------------------------------


def test_a_header_repeated_by_chunks_is_one_problem_a_line(playlists: Path) -> None:
    lines = (playlists / "submission.csv").read_text().splitlines()
    path = playlists / "chunks.csv"
    path.write_text("\n".join([*lines[:12], lines[0], *lines[12:]]) + "\n")
    code, stderr = in_playlists(playlists, path)
    assert code == 1
    assert stderr == (
        "Error: submission rejected: chunks.csv: 1 problem found\n"
        "  [repeated_header] 1 time\n"
        "    line 13 repeats the header\n"
        f"    hint: {REPEATED}\n"
    )


def test_a_header_repeated_by_to_csv_mode_a_in_parts(tmp_path: Path) -> None:
    sample = pd.read_csv(SAMPLE)
    path = tmp_path / "chunks.csv"
    sample.iloc[:5000].to_csv(path, index=False)
    sample.iloc[5000:].to_csv(path, index=False, mode="a")
    for parts in ("1", "4"):
        code, stderr = validate(path, "--targets", str(TARGETS), "--parts", parts)
        assert code == 1
        assert "1 problem found\n  [repeated_header] 1 time\n    line 5002 repeats" in stderr


def test_a_wide_file_repeating_its_header_in_hm_words(tmp_path: Path) -> None:
    lines = (HM / "sample_submission.csv").read_text().splitlines()
    path = tmp_path / "chunks.csv"
    path.write_text("\n".join([*lines[:101], lines[0], *lines[101:]]) + "\n")
    for parts in ("1", "3"):
        code, stderr = validate(
            path,
            "--targets",
            str(HM / "targets.csv"),
            "--competition",
            str(HM / "competition.toml"),
            "--parts",
            parts,
        )
        assert code == 1
        assert stderr == (
            "Error: submission rejected: chunks.csv: 1 problem found\n"
            "  [repeated_header] 1 time\n"
            "    line 102 repeats the header\n"
            f"    hint: {REPEATED}\n"
        )


# --- a frame's index ---------------------------------------------------------------------------


def test_a_user_column_kept_as_the_index_gets_reset_index() -> None:
    frame = pd.read_csv(SAMPLE).set_index("user_id")
    with pytest.raises(SubmissionError) as info:
        scorer.validate(frame, targets=TARGETS)
    (problem,) = info.value.report.problems
    assert problem.code == "missing_column"
    assert problem.hint == RESET_INDEX


def test_the_index_hint_in_a_renamed_competition(playlists: Path) -> None:
    rules = scorer.Competition.load(playlists / "competition.toml")
    frame = pd.read_csv(playlists / "submission.csv").set_index(["session_id", "place"])
    with pytest.raises(SubmissionError) as info:
        scorer.validate(frame, targets=playlists / "targets.csv", competition=rules)
    (problem,) = info.value.report.problems
    assert problem.hint is not None and problem.hint.startswith("'session_id' is the frame's")


# --- a targets file given as the solution ------------------------------------------------------


@pytest.mark.parametrize("command", ["validate", "score"])
def test_a_targets_file_given_as_the_solution_says_so(command: str) -> None:
    result = runner.invoke(app, [command, str(SAMPLE), "--solution", str(TARGETS)])
    assert result.exit_code == 2
    assert result.stderr == (
        "Error: targets.csv holds one column of users, as the targets file does, not a "
        "solution: to check a submission against the target users, run scorer validate "
        "SUBMISSION --targets targets.csv\n"
    )
    assert "organiser" not in result.stderr


def test_a_targets_file_given_as_the_solution_in_json_and_in_parts(playlists: Path) -> None:
    args = ["--solution", str(playlists / "targets.csv")]
    rules = ["--competition", str(playlists / "competition.toml")]
    for extra in (["--json"], ["--json", "--parts", "2"]):
        result = runner.invoke(
            app, ["score", str(playlists / "submission.csv"), *args, *rules, *extra]
        )
        assert result.exit_code == 2
        error = json.loads(result.stdout)["error"]
        assert (error["code"], error["role"]) == ("usage_error", None)
        assert error["message"].startswith("targets.csv holds one column of users")


# --- --problems ----------------------------------------------------------------------------------


def test_problems_shows_more_examples_and_json_carries_them(tmp_path: Path) -> None:
    path = tmp_path / "nan.csv"
    with_one_empty(pd.read_csv(SAMPLE), "edition_id", 7).to_csv(path, index=False)
    code, stderr = validate(path, "--targets", str(TARGETS), "--problems", "8")
    assert code == 1
    examples = [line for line in stderr.splitlines() if line.startswith("    line ")]
    assert len(examples) == 8
    assert examples[-1] == (
        "    line 9: edition_id empty is not a non-negative integer written in digits (user 10000)"
    )
    assert "    … and 19,992 more\n" in stderr
    counts = {}
    for asked, shown in (("5", 5), ("all", MOST_EXAMPLES), ("30000", MOST_EXAMPLES), ("1", 1)):
        result = runner.invoke(
            app,
            ["score", str(path), "--solution", str(SOLUTION), "--json", "--problems", asked],
        )
        (problem,) = json.loads(result.stdout)["error"]["problems"]
        counts[asked] = (problem["count"], len(problem["examples"]))
        assert counts[asked] == (20_000, shown)
    default = runner.invoke(app, ["validate", str(path), "--targets", str(TARGETS), "--json"])
    (problem,) = json.loads(default.stdout)["error"]["problems"]
    assert len(problem["examples"]) == MAX_EXAMPLES


def test_problems_all_says_where_it_stops(tmp_path: Path) -> None:
    path = tmp_path / "nan.csv"
    with_one_empty(pd.read_csv(SAMPLE), "edition_id", 7).to_csv(path, index=False)
    code, stderr = validate(path, "--targets", str(TARGETS), "--problems", "all")
    assert code == 1
    assert "    … and 10,000 more (at most 10,000 are shown)\n" in stderr


def test_problems_in_parts_and_for_the_rules_of_users(playlists: Path) -> None:
    lines = (playlists / "submission.csv").read_text().splitlines()
    more = [f"{s},{s},1" for s in range(7, 15)]  # eight sessions that are not targets
    path = playlists / "unknown.csv"
    path.write_text("\n".join([*lines, *more]) + "\n")
    for parts in ("1", "2"):
        code, stderr = in_playlists(playlists, path, "--problems", "all", "--parts", parts)
        assert code == 1
        assert "  [unknown_user] 8 times\n" in stderr
        assert stderr.count("is not a target user") == 8


@pytest.mark.parametrize("value", ["0", "-3", "many", ""])
def test_problems_takes_a_number_or_all(value: str) -> None:
    result = runner.invoke(
        app, ["validate", str(SAMPLE), "--targets", str(TARGETS), "--problems", value]
    )
    assert result.exit_code == 2
    assert result.stderr == f"Error: --problems takes a number from 1 or 'all', not {value!r}\n"


# --- the score table in 80 columns --------------------------------------------------------------


def test_the_score_table_fits_80_columns_by_stacking_metrics() -> None:
    result = runner.invoke(
        app, ["score", str(SAMPLE), "--solution", str(SOLUTION)], env={"COLUMNS": "80"}
    )
    assert result.exit_code == 0
    assert result.stdout == (
        "split      users       ndcg@20     recall@20  precision@20\n"
        "overall    1,000      0.357986      0.399395      0.291850\n"
        "public       500      0.355873      0.392686      0.291900\n"
        "private      500      0.360098      0.406104      0.291800\n"
        "\n"
        "split      users   hit_rate@20        mrr@20        map@20\n"
        "overall    1,000      0.932000      0.469592      0.184530\n"
        "public       500      0.924000      0.471129      0.182465\n"
        "private      500      0.940000      0.468055      0.186595\n"
    )


@pytest.mark.parametrize("columns", ["80", "60", "30"])
def test_the_score_table_of_a_long_competition_fits(playlists: Path, columns: str) -> None:
    args = ["score", str(playlists / "submission.csv"), "--solution"]
    args += [str(playlists / "solution.csv"), "--competition", str(playlists / "competition.toml")]
    result = runner.invoke(app, args, env={"COLUMNS": columns})
    assert result.exit_code == 0
    lines = result.stdout.splitlines()
    assert max(map(len, lines)) <= max(int(columns), 38)  # one metric a block at the least
    labels = [w for line in lines if line.startswith("split") for w in line.split()[2:]]
    assert labels == [
        "precision@100", "ndcg@100", "recall@100", "hit_rate@100", "mrr@100", "map@100"
    ]  # fmt: skip
    assert sum(line.startswith("overall ") for line in lines) == -(-6 // len(lines[0].split()[2:]))
