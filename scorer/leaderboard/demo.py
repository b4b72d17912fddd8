"""A small deterministic competition with a submission log, for the docs, tests and benchmark."""

from __future__ import annotations

import csv
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
import polars as pl

from scorer.competition import LOST_ITEMS
from scorer.leaderboard.stale import iso
from scorer.synthetic import COLUMNS, make_competition

#: The demo and the synthetic competitions are lost items: 20 ranked editions a user.
K = LOST_ITEMS.k

#: Target users of the demo: small enough to score a dozen files in a second or two.
DEMO_USERS = 400

#: When the demo competition opens; each submission is some hours later.
START = datetime(2024, 5, 1, 9, 0, tzinfo=UTC)

#: Edition ids no solution of `make_competition` holds (its ids start at 1,000,000).
JUNK = np.arange(1, K + 1, dtype=np.int64)


@dataclass(frozen=True)
class Entry:
    team: str
    name: str
    hours: float
    selected: bool = False


def oracle(submission: pl.DataFrame, solution: pl.DataFrame, users: pl.Series) -> pl.DataFrame:
    """Give `users` their lost editions first (up to K), then never-lost fillers: NDCG 1."""
    chosen = pl.DataFrame({COLUMNS.user: users}).unique()
    lost = (
        solution.join(chosen, on=COLUMNS.user)
        .filter(pl.col(COLUMNS.item).is_not_null())
        .select(COLUMNS.user, COLUMNS.item, pl.lit(0).alias("source"))
    )
    return _replace(submission, chosen, lost)


def junk(submission: pl.DataFrame, users: pl.Series) -> pl.DataFrame:
    """Give `users` never-lost fillers only: NDCG 0."""
    chosen = pl.DataFrame({COLUMNS.user: users}).unique()
    none = pl.DataFrame(schema={COLUMNS.user: pl.Int64, COLUMNS.item: pl.Int64, "source": pl.Int32})
    return _replace(submission, chosen, none)


def _replace(submission: pl.DataFrame, chosen: pl.DataFrame, first: pl.DataFrame) -> pl.DataFrame:
    filler = chosen.join(
        pl.DataFrame({COLUMNS.item: JUNK, "source": pl.Series(np.ones(K, dtype=np.int32))}),
        how="cross",
    )
    lists = (
        pl.concat([first.with_columns(pl.col("source").cast(pl.Int32)), filler])
        .sort(COLUMNS.user, "source", COLUMNS.item)
        .with_columns((pl.int_range(pl.len()).over(COLUMNS.user) + 1).alias(COLUMNS.rank))
        .filter(pl.col(COLUMNS.rank) <= K)
        .select(COLUMNS.user, COLUMNS.item, pl.col(COLUMNS.rank).cast(pl.Int64))
    )
    kept = submission.join(chosen, on=COLUMNS.user, how="anti")
    return pl.concat([kept, lists]).sort(COLUMNS.user, COLUMNS.rank)


def make_demo(root: Path, *, n_users: int = DEMO_USERS, seed: int = 0) -> Path:
    """Write `solution.csv`, `manifest.csv` and `submissions/TEAM/FILE` under `root` and return
    the manifest's path. The teams show every rule of the boards:

    alpha improves and selects its better file; charlie uploads alpha's file byte for byte,
    later (an exact tie, broken by time); bravo overfits the public users (falls at the end);
    echo is strong on private users only (climbs), and selects a file that is rejected (so its
    best public files count); foxtrot and golf differ from the baseline by a handful of users
    (one tier); golf selects two files that are not its best public one; delta only
    has a rejected file (never ranked).
    """
    comp = make_competition(n_users, seed=seed)
    solution, base = comp.solution, comp.submission
    users = solution.unique(COLUMNS.user, maintain_order=True).select(COLUMNS.user, "stage")
    public = users.filter(pl.col("stage") == "public").get_column(COLUMNS.user)
    private = users.filter(pl.col("stage") == "private").get_column(COLUMNS.user)
    rng = np.random.default_rng(seed)

    def some(ids: pl.Series, share: float) -> pl.Series:
        return ids.sample(fraction=share, seed=int(rng.integers(1 << 31)))

    everyone = users.get_column(COLUMNS.user)
    alpha2 = oracle(base, solution, some(everyone, 0.15))
    files: dict[tuple[str, str], pl.DataFrame | str] = {
        ("alpha", "baseline.csv"): base,
        ("alpha", "tuned.csv"): alpha2,
        ("bravo", "overfit.csv"): oracle(base, solution, some(public, 0.4)),
        ("bravo", "damaged.csv"): junk(base, some(everyone, 0.2)),
        ("charlie", "copy.csv"): alpha2,
        ("delta", "partial.csv"): base.join(users.head(30), on=COLUMNS.user, how="anti"),
        ("echo", "hidden-gem.csv"): junk(
            oracle(base, solution, some(private, 0.4)), some(public, 0.1)
        ),
        ("echo", "semicolons.csv"): f"{COLUMNS.user};{COLUMNS.item};{COLUMNS.rank}\n",
        ("foxtrot", "nudge.csv"): oracle(base, solution, some(everyone, 0.01)),
        ("golf", "nudge.csv"): oracle(base, solution, some(everyone, 0.012)),
        ("golf", "worse.csv"): junk(base, some(everyone, 0.3)),
        ("golf", "mixed.csv"): oracle(junk(base, some(public, 0.1)), solution, some(private, 0.1)),
    }
    log = [
        Entry("alpha", "baseline.csv", 1),
        Entry("bravo", "overfit.csv", 2),
        Entry("golf", "nudge.csv", 3),
        Entry("foxtrot", "nudge.csv", 4),
        Entry("alpha", "tuned.csv", 5, selected=True),
        Entry("delta", "partial.csv", 6),
        Entry("bravo", "damaged.csv", 7),
        Entry("charlie", "copy.csv", 8),
        Entry("echo", "hidden-gem.csv", 9),
        Entry("echo", "semicolons.csv", 10, selected=True),
        Entry("golf", "worse.csv", 11, selected=True),
        Entry("golf", "mixed.csv", 12, selected=True),
    ]
    root.mkdir(parents=True, exist_ok=True)
    solution.write_csv(root / "solution.csv")
    for (team, name), content in files.items():
        path = root / "submissions" / team / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, str):
            path.write_text(content, encoding="utf-8")
        else:
            content.write_csv(path)
    manifest = root / "manifest.csv"
    with manifest.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle, lineterminator="\n")
        writer.writerow(["team", "path", "submitted_at", "selected"])
        for entry in log:
            when = iso(START + timedelta(hours=entry.hours))
            path_text = f"submissions/{entry.team}/{entry.name}"
            writer.writerow([entry.team, path_text, when, "yes" if entry.selected else ""])
    return manifest
