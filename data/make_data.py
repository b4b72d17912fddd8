"""Write the bundled data: `python data/make_data.py` rewrites every file in data/.

A small, deterministic 'lost items' competition of 1,000 target users: the solution (hidden lost
pairs with a 50/50 public/private split by user), the targets participants get, a popularity
baseline, a sample model submission, and a few broken submissions that show the error report;
in data/examples/ the tiny competitions of examples.md; and in data/hm/ a second, different
competition, H&M-style MAP@12 (`write_hm`).
"""

from __future__ import annotations

import csv
import hashlib
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
        lost[user] = draw_distinct(rng, editions, weights, n)

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
    (out / "hm").mkdir(exist_ok=True)
    write_hm(out / "hm")
    (out / "hm-kaggle").mkdir(exist_ok=True)
    write_hm_kaggle(out / "hm", out / "hm-kaggle")


def draw_distinct(rng: random.Random, items: list[int], weights: list[float], n: int) -> list[int]:
    """`n` distinct items drawn one at a time by weight, in the order drawn."""
    picked: list[int] = []
    while len(picked) < n:
        item = rng.choices(items, weights)[0]
        if item not in picked:
            picked.append(item)
    return picked


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


# The H&M-style competition.

HM_SEED = 2012
HM_CUSTOMERS = 300
HM_ARTICLES = 1_500
HM_K = 12

HM_COMPETITION = """\
name = "H&M-style"
k = 12
metric = "map"
rows = "at_most"
empty_users = "exclude"

[columns]
user = "customer_id"
item = "article_id"
rank = "rank"
list = "prediction"
"""


def write_hm(out: Path) -> None:
    """The H&M-style competition of data/hm/ (task.md, "Other competitions"): MAP@12, at most
    12 articles a customer in the wide format, a `Usage` column saying Public or Private."""
    rng = random.Random(HM_SEED)
    customers = [7_000_001 + i for i in range(HM_CUSTOMERS)]
    public = set(rng.sample(customers, HM_CUSTOMERS // 2))
    articles = catalogue(rng)  # most popular first
    weights = [1 / (rank + 1) ** 0.8 for rank in range(HM_ARTICLES)]  # a long-tailed catalogue

    bought: dict[int, list[int]] = {}
    for customer in customers:
        bought[customer] = draw_distinct(rng, articles, weights, rng.randint(0, 6))

    solution = []
    for customer in customers:
        usage = "Public" if customer in public else "Private"
        rows = bought[customer] or [None]  # a customer who bought nothing: one empty row
        solution += [(customer, "" if a is None else a, usage) for a in rows]
    (out / "competition.toml").write_text(HM_COMPETITION, encoding="utf-8")
    _write(out, "solution.csv", ["customer_id", "article_id", "Usage"], solution)
    _write(out, "targets.csv", ["customer_id"], [(c,) for c in customers])

    popular = articles[: 2 * HM_K]
    sample = []
    for customer in customers:
        draw = rng.random()
        length = 0 if draw < 0.03 else rng.randint(1, HM_K - 1) if draw < 0.25 else HM_K
        recalled = [a for a in bought[customer] if rng.random() < 0.4]
        fill = [a for a in popular if a not in recalled]
        predicted = (recalled + rng.sample(fill, HM_K))[:length]
        rng.shuffle(predicted)
        sample.append((customer, " ".join(str(a) for a in predicted)))
    _write(out, "sample_submission.csv", ["customer_id", "prediction"], sample)


HM_KAGGLE_COMPETITION = (
    HM_COMPETITION.replace('name = "H&M-style"', 'name = "H&M, Kaggle\'s ids"')
    + """
[ids]
user = "text"
item = "text"
"""
)


def write_hm_kaggle(source: Path, out: Path) -> None:
    """data/hm/ with ids as Kaggle's H&M data writes them (examples.md, "Text ids"): each
    customer a 64-character hex id, each article its 10 digits with the leading zero
    (0108775015). The same competition: every score equals data/hm's."""

    def customer(cell: str) -> str:
        return hashlib.sha256(f"customer {cell}".encode()).hexdigest() if cell else cell

    def article(cell: str) -> str:
        return f"{int(cell):010d}" if cell else cell

    def ids(cell: str) -> str:
        return " ".join(article(a) for a in cell.split())

    (out / "competition.toml").write_text(HM_KAGGLE_COMPETITION, encoding="utf-8")
    for name, rewrite in (
        ("solution.csv", (customer, article, str)),
        ("targets.csv", (customer,)),
        ("sample_submission.csv", (customer, ids)),
    ):
        with (source / name).open(newline="", encoding="utf-8") as handle:
            header, *rows = list(csv.reader(handle))
        _write(
            out,
            name,
            header,
            [tuple(f(c) for f, c in zip(rewrite, row, strict=True)) for row in rows],
        )


def catalogue(rng: random.Random) -> list[int]:
    """HM_ARTICLES distinct 9-digit article ids: a 6-digit product code and a 3-digit colour
    variant, as H&M's 0108775015 without its leading zero."""
    articles: list[int] = []
    seen: set[int] = set()
    while len(articles) < HM_ARTICLES:
        article = rng.randint(108_775, 959_461) * 1_000 + rng.randint(1, 60)
        if article not in seen:
            seen.add(article)
            articles.append(article)
    return articles


def _write(out: Path, name: str, header: list[str], rows: list[tuple[object, ...]]) -> None:
    with (out / name).open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle, lineterminator="\n")
        writer.writerow(header)
        writer.writerows(rows)


if __name__ == "__main__":
    main()
