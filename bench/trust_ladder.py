"""Does the parameter-free Ladder stop Blum & Hardt's boosting attack on a ranked-list board,
and does it leave honest teams' final ranks alone? (issue 34). Prints a Markdown report.

    .venv/bin/python bench/trust_ladder.py            # the full run: a few minutes on 2 cores
    .venv/bin/python bench/trust_ladder.py --quick    # a smoke size, seconds

A simulated competition: `--users` users, half public and half private (the users are drawn
alike, so the first half is public); each has 1-3 hidden relevant items among a pool of
`--pool`; a submission lists 20 items per user, scored by NDCG@20 with binary relevance.

The attack (Blum & Hardt 2015, §5, "boosting attack", adapted to ranked lists): submit k
lists of 20 random items per user; keep those the board says did well; combine them (per
user, rank the items by how many kept submissions listed them, ties at random; keeping none,
this is a random list) and measure the combination's exact public - private score: how far
the public board was fitted. What the attacker is shown decides what it keeps:
- plain: the exact public score; keep those above the mean of the k shown scores;
- rounded to 3 or 2 digits (`rounded`): the same rule on the rounded scores;
- ladder (`climb`): keep a submission when its shown score rose (as in the authors'
  examples/attacks.jl); the first is the baseline.
The k of each row are prefixes of one sequence of 700 (or --quick's) random submissions.

Honest teams: `--teams` teams of skill q ~ U(0.5, 2.5), each making 5-20 submissions. A
model ranks a user's items by q * relevant + N(0, 1) noise (fresh noise each submission). A
team tries q' = q + N(0.05, 0.15) and adopts q' when the board says the submission is its new
best (plain: its exact public score beats its best; ladder: `climb` says so). Both boards see
the same draws; only the adoptions differ. The private board counts each team's best EXACT
public submission on both boards (the Ladder changes what is shown, never what counts), and
ranks the honest teams by its private score. For each pair of teams the Ladder's run puts in
the other order, a paired z over the private users of their plain-board picks says whether
they were told apart at all.
"""

from __future__ import annotations

import argparse
import itertools
import platform
import shlex
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import numpy as np

from scorer.leaderboard.ladder import climb, rounded

HERE = Path(__file__).resolve().parent
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


FULL = Size(users=8_000, pool=100, ks=(100, 300, 700), seeds=10, teams=20, most=20, fewest=5)
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


@dataclass(frozen=True)
class Honest:
    """One seed's honest teams on both boards."""

    submissions: int
    final_changed: int  # teams whose private rank differs, plain board vs ladder
    flipped: int  # pairs of teams in the other order on the ladder's private board
    tied: float  # the largest |z| on the plain board's private scores among flipped pairs
    public_changed: int  # teams whose public (shown) rank differs
    private_plain: float  # mean private score of the counted submissions
    private_ladder: float


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
    shown = rounded(float(score), None if board == "plain" else int(board.split()[1]))
    return float(score) if shown is None else shown


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


def honest(world: World, seed: int) -> Honest:
    """Each honest team's run on the plain board and on the ladder, with the same draws."""
    size = world.size
    rng = np.random.default_rng([seed, 3])
    skills = rng.uniform(0.5, 2.5, size=size.teams)
    counts = rng.integers(size.fewest, size.most + 1, size=size.teams)
    picks: dict[str, list[float]] = {"plain": [], "ladder": []}
    per_user: list[np.ndarray] = []  # the plain board's counted submissions, private users
    shown_best: dict[str, list[float]] = {"plain": [], "ladder": []}
    for team in range(size.teams):
        steps = np.random.default_rng([seed, 4, team]).normal(0.05, 0.15, size=counts[team])
        for board in ("plain", "ladder"):
            q, best, best_exact, shown = skills[team], None, -np.inf, 0.0
            runs = []  # (exact public, private, per-user private) of each submission
            for j in range(counts[team]):
                trial = max(0.0, q + steps[j])
                noise = np.random.default_rng([seed, 5, team, j])
                keys = trial * world.relevant + noise.standard_normal((size.users, size.pool))
                scores = world.ndcg(top(keys))
                pub, private = world.split(scores)
                exact = float(pub.mean())
                if board == "plain":
                    adopt = exact > best_exact
                    shown = max(shown, exact)
                else:
                    shown, adopt = climb(best, pub)
                    best = pub if adopt else best
                if adopt:
                    q = trial
                best_exact = max(best_exact, exact)
                runs.append((exact, private, scores[world.public :]))
            pick = max(range(len(runs)), key=lambda j: runs[j][0])
            picks[board].append(runs[pick][1])
            shown_best[board].append(shown)
            if board == "plain":
                per_user.append(runs[pick][2])
    rank = {board: ranks(picks[board]) for board in picks}
    plain, ladder = np.array(picks["plain"]), np.array(picks["ladder"])
    order = np.sign(plain[:, None] - plain[None, :]) * np.sign(ladder[:, None] - ladder[None, :])
    pairs = [(a, b) for a, b in zip(*np.nonzero(np.triu(order < 0)), strict=True)]
    tied = 0.0
    for a, b in pairs:  # a paired z-test over the private users, as the private board's
        diff = per_user[a] - per_user[b]
        tied = max(tied, abs(float(diff.mean())) / (float(diff.std(ddof=1)) / np.sqrt(diff.size)))
    shown_rank = {board: ranks(shown_best[board]) for board in shown_best}
    return Honest(
        submissions=int(counts.sum()),
        final_changed=int(np.count_nonzero(rank["plain"] != rank["ladder"])),
        flipped=len(pairs),
        tied=tied,
        public_changed=int(np.count_nonzero(shown_rank["plain"] != shown_rank["ladder"])),
        private_plain=float(np.mean(picks["plain"])),
        private_ladder=float(np.mean(picks["ladder"])),
    )


