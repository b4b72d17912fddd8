"""Does the parameter-free Ladder stop Blum & Hardt's boosting attack on a ranked-list board,
and does it leave honest teams' final ranks alone? (issue 34). Writes its section of
bench/TRUST.md (`bench/report.py`'s `put_section`) and prints it.

    .venv/bin/python bench/trust_ladder.py            # the full run: a few minutes on 2 cores
    .venv/bin/python bench/trust_ladder.py --quick    # a smoke size, seconds; writes no file

A simulated competition: 8,000 users, half public and half private (the users are drawn
alike, so the first half is public); each has 1-3 hidden relevant items among a pool of
100; a submission lists 20 items per user, scored by NDCG@20 with binary relevance. Ten
seeds, run `--jobs` at a time.

The attack (Blum & Hardt 2015, §5, "boosting attack", adapted to ranked lists): submit k
lists of 20 random items per user; keep those the board says did well; combine them (per
user, rank the items by how many kept submissions listed them, ties at random; keeping none,
this is a random list) and measure the combination's exact public - private score: how far
the public board was fitted. What the attacker is shown decides what it keeps:
- plain: the exact public score; keep those above the mean of the k shown scores;
- rounded to 3 or 2 digits (`BoardRules.shown`): the same rule on the rounded scores;
- ladder (`climb`): keep a submission when its shown score rose (as in the authors'
  examples/attacks.jl); the first is the baseline.
The k of each row are prefixes of one sequence of 1,400 (or --quick's) random submissions.
The report gives the factor plain gap / Ladder gap at each k, and says at which k it reaches
issue 34's goal of 5 times and at which it does not.

The authors' own figure, for scale (their attack on binary labels, not ranked lists): the
CSV files that github.com/mrtzh/Ladder.jl says correspond to the paper's plots (csvs/
kaggleboosting-4000-400-5-{highacc,lowacc}.csv; the paper's PDF itself was not read) hold
n = 4,000 public examples, k = 10, 20, ..., 400 and 5 repeats. At k = 400 the reported loss
is 0.42745 on Kaggle's board and 0.48425 on the Ladder (highacc; examples/attacks.jl rounds
Kaggle's score to 5 digits), 0.45065 and 0.48780 (lowacc), against 0.5 for random labels:
gaps 0.0726 and 0.0158, 4.6 times, and 0.0494 and 0.0122, 4.0 times. Their k stops at 400;
ours has k = 400 at the same n = 4,000 public users, and goes on to 1,400: a stronger
attacker (a team with a few accounts over a long competition can submit that many).

Honest teams: 20 teams a seed of skill q ~ U(0.5, 2.5), each making 5-20 submissions. A
model ranks a user's items by q * relevant + N(0, 1) noise (fresh noise each submission).
Each board counts, on its private board, each team's best EXACT public submission (the
Ladder changes what is shown, never what counts), and ranks the honest teams by its private
score. Two kinds of team, each run through both boards:
- fixed submissions: the team submits q + N(0.05, 0.15) at each try, drawn in advance, the
  same submissions to both boards; what it is shown changes nothing it does;
- adaptive: the team tries q' = q + N(0.05, 0.15) and adopts q' when the board says the
  submission is its new best (plain: its exact public score beats its best; ladder: `climb`
  says so). Both boards see the same draws; only the adoptions differ.
For each pair of teams the Ladder's run puts in the other order, a paired z over the private
users of their plain-board picks says whether they were told apart at all.
"""

from __future__ import annotations

import argparse
import itertools
import os
import platform
import resource
import shlex
import statistics
import subprocess
import sys
import time
from collections.abc import Iterable
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
from report import put_section  # bench/report.py: this script's folder is on sys.path

from scorer.board import BoardRules
from scorer.leaderboard.ladder import climb

HERE = Path(__file__).resolve().parent
START, END = "<!-- ladder: written by bench/trust_ladder.py -->", "<!-- ladder end -->"
#: Issue 34's goal: the Ladder cuts the attack's public - private gap at least this many times.
GOAL = 5.0
PAPER = (
    "For scale, the authors' own attack on binary labels (the CSVs behind the paper's plots, "
    "github.com/mrtzh/Ladder.jl `csvs/kaggleboosting-4000-400-5-*.csv`: n = 4,000 public "
    "examples, k up to 400, 5 repeats): at k = 400 a gap of 0.0726 on Kaggle's 5-digit "
    "board against 0.0158 on the Ladder, 4.6× (0.0494 against 0.0122, 4.0×, in the file "
    "named lowacc). Their k stops at 400; this world has the same n = 4,000 public users."
)
DEPTH = 20
DISCOUNT = 1 / np.log2(np.arange(2, DEPTH + 2))
BOARDS = ("plain", "ladder", "rounded 3", "rounded 2")


