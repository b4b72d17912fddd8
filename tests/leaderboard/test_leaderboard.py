"""Leaderboards end to end: the log, the cache, both boards, ties, phases and every format."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import threading
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from support.leaderboards import broken_folder, broken_manifest

import scorer
from scorer.competition import LOST_ITEMS, EmptyUsers, Split
from scorer.errors import MAX_EXAMPLES, Failure, HostError, Report, UsageError, error_object
from scorer.leaderboard import batch, worker
from scorer.leaderboard import truth as judged_against
from scorer.leaderboard.boards import Pick, load
from scorer.leaderboard.demo import make_demo
from scorer.leaderboard.manifest import ManifestError, read_log
from scorer.leaderboard.render import FORMATS, render
from scorer.leaderboard.results import BatchResult
from scorer.leaderboard.schema import Phase, Status
from scorer.leaderboard.store import Store
from scorer.leaderboard.terminal import error_text

FILES = 12
REJECTED = {"submissions/delta/partial.csv", "submissions/echo/semicolons.csv"}
SCORED = FILES - len(REJECTED)
#: When a test's page says it was generated: the page is the same bytes for the same boards.
NOW = datetime(2024, 6, 1, tzinfo=UTC)


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The demo competition, scored once into `board.db` (tests that write copy it first)."""
    root = tmp_path_factory.mktemp("lb")
    make_demo(root)
    result = batch.score_log(root / "manifest.csv", root / "solution.csv", root / "board.db")
    assert result.counts["scored"] == FILES - len(REJECTED)
    return root


@pytest.fixture(scope="module")
def truth(world: Path) -> dict[str, scorer.ScoreResult]:
    """Every valid submission scored directly by the core scorer, by path."""
    solution = scorer.read_solution(world / "solution.csv")
    return {
        entry.key: scorer.score(entry.path, solution)
        for entry in read_log(world / "manifest.csv")
        if entry.key not in REJECTED
    }


#: Judged in this process: a test's monkeypatch reaches the scorer (tests/leaderboard/test_worker.py
#: and the isolation tests below judge in worker processes).
IN_PROCESS = batch.Isolation(workers=0)


def run(root: Path, **options: Any) -> BatchResult:
    options.setdefault("isolation", IN_PROCESS)
    return batch.score_log(
        root / "manifest.csv", root / "solution.csv", root / "board.db", **options
    )


def stored(root: Path) -> dict[str, tuple[Any, ...]]:
    """The verdicts the boards show, by path."""
    with sqlite3.connect(root / "board.db") as db:
        rows = db.execute(
            "SELECT v.path, v.status, v.scored_at, v.content_hash "
            "FROM board b JOIN verdicts v ON v.id = b.verdict"
        )
        return {path: rest for path, *rest in rows}


def no_scoring(*args: Any, **kwargs: Any) -> None:
    raise AssertionError("a cached submission was scored again")


# -- the cache --------------------------------------------------------------------------------


