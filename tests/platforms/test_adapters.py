"""What runs on each platform: Kaggle's metric, CodaBench's scoring program, EvalAI's evaluate."""

from __future__ import annotations

import gzip
import io
import json
import math
import re
import sys
from pathlib import Path

import pandas as pd
import polars as pl
import pytest
from typer.testing import CliRunner

import scorer
from scorer.cli import app
from scorer.competition import Metric
from scorer.errors import SubmissionError
from scorer.platforms import codabench, evalai, kaggle
from scorer.platforms.common import HOST_MESSAGE, HostVisibleError
from scorer.read import to_wide
from scorer.synthetic import CompetitionFiles, make_competition

METRICS = [str(m) for m in Metric]

runner = CliRunner()


@pytest.fixture(scope="module")
def comp() -> CompetitionFiles:
    return make_competition(1000, seed=1, empty_share=0.02)


@pytest.fixture(scope="module")
def expected(comp: CompetitionFiles) -> scorer.ScoreResult:
    """What `scorer score` gives the competition's own submission."""
    return scorer.score(comp.submission, comp.solution)


def kaggle_solution(comp: CompetitionFiles) -> pd.DataFrame:
    """The solution as Kaggle holds it: one row a user, its lost ids in one cell (empty for a
    user with none), and Kaggle's `Usage` column."""
    return kaggle.kaggle_solution(comp.solution).to_pandas()


