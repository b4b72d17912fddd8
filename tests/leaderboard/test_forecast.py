"""The forecast of private rank and score before the reveal (scorer/leaderboard/forecast.py):
its invariants, its method against normal theory, its arithmetic against a slow reference,
its grouped path against the per-user one, and its arguments."""

from __future__ import annotations

import importlib
import math
import sys
from pathlib import Path
from types import ModuleType

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support.paths import ROOT

from scorer.leaderboard import forecast as module
from scorer.leaderboard import groups
from scorer.leaderboard.forecast import Forecast, boards, forecast, resample, summarise

#: z of a two-sided 90% interval, the normal's 95th percentile.
Z95 = 1.6448536269514722


def fields(f: Forecast) -> list[np.ndarray]:
    return [f.rank_low, f.rank_high, f.rank_median, f.rank_mass, f.score_low, f.score_high]


def same(a: Forecast, b: Forecast) -> bool:
    """Bit for bit the same forecast (NaN equal to NaN)."""
    arrays = all(
        x.dtype == y.dtype and np.array_equal(x, y, equal_nan=True)
        for x, y in zip(fields(a), fields(b), strict=True)
    )
    return arrays and (a.level, a.resamples, a.seed, a.groups) == (
        b.level,
        b.resamples,
        b.seed,
        b.groups,
    )


def board(users: int, skills: list[float], seed: int) -> np.ndarray:
    """Per-user scores in [0, 1] of one column a skill: a user's own difficulty shared by
    every column (paired, as real per-user scores are) plus the column's skill and noise."""
    rng = np.random.default_rng([seed, 11])
    base = rng.random((users, 1))
    noise = rng.normal(0, 0.2, size=(users, len(skills)))
    return np.clip(base + np.array(skills) + noise, 0, 1)


# --- invariants ---------------------------------------------------------------------------


@st.composite
def competitions(draw: st.DrawFn) -> tuple[np.ndarray, np.ndarray, int]:
    """Small public boards: 1-40 users, 1-6 teams of 1-3 columns each, scores from a few
    levels (ties) or any float in [0, 1], and 1-60 private users."""
    users = draw(st.integers(1, 40))
    per_team = draw(st.lists(st.integers(1, 3), min_size=1, max_size=6))
    teams = np.repeat(np.arange(len(per_team)), per_team)
    values = st.sampled_from([0.0, 0.25, 0.5, 1.0]) | st.floats(0, 1)
    cells = draw(st.lists(values, min_size=users * teams.size, max_size=users * teams.size))
    return np.array(cells).reshape(users, teams.size), teams, draw(st.integers(1, 60))


@settings(max_examples=60, deadline=None)
@given(
    competitions(),
    st.integers(1, 80),
    st.integers(0, 2**32 - 1),
    st.sampled_from([0.9, 0.5, 0.1]) | st.floats(0.01, 0.99),
)
def test_the_intervals_are_ordered_and_within_the_board(
    case: tuple[np.ndarray, np.ndarray, int], resamples: int, seed: int, level: float
) -> None:
    """At any level, even one under 1/2, where the shortest run of places could miss the
    median if it were not made to hold it."""
    public, teams, private_users = case
    f = forecast(public, teams, private_users, level=level, resamples=resamples, seed=seed)
    count = int(teams.max()) + 1
    assert all(x.shape == (count,) for x in fields(f))
    assert f.rank_low.dtype == f.rank_high.dtype == f.rank_median.dtype == np.int64
    assert (f.rank_low >= 1).all() and (f.rank_high <= count).all()
    assert (f.rank_low <= f.rank_median).all() and (f.rank_median <= f.rank_high).all()
    assert (f.rank_mass >= math.ceil(round(level * resamples, 9)) / resamples).all()
    assert (f.rank_mass <= 1).all()
    assert (f.score_low <= f.score_high).all()
    assert (f.score_low >= public.min()).all() and (f.score_high <= public.max()).all()
    assert (f.level, f.resamples, f.seed, f.groups) == (level, resamples, seed, 0)


