"""A deadline day of a Kaggle-sized competition as a queue, for bench/kaggle_scale.py: uploads
arriving hour by hour, `workers` judging them first come first served, each verdict taking
a service time drawn from those measured (an M/G/c queue, simulated event by event).

The arrival profile is an assumption, stated in `PROFILES`: Kaggle allows 5 uploads a team
a day, so H&M's 2,952 teams could send about 15,000 on the last day; how they spread over
its 24 hours is not published. `rush` puts half of them in the last four hours, as teams
keep their last uploads for their last models, and 18 % in the final hour.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass

import numpy as np

#: Uploads on the deadline day: 5 a team a day for about 3,000 teams (H&M had 2,952).
UPLOADS = 15_000

#: The goal: the 95th percentile of the time from an upload to its verdict, in seconds.
GOAL = 120.0

#: Each profile's share of the day's uploads in each UTC hour 0..23 (the deadline at 24:00).
PROFILES: dict[str, tuple[float, ...]] = {
    # the same rate all day: the floor, that no profile can beat
    "flat": (1 / 24,) * 24,
    # half in the first 20 hours; then 10 %, 10 %, 12 % and 18 % in the last four
    "rush": (0.5 / 20,) * 20 + (0.10, 0.10, 0.12, 0.18),
    # harsher: 30 % in the final hour, 10 % in each of the three before it
    "steep": (0.4 / 20,) * 20 + (0.10, 0.10, 0.10, 0.30),
}


@dataclass(frozen=True)
class Day:
    """A simulated day: each upload's arrival and time to verdict (seconds), and the queue."""

    arrivals: np.ndarray
    waits: np.ndarray
    responses: np.ndarray
    most_queued: int

    def p95(self, hour: int | None = None) -> float:
        """The 95th percentile of the time to verdict, of the day or of the uploads that
        arrived in `hour`."""
        chosen = self.responses
        if hour is not None:
            chosen = chosen[(self.arrivals >= 3600 * hour) & (self.arrivals < 3600 * (hour + 1))]
        return float(np.percentile(chosen, 95)) if chosen.size else 0.0


def arrivals(profile: tuple[float, ...], uploads: int, rng: np.random.Generator) -> np.ndarray:
    """Arrival times in seconds from 00:00, sorted: each hour's count Poisson with its share
    of `uploads` as mean, uniform within the hour."""
    counts = rng.poisson(np.asarray(profile) * uploads)
    hours = np.repeat(np.arange(len(profile)), counts)
    return np.sort((hours + rng.random(hours.size)) * 3600.0)


def simulate(when: np.ndarray, service: np.ndarray, workers: int, rng: np.random.Generator) -> Day:
    """First come first served on `workers` identical workers; each job's service time drawn
    (with replacement) from the measured `service`."""
    if workers < 1 or service.size == 0:
        raise ValueError(f"workers = {workers}, {service.size} service times; need 1 and 1")
    took = rng.choice(service, size=when.size)
    free = [0.0] * workers  # when each worker is next free, a heap
    waits = np.empty(when.size)
    pending: list[float] = []  # when each job is claimed, a heap: those after now are queued
    most = 0
    for i, (at, cost) in enumerate(zip(when.tolist(), took.tolist(), strict=True)):
        start = max(at, heapq.heappop(free))
        heapq.heappush(free, start + cost)
        waits[i] = start - at
        heapq.heappush(pending, start)
        while pending and pending[0] <= at:
            heapq.heappop(pending)
        most = max(most, len(pending))  # uploads accepted and not yet claimed at `at`
    return Day(when, waits, waits + took, most)


def day(
    profile: str, service: np.ndarray, workers: int, *, uploads: int = UPLOADS, seed: int = 0
) -> Day:
    """One deadline day of `profile`, the same arrivals for every `workers` and `service`."""
    rng = np.random.default_rng(seed)
    return simulate(arrivals(PROFILES[profile], uploads, rng), service, workers, rng)


def peak_hour(profile: str) -> int:
    shares = PROFILES[profile]
    return max(range(len(shares)), key=lambda h: (shares[h], h))


def meets(found: Day, profile: str) -> bool:
    """Whether the day's p95 and its busiest hour's are both within the goal."""
    return max(found.p95(), found.p95(peak_hour(profile))) <= GOAL


def fewest_workers(profile: str, service: np.ndarray, most: int = 4096) -> int | None:
    """The fewest workers that meet the goal (`meets`), or None up to `most`."""
    low, high = 1, most
    if not meets(day(profile, service, high), profile):
        return None
    while low < high:
        middle = (low + high) // 2
        if meets(day(profile, service, middle), profile):
            high = middle
        else:
            low = middle + 1
    return low


def headroom(profile: str, service: np.ndarray, workers: int) -> float:
    """The largest factor every verdict's time may be multiplied by with `workers` still
    meeting the goal, to 1 %: at least 1.0 when they meet it as they are; below 1.0, the
    verdicts must be 1 / it times faster."""

    def holds(factor: float) -> bool:
        return meets(day(profile, service * factor, workers), profile)

    low, high = (1.0, 2.0) if holds(1.0) else (0.5, 1.0)
    while holds(high):  # the bracket: `low` holds, `high` does not
        low, high = high, 2 * high
    while not holds(low):
        low, high = low / 2, low
    while high / low > 1.01:
        middle = (low * high) ** 0.5
        low, high = (middle, high) if holds(middle) else (low, middle)
    return low
