"""Write the bundled data: `python data/make_data.py` rewrites every file in data/.

A small, deterministic 'lost items' competition of 1,000 target users: the solution (hidden lost
pairs with a 50/50 public/private split by user), the targets participants get, a popularity
baseline, a sample model submission, and a few broken submissions that show the error report;
and in data/examples/ the tiny competitions of examples.md.
"""

from __future__ import annotations

import csv
import random
from pathlib import Path

HERE = Path(__file__).parent
SEED = 2026
N_USERS = 1_000
N_EDITIONS = 5_000
K = 20


def main(out: Path = HERE) -> None:
    rng = random.Random(SEED)
    users = [10_000 + 3 * i for i in range(N_USERS)]
    public = set(rng.sample(users, N_USERS // 2))
    editions = list(range(500_000, 500_000 + N_EDITIONS))
    weights = [1 / (rank + 1) ** 0.9 for rank in range(N_EDITIONS)]  # a long-tailed catalogue

    lost: dict[int, list[int]] = {}
    for user in users:
        n = 0 if rng.random() < 0.02 else rng.randint(1, 30)
        picked: list[int] = []
        while len(picked) < n:
            edition = rng.choices(editions, weights)[0]
            if edition not in picked:
                picked.append(edition)
        lost[user] = picked

    solution = []
    for user in users:
        stage = "public" if user in public else "private"
        rows = lost[user] or [None]  # a user with no lost pairs: one row, empty edition_id
        solution += [(user, "" if e is None else e, stage) for e in rows]
    _write(out, "solution.csv", ["user_id", "edition_id", "stage"], solution)
    _write(out, "targets.csv", ["user_id"], [(u,) for u in users])

    popular = editions[:K]
    _write(
        out,
        "popularity_submission.csv",
        ["user_id", "edition_id", "rank"],
        [(u, e, r) for u in users for r, e in enumerate(popular, start=1)],
    )

    model = []
    for user in users:
        recalled = [e for e in lost[user] if rng.random() < 0.35]
        fill = [e for e in editions[: 4 * K] if e not in recalled]
        ranked = (recalled + rng.sample(fill, K))[:K]
        rng.shuffle(ranked)
        model += [(user, e, r) for r, e in enumerate(ranked, start=1)]
    _write(out, "sample_submission.csv", ["user_id", "edition_id", "rank"], model)

    broken = out / "broken"
    broken.mkdir(exist_ok=True)
    rows = list(model)
    rows[4] = (rows[4][0], rows[4][1], 21)  # rank out of range
    rows[25] = (rows[25][0], rows[26][1], rows[25][2])  # an edition twice for one user
    rows[60] = (rows[60][0], f"{rows[60][1]}.0", rows[60][2])  # a float id
    del rows[100]  # a user with 19 rows
    rows.append((99_999, 500_001, 1))  # a user who is not a target
    rows = rows[: -K * 10 - 1] + rows[-1:]  # the last ten target users missing
    _write(out, "broken/several_problems.csv", ["user_id", "edition_id", "rank"], rows)
    write_examples(out / "examples")
    _write(out, "broken/wrong_header.csv", ["user", "edition_id", "rank"], model[:K])
    (broken / "semicolons.csv").write_text(
        "user_id;edition_id;rank\n" + "".join(f"{u};{e};{r}\n" for u, e, r in model[:K]),
        encoding="utf-8",
    )


def ranked(user: int, placed: dict[int, int], filler_start: int) -> list[tuple[int, int, int]]:
    """K rows for a user: `placed` maps rank -> edition, other ranks get editions nobody lost."""
    filler = iter(range(filler_start, filler_start + K))
    return [(user, placed[r] if r in placed else next(filler), r) for r in range(1, K + 1)]


EXAMPLES: dict[str, tuple[list[tuple[object, ...]], list[tuple[int, int, int]]]] = {
    # Lost {101, 202}; 101 at rank 1 and 202 at rank 2: a perfect ranking.
    "perfect": ([(1, 101), (1, 202)], ranked(1, {1: 101, 2: 202}, 9000)),
    # The same lost set at ranks 2 and 3.
    "shifted": ([(1, 101), (1, 202)], ranked(1, {2: 101, 3: 202}, 9000)),
    # Lost {11, 22, 33}; 11 at rank 1 and 22 at rank 4; 33 not submitted.
    "partial": ([(1, 11), (1, 22), (1, 33)], ranked(1, {1: 11, 4: 22}, 9000)),
    # 25 lost editions, 5 of them at ranks 1..5: the ideal stops at rank 20.
    "many_lost": (
        [(1, e) for e in range(1001, 1026)],
        ranked(1, {r: 1000 + r for r in range(1, 6)}, 9000),
    ),
    # A user with no lost pairs (empty edition_id) beside a perfect one.
    "no_lost": ([(1, 101), (2, "")], ranked(1, {1: 101}, 9000) + ranked(2, {}, 9100)),
}

# Public and private: four users, two in each split.
SPLIT_SOLUTION = [
    (1, 101, "public"),
    (1, 202, "public"),
    (2, 101, "public"),
    (2, 202, "public"),
    (3, 11, "private"),
    (3, 22, "private"),
    (3, 33, "private"),
    (4, 7, "private"),
]
SPLIT_SUBMISSION = (
    ranked(1, {1: 101, 2: 202}, 9000)
    + ranked(2, {2: 101, 3: 202}, 9000)
    + ranked(3, {1: 11, 4: 22}, 9000)
    + ranked(4, {}, 9100)
)


def write_examples(examples: Path) -> None:
    """The small competitions behind examples.md, each small enough to check by hand."""
    examples.mkdir(exist_ok=True)
    for name, (solution, submission) in EXAMPLES.items():
        _write(examples, f"{name}_solution.csv", ["user_id", "edition_id"], solution)
        _write(examples, f"{name}_submission.csv", ["user_id", "edition_id", "rank"], submission)
    _write(examples, "split_solution.csv", ["user_id", "edition_id", "stage"], SPLIT_SOLUTION)
    _write(examples, "split_submission.csv", ["user_id", "edition_id", "rank"], SPLIT_SUBMISSION)
    (examples / "ranking.json").write_text(
        '{"y_true": [3, 2, 0, 1], "y_score": [0.2, 0.8, 0.8, 0.1], "K": 3}\n', encoding="utf-8"
    )


def _write(out: Path, name: str, header: list[str], rows: list[tuple[object, ...]]) -> None:
    with (out / name).open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle, lineterminator="\n")
        writer.writerow(header)
        writer.writerows(rows)


if __name__ == "__main__":
    main()