def test_a_score_interval_never_leaves_its_values_by_rounding() -> None:
    """One user's score, resampled as the mean of three copies of it, rounds one ulp above
    it (hypothesis found it): the interval is the value itself, never past it."""
    value = 0.9894964631169023
    assert (value * 3) / 3 != value  # the rounding this guards against
    f = forecast(np.array([[value]]), np.array([0]), 3, resamples=1, seed=0)
    assert f.score_low[0] == f.score_high[0] == value


def test_the_same_input_and_seed_give_the_same_forecast_bit_for_bit() -> None:
    public = board(300, [0.02, 0.01, 0.0], seed=1)
    teams = np.arange(3)
    assert same(forecast(public, teams, 300, seed=7), forecast(public.copy(), teams, 300, seed=7))


def test_another_seed_draws_other_resamples() -> None:
    public = board(300, [0.02, 0.01, 0.0], seed=1)
    a, b = forecast(public, np.arange(3), 300, seed=7), forecast(public, np.arange(3), 300, seed=8)
    assert not np.array_equal(a.score_low, b.score_low)
    assert not np.array_equal(a.score_high, b.score_high)


def test_a_team_far_ahead_is_first_in_every_resample() -> None:
    public = board(200, [0.0, 0.0, 0.0], seed=2)
    public[:, 2] += 10  # the last team by index, so that its rank is not its index's
    f = forecast(public, np.arange(3), 200)
    assert (f.rank_low[2], f.rank_median[2], f.rank_high[2]) == (1, 1, 1)
    assert (f.rank_low[:2] == 2).all() and (f.rank_high[:2] == 3).all()


def test_two_teams_with_the_same_column_tie_and_the_lower_index_ranks_first() -> None:
    """Equal columns have equal means in every resample, and the tie goes to the lower index:
    team 1 is one place ahead of team 2 in every resample, so every quantile is one place
    ahead, and their intervals overlap when they have any width."""
    public = board(200, [0.01, 0.0, 0.0, -0.01], seed=3)
    public[:, 2] = public[:, 1]
    f = forecast(public, np.arange(4), 200)
    assert f.rank_low[1] == f.rank_low[2] - 1
    assert f.rank_median[1] == f.rank_median[2] - 1
    assert f.rank_high[1] == f.rank_high[2] - 1
    assert f.rank_high[1] >= f.rank_low[2]  # they overlap
    assert f.rank_mass[1] == f.rank_mass[2]
    assert f.score_low[1] == f.score_low[2] and f.score_high[1] == f.score_high[2]


def test_a_rank_interval_is_the_shortest_run_of_places_that_holds_the_level() -> None:
    """Team 0 ahead of team 1 in 93 resamples of 100, behind in 7: 1..1 holds 93% of team 0's
    ranks, enough for 90%; equal tails (numpy's "higher" 95th percentile) would say 1..2.
    Team 2, last in every resample, is 3..3."""
    scores = np.tile([0.5, 0.4, 0.1], (100, 1))
    scores[:7, 1] = 0.6
    f = summarise(scores, level=0.9, seed=0, groups=0)
    assert f.rank_low.tolist() == [1, 2, 3] and f.rank_high.tolist() == [1, 2, 3]
    assert f.rank_mass.tolist() == [0.93, 0.93, 1.0]
    ranks = module.rank(scores)
    assert np.quantile(ranks[:, 0], 0.95, method="higher") == 2  # what equal tails give
    f = summarise(scores, level=0.95, seed=0, groups=0)  # 93% no longer enough
    assert f.rank_low.tolist() == [1, 1, 3] and f.rank_high.tolist() == [2, 2, 3]