@dataclass(frozen=True)
class Size:
    users: int
    pool: int
    ks: tuple[int, ...]
    seeds: int
    teams: int
    most: int  # submissions a team makes at most (at least 5, or --quick's 3)
    fewest: int


FULL = Size(
    users=8_000,
    pool=100,
    ks=(100, 300, 400, 700, 1000, 1400),
    seeds=10,
    teams=20,
    most=20,
    fewest=5,
)
QUICK = Size(users=1_000, pool=100, ks=(50, 100), seeds=2, teams=6, most=6, fewest=3)


class World:
    """One seed's users: who is relevant, their ideal DCG, and which users are public."""

    def __init__(self, size: Size, seed: int) -> None:
        rng = np.random.default_rng([seed, 0])
        self.size = size
        picks = np.argsort(rng.random((size.users, size.pool)), axis=1)[:, :3]
        count = rng.integers(1, 4, size=size.users)
        self.relevant = np.zeros((size.users, size.pool), dtype=bool)
        rows = np.repeat(np.arange(size.users), 3).reshape(-1, 3)
        keep = np.arange(3)[None, :] < count[:, None]
        self.relevant[rows[keep], picks[keep]] = True
        self.ideal = np.cumsum(DISCOUNT)[np.minimum(count, DEPTH) - 1]
        self.public = size.users // 2  # users [0, public) are public, the rest private

    def ndcg(self, lists: np.ndarray) -> np.ndarray:
        """Per-user NDCG@20 of one submission (users x 20 item ids, best first)."""
        hits = np.take_along_axis(self.relevant, lists.astype(np.intp), axis=1)
        per_user: np.ndarray = (hits @ DISCOUNT) / self.ideal
        return per_user

    def split(self, per_user: np.ndarray) -> tuple[np.ndarray, float]:
        """The per-user public scores and the private mean."""
        return per_user[: self.public], float(per_user[self.public :].mean())


def top(keys: np.ndarray) -> np.ndarray:
    """Each row's 20 columns of largest key, largest first."""
    part = np.argpartition(-keys, DEPTH, axis=1)[:, :DEPTH]
    order = np.argsort(-np.take_along_axis(keys, part, axis=1), axis=1)
    return np.take_along_axis(part, order, axis=1)


#: (k, board) -> (kept, exact public - private, shown public - private) of the combination
Attack = dict[tuple[int, str], tuple[int, float, float]]


def attack(world: World, seed: int) -> Attack:
    """The boosting attack on each board, for each k."""
    size = world.size
    rng = np.random.default_rng([seed, 1])
    most = max(size.ks)
    lists = np.empty((most, size.users, DEPTH), dtype=np.uint8)
    public = np.empty((most, world.public))
    for i in range(most):
        lists[i] = top(rng.random((size.users, size.pool))).astype(np.uint8)
        public[i] = world.ndcg(lists[i])[: world.public]
    exact = public.mean(axis=1)
    on_ladder, leader, best = [], np.zeros(most, dtype=np.intp), 0
    for i in range(most):
        score, became = climb(public[best] if i else None, public[i])
        best = i if became else best
        leader[i] = best  # the ladder's best of the first i + 1
        on_ladder.append(score)
    climbed = np.array([False] + [b > a for a, b in itertools.pairwise(on_ladder)])
    out: Attack = {}
    for k in size.ks:
        for board in BOARDS:
            if board == "ladder":
                kept = np.flatnonzero(climbed[:k])
            else:
                shown = np.array([shown_on(board, x) for x in exact[:k]])
                kept = np.flatnonzero(shown > shown.mean())
            combined = combine(world, lists, kept, np.random.default_rng([seed, 2, k]))
            pub, private = world.split(world.ndcg(combined))
            if board == "ladder":
                final, _ = climb(public[leader[k - 1]], pub)
            else:
                final = shown_on(board, float(pub.mean()))
            out[k, board] = (kept.size, float(pub.mean()) - private, final - private)
    return out


