"""Write the small competitions behind examples.md: `python data/examples/make_examples.py`.

Each example is a solution and a submission of one to a few users, small enough to check by
hand against the formulas in task.md.
"""

from __future__ import annotations

import csv
from pathlib import Path

HERE = Path(__file__).parent
K = 20


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
    "many_lost": ([(1, e) for e in range(1001, 1026)], ranked(1, {r: 1000 + r for r in range(1, 6)}, 9000)),
    # A user with no lost pairs (empty edition_id) beside a perfect one.
    "no_lost": ([(1, 101), (2, "")], ranked(1, {1: 101}, 9000) + ranked(2, {}, 9100)),
}

# Public and private: four users, two in each split.
SPLIT_SOLUTION = [
    (1, 101, "public"), (1, 202, "public"),
    (2, 101, "public"), (2, 202, "public"),
    (3, 11, "private"), (3, 22, "private"), (3, 33, "private"),
    (4, 7, "private"),
]
SPLIT_SUBMISSION = (
    ranked(1, {1: 101, 2: 202}, 9000)
    + ranked(2, {2: 101, 3: 202}, 9000)
    + ranked(3, {1: 11, 4: 22}, 9000)
    + ranked(4, {}, 9100)
)


def main(out: Path = HERE) -> None:
    for name, (solution, submission) in EXAMPLES.items():
        _write(out, f"{name}_solution.csv", ["user_id", "edition_id"], solution)
        _write(out, f"{name}_submission.csv", ["user_id", "edition_id", "rank"], submission)
    _write(out, "split_solution.csv", ["user_id", "edition_id", "stage"], SPLIT_SOLUTION)
    _write(out, "split_submission.csv", ["user_id", "edition_id", "rank"], SPLIT_SUBMISSION)
    (out / "ranking.json").write_text(
        '{"y_true": [3, 2, 0, 1], "y_score": [0.2, 0.8, 0.8, 0.1], "K": 3}\n', encoding="utf-8"
    )


def _write(out: Path, name: str, header: list[str], rows: list[tuple[object, ...]]) -> None:
    with (out / name).open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle, lineterminator="\n")
        writer.writerow(header)
        writer.writerows(rows)


if __name__ == "__main__":
    main()
