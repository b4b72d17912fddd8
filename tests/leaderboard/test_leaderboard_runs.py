"""An organiser can trust a run: a wrong solution stops it, the boards change only when a run
finishes (stale until then, with why), a missing file is the log's error, counts add up."""

from __future__ import annotations

import json
import shutil
import sqlite3
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from jsonschema import Draft202012Validator, ValidationError
from typer.testing import CliRunner

import scorer
from scorer.cli import app
from scorer.competition import LOST_ITEMS
from scorer.errors import Code
from scorer.leaderboard import batch, truth, worker
from scorer.leaderboard.batch import SolutionMismatch
from scorer.leaderboard.boards import load
from scorer.leaderboard.demo import make_demo
from scorer.leaderboard.manifest import ManifestError, read_log
from scorer.leaderboard.render import render
from scorer.leaderboard.results import BatchResult
from scorer.leaderboard.schema import Phase
from scorer.leaderboard.stale import staleness
from scorer.leaderboard.store import Fingerprint, Run
from scorer.schemas import schema

runner = CliRunner()
#: A run's times and counts, where only its fingerprint matters.
RUN = (datetime(2026, 1, 1, tzinfo=UTC), None, 12, 0)
FILES = 12
REJECTED = 2


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("runs")
    make_demo(root, n_users=100)
    batch.score_log(root / "manifest.csv", root / "solution.csv", root / "board.db")
    return root


def run(root: Path, solution: str = "solution.csv", **options: Any) -> BatchResult:
    options.setdefault("isolation", batch.Isolation(workers=0))  # monkeypatches reach it
    return batch.score_log(root / "manifest.csv", root / solution, root / "board.db", **options)


def cli(root: Path, *more: str, solution: str = "solution.csv") -> Any:
    args = ["leaderboard", "score", str(root / "manifest.csv"), "--solution"]
    return runner.invoke(app, [*args, str(root / solution), "--db", str(root / "board.db"), *more])


def wrong_solution(root: Path) -> str:
    """The solution of another round: the same rows, other user ids."""
    frame = pl.read_csv(root / "solution.csv")
    frame.with_columns(pl.col("user_id") + 1_000_000).write_csv(root / "wrong.csv")
    return "wrong.csv"


def shown(root: Path) -> str:
    return render(load(root / "board.db", Phase.FINAL, resamples=50), "json")


def adds_up(counts: dict[str, int]) -> bool:
    parts = ("scored", "cached", "rejected", "failed", "pending")
    return sum(counts[part] for part in parts) == counts["total"]


# -- a wrong solution ---------------------------------------------------------------------------


def test_a_wrong_solution_stops_the_run_and_keeps_nothing(copy: Path) -> None:
    before = shown(copy)
    with sqlite3.connect(copy / "board.db") as db:
        verdicts = db.execute("SELECT count(*) FROM verdicts").fetchone()
    with pytest.raises(SolutionMismatch) as caught:
        run(copy, wrong_solution(copy))
    assert caught.value.exit_code == 2
    message = str(caught.value)
    assert message.startswith(f"stopped after {FILES // 2 + 1} of {FILES} submissions:")
    assert "likely not the one these submissions answer" in message
    assert "--solution" in message and "--force" in message
    assert shown(copy) == before  # the boards did not move
    with sqlite3.connect(copy / "board.db") as db:
        assert db.execute("SELECT count(*) FROM verdicts").fetchone() == verdicts
        assert db.execute("SELECT outcome FROM runs ORDER BY id DESC").fetchone() == ("stopped",)
    assert load(copy / "board.db").stale is None  # a stopped run changed nothing


def test_a_wrong_solution_on_the_cli_exits_2_and_force_scores_anyway(copy: Path) -> None:
    wrong = wrong_solution(copy)
    stopped = cli(copy, solution=wrong)
    assert stopped.exit_code == 2
    assert stopped.stderr.startswith("Error: stopped after 7 of 12 submissions: 7 were rejected")
    as_json = json.loads(cli(copy, "--json", solution=wrong).stdout)
    assert (as_json["status"], as_json["error"]["code"]) == ("error", "solution_mismatch")
    forced = cli(copy, "--force", solution=wrong)
    assert forced.exit_code == 0
    assert forced.stdout.startswith(f"manifest.csv: {FILES} submissions: 0 scored, 0 cached, 12")
    again = cli(copy, solution=wrong)  # a finished run's solution is not questioned again
    assert again.exit_code == 0