def shown_on(board: str, score: float) -> float:
    """A public score as the plain or a rounded board shows it."""
    digits = None if board == "plain" else int(board.split()[1])
    return BoardRules(public_digits=digits).shown(float(score))


def combine(
    world: World, lists: np.ndarray, kept: np.ndarray, rng: np.random.Generator
) -> np.ndarray:
    """Per user, the 20 items listed by most kept submissions (ties at random)."""
    users, pool = world.size.users, world.size.pool
    counts = np.zeros(users * pool)
    base = (np.arange(users) * pool)[:, None]
    for start in range(0, kept.size, 50):
        chunk = lists[kept[start : start + 50]].astype(np.int64) + base[None]
        counts += np.bincount(chunk.ravel(), minlength=users * pool)
    return top(counts.reshape(users, pool) + 0.5 * rng.random((users, pool)))


#: |z| under which two teams' private scores are a statistical tie: a two-sided test at 5 %.
TIE_Z = 1.96


@dataclass(frozen=True)
class Honest:
    """One seed's honest teams on the plain board and on the Ladder: steering by what the
    board shows (`adaptive`), or submitting a sequence fixed in advance."""

    adaptive: bool
    submissions: int  # the teams' submissions on each board
    final_changed: int  # teams whose private rank differs, plain board vs ladder
    swapped: int  # pairs of teams in the other order on the ladder's private board
    ties: int  # swapped pairs whose |z| on the plain board's counted submissions is < TIE_Z
    largest_z: float  # the largest |z| of a swapped pair (0 when none)
    public_changed: int  # teams whose public (shown) rank differs
    private_plain: float  # mean private score of the counted submissions
    private_ladder: float


def submit(world: World, seed: int, team: int, j: int, quality: float) -> np.ndarray:
    """Per-user NDCG@20 of a team's j-th submission: a model that ranks a user's items by
    quality * relevant + N(0, 1) noise, the noise drawn for (seed, team, j) alone."""
    size = world.size
    noise = np.random.default_rng([seed, 5, team, j])
    keys = quality * world.relevant + noise.standard_normal((size.users, size.pool))
    return world.ndcg(top(keys))


def career(
    world: World,
    seed: int,
    team: int,
    skill: float,
    steps: np.ndarray,
    board: str,
    fixed: list[np.ndarray] | None,
) -> tuple[np.ndarray, float]:
    """One team's submissions on one board: the per-user scores of the submission its final
    board counts (the best exact public score, the first of equals; the same rule on both
    boards) and its best shown public score. With `fixed` (per-user scores) it submits those
    whatever the board shows; else it tries q + step, q its model (at first its skill), and
    adopts the trial when the board says it is its new best."""
    q, leader, shown, best = skill, None, -np.inf, -np.inf
    counted = None
    for j, step in enumerate(steps):
        trial = max(0.0, q + float(step))
        scores = submit(world, seed, team, j, trial) if fixed is None else fixed[j]
        public = scores[: world.public]
        exact = float(public.mean())
        if board == "plain":
            adopt, shown = exact > best, max(shown, exact)
        else:
            shown, adopt = climb(leader, public)
            leader = public if adopt else leader
        if exact > best:  # what the final board counts, whatever was shown
            best, counted = exact, scores
        if adopt:
            q = trial
    if counted is None:
        raise ValueError("a team without submissions")
    return counted, shown


