"""Users dealt into groups, for bootstraps whose cost must not grow with the users.

Users are iid draws from the population, so the groups of a random deal are iid too: a
resample of the groups (a mean being Σ count·sum / Σ count·size) has the variance of a
resample of the users, with GROUPS - 1 degrees of freedom left to estimate it (about 1% on a
standard deviation at 4,096 groups, less than the noise of 1,000 resamples' percentiles). The
intervals of a board (`confidence`) and the forecast (`forecast`) resample groups beyond
GROUPS users, at a cost of users x teams once, then resamples x GROUPS x teams."""

from __future__ import annotations

import numpy as np

#: With more users than this, groups of users are resampled instead of users.
GROUPS = 4_096

#: Cells (8 bytes each) of one chunk of users held at once: bounds memory, not results.
CHUNK_CELLS = 4_000_000


def deal(users: int, groups: int, *, seed: int) -> np.ndarray:
    """Each user's group, 0..groups-1, dealt at random (by the seed and the number of users
    alone): every group has users // groups or one more users."""
    rng = np.random.default_rng([seed, 2])
    return rng.permutation(np.arange(users) % groups)


def group_sums(values: np.ndarray, labels: np.ndarray, groups: int) -> np.ndarray:
    """Each group's sum of each column (groups x columns): the users sorted by group once,
    then a run of whole groups at a time gathered (about CHUNK_CELLS cells) and summed by
    group. Long runs of rows summed at once, not thousands of runs of three."""
    columns = values.shape[1]
    order = np.argsort(labels, kind="stable")
    bounds = np.r_[0, np.cumsum(np.bincount(labels, minlength=groups))]
    largest = int(np.diff(bounds).max(initial=1))
    step = max(1, CHUNK_CELLS // max(columns * largest, 1))  # whole groups a chunk
    sums = np.zeros((groups, columns))
    for first in range(0, groups, step):  # chunks of groups, the work within each in numpy
        last = min(first + step, groups)
        rows = values[order[bounds[first] : bounds[last]]]
        kept = np.diff(bounds[first : last + 1]) > 0  # an empty group sums to 0
        starts = bounds[first:last][kept] - bounds[first]
        if starts.size:
            found = np.add.reduceat(rows, starts, axis=0, dtype=np.float64)
            sums[np.arange(first, last)[kept]] = found
    return sums


def grouped(values: np.ndarray, *, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """The units a bootstrap resamples, as sums (units x columns) and sizes (units): the
    users themselves up to GROUPS of them, else GROUPS groups of a random deal."""
    users = values.shape[0]
    if users <= GROUPS:
        return values.astype(np.float64, copy=False), np.ones(users)
    labels = deal(users, GROUPS, seed=seed)
    sizes = np.bincount(labels, minlength=GROUPS).astype(np.float64)
    return group_sums(values, labels, GROUPS), sizes
