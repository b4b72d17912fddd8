"""Defences against probing the public board (`[board]`): public scores rounded to
`public_digits` on every output before the reveal, and exact after it."""

from __future__ import annotations

import json
import re
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

import pytest

from scorer.board import BoardRules
from scorer.competition import LOST_ITEMS
from scorer.leaderboard import batch
from scorer.leaderboard.boards import load
from scorer.leaderboard.demo import make_demo
from scorer.leaderboard.render import FORMATS, render
from scorer.leaderboard.results import BatchResult
from scorer.leaderboard.schema import Phase
from scorer.leaderboard.terminal import summary_text

NOW = datetime(2024, 6, 1, tzinfo=UTC)
DIGITS = 2


@pytest.fixture(scope="module")
def rounded(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, BatchResult]:
    """The demo competition scored under `public_digits = 2`."""
    root = tmp_path_factory.mktemp("digits")
    make_demo(root)
    spec = replace(LOST_ITEMS, board=BoardRules(public_digits=DIGITS))
    result = batch.score_log(
        root / "manifest.csv",
        root / "solution.csv",
        root / "board.db",
        competition=spec,
        isolation=batch.Isolation(workers=0),
    )
    return root, result


def test_the_public_board_is_rounded_until_the_reveal_and_exact_after(
    rounded: tuple[Path, BatchResult],
) -> None:
    root, _ = rounded
    before = load(root / "board.db", Phase.PUBLIC).public
    after = load(root / "board.db", Phase.FINAL).public
    assert [row.team for row in before.rows] == [row.team for row in after.rows]
    for shown, exact in zip(before.rows, after.rows, strict=True):
        assert shown.score == round(exact.score, DIGITS) != exact.score
        assert (shown.low, shown.high) == (round(exact.low or 0, 2), round(exact.high or 0, 2))
        assert (shown.tier, shown.p_adjusted) == (exact.tier, exact.p_adjusted)  # exact tests


@pytest.mark.parametrize("fmt", FORMATS)
def test_no_public_output_shows_more_digits_than_the_spec_allows(
    rounded: tuple[Path, BatchResult], fmt: str
) -> None:
    root, _ = rounded
    exact = load(root / "board.db", Phase.FINAL).public
    text = render(load(root / "board.db", Phase.PUBLIC), fmt, now=NOW)
    for row in exact.rows:
        for value in (row.score, row.low, row.high):
            assert value is not None
            for digits in (3, 4, 6):  # every rounding the formats use, and every digit
                assert f"{value:.{digits}f}" not in text, (fmt, value)
            assert repr(value) not in text
    if fmt == "json":
        scores = [row["score"] for row in json.loads(text)["public"]["rows"]]
        assert scores == [round(row.score, DIGITS) for row in exact.rows]


def test_the_run_s_public_summary_is_rounded_too(rounded: tuple[Path, BatchResult]) -> None:
    _, result = rounded
    best = [tally.best_public for tally in result.teams()]
    assert best and all(b is None or b == round(b, DIGITS) for b in best)
    assert result.public_dict()["teams"] == [t.to_dict() for t in result.teams()]
    shown = re.findall(r"\d\.\d+", summary_text(result, "manifest.csv"))
    assert shown and all(len(number.split(".")[1]) <= 6 for number in shown)
    assert all(float(number) == round(float(number), DIGITS) for number in shown)