def honest(world: World, seed: int, adaptive: bool) -> Honest:
    """Each honest team's run on the plain board and on the Ladder, with the same draws:
    the same submissions when not `adaptive`, the same trials and noise when it is."""
    size = world.size
    rng = np.random.default_rng([seed, 3])
    skills = rng.uniform(0.5, 2.5, size=size.teams)
    counts = rng.integers(size.fewest, size.most + 1, size=size.teams)
    counted: dict[str, list[np.ndarray]] = {"plain": [], "ladder": []}  # private users
    shown_best: dict[str, list[float]] = {"plain": [], "ladder": []}
    for team in range(size.teams):
        steps = np.random.default_rng([seed, 4, team]).normal(0.05, 0.15, size=counts[team])
        fixed = None
        if not adaptive:  # drawn once, submitted to both boards
            trials = np.maximum(0.0, skills[team] + steps)
            fixed = [submit(world, seed, team, j, float(q)) for j, q in enumerate(trials)]
        for board in ("plain", "ladder"):
            scores, shown = career(world, seed, team, skills[team], steps, board, fixed)
            counted[board].append(scores[world.public :])
            shown_best[board].append(shown)
    private = {board: np.array([s.mean() for s in counted[board]]) for board in counted}
    rank = {board: ranks(private[board]) for board in private}
    plain, ladder = private["plain"], private["ladder"]
    order = np.sign(plain[:, None] - plain[None, :]) * np.sign(ladder[:, None] - ladder[None, :])
    pairs = [(a, b) for a, b in zip(*np.nonzero(np.triu(order < 0)), strict=True)]
    zs = [paired_z(counted["plain"][a], counted["plain"][b]) for a, b in pairs]
    shown_rank = {board: ranks(np.array(shown_best[board])) for board in shown_best}
    return Honest(
        adaptive=adaptive,
        submissions=int(counts.sum()),
        final_changed=int(np.count_nonzero(rank["plain"] != rank["ladder"])),
        swapped=len(pairs),
        ties=sum(z < TIE_Z for z in zs),
        largest_z=max(zs, default=0.0),
        public_changed=int(np.count_nonzero(shown_rank["plain"] != shown_rank["ladder"])),
        private_plain=float(plain.mean()),
        private_ladder=float(ladder.mean()),
    )


def paired_z(a: np.ndarray, b: np.ndarray) -> float:
    """|mean(a - b)| over its standard error: a paired z over the private users, as the
    private board's own test would read two teams' per-user scores."""
    diff = a - b
    mean, sd = abs(float(diff.mean())), float(diff.std(ddof=1))
    if sd == 0:
        return 0.0 if mean == 0 else float("inf")
    return mean / (sd / float(np.sqrt(diff.size)))


@dataclass(frozen=True)
class Seed:
    """One seed's figures: the attack, and honest teams with fixed and adaptive submissions."""

    attack: Attack
    fixed: Honest
    adaptive: Honest


def one_seed(size: Size, seed: int) -> Seed:
    world = World(size, seed)
    return Seed(attack(world, seed), honest(world, seed, False), honest(world, seed, True))


def run(size: Size, jobs: int = 1) -> list[Seed]:
    """Every seed of `size`, in seed order, in `jobs` processes (1: in this one)."""
    args = ([size] * size.seeds, range(size.seeds))
    if jobs == 1:
        return progress(map(one_seed, *args))
    with ProcessPoolExecutor(jobs) as pool:
        return progress(pool.map(one_seed, *args))


def progress(results: Iterable[Seed]) -> list[Seed]:
    """`results` as a list, each seed's time since the first noted on stderr."""
    started, out = time.perf_counter(), []
    for seed, result in enumerate(results):
        out.append(result)
        print(f"seed {seed}: {time.perf_counter() - started:.0f} s", file=sys.stderr, flush=True)
    return out


def ranks(scores: np.ndarray) -> np.ndarray:
    """1-based rank of each team, higher score first (ties by team order)."""
    order = np.argsort(-scores, kind="stable")
    out = np.empty(len(scores), dtype=np.int64)
    out[order] = np.arange(1, len(scores) + 1)
    return out


def spread(values: list[float]) -> str:
    mean = statistics.fmean(values)
    sd = statistics.stdev(values) if len(values) > 1 else 0.0
    return f"{mean:+.4f} ± {sd:.4f}"


def times(factor: float) -> str:
    return "∞" if np.isinf(factor) else f"{factor:.1f}×"


def factor_interval(plain: np.ndarray, ladder: np.ndarray) -> tuple[float, float]:
    """The 5th and 95th percentiles of mean plain gap / mean ladder gap over 2,000 resamples
    of the seeds (each seed's two gaps kept together); ∞ where the ladder's mean is ≤ 0."""
    pick = np.random.default_rng(0).integers(0, plain.size, size=(2_000, plain.size))
    above, below = plain[pick].mean(axis=1), ladder[pick].mean(axis=1)
    ratio = np.full(above.size, np.inf)
    np.divide(above, below, out=ratio, where=below > 0)
    low, high = np.quantile(ratio, [0.05, 0.95], method="inverted_cdf")
    return float(low), float(high)


