"""The forecast of the private board on the boards (`leaderboard show --forecast`) and the
Ladder on the public board (`[board] ladder`): each traced to the functions that define them,
`forecast.forecast` and `ladder.ladder`, fed the store's own per-user scores."""

from __future__ import annotations

import itertools
import json
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from jsonschema import Draft202012Validator
from typer.testing import CliRunner

from scorer.board import BoardRules, Ladder
from scorer.cli import app
from scorer.competition import LOST_ITEMS, Split
from scorer.leaderboard import batch
from scorer.leaderboard.boards import build, candidates, load
from scorer.leaderboard.climb import order
from scorer.leaderboard.demo import make_demo
from scorer.leaderboard.forecast import forecast
from scorer.leaderboard.ladder import ladder
from scorer.leaderboard.render import FORMATS, render
from scorer.leaderboard.schema import Phase, Status
from scorer.leaderboard.store import Record, Store
from scorer.schemas import schema


def scored(root: Path, rules: BoardRules | None = None) -> Path:
    """The demo competition under `rules`, scored into root/board.db."""
    make_demo(root)
    batch.score_log(
        root / "manifest.csv",
        root / "solution.csv",
        root / "board.db",
        competition=replace(LOST_ITEMS, board=rules or BoardRules()),
        isolation=batch.Isolation(workers=0),
    )
    return root / "board.db"