def test_second_run_reuses_every_verdict(copy: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    before = stored(copy)
    monkeypatch.setattr(worker, "score_submission", no_scoring)
    result = run(copy)
    assert result.counts == {
        "total": FILES,
        "scored": 0,
        "cached": SCORED,  # a reused rejection counts once, as rejected
        "rejected": len(REJECTED),
        "failed": 0,
        "pending": 0,
        "removed": 0,
    }
    assert {o.path for o in result.failures} == REJECTED  # reported again, from the cache
    assert stored(copy) == before  # not one scored_at changed


def test_same_bytes_rewritten_stay_cached(copy: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = copy / "submissions/alpha/tuned.csv"
    path.write_bytes(path.read_bytes())  # a new modification time, the same content
    monkeypatch.setattr(worker, "score_submission", no_scoring)
    assert run(copy).counts["cached"] == SCORED


def test_changed_file_is_the_only_one_rescored(copy: Path) -> None:
    shutil.copy(copy / "submissions/alpha/baseline.csv", copy / "submissions/golf/worse.csv")
    result = run(copy)
    assert result.counts["scored"] == 1
    assert [o.path for o in result.outcomes if not o.cached] == ["submissions/golf/worse.csv"]


@pytest.mark.parametrize("change", ["solution", "version", "option", "spec"])
def test_a_rule_change_rescores_everything(
    copy: Path, monkeypatch: pytest.MonkeyPatch, change: str
) -> None:
    options: dict[str, Any] = {}
    if change == "solution":  # the same pairs in another order: other bytes, another hash
        frame = pl.read_csv(copy / "solution.csv")
        frame.reverse().write_csv(copy / "solution.csv")
    elif change == "version":
        monkeypatch.setattr(judged_against, "__version__", "99.0")  # the fingerprint's
    elif change == "option":
        options["no_lost"] = "exclude"
    else:  # the spec's own empty-user rule, no option given
        options["competition"] = replace(LOST_ITEMS, empty_users=EmptyUsers.EXCLUDE)
    result = run(copy, **options)
    assert result.counts["cached"] == 0
    assert result.counts["scored"] == SCORED
    assert result.counts["rejected"] == len(REJECTED)


def test_the_specs_empty_user_rule_scores_as_the_option_and_the_option_wins(
    copy: Path,
) -> None:
    """A leaderboard applies the competition's `empty_users` when `no_lost` is not given,
    and an explicit `no_lost` over it; each run is keyed by the rule it applied."""
    excluding = replace(LOST_ITEMS, empty_users=EmptyUsers.EXCLUDE)
    solution = pl.read_csv(copy / "solution.csv")
    first = solution.item(0, "user_id")  # loses its pairs: a user the rule decides for
    empty = solution.filter(pl.col("user_id") == first).head(1)
    empty = empty.with_columns(pl.lit(None, pl.Int64).alias("edition_id"))
    pl.concat([empty, solution.filter(pl.col("user_id") != first)]).write_csv(copy / "solution.csv")

    def scores(**options: Any) -> tuple[dict[str, Any], str]:
        result = run(copy, **options)
        with sqlite3.connect(copy / "board.db") as db:
            (config,) = db.execute(
                "SELECT config FROM fingerprints ORDER BY rowid DESC LIMIT 1"
            ).fetchone()
        figures = {o.path: o.public for o in result.outcomes}
        return figures, json.loads(config)["no_lost"]

    by_option, rule = scores(no_lost="exclude")
    assert rule == "exclude"
    by_spec, rule = scores(competition=excluding)
    assert (by_spec, rule) == (by_option, "exclude")
    counted, rule = scores(competition=excluding, no_lost="zero")
    assert rule == "zero"
    assert counted == scores()[0] != by_spec  # lost items' rule, given or the default


def test_a_file_dropped_from_the_log_leaves_the_database(copy: Path) -> None:
    lines = (copy / "manifest.csv").read_text().splitlines()
    kept = [line for line in lines if "bravo/overfit" not in line]
    (copy / "manifest.csv").write_text("\n".join(kept) + "\n")
    result = run(copy)
    assert result.counts["removed"] == 1
    assert result.counts["total"] == FILES - 1
    public = load(copy / "board.db").public
    assert "submissions/bravo/overfit.csv" not in [row.submission for row in public.rows]


# -- robustness -------------------------------------------------------------------------------


def test_a_crash_on_one_file_does_not_stop_the_batch(
    copy: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = worker.score_submission

    def flaky(path: Path, *args: Any, **kwargs: Any) -> scorer.ScoreResult:
        if path.name == "overfit.csv":
            raise RuntimeError("boom")
        return real(path, *args, **kwargs)

    (copy / "submissions/bravo/overfit.csv").write_text("changed\n")  # forces a rescore
    monkeypatch.setattr(worker, "score_submission", flaky)
    result = run(copy)
    failed = [o for o in result.outcomes if o.status == "failed"]
    assert [o.path for o in failed] == ["submissions/bravo/overfit.csv"]
    assert failed[0].error == error_object(Failure.INTERNAL_ERROR, "RuntimeError: boom")
    assert result.counts["total"] == FILES
    monkeypatch.setattr(worker, "score_submission", real)
    again = run(copy)  # the scorer's own failure is tried again on the next run (task.md)
    assert [o.path for o in again.outcomes if not o.cached] == ["submissions/bravo/overfit.csv"]
    assert [o.status for o in again.outcomes if not o.cached] == ["rejected"]  # its verdict now
    assert [o.path for o in again.outcomes if o.status == "failed"] == []
    unchanged = run(copy)  # a participant's rejection is kept for the same bytes
    assert [o.path for o in unchanged.outcomes if not o.cached] == []


def test_an_interrupted_run_keeps_the_database_consistent(
    world: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "lb"
    shutil.copytree(world, root, ignore=shutil.ignore_patterns("board.db*"))
    real = worker.score_submission
    calls = []

    def interrupted(*args: Any, **kwargs: Any) -> scorer.ScoreResult:
        calls.append(1)
        if len(calls) == 3:
            raise KeyboardInterrupt
        return real(*args, **kwargs)

    monkeypatch.setattr(worker, "score_submission", interrupted)
    with pytest.raises(KeyboardInterrupt):
        run(root)
    assert stored(root) == {}  # the boards change only when a run finishes
    with sqlite3.connect(root / "board.db") as db:
        assert db.execute("PRAGMA integrity_check").fetchone() == ("ok",)
        assert db.execute("SELECT count(*) FROM verdicts").fetchone() == (2,)  # kept, cached
        assert db.execute("SELECT count(*) FROM per_user").fetchone() == (2 * 2,)  # 2 splits
        assert db.execute("SELECT count(*) FROM runs WHERE finished_at IS NULL").fetchone() == (1,)
    boards = load(root / "board.db")
    assert boards.public.rows == ()
    assert boards.stale is not None
    assert (boards.stale.judged, boards.stale.total) == (2, FILES)
    monkeypatch.setattr(worker, "score_submission", real)
    result = run(root)
    assert (result.counts["cached"], result.counts["scored"]) == (2, SCORED - 2)
    assert load(root / "board.db").stale is None


def test_two_runs_at_once_leave_one_consistent_database(world: Path, tmp_path: Path) -> None:
    root = tmp_path / "lb"
    shutil.copytree(world, root, ignore=shutil.ignore_patterns("board.db*"))
    results: list[BatchResult] = []
    errors: list[BaseException] = []

    def worker() -> None:
        try:
            results.append(run(root))
        except BaseException as exc:  # reported below, in the test's thread
            errors.append(exc)

    threads = [threading.Thread(target=worker) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert [r.counts["total"] for r in results] == [FILES, FILES]
    statuses = sorted(status for status, *_ in stored(root).values())
    assert statuses == sorted(["scored"] * SCORED + ["rejected"] * 2)
    with sqlite3.connect(root / "board.db") as db:
        assert db.execute("PRAGMA integrity_check").fetchone() == ("ok",)
        joined = "SELECT count(*) FROM board b JOIN per_user p ON p.verdict = b.verdict"
        assert db.execute(joined).fetchone() == (2 * SCORED,)


def test_a_solution_without_split_is_refused(copy: Path) -> None:
    pl.read_csv(copy / "solution.csv").drop("stage").write_csv(copy / "solution.csv")
    with pytest.raises(UsageError, match="public/private split"):
        run(copy)


# -- the boards -------------------------------------------------------------------------------


def test_public_board_ranks_each_teams_best_public_score(
    world: Path, truth: dict[str, scorer.ScoreResult]
) -> None:
    board = load(world / "board.db", Phase.PUBLIC).public
    teams = [row.team for row in board.rows]
    assert teams == ["bravo", "alpha", "charlie", "golf", "foxtrot", "echo"]
    assert [row.rank for row in board.rows] == list(range(1, 7))
    for row in board.rows:
        team_files = [k for k in truth if k.startswith(f"submissions/{row.team}/")]
        best = max(truth[k].public or 0.0 for k in team_files)
        assert row.score == best
        assert row.score == truth[row.submission].public
        assert row.entries == len(team_files)
    assert board.users == 200


def test_equal_scores_rank_the_earlier_submission_first(world: Path) -> None:
    board = load(world / "board.db", Phase.FINAL)
    for rows in (board.public.rows, board.private.rows if board.private else ()):
        by_team = {row.team: row for row in rows}
        alpha, charlie = by_team["alpha"], by_team["charlie"]
        assert alpha.score == charlie.score  # charlie uploaded alpha's file byte for byte
        assert alpha.submitted_at < charlie.submitted_at
        assert alpha.rank + 1 == charlie.rank


def test_private_board_uses_selected_or_best_public_submissions(
    world: Path, truth: dict[str, scorer.ScoreResult]
) -> None:
    boards = load(world / "board.db", Phase.FINAL)
    assert boards.private is not None
    rows = {row.team: row for row in boards.private.rows}
    # alpha selected tuned.csv; golf selected two files, not its best public one
    assert (rows["alpha"].submission, rows["alpha"].pick) == (
        "submissions/alpha/tuned.csv",
        Pick.SELECTED,
    )
    golf = max(
        ("submissions/golf/worse.csv", "submissions/golf/mixed.csv"),
        key=lambda k: truth[k].private or 0.0,
    )
    assert (rows["golf"].submission, rows["golf"].pick) == (golf, Pick.SELECTED)
    public_best_golf = load(world / "board.db").public.rows[3]
    assert public_best_golf.team == "golf"
    assert public_best_golf.submission == "submissions/golf/nudge.csv"
    # echo selected only a rejected file: its best public submissions count instead
    assert (rows["echo"].submission, rows["echo"].pick) == (
        "submissions/echo/hidden-gem.csv",
        Pick.BEST_PUBLIC,
    )
    # bravo selected nothing: the better private score of its two best public files
    bravo = max(
        ("submissions/bravo/overfit.csv", "submissions/bravo/damaged.csv"),
        key=lambda k: truth[k].private or 0.0,
    )
    assert rows["bravo"].submission == bravo
    for row in boards.private.rows:
        assert row.score == truth[row.submission].private
    scores = [row.score for row in boards.private.rows]
    assert scores == sorted(scores, reverse=True)


def test_shake_up_is_public_rank_minus_private_rank(world: Path) -> None:
    boards = load(world / "board.db", Phase.FINAL)
    assert boards.private is not None
    public_rank = {row.team: row.rank for row in boards.public.rows}
    for row in boards.private.rows:
        assert row.public_rank == public_rank[row.team]
        assert row.shake == public_rank[row.team] - row.rank
    rows = {row.team: row for row in boards.private.rows}
    assert rows["echo"].shake == 6 - 1  # strong on private users only: climbs from last to first
    assert rows["bravo"].shake == 1 - 6  # overfitted the public users: falls from first to last


def test_rejected_submissions_are_never_ranked(world: Path) -> None:
    boards = load(world / "board.db", Phase.FINAL)
    assert boards.private is not None
    for board in (boards.public, boards.private):
        assert "delta" not in [row.team for row in board.rows]
        assert not REJECTED & {row.submission for row in board.rows}
    assert [(t.team, t.rejected) for t in boards.unranked] == [("delta", 1)]


def test_a_stored_rejection_reads_back_as_its_report(world: Path) -> None:
    """The database keeps a rejection as the report's JSON; read back it is the same report,
    and a run's summary prints it exactly as the scorer does."""
    with Store(world / "board.db", create=False) as store:
        errors = [r.error for r in store.records() if r.status == Status.REJECTED]
    assert len(errors) == len(REJECTED)
    for error in errors:
        assert error is not None and error["code"] == "submission_rejected"
        report = Report.from_dict(error)
        assert error == error_object(
            Failure.SUBMISSION_REJECTED, error["message"], "submission", report
        )
        assert error_text(error) == report.render()
        # A database written before schema version 1 nested the report; it still reads back.
        assert error_text({"error": "submission_rejected", "report": report.to_dict()}) == (
            report.render()
        )
    internal = error_object(Failure.INTERNAL_ERROR, "MemoryError: out of memory")
    assert error_text(internal) == "MemoryError: out of memory"
    assert error_text(None) == ""


def test_tiers_split_the_board_where_the_tests_and_the_margin_say(world: Path) -> None:
    board = load(world / "board.db").public
    rows = {row.team: row for row in board.rows}
    order = [row.team for row in board.rows]
    below = {team: board.rows[i + 1] for i, team in enumerate(order[:-1])}
    assert rows["bravo"].p_adjusted is not None and rows["bravo"].p_adjusted < 0.05
    assert below["bravo"].tier == rows["bravo"].tier + 1  # far above the next: a new tier
    assert rows["alpha"].p_next == 1.0  # the same file as charlie: one tier
    assert below["alpha"].tier == rows["alpha"].tier
    assert rows["golf"].score != rows["foxtrot"].score
    assert rows["golf"].tier == rows["foxtrot"].tier  # a few users apart: noise, one tier
    assert rows["echo"].p_next is None and rows["echo"].p_adjusted is None  # last row
    assert [row.tier for row in board.rows] == sorted(row.tier for row in board.rows)
    for row, after in zip(board.rows, board.rows[1:], strict=False):
        assert row.p_adjusted is not None and row.p_next is not None
        assert row.p_adjusted >= row.p_next
        assert after.tier - row.tier in (0, 1)
    for row in rows.values():
        assert row.low is not None and row.high is not None
        assert row.low <= row.score <= row.high


def test_boards_are_reproducible_with_a_seed(world: Path) -> None:
    first = load(world / "board.db", Phase.FINAL, seed=7).to_dict()
    assert load(world / "board.db", Phase.FINAL, seed=7).to_dict() == first
    assert load(world / "board.db", Phase.FINAL, seed=8).to_dict() != first


# -- phases and formats -----------------------------------------------------------------------


def _blur_private(db: Path) -> None:
    """Change every private figure of a database: private scores, metrics, per-user values."""
    with Store(db) as store:
        arrays = store.per_user((r.id for r in store.records()), Split.PRIVATE)
        with store.transaction():
            store.db.execute(
                "UPDATE verdicts SET private = private / 2, overall = overall / 3, metrics = NULL"
            )
            for ident, values in arrays.items():
                store.db.execute(
                    "UPDATE per_user SET ndcg = ? WHERE verdict = ? AND split = 'private'",
                    (values[::-1].astype("<f8").tobytes(), ident),
                )


@pytest.mark.parametrize("fmt", FORMATS)
def test_public_phase_shows_no_private_figure(copy: Path, world: Path, fmt: str) -> None:
    db = copy / "board.db"
    public = render(load(world / "board.db", Phase.PUBLIC), fmt, now=NOW)
    final = load(world / "board.db", Phase.FINAL)
    assert final.private is not None
    # Not one private value, in any rounding the outputs use.
    figures = {row.score for row in final.private.rows}
    figures |= {v for row in final.private.rows for v in (row.low, row.high) if v is not None}
    for value in figures:
        for text in (repr(value), f"{value:.6f}"):
            assert text not in public
    # Non-interference: change every private figure; the public output does not move a byte.
    _blur_private(db)
    assert render(load(db, Phase.PUBLIC), fmt, now=NOW) == public
    assert render(load(db, Phase.FINAL), fmt, now=NOW) != render(final, fmt, now=NOW)


def test_public_phase_json_and_csv_have_no_private_fields(world: Path) -> None:
    data = json.loads(render(load(world / "board.db"), "json"))
    assert data["phase"] == "public"
    assert "private" not in data
    assert not {"public_rank", "shake", "pick"} & set(data["public"]["rows"][0])
    assert "submission" not in data["public"]["rows"][0]  # a public output names no file
    header = render(load(world / "board.db"), "csv").splitlines()[0]
    assert header == (
        '"board","rank","team","score","low","high","p_next","p_adjusted","tier","submitted_at",'
        '"entries","neutralised"'
    )
    final = json.loads(render(load(world / "board.db", Phase.FINAL), "json"))
    assert final["private"]["rows"][0]["team"] == "echo"


def test_html_page_is_self_contained_and_shows_both_boards(world: Path) -> None:
    boards = load(world / "board.db", Phase.FINAL)
    assert boards.private is not None
    html = render(boards, "html")
    assert html.startswith("<!DOCTYPE html>")
    assert '<section id="public">' in html and '<section id="private">' in html
    assert html.count("<svg") == len(boards.public.rows) + len(boards.private.rows)
    assert html.count('<tr class="shaded">') == sum(
        row.tier % 2 == 0 for board in (boards.public, boards.private) for row in board.rows
    )
    for row in boards.private.rows:
        assert f'<td class="team"><bdi>{row.team}</bdi></td>' in html
        assert f"{row.score:.6f}" in html
    assert "Not ranked: <bdi>delta</bdi> (1 rejected)." in html
    for external in ("http:", "https:", "<script", "<link", "<img", "url(", "@import"):
        assert external not in html
    public_page = render(load(world / "board.db"), "html")
    assert '<section id="private">' not in public_page
    assert "the private leaderboard is hidden" in public_page


def test_team_names_are_escaped_in_every_format(tmp_path: Path, world: Path) -> None:
    hostile = '<img src=x onerror="alert(1)">|x'
    shutil.copy(world / "solution.csv", tmp_path / "solution.csv")
    shutil.copy(world / "submissions/alpha/baseline.csv", tmp_path / "a.csv")
    (tmp_path / "manifest.csv").write_text(
        f'team,path,submitted_at\n"{hostile.replace(chr(34), chr(34) * 2)}",a.csv,2024-05-01\n'
    )
    run(tmp_path)
    boards = load(tmp_path / "board.db")
    assert boards.public.rows[0].team == hostile
    assert hostile not in render(boards, "html")
    assert "&lt;img src=x onerror=&quot;alert(1)&quot;&gt;|x" in render(boards, "html")
    assert '&lt;img src=x onerror="alert\\(1\\)"&gt;\\|x' in render(boards, "md")
    assert json.loads(render(boards, "json"))["public"]["rows"][0]["team"] == hostile


# -- the log ----------------------------------------------------------------------------------


def test_manifest_problems_are_all_reported_at_once(tmp_path: Path) -> None:
    with pytest.raises(ManifestError) as caught:
        read_log(broken_manifest(tmp_path))
    report = caught.value.report
    assert {p.code: p.count for p in report.problems} == {
        "duplicate_submission": 1,
        "empty_value": 1,
        "field_count": 1,
        "invalid_flag": 1,
        "invalid_time": 1,
        "too_many_selected": 1,
        "submission_not_found": 1,
        "team_name_character": 1,
        "team_name_too_long": 1,
        "team_name_clash": 1,
    }
    assert caught.value.exit_code == 2
    assert isinstance(caught.value, HostError) and caught.value.role == "manifest"
    assert "line 3: submitted_at 'yesterday'" in str(caught.value)


def test_manifest_report_counts_every_problem_and_shows_the_first_few(tmp_path: Path) -> None:
    bad = MAX_EXAMPLES + 2
    rows = "".join(f"t,s{i}.csv,soon\n" for i in range(bad))
    (tmp_path / "m.csv").write_text(f"team,path,submitted_at\n{rows}")
    for i in range(bad):
        (tmp_path / f"s{i}.csv").write_text("x\n")
    with pytest.raises(ManifestError) as caught:
        read_log(tmp_path / "m.csv")
    (found,) = caught.value.report.problems
    assert (found.code, found.count, len(found.examples)) == ("invalid_time", bad, MAX_EXAMPLES)
    assert [issue.line for issue in found.examples] == list(range(2, 2 + MAX_EXAMPLES))
    assert (found.examples[0].column, found.examples[0].value) == ("submitted_at", "soon")
    assert str(caught.value).endswith(f"… and {bad - MAX_EXAMPLES} more")


def test_manifest_header_is_checked(tmp_path: Path) -> None:
    (tmp_path / "m.csv").write_text("team,file,submitted_at,selcted\n")
    with pytest.raises(ManifestError) as caught:
        read_log(tmp_path / "m.csv")
    report = caught.value.report
    assert {p.code: p.count for p in report.problems} == {"missing_column": 1, "unknown_column": 2}


def test_manifest_times_without_zone_are_utc_and_paths_are_relative(tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    (tmp_path / "s.csv").write_text("x\n")
    absolute = tmp_path / "elsewhere" / "t.csv"
    absolute.parent.mkdir()
    absolute.write_text("x\n")
    (tmp_path / "m.csv").write_text(
        "team,path,submitted_at\n"
        "z,./sub/../s.csv,2024-05-01 10:00\n"
        f"z,{absolute},2024-05-01T12:00+02:00\n"
    )
    first, second = read_log(tmp_path / "m.csv")
    assert first.submitted_at == datetime(2024, 5, 1, 10, 0, tzinfo=UTC)
    assert second.submitted_at == datetime(2024, 5, 1, 10, 0, tzinfo=UTC)
    assert (first.key, first.path) == ("s.csv", tmp_path / "sub/../s.csv")
    assert second.path == absolute


def test_folder_layout_one_sub_folder_per_team(world: Path, tmp_path: Path) -> None:
    root = tmp_path / "uploads"
    for i, (team, name) in enumerate(
        [("ann", "one.csv"), ("ann", "two.csv"), ("bob", "only.csv"), ("cy", "bad.csv")]
    ):
        path = root / team / name
        path.parent.mkdir(parents=True, exist_ok=True)
        source = "tuned.csv" if name == "two.csv" else "baseline.csv"
        shutil.copy(world / "submissions/alpha" / source, path)
        if team == "cy":
            path.write_text("user_id,edition_id,rank\n")
        stamp = datetime(2024, 5, 1, 10 + i, tzinfo=UTC).timestamp()
        os.utime(path, (stamp, stamp))
    (root / "ann" / "selected.txt").write_text("one.csv\n")
    (root / ".hidden").mkdir()
    entries = read_log(root)
    assert [(e.team, e.key, e.selected) for e in entries] == [
        ("ann", "ann/one.csv", True),
        ("ann", "ann/two.csv", False),
        ("bob", "bob/only.csv", False),
        ("cy", "cy/bad.csv", False),
    ]
    assert entries[1].submitted_at == datetime(2024, 5, 1, 11, tzinfo=UTC)
    batch.score_log(root, world / "solution.csv", tmp_path / "board.db")
    boards = load(tmp_path / "board.db", Phase.FINAL)
    assert [r.team for r in boards.public.rows] == ["ann", "bob"]
    assert boards.private is not None
    ann = {r.team: r for r in boards.private.rows}["ann"]
    assert (ann.submission, ann.pick) == ("ann/one.csv", Pick.SELECTED)
    assert [u.team for u in boards.unranked] == ["cy"]


def test_folder_selection_errors(tmp_path: Path) -> None:
    with pytest.raises(ManifestError) as caught:
        read_log(broken_folder(tmp_path))
    report = caught.value.report
    assert {p.code: p.count for p in report.problems} == {
        "too_many_selected": 1,
        "unknown_selection": 1,
    }


# -- the database -----------------------------------------------------------------------------


def test_a_foreign_or_newer_database_is_refused_not_changed(copy: Path, tmp_path: Path) -> None:
    other = tmp_path / "other.db"
    with sqlite3.connect(other) as db:
        db.execute("CREATE TABLE notes (text TEXT)")
    for create in (True, False):
        with pytest.raises(UsageError, match="not a leaderboard database"):
            Store(other, create=create)
    with sqlite3.connect(other) as db:
        tables = db.execute("SELECT name FROM sqlite_master").fetchall()
    assert tables == [("notes",)]
    with sqlite3.connect(copy / "board.db") as db:
        db.execute("UPDATE meta SET value = '99' WHERE key = 'schema'")
    with pytest.raises(UsageError, match="database schema 99, this scorer reads schema 2"):
        load(copy / "board.db")
    with pytest.raises(UsageError, match="no such database"):
        load(tmp_path / "missing.db")


def test_show_writes_nothing(world: Path) -> None:
    db = world / "board.db"
    before = db.read_bytes()
    load(db, Phase.FINAL)
    assert db.read_bytes() == before


def test_a_team_whose_scored_submissions_hold_no_score_is_not_ranked_saying_why(
    tmp_path: Path,
) -> None:
    """Every user ignored: each valid submission is scored, with no user to score (task.md,
    "No user scored"), so no team is ranked. Each is listed with that count, not as having
    made no submission."""
    make_demo(tmp_path)
    solution = pl.read_csv(tmp_path / "solution.csv")
    solution.with_columns(stage=pl.lit("ignored")).write_csv(tmp_path / "solution.csv")
    batch.score_log(
        tmp_path / "manifest.csv",
        tmp_path / "solution.csv",
        tmp_path / "board.db",
        isolation=batch.Isolation(workers=0),
    )
    boards = load(tmp_path / "board.db", Phase.FINAL)
    assert boards.public.rows == () and boards.private is not None
    with Store(tmp_path / "board.db", create=False) as store:
        records = store.records()
    scored = {r.team: 0 for r in records}
    for r in records:
        scored[r.team] += r.status == Status.SCORED
    assert {u.team: u.unscored for u in boards.unranked} == scored
    assert 0 in scored.values() and min(scored.values()) < max(scored.values())
    text = render(boards, "table")
    assert "Not ranked: golf (3 scored with no user to score)." in text
    assert "Not ranked: delta (1 rejected)." in text  # nothing scored: no such count
    unranked = json.loads(render(boards, "json"))["unranked"]
    assert {"team": "golf", "rejected": 0, "failed": 0, "unscored": 3} in unranked
    assert {"team": "delta", "rejected": 1, "failed": 0} in unranked
