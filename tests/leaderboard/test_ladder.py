"""The parameter-free Ladder against a slow reference, rounded boards; its bench, run small."""

from __future__ import annotations

import importlib.util
import math
import sys
from fractions import Fraction
from pathlib import Path
from types import ModuleType

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from scorer.board import BoardRules
from scorer.leaderboard.ladder import climb, ladder


def reference(submissions: list[list[float]]) -> list[tuple[Fraction, bool]]:
    """Blum & Hardt's parameter-free Ladder as its pseudocode reads, in exact rationals and in
    losses (loss = 1 - score): R_0 = ∞; f_t leads when R_S(f_t) < R_S(leader) - s/√n, s the
    sample standard deviation of the per-example loss differences (the leader's exact loss, as
    the authors' code); then R_t = [R_S(f_t)]_{1/n}, half-way to the larger loss. Returns each
    submission's shown score 1 - R_t and whether it became the leader."""
    steps: list[tuple[Fraction, bool]] = []
    leader: list[Fraction] | None = None
    released = Fraction(0)
    for scores in submissions:
        loss = [1 - Fraction(x) for x in scores]
        n = len(loss)
        risk = sum(loss, Fraction(0)) / n
        if leader is None:
            passes = True  # anything is below R_0 = ∞
        elif n == 1:
            passes = False  # s is undefined (the authors' code: NaN, which compares false)
        else:
            diff = [a - b for a, b in zip(loss, leader, strict=True)]
            mean = sum(diff, Fraction(0)) / n
            variance = sum(((x - mean) ** 2 for x in diff), Fraction(0)) / (n - 1)
            # mean < -s/√n, squared on both sides of a negative mean
            passes = mean < 0 and mean * mean > variance / n
        if passes:
            leader = loss
            released = Fraction(math.floor(risk * n + Fraction(1, 2)), n)
        steps.append((1 - released, passes))
    return steps


def shown_by_reference(submissions: list[list[float]]) -> list[float]:
    return [float(shown) for shown, _ in reference(submissions)]


def margin(best: list[float], new: list[float]) -> Fraction:
    """How far the exact test statistic is from its threshold: mean(d)² - s²/n, d = new - best."""
    diff = [Fraction(a) - Fraction(b) for a, b in zip(new, best, strict=True)]
    n = len(diff)
    mean = sum(diff, Fraction(0)) / n
    return mean * mean - sum(((x - mean) ** 2 for x in diff), Fraction(0)) / (n - 1) / n


# --- hand-made vectors ---------------------------------------------------------------------


def test_the_first_submission_is_shown_on_the_one_over_n_grid() -> None:
    # mean 1.4/3; its nearest multiple of 1/3 is 1/3 (1.4 is nearest to 1)
    assert climb(None, np.array([0.2, 0.5, 0.7])) == (1 / 3, True)


def test_a_gain_beyond_its_standard_error_climbs() -> None:
    best = np.array([0.25, 0.25, 0.25, 0.25])
    new = np.array([0.75, 0.75, 0.75, 0.25])  # d = (1/2, 1/2, 1/2, 0)
    mean = 3 / 8
    s = math.sqrt((3 * (1 / 2 - mean) ** 2 + mean**2) / 3)
    assert mean > s / math.sqrt(4)  # 3/8 > 1/8
    # mean score 2.5/4: half-way between 2/4 and 3/4, shown as the lower one
    assert climb(best, new) == (2 / 4, True)


def test_a_gain_within_its_standard_error_shows_the_best_again() -> None:
    best = np.array([0.5, 0.5, 0.5, 0.5])
    new = np.array([1.0, 0.0, 1.0, 0.25])  # d = (1/2, -1/2, 1/2, -1/4)
    mean = 1 / 16
    s = math.sqrt(sum((x - mean) ** 2 for x in (1 / 2, -1 / 2, 1 / 2, -1 / 4)) / 3)
    assert mean < s / math.sqrt(4)
    assert climb(best, new) == (2 / 4, False)