@dataclass(frozen=True)
class Timing:
    """How long a run took: wall, CPU (this process and its workers), the 1-minute load
    average at its start (the machine is shared), and its processes."""

    wall: float
    cpu: float
    load: float
    jobs: int


def section(size: Size, seeds: list[Seed], timing: Timing, command: str) -> list[str]:
    """bench/TRUST.md's Ladder section, between its markers."""
    commit = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], cwd=HERE, capture_output=True, text=True
    ).stdout.strip()
    attacks = [s.attack for s in seeds]
    lines = [
        START,
        "## The Ladder: Blum & Hardt's boosting attack, and honest teams",
        "",
        f"Regenerate with `{command}` from the repository root; the simulation is described "
        "in bench/trust_ladder.py's docstring.",
        "",
        f"- date: {datetime.now(UTC):%Y-%m-%d %H:%M} UTC; code: commit {commit}; "
        f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}, "
        f"numpy {np.__version__}",
        f"- time: wall {timing.wall:.0f} s in {timing.jobs} process"
        f"{'es' * (timing.jobs > 1)}, CPU {timing.cpu:.0f} s; load average (1 min) at the "
        f"start {timing.load:.1f} (the machine is shared: other sessions' load slows the wall)",
        f"- world: {size.users:,} users ({size.users // 2:,} public, the rest private), "
        f"{size.pool} candidate items each, 1-3 relevant, NDCG@{DEPTH} binary; "
        f"seeds 0..{size.seeds - 1}",
        "",
        "### The attack",
        "",
        "Goal (issue 34): the Ladder cuts the public–private gap of the boosting attack at "
        "least 5× against the plain board. Gap: the combined submission's exact public score "
        "minus its private score, the mean over seeds; factor: the plain board's gap over the "
        "Ladder's; interval: 90 % of the factor over 2,000 resamples of the seeds.",
        "",
        "| k (attack submissions) | plain gap | Ladder gap | factor | 90 % interval | goal ≥ 5× |",
        "|---:|---:|---:|---:|---:|:---|",
    ]
    met, missed, straddle = [], [], []
    for k in size.ks:
        plain = np.array([a[k, "plain"][1] for a in attacks])
        ladder = np.array([a[k, "ladder"][1] for a in attacks])
        factor = float(plain.mean() / ladder.mean()) if ladder.mean() > 0 else float("inf")
        low, high = factor_interval(plain, ladder)
        (met if factor >= GOAL else missed).append(f"{k:,} ({times(factor)})")
        if low < GOAL <= high:
            straddle.append(f"{k:,}")
        lines.append(
            f"| {k:,} | {plain.mean():+.4f} | {ladder.mean():+.4f} | {times(factor)} "
            f"| {times(low)} – {times(high)} | {'met' if factor >= GOAL else '**not met**'} |"
        )
    verdict = [
        f"met at k = {', '.join(met)}" if met else "met at no k",
        f"not met at k = {', '.join(missed)}" if missed else "",
    ]
    lines += [
        "",
        f"The ≥ 5× goal is {'; '.join(v for v in verdict if v)}."
        + (
            f" The 90 % interval of the factor contains 5× at k = {', '.join(straddle)}."
            if straddle
            else ""
        ),
        "",
        PAPER,
        "",
        "Every board (kept: how many of the k submissions the attacker combined; shown gap: "
        "what the board shows for the combination minus its private score; mean ± sd over "
        "seeds):",
        "",
        "| k | board | kept (mean) | gap | shown gap | plain gap / this gap |",
        "|---:|:---|---:|---:|---:|---:|",
    ]
    for k in size.ks:
        plain_gap = statistics.fmean(a[k, "plain"][1] for a in attacks)
        for board in BOARDS:
            rows = [a[k, board] for a in attacks]
            gap = statistics.fmean(r[1] for r in rows)
            lines.append(
                f"| {k:,} | {board} | {statistics.fmean(r[0] for r in rows):.1f} "
                f"| {spread([r[1] for r in rows])} | {spread([r[2] for r in rows])} "
                f"| {times(plain_gap / gap if gap > 0 else float('inf'))} |"
            )
    lines += ["", *honest_lines(size, seeds), "", END]
    return lines


