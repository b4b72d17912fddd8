"""Bootstrap intervals, paired t-tests and tiers against slow, obviously correct references
(and scipy's, which the package does not depend on)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from scipy import stats

from scorer.board import BoardRules, Correction
from scorer.leaderboard import confidence, groups
from scorer.leaderboard.confidence import adjusted, analyse, bootstrap_means, paired_p, tiers


def reference_means(values: np.ndarray, resamples: int, seed: int) -> np.ndarray:
    """One resample at a time: draw n user indices with replacement, average each column."""
    rng = np.random.default_rng([seed, 0])
    n = values.shape[0]
    return np.array([values[rng.integers(0, n, size=n)].mean(axis=0) for _ in range(resamples)])


def reference_holm(p: list[float]) -> list[float]:
    """Holm's step-down, from its definition: the j-th smallest p times (m - j + 1), made
    monotone, at most 1."""
    m = len(p)
    order = sorted(range(m), key=lambda i: p[i])
    out, running = [0.0] * m, 0.0
    for j, i in enumerate(order):
        running = max(running, min(1.0, (m - j) * p[i]))
        out[i] = running
    return out


@pytest.fixture()
def values() -> np.ndarray:
    rng = np.random.default_rng(42)
    base = rng.random(300)
    return np.column_stack([base + 0.2, base + 0.01 * rng.standard_normal(300), base, base])


def test_bootstrap_matches_the_reference(values: np.ndarray) -> None:
    fast = bootstrap_means(values, resamples=200, seed=3)
    np.testing.assert_allclose(fast, reference_means(values, 200, 3), rtol=0, atol=1e-12)


def test_the_paired_test_is_student_s_as_scipy_computes_it(values: np.ndarray) -> None:
    ours = paired_p(values[:, :3])
    theirs = [stats.ttest_rel(values[:, i], values[:, i + 1]).pvalue for i in range(2)]
    np.testing.assert_allclose(ours, theirs, rtol=1e-9)


@given(
    st.floats(-40, 40, allow_nan=False),
    st.integers(1, 10**7),
)
def test_student_p_is_scipy_s_t_distribution(t: float, df: int) -> None:
    expected = 2 * stats.t.sf(abs(t), df)
    assert confidence.student_p(t, df) == pytest.approx(expected, rel=1e-8, abs=1e-300)


@given(st.lists(st.floats(0, 1), min_size=0, max_size=30))
def test_holm_is_its_definition_and_bh_is_scipy_s(p: list[float]) -> None:
    found = adjusted(np.array(p), Correction.HOLM)
    np.testing.assert_allclose(found, reference_holm(p), rtol=1e-12, atol=0)
    if p:
        bh = stats.false_discovery_control(np.array(p), method="bh")
        np.testing.assert_allclose(adjusted(np.array(p), Correction.BH), bh, rtol=1e-12)
        assert (adjusted(np.array(p), Correction.BH) <= found + 1e-15).all()  # BH splits more


def test_tiers_split_below_gaps_both_significant_and_wide_enough() -> None:
    scores = np.array([0.50, 0.40, 0.3995, 0.30, 0.29])
    p = np.array([0.001, 0.0001, 0.01, 0.2])
    rules = BoardRules(alpha=0.05, tie_margin=0.001)
    # 0.1 and 0.1 apart, significant: new tiers; 0.0005 apart: one tier whatever p says;
    # 0.01 apart but p = 0.2: one tier
    assert tiers(scores, p, rules).tolist() == [1, 2, 2, 3, 3]
    assert tiers(scores, p, BoardRules(tie_margin=0)).tolist() == [1, 2, 3, 4, 4]
    assert tiers(scores, p, BoardRules(alpha=0.0005, tie_margin=0)).tolist() == [1, 1, 2, 2, 2]
    assert tiers(scores[:1], p[:0], rules).tolist() == [1]
    assert tiers(scores[:0], p[:0], rules).tolist() == []


def test_many_small_gaps_are_one_tier_after_the_correction() -> None:
    """At 1,000 users 15 teams a hair apart: uncorrected tests split some of them by chance;
    Holm's correction keeps them one tier (a board read as noise is noise)."""
    rng = np.random.default_rng(1)
    base = rng.random((1000, 1))
    values = base + 0.05 * rng.standard_normal((1000, 15)) + np.linspace(0.002, 0, 15)
    order = np.argsort(-values.mean(axis=0), kind="stable")
    found = analyse(values[:, order], resamples=50, rules=BoardRules(tie_margin=0))
    assert found.tier.tolist() == [1] * 15
    assert (found.p_adjusted >= found.p_next).all()


def test_a_big_board_splits_clear_gaps_and_a_margin_merges_tiny_ones() -> None:
    """At 100,000 users a gap of 0.0005 is significant; under a 0.001 margin it is one tier."""
    rng = np.random.default_rng(2)
    base = rng.random((100_000, 1))
    values = base + np.array([0.0105, 0.01, 0.0]) + 0.01 * rng.standard_normal((100_000, 3))
    strict = analyse(values, resamples=20, rules=BoardRules(tie_margin=0))
    assert (strict.p_adjusted < 1e-6).all() and strict.tier.tolist() == [1, 2, 3]
    floored = analyse(values, resamples=20, rules=BoardRules(tie_margin=0.001))
    assert floored.tier.tolist() == [1, 1, 2]