def test_among_equally_short_runs_the_best_placed_is_the_interval() -> None:
    """Ranks 1, 2, 3 in 5, 90 and 5 resamples of 100, at level 0.95: 1..2 and 2..3 both
    hold 95; the interval is 1..2, and its median 2."""
    scores = np.tile([0.5, 0.4, 0.3], (100, 1))
    scores[:5, 1] = 0.6  # team 1 first, team 0 second
    scores[5:10, 1] = 0.2  # team 1 third
    f = summarise(scores, level=0.95, seed=0, groups=0)
    assert (f.rank_low[1], f.rank_median[1], f.rank_high[1]) == (1, 2, 2)
    assert f.rank_mass[1] == 0.95


def test_a_team_scores_the_best_of_its_columns() -> None:
    """A second column below the first for every user is below it in every resample: the
    team's forecast is the same bit for bit as without it (the draws do not depend on the
    number of columns)."""
    public = board(250, [0.02, 0.0, 0.01], seed=4)
    dominated = public[:, [1]] - 0.05
    alone = forecast(public, np.arange(3), 250, seed=5)
    both = forecast(np.hstack([public, dominated]), np.array([0, 1, 2, 1]), 250, seed=5)
    assert same(alone, both)


def test_a_team_with_two_columns_is_above_each_of_them_alone() -> None:
    """Two columns that cross (one better for half the users, the other for the rest): the
    team's score, the max of their means in each resample, is at least either's."""
    public = board(250, [0.0, 0.0], seed=6)
    public[:125, 1] += 0.2
    public[125:, 0] += 0.2
    pair = forecast(public, np.array([0, 0]), 250)
    first = forecast(public[:, [0]], np.array([0]), 250)
    second = forecast(public[:, [1]], np.array([0]), 250)
    assert pair.score_low[0] >= max(first.score_low[0], second.score_low[0])
    assert pair.score_high[0] >= max(first.score_high[0], second.score_high[0])


# --- the method against normal theory -------------------------------------------------------


@pytest.mark.parametrize(("n", "m"), [(2_000, 2_000), (1_000, 3_000)])
def test_the_score_interval_has_the_width_of_two_independent_samples(n: int, m: int) -> None:
    """The private mean minus the public mean varies as sd² (1/n + 1/m): a 90% interval is
    2 z sd √(1/n + 1/m) wide. With 1,000 resamples a 5% quantile has a standard error of
    √(0.05 · 0.95 / 1000) / φ(z) ≈ 0.067 sd of the resampled scores, so the width about 3%
    of itself: 10% is more than three standard errors for one seed, and the mean of five
    seeds (standard error ≈ 1.3%) within 4%. The seeds are fixed: the test cannot flake."""
    ratios = []
    for seed in range(5):
        public = np.random.default_rng([seed, 12]).normal(0.5, 0.1, size=(n, 1))
        f = forecast(public, np.array([0]), m, seed=seed)
        theory = 2 * Z95 * public.std() * math.sqrt(1 / n + 1 / m)
        ratios.append(float(f.score_high[0] - f.score_low[0]) / theory)
    assert all(r == pytest.approx(1, abs=0.10) for r in ratios), ratios
    assert np.mean(ratios) == pytest.approx(1, abs=0.04), ratios


def test_a_one_level_bootstrap_is_root_two_too_narrow_when_the_boards_are_as_large() -> None:
    """The one-level bootstrap takes the public sample for the truth and draws the private
    board from it alone (the same arithmetic, `resample`, on boards drawn that way): its
    width is 2 z sd √(1/m), the forecast's √2 times that when m = n. Tolerance as in the
    test above, over five seeds."""
    n = m = 2_000
    ratios = []
    for seed in range(5):
        public = np.random.default_rng([seed, 13]).normal(0.5, 0.1, size=(n, 1))
        two = forecast(public, np.array([0]), m, seed=seed)
        rng = np.random.default_rng([seed, 14])
        one_level = [rng.multinomial(m, np.full(n, 1 / n), size=1_000)]
        one = summarise(
            resample(public, np.ones(n), np.array([0]), 1, one_level),
            level=0.9,
            seed=seed,
            groups=0,
        )
        assert float(one.score_high[0] - one.score_low[0]) == pytest.approx(
            2 * Z95 * public.std() / math.sqrt(m), rel=0.10
        )
        ratios.append(
            float(two.score_high[0] - two.score_low[0])
            / float(one.score_high[0] - one.score_low[0])
        )
    assert all(r == pytest.approx(math.sqrt(2), rel=0.10) for r in ratios), ratios
    assert np.mean(ratios) == pytest.approx(math.sqrt(2), rel=0.04), ratios