def test_a_wrong_solution_published_before_is_questioned_again(copy: Path) -> None:
    """Issue 24: the guard skipped any solution the database had published once, so going
    back to a wrong one (forced earlier, replaced since) rejected everything with exit 0 and
    emptied the boards. Only the solution of the boards shown is not questioned."""
    wrong = wrong_solution(copy)
    assert cli(copy, "--force", solution=wrong).exit_code == 0  # published once
    assert cli(copy).exit_code == 0  # the right one again: the boards shown
    before = shown(copy)
    back = cli(copy, solution=wrong)
    assert back.exit_code == 2 and "likely not the one these submissions answer" in back.stderr
    assert shown(copy) == before


def test_the_first_run_with_a_wrong_solution_leaves_empty_boards(
    world: Path, tmp_path: Path
) -> None:
    root = tmp_path / "lb"
    shutil.copytree(world, root, ignore=shutil.ignore_patterns("board.db*"))
    with pytest.raises(SolutionMismatch):
        run(root, wrong_solution(root))
    boards = load(root / "board.db")
    assert (boards.public.rows, boards.stale, boards.as_of) == ((), None, None)


def test_a_log_of_mostly_broken_files_under_a_known_solution_is_not_stopped(
    copy: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The check is for a new solution: under one a run has finished with, rejections are
    the participants'."""
    for path in (copy / "submissions").rglob("*.csv"):
        path.write_text("user_id,edition_id,rank\n1,2,1\n")  # every user missing
    result = run(copy)
    assert result.counts["rejected"] == FILES


# -- stale boards -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("change", "reason"),
    [
        ("solution", "a new solution"),
        ("version", "scorer 99.0 (was {version})"),
        ("option", "new options (no_lost)"),
        ("log", "new or changed submissions"),
    ],
)
def test_during_a_rescore_the_previous_boards_are_shown_stale(
    copy: Path, monkeypatch: pytest.MonkeyPatch, change: str, reason: str
) -> None:
    before = json.loads(shown(copy))
    options: dict[str, Any] = {}
    if change == "solution":  # the same pairs in another order: other bytes, another hash
        pl.read_csv(copy / "solution.csv").reverse().write_csv(copy / "solution.csv")
    elif change == "version":
        monkeypatch.setattr(truth, "__version__", "99.0")  # the fingerprint's
    elif change == "option":
        options["no_lost"] = "exclude"
    else:
        for name in ("golf/worse.csv", "bravo/damaged.csv"):
            shutil.copy(copy / "submissions/alpha/tuned.csv", copy / "submissions" / name)
    real, calls = worker.score_submission, []

    def interrupted(*args: Any, **kwargs: Any) -> scorer.ScoreResult:
        calls.append(1)
        if len(calls) == 2:
            raise KeyboardInterrupt
        return real(*args, **kwargs)

    monkeypatch.setattr(worker, "score_submission", interrupted)
    with pytest.raises(KeyboardInterrupt):
        run(copy, **options)
    during = json.loads(shown(copy))
    stale = during.pop("stale")
    assert stale["reasons"] == [reason.format(version=scorer.__version__)]
    assert stale["total"] == FILES and 1 <= stale["judged"] < FILES
    assert before.pop("stale") is None
    assert during == before  # the previous boards, every figure
    table = " ".join(render(load(copy / "board.db"), "table").split())
    assert "Stale: these boards are from the run that finished at" in table
    assert "has not finished: it is under way or was interrupted" in table
    assert "Stale:" in render(load(copy / "board.db"), "html")
    monkeypatch.setattr(worker, "score_submission", real)
    run(copy, **options)
    after = json.loads(shown(copy))
    assert after["stale"] is None
    assert after["as_of"] > before["as_of"]