def ranks(scores: list[float]) -> np.ndarray:
    """1-based rank of each team, higher score first (ties by team order)."""
    order = np.argsort(-np.array(scores), kind="stable")
    out = np.empty(len(scores), dtype=np.int64)
    out[order] = np.arange(1, len(scores) + 1)
    return out


def spread(values: list[float]) -> str:
    mean = statistics.fmean(values)
    sd = statistics.stdev(values) if len(values) > 1 else 0.0
    return f"{mean:+.4f} ± {sd:.4f}"


def report(size: Size, attacks: list[Attack], teams: list[Honest], wall: float) -> str:
    commit = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], cwd=HERE, capture_output=True, text=True
    ).stdout.strip()
    command = shlex.join([".venv/bin/python", "bench/trust_ladder.py", *sys.argv[1:]])
    lines = [
        "# Benchmark: the parameter-free Ladder against the boosting attack (issue 34)",
        "",
        f"`{command}` from the repository root.",
        "",
        f"- date: {datetime.now(UTC):%Y-%m-%d %H:%M} UTC; code: commit {commit}; "
        f"{platform.machine()}, Python {platform.python_version()}, numpy {np.__version__}; "
        f"wall {wall:.0f} s",
        f"- world: {size.users:,} users ({size.users // 2:,} public, the rest private), "
        f"{size.pool} candidate items each, 1-3 relevant, NDCG@{DEPTH} binary; "
        f"seeds 0..{size.seeds - 1}",
        "- gap: the combined submission's exact public score - its private score (mean ± sd "
        "over seeds); shown gap: what the board shows for it - its private score",
        "",
        "| k | board | kept (mean) | gap | shown gap | plain gap / this gap |",
        "|---:|:---|---:|---:|---:|---:|",
    ]
    ratios = {}
    for k in size.ks:
        plain = statistics.fmean(a[k, "plain"][1] for a in attacks)
        for board in BOARDS:
            rows = [a[k, board] for a in attacks]
            gap = statistics.fmean(r[1] for r in rows)
            ratio = plain / gap if gap > 0 else float("inf")
            ratios[k, board] = ratio
            lines.append(
                f"| {k} | {board} | {statistics.fmean(r[0] for r in rows):.1f} "
                f"| {spread([r[1] for r in rows])} | {spread([r[2] for r in rows])} "
                f"| {ratio:.1f}× |"
            )
    lines += [
        "",
        f"Honest teams: {size.teams} a seed, {size.fewest}-{size.most} submissions each; "
        "ranks among the honest teams. A team that ignored the board would keep its final "
        "rank by construction (both private boards count its best exact public submission); "
        "these teams keep a change only when the board says it helped, so what they are shown "
        "steers what they submit. z: the paired z of two flipped teams' private scores on the "
        "plain board (|z| < 2: a statistical tie).",
        "",
        "| seed | submissions | final private ranks changed | pairs flipped "
        "| largest \\|z\\| of a flipped pair "
        "| public board ranks changed | mean private score of picks, plain / ladder |",
        "|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for seed, t in enumerate(teams):
        lines.append(
            f"| {seed} | {t.submissions} | {t.final_changed} | {t.flipped} | {t.tied:.2f} "
            f"| {t.public_changed} | {t.private_plain:.4f} / {t.private_ladder:.4f} |"
        )
    changed = sum(t.final_changed for t in teams)
    each = ", ".join(f"{ratios[k, 'ladder']:.1f}× at k = {k}" for k in size.ks)
    lines += [
        "",
        f"Ladder: plain gap / ladder gap {each} (goal ≥ 5×). Honest teams whose final rank "
        f"changed: {changed} of {size.teams * len(teams)} (goal 0); the largest |z| of a "
        f"flipped pair: {max(t.tied for t in teams):.2f}.",
    ]
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a smoke size, seconds")
    args = parser.parse_args()
    size = QUICK if args.quick else FULL
    started = time.perf_counter()
    attacks: list[Attack] = []
    teams: list[Honest] = []
    for seed in range(size.seeds):
        world = World(size, seed)
        attacks.append(attack(world, seed))
        teams.append(honest(world, seed))
        print(f"seed {seed}: {time.perf_counter() - started:.0f} s", file=sys.stderr, flush=True)
    print(report(size, attacks, teams, time.perf_counter() - started))
    return 0


if __name__ == "__main__":
    sys.exit(main())