def kaggle_split(
    solution: pd.DataFrame, submission: pd.DataFrame, usage: str
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """What Kaggle passes to `score` for one leaderboard: the rows of that `Usage`, in both
    frames, with the `Usage` column dropped."""
    rows = solution[solution["Usage"] == usage]
    part = submission[submission["user_id"].isin(rows["user_id"])]
    return rows.drop(columns="Usage").copy(), part.copy()


def broken(comp: CompetitionFiles) -> pl.DataFrame:
    """The wide submission with a bad id at position 3 of the third user's list."""
    wide = to_wide(comp.submission)
    ids = wide.get_column("edition_ids").to_list()
    words = ids[2].split(" ")
    ids[2] = " ".join([*words[:2], "abc", *words[3:]])
    return wide.with_columns(pl.Series("edition_ids", ids))


# Kaggle


@pytest.mark.parametrize("usage", ["Public", "Private"])
def test_kaggle_score_equals_scorer_score(
    comp: CompetitionFiles, expected: scorer.ScoreResult, usage: str
) -> None:
    solution, submission = kaggle_split(
        kaggle_solution(comp), to_wide(comp.submission).to_pandas(), usage
    )
    value = kaggle.score(solution, submission, "user_id")
    assert isinstance(value, float) and math.isfinite(value)
    assert value == (expected.public if usage == "Public" else expected.private)


def test_kaggle_score_with_usage_kept_and_another_row_id_name(
    comp: CompetitionFiles, expected: scorer.ScoreResult
) -> None:
    solution = kaggle_solution(comp).rename(columns={"user_id": "customer_id"})
    submission = to_wide(comp.submission).to_pandas().rename(columns={"user_id": "customer_id"})
    assert kaggle.score(solution, submission, "customer_id") == expected.overall


def test_kaggle_rejects_a_broken_submission_for_the_participant(comp: CompetitionFiles) -> None:
    solution = kaggle_solution(comp).drop(columns="Usage")
    with pytest.raises(kaggle.ParticipantVisibleError) as info:
        kaggle.score(solution, broken(comp).to_pandas(), "user_id")
    message = str(info.value)
    assert message == kaggle.ROW_PROBLEMS  # the same words whatever the rows of the split
    assert "scorer validate submission.csv --targets targets.csv" in message
    assert not re.search(r"\d", message)  # no row, user, count or id


def test_kaggle_names_the_problems_of_the_header(comp: CompetitionFiles) -> None:
    solution = kaggle_solution(comp).drop(columns="Usage")
    submission = to_wide(comp.submission).to_pandas().rename(columns={"edition_ids": "items"})
    with pytest.raises(kaggle.ParticipantVisibleError) as info:
        kaggle.score(solution, submission, "user_id")
    message = str(info.value)
    assert "[missing_column]" in message and "[unknown_column]" in message
    assert "row " not in message and "user " not in message


def test_kaggle_reads_a_list_column_pandas_made_numbers(comp: CompetitionFiles) -> None:
    """A split where every user lost one item or none: pandas reads the cells as float64."""
    wide = to_wide(comp.submission).to_pandas()
    solution = pd.DataFrame({"user_id": wide["user_id"], "edition_ids": float("nan")})
    solution.loc[:9, "edition_ids"] = [
        float(ids.split(" ")[0]) for ids in wide.loc[:9, "edition_ids"]
    ]
    assert solution["edition_ids"].dtype == "float64"
    value = kaggle.score(solution, wide, "user_id")
    truth = pl.DataFrame(
        {"user_id": wide["user_id"].tolist(), "edition_id": solution["edition_ids"].tolist()}
    ).with_columns(pl.col("edition_id").fill_nan(None).cast(pl.Int64))
    assert value == scorer.score(pl.from_pandas(wide), truth).overall > 0


def test_kaggle_broken_solution_is_for_the_host_only(comp: CompetitionFiles) -> None:
    solution = kaggle_solution(comp)
    solution.loc[0, "edition_ids"] = "12 twelve"
    with pytest.raises(kaggle.HostVisibleError) as info:
        kaggle.score(solution, to_wide(comp.submission).to_pandas(), "user_id")
    assert not isinstance(info.value, kaggle.ParticipantVisibleError)
    assert "the solution file is broken" in str(info.value)


def test_kaggle_solution_is_one_row_a_user(comp: CompetitionFiles) -> None:
    solution = kaggle.kaggle_solution(comp.solution)
    assert solution.columns == ["user_id", "edition_ids", "Usage"]
    assert solution.height == 1000
    assert set(solution.get_column("Usage")) == {"Public", "Private"}
    empty = comp.solution.filter(pl.col("edition_id").is_null()).height
    assert solution.filter(pl.col("edition_ids") == "").height == empty > 0


def test_kaggle_errors_are_plain_exceptions() -> None:
    assert issubclass(kaggle.ParticipantVisibleError, Exception)
    assert not issubclass(kaggle.ParticipantVisibleError, scorer.ScorerError)


# CodaBench


def codabench_dirs(root: Path, solution: pl.DataFrame, submission: pl.DataFrame, kind: str) -> Path:
    """`root/input/ref` and `root/input/res` as CodaBench lays them out, in a given format."""
    ref, res = root / "input" / "ref", root / "input" / "res"
    ref.mkdir(parents=True)
    res.mkdir(parents=True)
    if kind == "parquet":
        solution.write_parquet(ref / "solution.parquet")
        submission.write_parquet(res / "submission.parquet")
    elif kind == "csv.gz":
        for frame, path in ((solution, ref / "solution.csv.gz"), (submission, res / "sub.csv.gz")):
            with gzip.open(path, "wb") as handle:
                frame.write_csv(handle)
    else:
        solution.write_csv(ref / "solution.csv")
        submission.write_csv(res / "submission.csv")
    return root / "input"


def expected_scores(result: scorer.ScoreResult, split: str = "private") -> dict[str, float]:
    """The columns of a phase: every metric of its split (private in the final phase)."""
    return {metric: getattr(result.splits[split], metric) for metric in METRICS}


@pytest.mark.parametrize("kind", ["csv", "csv.gz", "parquet"])
def test_codabench_writes_scores_json(
    comp: CompetitionFiles, expected: scorer.ScoreResult, tmp_path: Path, kind: str
) -> None:
    inputs = codabench_dirs(tmp_path, comp.solution, to_wide(comp.submission), kind)
    (inputs / "res" / "__MACOSX").mkdir()
    (inputs / "res" / "__MACOSX" / "._submission.csv").write_bytes(b"\x00\x05")
    out = tmp_path / "output"
    result = runner.invoke(app, ["codabench", str(inputs), str(out), "--phase", "final"])
    assert result.exit_code == 0, result.output
    scores = json.loads((out / "scores.json").read_text())
    assert scores == expected_scores(expected)  # the final phase: the private split
    assert next(iter(scores)) == "ndcg"  # the primary column first
    assert result.output == f"scored: public ndcg@20 {expected.public:.6f} (500 users)\n"
    page = (out / "detailed_results.html").read_text()
    assert f"{expected.public:.6f}" in page and f"{expected.private:.6f}" in page


def test_codabench_public_phase_writes_the_public_split_only(
    comp: CompetitionFiles, expected: scorer.ScoreResult, tmp_path: Path
) -> None:
    inputs = codabench_dirs(tmp_path, comp.solution, to_wide(comp.submission), "csv")
    out = tmp_path / "output"
    result = runner.invoke(app, ["codabench", str(inputs), str(out)])  # public by default
    assert result.exit_code == 0, result.output
    scores = json.loads((out / "scores.json").read_text())
    assert scores == expected_scores(expected, "public")
    private = expected.splits["private"]
    assert private is not None
    for text in (out / "detailed_results.html").read_text(), result.output:
        assert not any(f"{getattr(private, m):.6f}" in text for m in METRICS)


def test_codabench_accepts_the_long_format_too(
    comp: CompetitionFiles, expected: scorer.ScoreResult, tmp_path: Path
) -> None:
    inputs = codabench_dirs(tmp_path, comp.solution, comp.submission, "csv")
    outcome = codabench.run(inputs, tmp_path / "output", phase="final")
    assert outcome.scores == expected_scores(expected)


def test_codabench_rejects_a_broken_submission(comp: CompetitionFiles, tmp_path: Path) -> None:
    inputs = codabench_dirs(tmp_path, comp.solution, broken(comp), "csv")
    out = tmp_path / "output"
    out.mkdir()
    (out / "scores.json").write_text("{}")  # left by an earlier run: must not survive
    result = runner.invoke(app, ["codabench", str(inputs), str(out)])
    assert result.exit_code == 1
    assert "line 4, position 3: edition_id 'abc' is not a non-negative integer" in result.output
    assert not (out / "scores.json").exists()
    page = (out / "detailed_results.html").read_text()
    assert "Submission rejected" in page
    assert "line 4, position 3: edition_id &#x27;abc&#x27;" in page


@pytest.mark.parametrize(
    ("files", "code"), [([], "file_not_found"), (["a.csv", "b.parquet"], "file_format")]
)
def test_codabench_needs_exactly_one_submission_file(
    comp: CompetitionFiles, tmp_path: Path, files: list[str], code: str
) -> None:
    inputs = codabench_dirs(tmp_path, comp.solution, comp.submission, "csv")
    (inputs / "res" / "submission.csv").unlink()
    (inputs / "res" / "notes.txt").write_text("hello")
    for name in files:
        (inputs / "res" / name).write_text("user_id,edition_ids\n")
    with pytest.raises(SubmissionError) as info:
        codabench.run(inputs, tmp_path / "output")
    assert info.value.report.codes == [code]


def test_codabench_broken_solution_exits_2_and_tells_the_participant_nothing(
    comp: CompetitionFiles, tmp_path: Path
) -> None:
    solution = comp.solution.with_columns(
        pl.when(pl.int_range(pl.len()) == 0)
        .then(pl.lit("oops"))
        .otherwise(pl.col("edition_id").cast(pl.String))
        .alias("edition_id")
    )
    inputs = codabench_dirs(tmp_path, solution, to_wide(comp.submission), "csv")
    out = tmp_path / "output"
    result = runner.invoke(app, ["codabench", str(inputs), str(out)])  # the public phase
    assert result.exit_code == 2
    assert result.output == f"Error: {HOST_MESSAGE}\n"  # its logs are the participant's
    page = (out / "detailed_results.html").read_text()
    assert "organisers&#x27; files" in page and "oops" not in page
    assert sorted(p.name for p in out.iterdir()) == ["detailed_results.html"]
    # The final phase's logs are the organisers' (hide_output): the details go there
    final = runner.invoke(app, ["codabench", str(inputs), str(out), "--phase", "final"])
    assert final.exit_code == 2 and final.stdout == ""
    assert final.stderr.startswith(codabench.HOST_DETAILS + "\nHostError: ")
    assert "the solution file is broken" in final.stderr and "'oops'" in final.stderr
    assert final.stderr.endswith(f"Error: {HOST_MESSAGE}\n")
    assert "oops" not in (out / "detailed_results.html").read_text()


def test_codabench_missing_ref_folder_is_the_hosts(tmp_path: Path) -> None:
    (tmp_path / "input" / "res").mkdir(parents=True)
    out = tmp_path / "out"
    result = runner.invoke(app, ["codabench", str(tmp_path / "input"), str(out)])
    assert result.exit_code == 2 and "no such folder" not in result.output
    final = runner.invoke(app, ["codabench", str(tmp_path / "input"), str(out), "--phase", "final"])
    assert final.exit_code == 2 and "ref: no such folder" in final.stderr


def test_codabench_without_a_split_reports_overall(comp: CompetitionFiles, tmp_path: Path) -> None:
    inputs = codabench_dirs(tmp_path, comp.solution.drop("stage"), comp.submission, "csv")
    outcome = codabench.run(inputs, tmp_path / "output")
    assert list(outcome.scores) == list(METRICS)
    assert outcome.scores["ndcg"] == scorer.score(comp.submission, comp.solution).overall


def test_codabench_phase_without_users_of_its_split_fills_no_column(
    comp: CompetitionFiles, tmp_path: Path
) -> None:
    """Every user public: the final phase has no private numbers and writes none (never the
    public ones, nor all users mixed, in the columns the final board ranks by)."""
    solution = comp.solution.with_columns(pl.lit("public").alias("stage"))
    inputs = codabench_dirs(tmp_path, solution, comp.submission, "csv")
    assert codabench.run(inputs, tmp_path / "final", phase="final").scores == {}
    public = codabench.run(inputs, tmp_path / "public", phase="public").scores
    assert public["ndcg"] == scorer.score(comp.submission, solution).public


def test_codabench_with_no_user_scored_writes_no_number(
    comp: CompetitionFiles, tmp_path: Path
) -> None:
    """Every user ignored: no split has a mean, so no column, page or log line holds one
    (a 0 would rank the submission as one that found nothing)."""
    solution = comp.solution.with_columns(pl.lit("ignored").alias("stage"))
    inputs = codabench_dirs(tmp_path, solution, to_wide(comp.submission), "csv")
    out = tmp_path / "output"
    result = runner.invoke(app, ["codabench", str(inputs), str(out), "--phase", "final"])
    assert result.exit_code == 0, result.output
    assert json.loads((out / "scores.json").read_text()) == {}
    assert result.output == "scored: no user (every user ignored or excluded), so no ndcg@20\n"
    page = (out / "detailed_results.html").read_text()
    assert "<p>No user scored: a mean over no users has no value.</p>" in page


# EvalAI


@pytest.fixture(scope="module")
def evalai_files(
    comp: CompetitionFiles, tmp_path_factory: pytest.TempPathFactory
) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("evalai")
    paths = {"solution": root / "annotations.csv", "submission": root / "submission.csv"}
    comp.solution.write_csv(paths["solution"])
    to_wide(comp.submission).write_csv(paths["submission"])
    return paths


def labels(split: scorer.SplitScore | None) -> dict[str, float]:
    assert split is not None
    return {f"{metric}@20": getattr(split, metric) for metric in METRICS}


def test_evalai_test_phase_returns_both_splits(
    evalai_files: dict[str, Path], expected: scorer.ScoreResult
) -> None:
    output = evalai.evaluate(
        str(evalai_files["solution"]),
        str(evalai_files["submission"]),
        "test",
        submission_metadata={"id": 1},
    )
    public, private = labels(expected.splits["public"]), labels(expected.splits["private"])
    assert output == {
        "result": [{"public_split": public}, {"private_split": private}],
        "submission_result": {"public_split": public},
    }


def test_evalai_dev_phase_shows_the_public_split_only(
    evalai_files: dict[str, Path], expected: scorer.ScoreResult
) -> None:
    output = evalai.evaluate(evalai_files["solution"], evalai_files["submission"], "dev")
    assert output["result"] == [{"public_split": labels(expected.splits["public"])}]
    assert output["submission_result"] == output["result"][0]


def test_evalai_custom_phase_names(
    evalai_files: dict[str, Path], expected: scorer.ScoreResult
) -> None:
    phases = {"final": {"leaderboard": "private"}}
    output = evalai.evaluate(
        evalai_files["solution"], evalai_files["submission"], "final", phases=phases
    )
    assert output["result"] == [{"leaderboard": labels(expected.splits["private"])}]
    assert output["submission_result"] == {}  # never the private split


def test_evalai_rejects_a_broken_submission(
    comp: CompetitionFiles, evalai_files: dict[str, Path], tmp_path: Path
) -> None:
    path = tmp_path / "broken.csv"
    broken(comp).write_csv(path)
    with pytest.raises(SubmissionError) as info:
        evalai.evaluate(evalai_files["solution"], path, "dev")
    assert "line 4, position 3: edition_id 'abc'" in str(info.value)


def test_evalai_host_problems_are_logged_not_shown(
    evalai_files: dict[str, Path],
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    """The details reach the process's own stderr and the host's log file, never the
    `sys.stderr` of the moment (the participant's file on EvalAI's worker)."""
    console = io.StringIO()
    monkeypatch.setattr(sys, "__stderr__", console)
    monkeypatch.setenv(evalai.HOST_LOG, str(tmp_path / "host.log"))
    with pytest.raises(HostVisibleError) as info:
        evalai.evaluate(evalai_files["solution"], evalai_files["submission"], "final")
    assert str(info.value) == HOST_MESSAGE
    seen = capsys.readouterr()
    assert seen.out == seen.err == ""
    assert "phase 'final' is not mapped to a split" in console.getvalue()
    assert "phase 'final' is not mapped to a split" in (tmp_path / "host.log").read_text()


def test_evalai_remote_call_and_result(
    evalai_files: dict[str, Path], expected: scorer.ScoreResult, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(evalai.SOLUTION, str(evalai_files["solution"]))
    output = evalai.remote_evaluate(str(evalai_files["submission"]), "test")
    assert output == evalai.evaluate(evalai_files["solution"], evalai_files["submission"], "test")
    assert evalai.remote_result(output, "test") == [
        {
            "split": "public_split",
            "show_to_participant": True,
            "accuracies": labels(expected.splits["public"]),
        },
        {
            "split": "private_split",
            "show_to_participant": False,
            "accuracies": labels(expected.splits["private"]),
        },
    ]