def test_a_run_is_keyed_by_the_competitions_fingerprint(world: Path) -> None:
    """The stored config is `Competition.fingerprint` of the run's options, the one key that
    prepared files use too; a config that differs in its spacing alone names no option."""
    with sqlite3.connect(world / "board.db") as db:
        (config,) = db.execute("SELECT config FROM fingerprints").fetchone()
    options = json.loads(config)
    del options["competition"]
    assert config == LOST_ITEMS.fingerprint(**options)
    shown = Run(1, Fingerprint("a", "1", json.dumps(json.loads(config), sort_keys=True)), *RUN)
    newer = Run(2, Fingerprint("a", "1", config), *RUN)
    assert staleness(shown, newer).reasons == ("new or changed submissions",)
    options["no_lost"] = "exclude"
    newer = Run(2, Fingerprint("a", "1", LOST_ITEMS.fingerprint(**options)), *RUN)
    assert staleness(shown, newer).reasons == ("new options (no_lost)",)


# -- the log and the counts ---------------------------------------------------------------------


def test_a_missing_file_is_the_logs_error_and_nothing_is_written(copy: Path) -> None:
    with (copy / "manifest.csv").open("a") as handle:
        handle.write("zulu,submissions/zulu/gone.csv,2024-05-02T10:00:00Z,\n")
    with pytest.raises(ManifestError) as caught:
        read_log(copy / "manifest.csv")
    (problem,) = caught.value.report.problems
    assert (problem.code, problem.examples[0].line) == (Code.SUBMISSION_NOT_FOUND, FILES + 2)
    before = (copy / "board.db").read_bytes()
    result = cli(copy)
    assert result.exit_code == 2
    assert "[submission_not_found] 1 time" in result.stderr
    assert "line 14: path 'submissions/zulu/gone.csv' names no file" in result.stderr
    assert (copy / "board.db").read_bytes() == before


def test_counts_add_up(copy: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    first = run(copy)  # every verdict reused, rejections included
    assert first.counts == {
        "total": FILES,
        "scored": 0,
        "cached": FILES - REJECTED,
        "rejected": REJECTED,
        "failed": 0,
        "pending": 0,
        "removed": 0,
    }
    pl.read_csv(copy / "solution.csv").reverse().write_csv(copy / "solution.csv")
    second = run(copy)
    assert (second.counts["scored"], second.counts["cached"]) == (FILES - REJECTED, 0)
    for counts in (first.counts, second.counts):
        assert adds_up(counts)
    out = cli(copy).stdout.splitlines()[0]
    assert out == (
        "manifest.csv: 12 submissions: 0 scored, 10 cached, 2 rejected (2 from the cache), 0 failed"
    )


def test_the_public_summary_names_no_file_and_no_report(copy: Path) -> None:
    text = cli(copy, "--public").stdout
    assert "submissions/" not in text and "missing_user" not in text
    assert text.count(".csv") == 1  # manifest.csv, the run's source
    assert text.splitlines()[0].startswith("manifest.csv: 12 submissions:")
    data = json.loads(cli(copy, "--public", "--json").stdout)
    assert data["audience"] == "public" and adds_up(data)
    assert not {"submissions", "failures"} & set(data)
    public = {row.team: row.score for row in load(copy / "board.db").public.rows}
    teams = {t["team"]: t for t in data["teams"]}
    assert set(teams) == set(public) | {"delta"}
    for team, score in public.items():
        assert teams[team]["best_public"] == score
    assert (teams["delta"]["entries"], teams["delta"]["best_public"]) == (0, None)
    assert "private" not in json.dumps(data)


def test_every_new_json_output_keeps_the_contract(copy: Path) -> None:
    """The public summary, a stopped run and stale boards validate against the shipped
    schemas, and the public phase's rows name no file."""
    score, show = (
        Draft202012Validator(schema(c)) for c in ("leaderboard score", "leaderboard show")
    )
    for more in (["--public", "--json"], ["--json"]):
        score.validate(json.loads(cli(copy, *more).stdout))
    stopped = json.loads(cli(copy, "--json", solution=wrong_solution(copy)).stdout)
    score.validate(stopped)
    organiser = json.loads(cli(copy, "--json").stdout)
    with pytest.raises(ValidationError):  # an organiser's record cannot pass as public
        score.validate({**organiser, "audience": "public"})
    public = json.loads(render(load(copy / "board.db"), "json"))
    show.validate(public)
    with pytest.raises(ValidationError):  # a public board that named a file breaks the contract
        rows = [{**row, "submission": "x.csv"} for row in public["public"]["rows"]]
        show.validate({**public, "public": {**public["public"], "rows": rows}})
    show.validate(json.loads(render(load(copy / "board.db", Phase.FINAL), "json")))
