"""Do the 90% intervals of private rank and score that `scorer.leaderboard.forecast` publishes
before the reveal hold the realised private board 90% of the time? (issue 34). Writes its
section of bench/TRUST.md.

    .venv/bin/python bench/trust_forecast.py            # the full run: minutes on 2 cores
    .venv/bin/python bench/trust_forecast.py --quick    # a smoke size, seconds; prints only

A simulated competition (`Setting`): `users` users, dealt at random half public, half
private; each has 1-3 relevant items among a pool of 100, and a submission lists 20 items a
user, scored by NDCG@20 with binary relevance (many users score 0). A model of quality q
ranks a user's items by q · relevant + N(0, 1) noise, as in bench/trust_ladder.py; here the
list is not built but drawn in law: a relevant item with key k has Binomial(100 - r, P(N(0,
1) > k)) irrelevant items above it, plus the other relevant items with a larger key. A
user's difficulty d ~ N(0, 0.5), shared by every submission, makes the per-user scores of
different teams correlated, as real ones are: q = the submission's skill - d.

Teams: `teams` of them, skill ~ U(0.5, 2.5) (among 30-300 teams, neighbours are close and
the ends far apart); each makes 1-3 submissions of skill = its own + N(0, 0.05). None
selects, so the real board's rule applies (scorer/leaderboard/boards.py `_private_pick`): the
team's MAX_SELECTED (2) best public submissions count, and its private score is the better
private score of the two. The forecast is given exactly those columns, since it takes the
best of a team's columns in each resample, as the board takes the best of the counted ones;
the team indices are the public board's order (best public score first). The realised
private rank: teams by that private score, higher first, an equal score to the lower index.

Coverage: the share of teams whose realised private rank lies in [rank_low, rank_high], and
whose realised private score lies in [score_low, score_high]; "open" counts only the teams
whose rank interval is not a single place (a team alone at the top of a board is covered by
construction).
"""

from __future__ import annotations

import argparse
import platform
import shlex
import subprocess
import sys
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
from report import put_section

from scorer.leaderboard.forecast import LEVEL, RESAMPLES, forecast
from scorer.leaderboard.manifest import MAX_SELECTED

HERE = Path(__file__).resolve().parent
TRUST = HERE / "TRUST.md"
MARKERS = ("<!-- trust_forecast:start -->", "<!-- trust_forecast:end -->")

POOL, DEPTH, RELEVANT = 100, 20, 3
DISCOUNT = 1 / np.log2(np.arange(2, DEPTH + 2))
IDEAL = np.cumsum(DISCOUNT)  # the ideal DCG of 1, 2, 3 … relevant items


@dataclass(frozen=True)
class Setting:
    users: int  # in all, public and private
    teams: int
    seed: int


#: 24 competitions, four of each size from 1,000 to 100,000 users; teams log-uniform 30-300.
SIZES = (1_000, 3_000, 10_000, 30_000, 60_000, 100_000)
FULL = [
    Setting(size, round(30 * 10 ** np.random.default_rng([size, i]).random()), 4 * k + i)
    for k, size in enumerate(SIZES)
    for i in range(4)
]
QUICK = [Setting(1_000, 30, 0), Setting(2_000, 40, 1)]


@dataclass(frozen=True)
class Outcome:
    """One competition's counts of teams covered."""

    setting: Setting
    submissions: int
    groups: int
    rank_covered: int
    score_covered: int
    open_teams: int  # teams whose rank interval holds more than one place
    open_covered: int
    below: int  # realised rank below the interval (worse than rank_high)
    above: int  # realised rank above it (better than rank_low)
    mean_width: float  # of the rank intervals, in places
    expected: float  # the sum over teams of rank_mass: the coverage the forecast expects


def sf(x: np.ndarray) -> np.ndarray:
    """P(N(0, 1) > x), by Abramowitz & Stegun 7.1.26 (absolute error < 1.5e-7): numpy has no
    erfc, and scipy is not a dependency of scorer."""
    z = np.abs(x) / np.sqrt(2)
    t = 1 / (1 + 0.3275911 * z)
    poly = t * (
        0.254829592 + t * (-0.284496736 + t * (1.421413741 + t * (-1.453152027 + t * 1.061405429)))
    )
    tail = 0.5 * poly * np.exp(-z * z)
    return np.where(x >= 0, tail, 1 - tail)


