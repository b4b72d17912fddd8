"""Write the H&M-style competition: `python data/hm/make_hm.py` rewrites every file in data/hm/.

A small, deterministic competition in the shape of Kaggle's H&M recommendations: MAP@12, at
most 12 articles a customer, the wide layout (one line a customer, articles separated by
spaces), a `Usage` column saying Public or Private. 300 customers, each with 0..6 articles
bought in the hidden week (the solution), the targets, and a sample submission that mixes
recalled articles with popular ones, some lists short and a few empty.
"""

from __future__ import annotations

import csv
import random
from pathlib import Path

HERE = Path(__file__).parent
SEED = 2012
N_CUSTOMERS = 300
N_ARTICLES = 1_500
K = 12

COMPETITION = """\
name = "H&M-style"
k = 12
metric = "map"
rows = "at_most"

[columns]
user = "customer_id"
item = "article_id"
rank = "rank"
list = "prediction"
"""


def main(out: Path = HERE) -> None:
    rng = random.Random(SEED)
    customers = [7_000_001 + i for i in range(N_CUSTOMERS)]
    public = set(rng.sample(customers, N_CUSTOMERS // 2))
    articles = catalogue(rng)  # most popular first
    weights = [1 / (rank + 1) ** 0.8 for rank in range(N_ARTICLES)]  # a long-tailed catalogue

    bought: dict[int, list[int]] = {}
    for customer in customers:
        n = rng.randint(0, 6)
        picked: list[int] = []
        while len(picked) < n:
            article = rng.choices(articles, weights)[0]
            if article not in picked:
                picked.append(article)
        bought[customer] = picked

    solution = []
    for customer in customers:
        usage = "Public" if customer in public else "Private"
        rows = bought[customer] or [None]  # a customer who bought nothing: one empty row
        solution += [(customer, "" if a is None else a, usage) for a in rows]
    (out / "competition.toml").write_text(COMPETITION, encoding="utf-8")
    _write(out, "solution.csv", ["customer_id", "article_id", "Usage"], solution)
    _write(out, "targets.csv", ["customer_id"], [(c,) for c in customers])

    popular = articles[: 2 * K]
    sample = []
    for customer in customers:
        draw = rng.random()
        length = 0 if draw < 0.03 else rng.randint(1, K - 1) if draw < 0.25 else K
        recalled = [a for a in bought[customer] if rng.random() < 0.4]
        fill = [a for a in popular if a not in recalled]
        predicted = (recalled + rng.sample(fill, K))[:length]
        rng.shuffle(predicted)
        sample.append((customer, " ".join(str(a) for a in predicted)))
    _write(out, "sample_submission.csv", ["customer_id", "prediction"], sample)


def catalogue(rng: random.Random) -> list[int]:
    """N_ARTICLES distinct 9-digit article ids: a 6-digit product code and a 3-digit colour
    variant, as H&M's 0108775015 without its leading zero."""
    articles: list[int] = []
    seen: set[int] = set()
    while len(articles) < N_ARTICLES:
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