def test_a_user_is_on_a_private_board_as_often_as_two_levels_of_draws_say() -> None:
    """A user's count on a board: T ~ Binomial(n, 1/n) in the truth, then Binomial(m, T/n)
    on the board; its mean is m/n and its variance E[m T/n (1 - T/n)] + (m/n)² Var T
    = (m/n)(1 - (2 - 1/n)/n) + (m/n)² (1 - 1/n), about twice a one-level bootstrap's
    (m/n)(1 - 1/n) when m = n. 4,000 boards of 50 users: 200,000 counts, the variance
    within about 1% (3% allowed)."""
    n, m = 50, 50
    counts = np.concatenate(list(boards(n, m, resamples=4_000, chunk=1_000, seed=3)))
    assert counts.shape == (4_000, n)
    assert (counts.sum(axis=1) == m).all()
    variance = (m / n) * (1 - (2 - 1 / n) / n) + (m / n) ** 2 * (1 - 1 / n)
    assert counts.mean() == m / n  # every board has exactly m draws
    assert counts.var() == pytest.approx(variance, rel=0.03)
    assert counts.var() / ((m / n) * (1 - 1 / n)) == pytest.approx(2, rel=0.04)


# --- the arithmetic against a slow reference ------------------------------------------------


def reference(
    public: list[list[float]], teams: list[int], private_users: int, resamples: int, seed: int
) -> tuple[list[list[int]], dict[str, list[float]]]:
    """The two-level bootstrap one resample and one user at a time: draw n indices of public
    users with replacement (the truth), then `private_users` indices into the truth (the
    private board); each column's mean over the board's users, each team's best column, the
    teams' ranks (higher first, an equal score to the lower index). Returns each resample's
    private board as the list of its users, and the intervals. Scores: the value at place
    ⌊(R - 1) q⌋ (lower) or ⌈(R - 1) q⌉ (higher) of the sorted resamples, q as `forecast`
    computes it. Ranks: of every pair of places a ≤ b that holds the median and at least
    ⌈0.9 R⌉ resampled ranks, the narrowest, then the best placed."""
    rng = np.random.default_rng(seed)
    n, count = len(public), max(teams) + 1
    drawn, scores, ranks = [], [], []
    for _ in range(resamples):
        truth = [int(rng.integers(0, n)) for _ in range(n)]
        users = [truth[int(rng.integers(0, n))] for _ in range(private_users)]
        means = [sum(public[u][c] for u in users) / private_users for c in range(len(public[0]))]
        best = [max(means[c] for c in range(len(teams)) if teams[c] == t) for t in range(count)]
        order = sorted(range(count), key=lambda t: (-best[t], t))
        ranks.append([order.index(t) + 1 for t in range(count)])
        scores.append(best)
        drawn.append(users)
    tail = (1 - 0.9) / 2

    def at(rows: list[list[float]] | list[list[int]], t: int, q: float, up: bool) -> float:
        place = (resamples - 1) * q
        values = sorted(row[t] for row in rows)
        return values[math.ceil(place) if up else math.floor(place)]

    median = [at(ranks, t, 0.5, False) for t in range(count)]
    need = math.ceil(round(0.9 * resamples, 9))
    runs = []
    for t in range(count):
        held = [
            (b - a, a, b)
            for a in range(1, count + 1)
            for b in range(a, count + 1)
            if a <= median[t] <= b and sum(a <= row[t] <= b for row in ranks) >= need
        ]
        runs.append(min(held)[1:])
    out = {
        "rank_low": [a for a, _ in runs],
        "rank_high": [b for _, b in runs],
        "rank_median": median,
        "rank_mass": [
            sum(a <= row[t] <= b for row in ranks) / resamples for t, (a, b) in enumerate(runs)
        ],
        "score_low": [at(scores, t, tail, False) for t in range(count)],
        "score_high": [at(scores, t, 1 - tail, True) for t in range(count)],
    }
    return drawn, out