def ndcg(quality: np.ndarray, relevant: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Per-user NDCG@20 of one submission: users of quality `quality` and `relevant` (1-3)
    relevant items each, the list drawn in law (see the module's docstring)."""
    users = quality.shape[0]
    keys = quality[:, None] + rng.standard_normal((users, RELEVANT))
    real = np.arange(RELEVANT)[None, :] < relevant[:, None]
    above = rng.binomial(POOL - relevant[:, None], sf(keys))
    ahead = ((keys[:, None, :] > keys[:, :, None]) & real[:, None, :]).sum(axis=2)
    place = 1 + above + ahead
    gain = np.where(real & (place <= DEPTH), 1 / np.log2(place + 1), 0.0)
    scores: np.ndarray = gain.sum(axis=1) / IDEAL[relevant - 1]
    return scores


@dataclass(frozen=True)
class World:
    """One competition as the forecast and the reveal see it: the counted submissions'
    per-user public scores (users x columns), each column's team index (the public board's
    order), each team's realised private score, the private board's size."""

    public: np.ndarray
    teams: np.ndarray
    private: np.ndarray
    private_users: int
    submissions: int


def draw(setting: Setting) -> World:
    """One competition, drawn from its seed (see the module's docstring)."""
    rng = np.random.default_rng([setting.seed, 34])
    users, teams = setting.users, setting.teams
    relevant = rng.integers(1, RELEVANT + 1, size=users)
    difficulty = rng.normal(0, 0.5, size=users)
    public = rng.permutation(users) < users // 2  # the split, 50/50 by user
    skills = rng.uniform(0.5, 2.5, size=teams)
    made = rng.integers(1, 4, size=teams)
    # each team's counted submissions: (public mean, per-user public scores, private mean)
    counted: list[list[tuple[float, np.ndarray, float]]] = []
    for team in range(teams):
        runs = []
        for _ in range(made[team]):
            skill = skills[team] + rng.normal(0, 0.05)
            scores = ndcg(skill - difficulty, relevant, rng)
            mean = float(scores[public].mean())
            runs.append((mean, scores[public], float(scores[~public].mean())))
        runs.sort(key=lambda r: -r[0])  # best public first (a stable sort: earlier on ties)
        counted.append(runs[:MAX_SELECTED])
    order = sorted(range(teams), key=lambda t: -counted[t][0][0])  # the public board
    columns, index = [], []
    private = np.empty(teams)
    for place, team in enumerate(order):
        for run in counted[team]:
            columns.append(run[1])
            index.append(place)
        private[place] = max(run[2] for run in counted[team])
    return World(
        public=np.column_stack(columns),
        teams=np.array(index),
        private=private,
        private_users=int((~public).sum()),
        submissions=int(made.sum()),
    )


def realised(private: np.ndarray) -> np.ndarray:
    """Each team's private rank: higher score first, an equal score to the lower index."""
    placed = np.argsort(-private, kind="stable")
    rank = np.empty(private.shape[0], dtype=np.int64)
    rank[placed] = np.arange(1, private.shape[0] + 1)
    return rank


def measure(setting: Setting) -> Outcome:
    """One competition: draw it, publish the forecast from its public half, reveal."""
    world = draw(setting)
    f = forecast(world.public, world.teams, private_users=world.private_users)
    private, rank = world.private, realised(world.private)
    inside = (f.rank_low <= rank) & (rank <= f.rank_high)
    scored = (f.score_low <= private) & (private <= f.score_high)
    wide = f.rank_high > f.rank_low
    return Outcome(
        setting=setting,
        submissions=world.submissions,
        groups=f.groups,
        rank_covered=int(inside.sum()),
        score_covered=int(scored.sum()),
        open_teams=int(wide.sum()),
        open_covered=int((inside & wide).sum()),
        below=int((rank > f.rank_high).sum()),
        above=int((rank < f.rank_low).sum()),
        mean_width=float((f.rank_high - f.rank_low + 1).mean()),
        expected=float(f.rank_mass.sum()),
    )


def run(settings: list[Setting], log: bool = False) -> list[Outcome]:
    """Every competition's outcome, in order."""
    started, out = time.perf_counter(), []
    for setting in settings:
        out.append(measure(setting))
        if log:
            seconds = time.perf_counter() - started
            print(f"{setting}: {seconds:.0f} s", file=sys.stderr, flush=True)
    return out


def share(part: int, whole: int) -> str:
    return f"{part / whole:.1%}" if whole else "–"


def section(outcomes: list[Outcome], wall: float, argv: list[str]) -> list[str]:
    """The Markdown section of bench/TRUST.md, between its markers."""
    commit = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], cwd=HERE, capture_output=True, text=True
    ).stdout.strip()
    command = shlex.join([".venv/bin/python", "bench/trust_forecast.py", *argv])
    lines = [
        MARKERS[0],
        "## Forecast of private rank before the reveal: coverage of its 90% intervals",
        "",
        f"Regenerate with `{command}` from the repository root.",
        "",
        f"- date: {datetime.now(UTC):%Y-%m-%d %H:%M} UTC; code: commit {commit}; "
        f"{platform.machine()}, Python {platform.python_version()}, numpy {np.__version__}; "
        f"wall {wall:.0f} s",
        f"- forecast: level {LEVEL:.0%}, {RESAMPLES:,} resamples, its default seed; the "
        "competitions: see the docstring of bench/trust_forecast.py (NDCG@20 binary, 50/50 "
        f"split by user, skills U(0.5, 2.5), 1-3 submissions a team, the {MAX_SELECTED} best "
        "public ones counted)",
        "- open: teams whose rank interval holds more than one place; below / above: realised "
        "rank worse than rank_high / better than rank_low; expected: the mean of `rank_mass`, "
        "the share of its own resamples a rank interval holds (at least 90%, more where a few "
        "places share the resampled ranks: ranks are discrete)",
        "",
        "| users | teams | submissions | groups | rank covered | expected | open teams covered "
        "| below | above | mean width (places) | score covered |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for o in outcomes:
        t = o.setting.teams
        lines.append(
            f"| {o.setting.users:,} | {t} | {o.submissions} | {o.groups or '–'} "
            f"| {share(o.rank_covered, t)} | {o.expected / t:.1%} "
            f"| {share(o.open_covered, o.open_teams)} "
            f"({o.open_teams}) | {o.below} | {o.above} | {o.mean_width:.1f} "
            f"| {share(o.score_covered, t)} |"
        )
    lines += [
        "",
        "By size:",
        "",
        "| users | teams | rank covered | expected | open teams covered | score covered |",
        "|---:|---:|---:|---:|---:|---:|",
    ]
    for size in sorted({o.setting.users for o in outcomes}):
        these = [o for o in outcomes if o.setting.users == size]
        lines.append(total_row(f"{size:,}", these))
    lines.append(total_row("**all**", outcomes))
    total = sum(o.setting.teams for o in outcomes)
    covered = sum(o.rank_covered for o in outcomes)
    lines += [
        "",
        f"Overall rank coverage {share(covered, total)} of {total:,} teams in "
        f"{len(outcomes)} competitions (goal 88-95%).",
        MARKERS[1],
    ]
    return lines


def total_row(label: str, outcomes: list[Outcome]) -> str:
    teams = sum(o.setting.teams for o in outcomes)
    wide = sum(o.open_teams for o in outcomes)
    return (
        f"| {label} | {teams:,} | {share(sum(o.rank_covered for o in outcomes), teams)} "
        f"| {sum(o.expected for o in outcomes) / teams:.1%} "
        f"| {share(sum(o.open_covered for o in outcomes), wide)} ({wide:,}) "
        f"| {share(sum(o.score_covered for o in outcomes), teams)} |"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a smoke size, seconds; prints only")
    args = parser.parse_args()
    started = time.perf_counter()
    outcomes = run(QUICK if args.quick else FULL, log=True)
    lines = section(outcomes, time.perf_counter() - started, sys.argv[1:])
    print("\n".join(lines))
    if not args.quick:
        if not TRUST.exists():
            TRUST.write_text("# Benchmarks of trust (issue 34)\n", encoding="utf-8")
        put_section(TRUST, lines)
    return 0


if __name__ == "__main__":
    sys.exit(main())