def test_the_test_statistic_exactly_at_one_does_not_climb() -> None:
    # d = (0, c): mean c/2, s = c/√2, s/√2 = c/2: t = 1 exactly, and the test is strict
    best = np.array([0.5, 0.5])
    assert climb(best, np.array([0.5, 0.625])) == (1 / 2, False)
    # one user of many gaining alone is always exactly at the threshold: S² = Q
    assert climb(np.zeros(5), np.array([0, 0, 0, 0, 1.0])) == (0.0, False)


def test_a_gain_at_every_user_climbs_even_with_no_spread() -> None:
    best = np.array([0.1, 0.2, 0.3])
    assert climb(best, best + 0.5) == (round(2.1) / 3, True)  # s = 0 < mean = 0.5


def test_one_user_shows_its_first_submission_for_good() -> None:
    assert climb(None, np.array([0.6])) == (1.0, True)
    assert climb(np.array([0.4]), np.array([1.0])) == (0.0, False)


def test_ladder_folds_climb() -> None:
    subs = [np.array(x) for x in ([0.0, 0.0], [0.5, 0.5], [0.25, 1.0], [1.0, 1.0])]
    # 1st: 0/2. 2nd: d = (1/2, 1/2) climbs, mean 1/2 = 1/2. 3rd: d = (-1/4, 1/2) does not.
    # 4th: d = (1/2, 1/2) over the 2nd climbs, mean 1.
    assert ladder(subs) == [0.0, 1 / 2, 1 / 2, 1.0]
    assert ladder([]) == []


# --- invariants ----------------------------------------------------------------------------

users = st.integers(min_value=1, max_value=12)


def grid_scores(n: int) -> st.SearchStrategy[list[float]]:
    """Scores on multiples of 1/64: every sum is exact, and ties are common."""
    return st.lists(st.integers(0, 64).map(lambda k: k / 64), min_size=n, max_size=n)


@st.composite
def teams(draw: st.DrawFn, values: st.SearchStrategy[float] | None = None) -> list[list[float]]:
    n = draw(users)
    each = grid_scores(n) if values is None else st.lists(values, min_size=n, max_size=n)
    return draw(st.lists(each, min_size=1, max_size=8))


@given(teams())
def test_the_shown_score_never_falls(subs: list[list[float]]) -> None:
    shown = ladder([np.array(x) for x in subs])
    assert shown == sorted(shown)


@given(teams())
def test_the_first_is_its_mean_on_the_grid(subs: list[list[float]]) -> None:
    n = len(subs[0])
    score, became_best = climb(None, np.array(subs[0]))
    assert became_best
    assert score * n == pytest.approx(round(score * n), abs=1e-9)
    assert abs(score - sum(subs[0]) / n) <= 1 / (2 * n) + 1e-12


@given(teams())
def test_the_best_again_never_moves_the_board(subs: list[list[float]]) -> None:
    best = np.array(subs[0])
    shown, _ = climb(None, best)
    assert climb(best, best.copy()) == (shown, False)


@given(teams(), st.floats(min_value=1e-6, max_value=1.0))
def test_a_gain_at_every_user_always_climbs(subs: list[list[float]], gain: float) -> None:
    best = np.array(subs[0])
    assume(best.size >= 2)
    score, became_best = climb(best, best + gain)
    assert became_best
    assert score == climb(None, best + gain)[0]


@given(teams())
def test_matches_the_reference_on_a_grid(subs: list[list[float]]) -> None:
    assert ladder([np.array(x) for x in subs]) == shown_by_reference(subs)


@settings(max_examples=300)
@given(teams(st.floats(min_value=0, max_value=1, allow_subnormal=False)))
def test_matches_the_reference_on_any_scores(subs: list[list[float]]) -> None:
    # Away from the threshold (t = 1) and from half-way points, where float rounding decides
    best: list[float] | None = None
    for scores, (_, passes) in zip(subs, reference(subs), strict=True):
        if best is not None and len(scores) > 1:
            assume(abs(margin(best, scores)) > 1e-9)
        if passes:
            best = scores
            total = sum((Fraction(x) for x in scores), Fraction(0))
            assume(abs(total - math.floor(total) - Fraction(1, 2)) > 1e-9)
    shown = ladder([np.array(x) for x in subs])
    assert shown == pytest.approx(shown_by_reference(subs), abs=1e-12)


