"""Bootstrap intervals and permutation tests against slow, obviously correct references."""

from __future__ import annotations

import numpy as np
import pytest

from scorer.leaderboard import confidence
from scorer.leaderboard.confidence import analyse, bootstrap_means, permutation_p


def reference_means(values: np.ndarray, resamples: int, seed: int) -> np.ndarray:
    """One resample at a time: draw n user indices with replacement, average each column."""
    rng = np.random.default_rng([seed, 0])
    n = values.shape[0]
    return np.array([values[rng.integers(0, n, size=n)].mean(axis=0) for _ in range(resamples)])


def reference_p(values: np.ndarray, resamples: int, seed: int) -> np.ndarray:
    """One permutation at a time: flip each user's difference with probability 1/2."""
    rng = np.random.default_rng([seed, 1])
    n, teams = values.shape
    diffs = values[:, :-1] - values[:, 1:]
    observed = np.abs(diffs.mean(axis=0))
    reached = np.zeros(teams - 1)
    for _ in range(resamples):
        signs = rng.integers(0, 2, size=(n,)) * 2 - 1
        reached += np.abs((signs[:, None] * diffs).mean(axis=0)) >= observed - 1e-12
    return (reached + 1) / (resamples + 1)


@pytest.fixture()
def values() -> np.ndarray:
    rng = np.random.default_rng(42)
    base = rng.random(300)
    return np.column_stack([base + 0.2, base + 0.01 * rng.standard_normal(300), base, base])


def test_bootstrap_matches_the_reference(values: np.ndarray) -> None:
    fast = bootstrap_means(values, resamples=200, seed=3)
    np.testing.assert_allclose(fast, reference_means(values, 200, 3), rtol=0, atol=1e-12)


def test_permutation_matches_the_reference(values: np.ndarray) -> None:
    np.testing.assert_array_equal(
        permutation_p(values, resamples=200, seed=3), reference_p(values, 200, 3)
    )


def test_chunking_changes_nothing(values: np.ndarray, monkeypatch: pytest.MonkeyPatch) -> None:
    whole = analyse(values, resamples=100, seed=1)
    monkeypatch.setattr(confidence, "CHUNK_CELLS", 7 * values.shape[0])  # 7 resamples a chunk
    parts = analyse(values, resamples=100, seed=1)
    np.testing.assert_allclose(parts.low, whole.low, rtol=0, atol=1e-12)
    np.testing.assert_allclose(parts.high, whole.high, rtol=0, atol=1e-12)
    np.testing.assert_array_equal(parts.p_next, whole.p_next)


def test_identical_teams_are_a_tie_with_p_one(values: np.ndarray) -> None:
    found = analyse(values)
    assert found.p_next[2] == 1.0 and found.tie_next[2]
    assert found.low[2] == found.low[3] and found.high[2] == found.high[3]


def test_a_clear_gap_is_not_a_tie(values: np.ndarray) -> None:
    found = analyse(values, resamples=500)
    assert found.p_next[0] == 1 / 501
    assert not found.tie_next[0]


def test_noise_sized_gap_is_a_tie(values: np.ndarray) -> None:
    found = analyse(values)
    assert values[:, 1].mean() != values[:, 2].mean()
    assert found.tie_next[1]


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
    assert one.p_next.size == 0 and one.low[0] == one.high[0] == 1.0
    empty = analyse(np.empty((0, 2)))
    assert np.isnan(empty.low).all() and empty.p_next.tolist() == [1.0]
    with pytest.raises(ValueError, match="resamples"):
        analyse(np.ones((3, 2)), resamples=0)
    with pytest.raises(ValueError, match="dimensions"):
        analyse(np.ones(3))
    with pytest.raises(ValueError, match="level"):
        analyse(np.ones((3, 2)), level=1.5)