@settings(max_examples=80, deadline=None)
@given(
    st.integers(1, 12),
    st.lists(st.integers(1, 3), min_size=1, max_size=5),
    st.integers(1, 15),
    st.integers(1, 40),
    st.integers(0, 2**32 - 1),
    st.data(),
)
def test_the_fast_arithmetic_gives_the_references_intervals_on_the_same_boards(
    users: int,
    per_team: list[int],
    private_users: int,
    resamples: int,
    seed: int,
    data: st.DataObject,
) -> None:
    """The draws are injected, not replayed: `forecast` draws its boards in chunks as counts
    (a bincount, then a multinomial), a stream no per-user loop can reproduce draw for draw.
    So the reference draws its own boards user by user, and `resample` and `summarise`, the
    fast path's arithmetic, are handed those boards as counts: the intervals must be equal,
    exactly. Scores are multiples of 1/8, so that every sum is exact in either order and
    ties between columns (and the index rule that breaks them) are frequent. That the fast
    path's own boards have the law of these two levels of draws is the test above."""
    teams = [t for t, k in enumerate(per_team) for _ in range(k)]
    cells = st.integers(0, 8).map(lambda k: k / 8)
    row = st.lists(cells, min_size=len(teams), max_size=len(teams))
    public = data.draw(st.lists(row, min_size=users, max_size=users))
    drawn, expected = reference(public, teams, private_users, resamples, seed)
    counts = np.array([np.bincount(u, minlength=users) for u in drawn])
    chunks = [counts[: resamples // 2], counts[resamples // 2 :]]  # chunks change nothing
    scores = resample(np.array(public), np.ones(users), np.array(teams), len(per_team), chunks)
    got = summarise(scores, level=0.9, seed=seed, groups=0)
    for name, values in expected.items():
        assert getattr(got, name).tolist() == values, name


# --- grouped users --------------------------------------------------------------------------


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_grouped_users_give_the_per_user_intervals_within_sampling_error(
    seed: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """3,000 users in 64 groups against the same users one by one. The groups estimate the
    spread with 63 degrees of freedom, a standard deviation within about 1/√126 ≈ 9%, so an
    end of a score interval about 4.5% of the width; with the resampling noise of both
    (≈ 3% each), 20% of the width is over three standard errors. Ranks: within one place."""
    public = board(3_000, [0.03, 0.02, 0.015, 0.01, 0.005, 0.0], seed=seed)
    teams = np.arange(6)
    per_user = forecast(public, teams, 3_000, seed=seed)
    monkeypatch.setattr(groups, "GROUPS", 64)
    grouped = forecast(public, teams, 3_000, seed=seed)
    assert (per_user.groups, grouped.groups) == (0, 64)
    width = per_user.score_high - per_user.score_low
    assert (abs(grouped.score_low - per_user.score_low) <= 0.2 * width).all()
    assert (abs(grouped.score_high - per_user.score_high) <= 0.2 * width).all()
    for name in ("rank_low", "rank_median", "rank_high"):
        assert (abs(getattr(grouped, name) - getattr(per_user, name)) <= 1).all(), name


def test_a_grouped_private_board_draws_its_share_of_groups(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """1,000 public users in 64 groups, a private board of 500: round(500 · 64 / 1000) = 32
    groups a board, so the score interval is about as wide as n = 1,000 and m = 500 say."""
    monkeypatch.setattr(groups, "GROUPS", 64)
    public = np.random.default_rng(15).normal(0.5, 0.1, size=(1_000, 1))
    f = forecast(public, np.array([0]), 500)
    assert f.groups == 64
    theory = 2 * Z95 * public.std() * math.sqrt(1 / 1_000 + 1 / 500)
    assert float(f.score_high[0] - f.score_low[0]) == pytest.approx(theory, rel=0.25)


def test_users_are_dealt_into_groups_of_equal_size() -> None:
    labels = groups.deal(1_003, 10, seed=0)
    sizes = np.bincount(labels, minlength=10)
    assert sorted(sizes.tolist()) == [100] * 7 + [101] * 3
    assert not np.array_equal(labels, np.arange(1_003) % 10)  # dealt at random


def test_group_sums_are_the_groups_column_sums_whatever_the_chunk(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    rng = np.random.default_rng(16)
    public, labels = rng.random((500, 3)), rng.integers(0, 7, size=500)
    expected = np.array([public[labels == g].sum(axis=0) for g in range(7)])
    monkeypatch.setattr(groups, "CHUNK_CELLS", 30)  # 10 users a chunk
    np.testing.assert_allclose(groups.group_sums(public, labels, 7), expected, rtol=1e-12)


# --- arguments ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("public", "teams", "private_users", "options", "message"),
    [
        (np.zeros(3), [0], 5, {}, "public has 1 dimensions; expected users × columns"),
        (np.array([["a"]]), [0], 5, {}, "public holds <U1; expected real numbers"),
        (np.zeros((2, 1), complex), [0], 5, {}, "public holds complex128; expected real numbers"),
        (np.zeros((2, 1), bool), [0], 5, {}, "public holds bool; expected real numbers"),
        (
            np.zeros((2, 2)),
            [0, 0, 1],
            5,
            {},
            "teams has shape (3,); expected one team index a column (2,)",
        ),
        (
            np.zeros((2, 2)),
            [[0, 1]],
            5,
            {},
            "teams has shape (1, 2); expected one team index a column (2,)",
        ),
        (np.zeros((2, 1)), [0.0], 5, {}, "teams holds float64; expected integer team indices"),
        (np.zeros((2, 2)), [0, -1], 5, {}, "teams has index -1; expected indices 0..T-1"),
        (
            np.zeros((2, 2)),
            [0, 2],
            5,
            {},
            "team 1 has no column; expected every team 0..T-1 to have one",
        ),
        (np.zeros((2, 1)), [0], True, {}, "private_users = True; expected an integer"),
        (np.zeros((2, 1)), [0], 5.0, {}, "private_users = 5.0; expected an integer"),
        (np.zeros((2, 1)), [0], 0, {}, "private_users = 0; expected at least 1"),
        (np.zeros((2, 1)), [0], 5, {"level": 1.0}, "level = 1.0; expected it in (0, 1)"),
        (np.zeros((2, 1)), [0], 5, {"level": 0}, "level = 0; expected it in (0, 1)"),
        (np.zeros((2, 1)), [0], 5, {"resamples": 0}, "resamples = 0; expected at least 1"),
    ],
)
def test_a_wrong_argument_is_a_value_error_that_says_what_was_expected(
    public: np.ndarray,
    teams: list[int],
    private_users: int,
    options: dict[str, float],
    message: str,
) -> None:
    with pytest.raises(ValueError) as error:
        forecast(public, np.array(teams), private_users, **options)
    assert str(error.value) == message


def test_no_public_user_is_the_forecast_that_knows_nothing() -> None:
    f = forecast(np.zeros((0, 4)), np.array([0, 1, 1, 2]), 100, seed=3)
    assert f.rank_low.tolist() == [1, 1, 1]
    assert f.rank_high.tolist() == [3, 3, 3]
    assert f.rank_median.tolist() == [(3 + 1) // 2] * 3
    assert f.rank_mass.tolist() == [1.0] * 3
    assert np.isnan(f.score_low).all() and np.isnan(f.score_high).all()
    assert (f.level, f.resamples, f.seed, f.groups) == (0.9, 1_000, 3, 0)


def test_no_column_is_a_forecast_of_no_team() -> None:
    f = forecast(np.zeros((5, 0)), np.array([], dtype=np.int64), 100)
    assert all(x.shape == (0,) for x in fields(f))


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf])
@pytest.mark.parametrize("count", [4_096, 8])
def test_a_score_that_is_not_a_finite_number_is_a_value_error(
    bad: float, count: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Per user, and in groups (8 groups for 20 users): the group's sum is not finite."""
    monkeypatch.setattr(groups, "GROUPS", count)
    public = np.full((20, 2), 0.5)
    public[13, 1] = bad
    with pytest.raises(ValueError, match=r"^public has a score that is not a finite number$"):
        forecast(public, np.array([0, 1]), 20)


# --- the coverage benchmark ------------------------------------------------------------------


def trust_forecast() -> ModuleType:
    """bench/trust_forecast.py, which imports its neighbours (bench/report.py) as top-level
    modules."""
    if str(ROOT / "bench") not in sys.path:
        sys.path.insert(0, str(ROOT / "bench"))
    return importlib.import_module("trust_forecast")


def test_the_coverage_benchmark_runs_its_quick_size_and_writes_its_section(
    tmp_path: Path,
) -> None:
    """The bench's own core on its --quick competitions, so that the script cannot rot: every
    team is covered, or realised below or above its interval, and the section replaces
    itself in TRUST.md. No figure of coverage is asserted: that is the benchmark's report."""
    bench = trust_forecast()
    outcomes = bench.run(bench.QUICK)
    assert [o.setting for o in outcomes] == bench.QUICK
    for o in outcomes:
        assert o.rank_covered + o.below + o.above == o.setting.teams
        assert 0 <= o.score_covered <= o.setting.teams
        assert 0 <= o.open_covered <= o.open_teams <= o.setting.teams
        assert o.setting.teams <= o.submissions <= 3 * o.setting.teams
        assert o.groups == 0  # at most 1,000 public users
        assert 0.9 * o.setting.teams <= o.expected <= o.setting.teams
    lines = bench.section(outcomes, wall=1.0, argv=["--quick"])
    assert lines[0] == bench.MARKERS[0] and lines[-1] == bench.MARKERS[1]
    assert "`.venv/bin/python bench/trust_forecast.py --quick`" in "\n".join(lines)
    trust = tmp_path / "TRUST.md"
    trust.write_text("# Trust\n\nabove\n", encoding="utf-8")
    bench.put_section(trust, lines)
    bench.put_section(trust, lines)
    text = trust.read_text(encoding="utf-8")
    assert text.startswith("# Trust\n\nabove\n") and text.count(bench.MARKERS[0]) == 1


def test_a_group_without_users_sums_to_zero() -> None:
    values = np.arange(12.0).reshape(6, 2)
    sums = groups.group_sums(values, np.array([0, 2, 2, 4, 0, 4]), 6)
    assert sums.tolist() == [[8, 10], [0, 0], [6, 8], [0, 0], [16, 18], [0, 0]]


def test_the_scale_benchmark_runs_its_quick_size(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """bench/trust_scale.py --quick, in-process so that it cannot rot: its three sizes and the
    extrapolation are printed, and nothing is written. No time is asserted."""
    if str(ROOT / "bench") not in sys.path:
        sys.path.insert(0, str(ROOT / "bench"))
    bench = importlib.import_module("trust_scale")
    monkeypatch.setattr(sys, "argv", ["trust_scale.py", "--quick"])
    before = (ROOT / "bench" / "TRUST.md").read_text(encoding="utf-8")
    bench.main()
    printed = capsys.readouterr().out
    assert [f"| {t:,} | 10,000 |" in printed for t in bench.TEAMS] == [True] * 3
    assert "Extrapolated to 3,000 teams" in printed
    assert (ROOT / "bench" / "TRUST.md").read_text(encoding="utf-8") == before