@pytest.fixture(scope="module")
def plain(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return scored(tmp_path_factory.mktemp("plain"))


@pytest.fixture(scope="module")
def laddered(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return scored(tmp_path_factory.mktemp("ladder"), BoardRules(ladder=Ladder.PARAMETER_FREE))


def by_team(store: Store) -> dict[str, list[Record]]:
    teams: dict[str, list[Record]] = {}
    for r in store.records(private=False):
        if r.status == Status.SCORED and r.public is not None:
            teams.setdefault(r.team, []).append(r)
    return teams


def test_the_forecast_is_only_made_when_asked(plain: Path) -> None:
    assert load(plain, Phase.PUBLIC).forecast is None
    assert "forecast" not in json.loads(render(load(plain, Phase.PUBLIC), "json"))


def test_the_forecast_is_the_bootstrap_of_the_teams_candidates_public_scores(
    plain: Path,
) -> None:
    boards = load(plain, Phase.PUBLIC, forecast=True)
    found = boards.forecast
    assert found is not None
    order_ = [row.team for row in boards.public.rows]
    assert [row.team for row in found.rows] == order_
    assert [row.public_rank for row in found.rows] == list(range(1, len(order_) + 1))
    with Store(plain, create=False) as store:
        teams = by_team(store)
        chosen = [candidates(teams[team])[0] for team in order_]
        idents = [r.id for rows in chosen for r in rows]
        public = store.per_user(idents, Split.PUBLIC)
        private_users = len(store.per_user(idents[:1], Split.PRIVATE)[idents[0]])
    columns = np.column_stack([public[i] for i in idents])
    owners = np.array([t for t, rows in enumerate(chosen) for _ in rows])
    expected = forecast(columns, owners, private_users, resamples=1_000, seed=0)
    assert [r.rank_low for r in found.rows] == expected.rank_low.tolist()
    assert [r.rank_high for r in found.rows] == expected.rank_high.tolist()
    assert [r.rank_median for r in found.rows] == expected.rank_median.tolist()
    assert [r.score_low for r in found.rows] == expected.score_low.tolist()
    assert [r.score_high for r in found.rows] == expected.score_high.tolist()
    assert (found.public_users, found.private_users) == (columns.shape[0], private_users)
    assert found.covered is None and all(r.private_rank is None for r in found.rows)


def test_after_the_reveal_the_forecast_stands_beside_the_ranks_got(plain: Path) -> None:
    before = load(plain, Phase.PUBLIC, forecast=True).forecast
    boards = load(plain, Phase.FINAL, forecast=True)
    after = boards.forecast
    assert before is not None and after is not None and boards.private is not None
    got = {row.team: row.rank for row in boards.private.rows}
    assert [replace(row, private_rank=None) for row in after.rows] == list(before.rows)
    assert [row.private_rank for row in after.rows] == [got[row.team] for row in after.rows]
    inside = [row.rank_low <= got[row.team] <= row.rank_high for row in after.rows]
    assert [row.inside for row in after.rows] == inside
    assert after.covered == sum(inside)
    assert 0 < after.covered < len(inside)  # the demo has a shake-up: some in, some out


@pytest.mark.parametrize("fmt", FORMATS)
def test_every_format_shows_the_forecast_when_asked(plain: Path, fmt: str) -> None:
    boards = load(plain, Phase.FINAL, forecast=True)
    assert boards.forecast is not None
    text = render(boards, fmt)
    if fmt == "json":
        data = json.loads(text)["forecast"]
        assert data["covered"] == boards.forecast.covered
        assert data["rows"] == [row.to_dict() for row in boards.forecast.rows]
        assert "two-level bootstrap" in data["method"]
    elif fmt != "csv":  # csv is one table of board rows; the forecast is json's, md's, html's
        assert "Forecast" in text, fmt
        first = boards.forecast.rows[0]
        assert f"{first.score_low:.4f}" in text, fmt


def test_leaderboard_show_forecast_prints_it(plain: Path) -> None:
    result = CliRunner().invoke(app, ["leaderboard", "show", "--db", str(plain), "--forecast"])
    assert result.exit_code == 0, result.output
    assert "Forecast of the private leaderboard" in result.output
    assert "90% forecast" in result.output
    plain_run = CliRunner().invoke(app, ["leaderboard", "show", "--db", str(plain)])
    assert "Forecast" not in plain_run.output


def test_the_ladder_shows_each_team_the_best_its_paired_tests_allowed(laddered: Path) -> None:
    boards = load(laddered, Phase.PUBLIC)
    assert boards.climbed is not None
    with Store(laddered, create=False) as store:
        teams = by_team(store)
        expected: dict[str, float] = {}
        for team, rows in teams.items():
            ordered = sorted(rows, key=order)
            arrays = store.per_user([r.id for r in ordered], Split.PUBLIC)
            shown = ladder([arrays[r.id] for r in ordered])
            assert [boards.climbed[r.id] for r in ordered] == shown
            expected[team] = max(shown)
    assert {row.team: row.score for row in boards.public.rows} == expected
    exact = {row.team: row.score for row in load(laddered, Phase.FINAL).public.rows}
    assert any(expected[team] != exact[team] for team in exact)  # on 1/n, not the mean


def test_the_ladder_repeats_a_team_s_best_for_a_submission_that_is_not_better(
    laddered: Path,
) -> None:
    boards = load(laddered, Phase.PUBLIC)
    assert boards.climbed is not None
    with Store(laddered, create=False) as store:
        repeated = 0
        for rows in by_team(store).values():
            ordered = sorted(rows, key=order)
            shown = [boards.climbed[r.id] for r in ordered]
            for before, now in itertools.pairwise(shown):
                assert now >= before  # a shown score never falls
                repeated += now == before
    assert repeated  # the demo has a team whose later submission did not climb


def test_the_ladder_is_off_after_the_reveal_and_on_a_plain_board(
    laddered: Path, plain: Path
) -> None:
    with Store(laddered, create=False) as store:
        after = build(store, Phase.PUBLIC, revealed=True)
    assert after.climbed is None
    assert after.public == load(plain, Phase.PUBLIC).public
    assert load(plain, Phase.PUBLIC).climbed is None


@pytest.mark.parametrize("phase", ["public", "final"])
def test_the_forecast_s_json_is_the_schema_s(plain: Path, phase: str) -> None:
    args = ["leaderboard", "show", "--db", str(plain), "--phase", phase, "--forecast"]
    result = CliRunner().invoke(app, [*args, "--format", "json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert ("private_rank" in data["forecast"]["rows"][0]) is (phase == "final")
    Draft202012Validator(schema("leaderboard show")).validate(data)
    data["forecast"]["rows"][0]["rank_low"] = 0  # a place is 1 or more: the schema says so
    assert not Draft202012Validator(schema("leaderboard show")).is_valid(data)