def honest_lines(size: Size, seeds: list[Seed]) -> list[str]:
    """The honest teams' part of the section."""
    teams = size.teams * len(seeds)
    total: dict[bool, dict[str, int]] = {}
    for adaptive in (False, True):
        runs = [s.adaptive if adaptive else s.fixed for s in seeds]
        total[adaptive] = {
            field: sum(getattr(h, field) for h in runs)
            for field in ("submissions", "final_changed", "swapped", "ties", "public_changed")
        }
    fixed, steered = total[False], total[True]
    if fixed["final_changed"] == 0:
        same = f"With the same submissions the Ladder changes no final rank (0 of {teams} teams)."
    else:
        same = (
            f"**With the same submissions the Ladder changed {fixed['final_changed']} of "
            f"{teams} final ranks: the private board no longer counts what it should.**"
        )
    lines = [
        "### Honest teams",
        "",
        "Goal (issue 34): the Ladder changes no honest team's final rank. The Ladder changes "
        "what is shown, never what counts: on both boards the private board counts each "
        "team's best exact public submission. The bench measures it rather than assume it: "
        "each board runs the teams' submissions through its own feedback and picks what its "
        "private board counts.",
        "",
        f"{same} Teams that steer by the board may steer differently: of {teams} teams that "
        f"adopt a model when the board calls it a new best, {steered['final_changed']} ended "
        f"at another final rank, in {steered['swapped']} swapped pairs, {steered['ties']} of "
        f"them statistical ties (|z| < {TIE_Z} between the two teams' private per-user "
        "scores on the plain board).",
        "",
        f"{size.teams} teams a seed, {size.fewest}-{size.most} submissions each, ranks among "
        "the honest teams:",
        "",
        "| teams | steer by the board | teams | submissions (each board) "
        "| final private ranks changed | pairs swapped | of which statistical ties "
        "| public board ranks changed |",
        "|:---|:---|---:|---:|---:|---:|---:|---:|",
    ]
    for adaptive, name in ((False, "fixed submissions"), (True, "adaptive")):
        t = total[adaptive]
        lines.append(
            f"| {name} | {'yes' if adaptive else 'no'} | {teams} | {t['submissions']:,} "
            f"| {t['final_changed']} | {t['swapped']} | {t['ties']} | {t['public_changed']} |"
        )
    lines += [
        "",
        "Public board ranks may change for either kind of team: the Ladder shows a new score "
        "only after a significant gain, rounded to 1/n.",
        "",
        "<details><summary>each seed</summary>",
        "",
        "| seed | fixed: final ranks changed | fixed: public ranks changed "
        "| adaptive: final ranks changed | adaptive: pairs swapped | adaptive: ties "
        "| adaptive: largest \\|z\\| of a swapped pair "
        "| adaptive: mean private score counted, plain / ladder |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for seed, s in enumerate(seeds):
        a = s.adaptive
        lines.append(
            f"| {seed} | {s.fixed.final_changed} | {s.fixed.public_changed} "
            f"| {a.final_changed} | {a.swapped} | {a.ties} | {a.largest_z:.2f} "
            f"| {a.private_plain:.4f} / {a.private_ladder:.4f} |"
        )
    return [*lines, "", "</details>"]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a smoke size, seconds")
    parser.add_argument("--jobs", type=int, default=2, help="processes, one seed each (2)")
    parser.add_argument(
        "--out",
        type=Path,
        help="the Markdown file to write the section into (bench/TRUST.md; none with --quick)",
    )
    args = parser.parse_args(argv)
    if args.jobs < 1:
        parser.error(f"--jobs {args.jobs}: expected at least 1")
    size = QUICK if args.quick else FULL
    out = args.out or (None if args.quick else HERE / "TRUST.md")
    load, started, own = os.getloadavg()[0], time.perf_counter(), time.process_time()
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    seeds = run(size, args.jobs)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)  # the workers, reaped by now
    workers = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
    cpu = time.process_time() - own + workers
    timing = Timing(time.perf_counter() - started, cpu, load, args.jobs)
    words = sys.argv[1:] if argv is None else argv
    command = shlex.join([".venv/bin/python", "bench/trust_ladder.py", *words])
    lines = section(size, seeds, timing, command)
    if out is not None:
        if not out.exists():
            out.write_text("# Trust figures (issue 34)\n", encoding="utf-8")
        put_section(out, lines)
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
