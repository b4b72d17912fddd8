"""Write an H&M-sized competition with Kaggle's ids, for bench/kaggle_scale.py.

    .venv/bin/python bench/kaggle_data.py --users 1371980 --submissions 12

data/hm-kaggle's rules (MAP@12, at most 12 articles a customer in the wide format, empty
customers left out, text ids) at H&M's size: 1,371,980 customers, each a 64-hex id (a
sha256, as Kaggle's), and 105,542 articles, each 10 digits with a leading zero (as
0108775015). Most customers bought nothing in the week scored (`EMPTY_SHARE`); the others
bought 1 to 6 articles, drawn from a long-tailed catalogue (`scorer.synthetic`).

Files, in `--work`/hm-USERS/: competition.toml (data/hm-kaggle's), solution.csv
(customer_id, article_id, Usage: Public or Private, half each; one row with an empty
article for a customer who bought nothing), targets.csv, and submission-N.csv for N = 0..,
each `customer_id,prediction` with 12 space-separated articles for every customer (about
270 MB at full size). The submissions differ: the N-th takes its 12 from another window of
a ranking of 20, so each has its own score and bytes (no server's cache spares a verdict).
A folder whose manifest.json matches the arguments, with as many submissions or more, is
kept; else written again. Seeded: the same arguments give the same bytes.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import shutil
import sys
import time
from pathlib import Path
from typing import BinaryIO

import numpy as np
import polars as pl

from scorer.synthetic import BLOCK, K, make_competition

HERE = Path(__file__).resolve().parent
DATA = HERE.parent / "data"

#: H&M's competition: its customers and its catalogue's articles.
HM_USERS, HM_ARTICLES = 1_371_980, 105_542

#: The share of customers who bought nothing in the week scored. Kaggle's H&M data has
#: 1,371,980 customers; its last published week (2020-09-16..22) had about 69,000 buyers,
#: and the hidden week that scored the competition is taken to be alike: about 5 % bought.
EMPTY_SHARE = 0.95

#: Articles a buyer bought in the week, uniform in 1..6 (H&M's buyers had about 3.5).
MIN_BOUGHT, MAX_BOUGHT = 1, 6

#: The articles a submission lists a customer (the competition's k).
LISTED = 12

#: Users generated and written at once (whole blocks of `scorer.synthetic`).
PART = 5 * BLOCK

#: Bump when the output changes, so that old folders are written again.
FORMAT = 1


def customer_ids(users: np.ndarray) -> pl.Series:
    """64-hex customer ids, as Kaggle's H&M data has them: a sha256 of each user's number."""
    return pl.Series(
        "customer_id", [hashlib.sha256(b"customer %d" % u).hexdigest() for u in users.tolist()]
    )


def article(column: str) -> pl.Expr:
    """A synthetic edition id (1,000,000 + its index) as an H&M article: 10 digits, the
    first a zero, as 0108775015; distinct for distinct editions."""
    return pl.format("0{}", (pl.col(column) - 1_000_000) * 8_501 + 100_000_000)


def folder(users: int, seed: int, work: Path) -> Path:
    return work / (f"hm-{users}" if seed == 0 else f"hm-{users}-seed{seed}")


def generate(
    users: int, submissions: int, *, work: Path, seed: int = 0, empty_share: float = EMPTY_SHARE
) -> Path:
    """Write (or keep) the competition's files and `submissions` submissions; their folder."""
    out = folder(users, seed, work)
    wanted = {"format": FORMAT, "users": users, "seed": seed, "empty_share": empty_share}
    manifest = out / "manifest.json"
    found = json.loads(manifest.read_text()) if manifest.is_file() else {}
    if {k: found.get(k) for k in wanted} == wanted and found["submissions"] >= submissions:
        return out
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    started = time.perf_counter()
    shutil.copy(DATA / "hm-kaggle" / "competition.toml", out / "competition.toml")
    names = ["solution.csv", "targets.csv", *(f"submission-{n}.csv" for n in range(submissions))]
    handles: dict[str, BinaryIO] = {name: (out / f"{name}.partial").open("wb") for name in names}
    shape = {"min_lost": MIN_BOUGHT, "max_lost": MAX_BOUGHT, "n_items": HM_ARTICLES}
    try:
        for offset in range(0, users, PART):
            part = make_competition(
                min(PART, users - offset),
                seed=seed,
                offset=offset,
                empty_share=empty_share,
                **shape,
            )
            first = offset == 0
            write_part(part.solution, part.targets, part.submission, handles, first)
            print(f"{out.name}: {offset + part.targets.height:,} users", file=sys.stderr)
    finally:
        for handle in handles.values():
            handle.close()
    for name in names:
        (out / f"{name}.partial").replace(out / name)
    sizes = {p.name: p.stat().st_size for p in sorted(out.iterdir())}
    seconds = round(time.perf_counter() - started, 1)
    record = {**wanted, "submissions": submissions, "bytes": sizes, "seconds": seconds}
    manifest.write_text(json.dumps(record, indent=2) + "\n")
    return out


def write_part(
    solution: pl.DataFrame,
    targets: pl.DataFrame,
    ranked: pl.DataFrame,
    handles: dict[str, BinaryIO],
    first: bool,
) -> None:
    """One part's rows, appended to each file (`handles`: open binary files by name)."""
    ids = pl.DataFrame(
        {"user_id": targets["user_id"], "customer_id": customer_ids(targets["user_id"].to_numpy())}
    )
    usage = pl.when(pl.col("stage") == "public").then(pl.lit("Public")).otherwise(pl.lit("Private"))
    solution.join(ids, on="user_id", maintain_order="left").select(
        "customer_id", article("edition_id").alias("article_id"), usage.alias("Usage")
    ).write_csv(handles["solution.csv"], include_header=first)
    ids.select("customer_id").write_csv(handles["targets.csv"], include_header=first)
    for name in handles:
        if not name.startswith("submission-"):
            continue
        shift = int(name.removeprefix("submission-").removesuffix(".csv"))
        # The n-th submission lists the ranks n+1..n+12 of the 20 (wrapped around), in order.
        window = (pl.col("rank") - 1 + K - shift % K) % K
        (
            ranked.filter(window < LISTED)
            .sort("user_id", window)
            .group_by("user_id", maintain_order=True)
            .agg(article("edition_id").str.join(" ").alias("prediction"))
            .join(ids, on="user_id", maintain_order="left")
            .select("customer_id", "prediction")
            .write_csv(handles[name], include_header=first)
        )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--users", type=int, default=HM_USERS)
    parser.add_argument("--submissions", type=int, default=12)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--empty-share", type=float, default=EMPTY_SHARE)
    parser.add_argument("--work", type=Path, default=HERE / "work")
    args = parser.parse_args(argv)
    out = generate(
        args.users, args.submissions, work=args.work, seed=args.seed, empty_share=args.empty_share
    )
    print(json.loads((out / "manifest.json").read_text()), file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