# --- rounding ------------------------------------------------------------------------------


def test_a_rounded_board_shows_pythons_round() -> None:
    """The bench's rounded boards are `BoardRules.shown`, a server's: Python's round."""
    assert BoardRules(public_digits=3).shown(0.123456) == 0.123
    assert BoardRules(public_digits=2).shown(0.125) == 0.12  # half-way to even
    assert BoardRules(public_digits=2).shown(2.675) == 2.67  # 2.675 is stored a little below
    assert BoardRules(public_digits=0).shown(0.7) == 1.0
    assert BoardRules().shown(0.123456) == 0.123456
    assert BoardRules(public_digits=3).shown(None) is None


@given(st.floats(0, 1), st.integers(0, 15))
def test_a_rounded_score_is_within_half_a_digit(score: float, digits: int) -> None:
    shown = BoardRules(public_digits=digits).shown(score)
    assert abs(shown - score) <= 0.5 * 10.0**-digits + 1e-15


# --- argument errors -----------------------------------------------------------------------


def test_climb_refuses_unequal_lengths() -> None:
    with pytest.raises(ValueError, match="best has scores for 2 users and new for 3"):
        climb(np.array([0.1, 0.2]), np.array([0.1, 0.2, 0.3]))


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_climb_refuses_non_finite_scores(bad: float) -> None:
    with pytest.raises(ValueError, match="new has 1 scores that are NaN or infinite"):
        climb(None, np.array([0.1, bad]))
    with pytest.raises(ValueError, match="best has 1 scores that are NaN or infinite"):
        climb(np.array([bad, 0.1]), np.array([0.1, 0.2]))


def test_climb_refuses_no_users_and_tables() -> None:
    with pytest.raises(ValueError, match="new has no users"):
        climb(None, np.array([]))
    with pytest.raises(ValueError, match="new has 2 dimensions; expected one score per user"):
        climb(None, np.zeros((2, 2)))


# --- the benchmark, so that it cannot rot --------------------------------------------------


@pytest.fixture()
def bench(monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    """bench/trust_ladder.py as a module, its folder on sys.path as when it runs (it imports
    bench/report.py)."""
    folder = Path(__file__).resolve().parents[2] / "bench"
    monkeypatch.syspath_prepend(str(folder))
    spec = importlib.util.spec_from_file_location("trust_ladder", folder / "trust_ladder.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, "trust_ladder", module)  # dataclasses look it up
    spec.loader.exec_module(module)
    return module


def test_the_ladder_bench_changes_no_rank_of_fixed_submissions(bench: ModuleType) -> None:
    size = bench.Size(users=400, pool=50, ks=(20, 40), seeds=2, teams=5, most=5, fewest=3)
    seeds = bench.run(size)
    assert [s.fixed.final_changed for s in seeds] == [0, 0]
    assert [s.fixed.swapped for s in seeds] == [0, 0]
    assert all(s.adaptive.ties <= s.adaptive.swapped for s in seeds)
    assert {key for s in seeds for key in s.attack} == {
        (k, board) for k in size.ks for board in bench.BOARDS
    }


def test_the_ladder_bench_writes_its_section_once(bench: ModuleType, tmp_path: Path) -> None:
    out = tmp_path / "TRUST.md"
    out.write_text("# Trust figures\n\nA paragraph.\n", encoding="utf-8")
    args = ["--quick", "--jobs", "1", "--out", str(out)]
    assert bench.main(args) == 0
    assert bench.main(args) == 0  # a second run replaces the section
    text = out.read_text(encoding="utf-8")
    assert text.startswith("# Trust figures\n\nA paragraph.\n")
    assert text.count(bench.START) == text.count(bench.END) == 1
    assert "`.venv/bin/python bench/trust_ladder.py --quick --jobs 1 --out " in text
    assert "| fixed submissions | no |" in text
    assert "| adaptive | yes |" in text
    assert "The ≥ 5× goal is " in text