def test_chunking_changes_nothing(values: np.ndarray, monkeypatch: pytest.MonkeyPatch) -> None:
    whole = analyse(values, resamples=100, seed=1)
    monkeypatch.setattr(confidence, "CHUNK_CELLS", 7 * values.shape[0])  # 7 resamples a chunk
    parts = analyse(values, resamples=100, seed=1)
    np.testing.assert_allclose(parts.low, whole.low, rtol=0, atol=1e-12)
    np.testing.assert_allclose(parts.high, whole.high, rtol=0, atol=1e-12)
    np.testing.assert_array_equal(parts.p_next, whole.p_next)


def test_identical_teams_are_one_tier_with_p_one(values: np.ndarray) -> None:
    found = analyse(values)
    assert found.p_next[2] == 1.0 and found.tier[2] == found.tier[3]
    assert found.low[2] == found.low[3] and found.high[2] == found.high[3]


def test_a_clear_gap_is_a_new_tier(values: np.ndarray) -> None:
    found = analyse(values, resamples=50)
    assert found.p_next[0] < 1e-100 and found.tier[:2].tolist() == [1, 2]


def test_a_noise_sized_gap_is_one_tier(values: np.ndarray) -> None:
    found = analyse(values, resamples=50, rules=BoardRules(tie_margin=0))
    assert values[:, 1].mean() != values[:, 2].mean()
    assert found.p_next[1] > 0.05 and found.tier[1] == found.tier[2]


def test_intervals_hold_the_mean_and_narrow_with_more_users() -> None:
    rng = np.random.default_rng(0)
    small, large = rng.random((100, 1)), rng.random((10_000, 1))
    found = [analyse(d, resamples=200) for d in (small, large)]
    for data, result in zip((small, large), found, strict=True):
        assert result.low[0] < data.mean() < result.high[0]
    width = [float(r.high[0] - r.low[0]) for r in found]
    assert width[1] < width[0] / 5  # about sqrt(100) narrower


def test_seed_decides_everything(values: np.ndarray) -> None:
    a, b, c = (analyse(values, seed=s) for s in (5, 5, 6))
    np.testing.assert_array_equal(a.low, b.low)
    np.testing.assert_array_equal(a.p_next, b.p_next)
    assert not np.array_equal(a.low, c.low)


def test_a_teams_interval_does_not_depend_on_the_other_teams(values: np.ndarray) -> None:
    alone = analyse(values[:, [1]])
    together = analyse(values)
    assert alone.low[0] == pytest.approx(together.low[1], abs=1e-12)
    assert alone.high[0] == pytest.approx(together.high[1], abs=1e-12)


def test_edges_and_arguments() -> None:
    one = analyse(np.ones((10, 1)))
    assert one.p_next.size == 0 and one.low[0] == one.high[0] == 1.0 and one.tier.tolist() == [1]
    empty = analyse(np.empty((0, 2)))
    assert np.isnan(empty.low).all() and empty.p_next.tolist() == [1.0]
    assert empty.tier.tolist() == [1, 1]
    assert paired_p(np.array([[1.0, 0.5], [0.8, 0.3]])).tolist() == [0.0]  # always 0.5 apart
    with pytest.raises(ValueError, match="resamples"):
        analyse(np.ones((3, 2)), resamples=0)
    with pytest.raises(ValueError, match="dimensions"):
        analyse(np.ones(3))
    with pytest.raises(ValueError, match="level"):
        analyse(np.ones((3, 2)), level=1.5)


def test_beyond_groups_users_the_bootstrap_draws_groups_with_the_users_spread(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Groups of a random deal keep each team's mean and the spread of its resampled means:
    with 64 groups of 100 users, the interval's width is the per-user bootstrap's within the
    noise of 64 groups (a sd estimated on 63 degrees of freedom: about 9%, 2 sd allowed)."""
    rng = np.random.default_rng(7)
    hit = rng.random((6_400, 1)) < 0.4
    shift = np.array([0.0, 0.05, 0.1])
    values = np.clip(rng.random((6_400, 1)) + shift, 0, 1) * hit
    per_user = bootstrap_means(values, resamples=2_000, seed=5)
    monkeypatch.setattr(groups, "GROUPS", 64)
    by_group = bootstrap_means(values, resamples=2_000, seed=5)
    assert by_group.shape == per_user.shape == (2_000, 3)
    assert not np.array_equal(by_group, per_user)  # groups were drawn, not users
    np.testing.assert_allclose(by_group.mean(axis=0), values.mean(axis=0), atol=3e-4)
    ratio = by_group.std(axis=0) / per_user.std(axis=0)
    assert ((ratio > 0.82) & (ratio < 1.18)).all(), ratio
    counts = np.bincount(groups.deal(6_400, 64, seed=5))
    assert counts.tolist() == [100] * 64
    assert not np.array_equal(groups.deal(6_400, 64, seed=5), groups.deal(6_400, 64, seed=6))
