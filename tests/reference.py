"""A slow, obviously correct reference scorer and validator: plain Python, no polars, no scorer.

Everything here is written from the specification (issues 2 and 3), not from `scorer`'s code:
discounts are ln 2 / ln(r + 1) in 40-digit decimals, every other quantity is an exact fraction,
and a result becomes a float only at the very end.
"""

from __future__ import annotations

import csv
import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal, localcontext
from fractions import Fraction
from functools import cache
from pathlib import Path

#: The competition's cut-off: 20 ranked editions a user.
K = 20

#: Digits of the decimal arithmetic: far beyond a float's 17, so rounding is the float's alone.
PRECISION = 40

#: The metrics of one user, in report order.
METRICS = ("ndcg", "recall", "precision", "hit_rate", "mrr", "map")

_DIGITS = re.compile(r"[0-9]+")
_INT64_MAX = 2**63 - 1


# ---------------------------------------------------------------------------------------------
# One list
# ---------------------------------------------------------------------------------------------


@cache
def discount(rank: int) -> Decimal:
    """1 / log2(rank + 1) = ln 2 / ln(rank + 1), to 40 digits."""
    with localcontext() as ctx:
        ctx.prec = PRECISION
        return Decimal(2).ln() / Decimal(rank + 1).ln()


def gain(grade: int) -> int:
    """2^grade - 1: 1 for a binary hit, 0 for a miss."""
    return 2**grade - 1


def dcg(grades: Sequence[int], k: int) -> Decimal:
    """Σ_{r=1..min(k, n)} gain(g_r) / log2(r + 1), positions with grade 0 skipped."""
    with localcontext() as ctx:
        ctx.prec = PRECISION
        total = Decimal(0)
        for rank, grade in enumerate(grades, start=1):
            if rank > k:
                break
            if grade:
                total += gain(grade) * discount(rank)
        return total


def idcg(ideal: Sequence[int], k: int) -> Decimal:
    """DCG@k of every grade sorted from highest to lowest."""
    return dcg(sorted(ideal, reverse=True), k)


def ndcg(grades: Sequence[int], k: int, ideal: Sequence[int] | None = None) -> float:
    """DCG@k / IDCG@k, or 0 when IDCG@k = 0."""
    best = idcg(grades if ideal is None else ideal, k)
    if best == 0:
        return 0.0
    with localcontext() as ctx:
        ctx.prec = PRECISION
        return float(dcg(grades, k) / best)


def hits(grades: Sequence[int], k: int) -> list[int]:
    return [1 if g > 0 else 0 for g in grades[:k]]


def precision(grades: Sequence[int], k: int) -> Fraction:
    return Fraction(sum(hits(grades, k)), k)


def recall(grades: Sequence[int], k: int, n_relevant: int) -> Fraction:
    return Fraction(sum(hits(grades, k)), n_relevant) if n_relevant else Fraction(0)


def hit_rate(grades: Sequence[int], k: int) -> Fraction:
    return Fraction(1 if any(hits(grades, k)) else 0)


def reciprocal_rank(grades: Sequence[int], k: int) -> Fraction:
    ranks = [r for r, h in enumerate(hits(grades, k), start=1) if h]
    return Fraction(1, ranks[0]) if ranks else Fraction(0)


def average_precision(grades: Sequence[int], k: int, n_relevant: int) -> Fraction:
    """Σ over hit ranks r ≤ k of precision@r, divided by min(n_relevant, k); 0 without any."""
    if n_relevant == 0:
        return Fraction(0)
    flags = hits(grades, k)
    total = sum(
        (Fraction(sum(flags[:r]), r) for r in range(1, len(flags) + 1) if flags[r - 1]),
        Fraction(0),
    )
    return total / min(n_relevant, k)


def ranked_by_scores(y_true: Sequence[int], y_score: Sequence[float]) -> list[int]:
    """The grades in the order of the scores, highest first, ties by original index."""
    order = sorted(range(len(y_true)), key=lambda i: (-y_score[i], i))
    return [y_true[i] for i in order]


# ---------------------------------------------------------------------------------------------
# A competition
# ---------------------------------------------------------------------------------------------

Row = Mapping[str, str]


@dataclass(frozen=True)
class UserScore:
    """Every metric of one scored user, as exact values turned into floats at the end."""

    user_id: int
    stage: str | None
    n_relevant: int
    hits: int
    ndcg: float
    recall: float
    precision: float
    hit_rate: float
    mrr: float
    map: float


@dataclass(frozen=True)
class Scores:
    """Per-user scores and, per split, the number of users and the mean of every metric
    (None for a split with no users, and for public/private without a split column)."""

    users: dict[int, UserScore]
    splits: dict[str, dict[str, float] | None]
    ignored: int


def read_csv(path: Path) -> list[dict[str, str]]:
    """A CSV file as one dict a row, every cell as text."""
    with path.open(newline="", encoding="utf-8-sig") as handle:
        return [dict(row) for row in csv.DictReader(handle)]


def score(submission: Iterable[Row], solution: Iterable[Row], no_lost: str = "zero") -> Scores:
    """Score a valid submission against a valid solution, both as rows of text cells.

    Solution: user_id, edition_id ('' for a user with no lost pairs), an optional split column
    `stage` or `Usage` (public/private/ignored, any case) and an optional `grade` (0..10,
    default 1). The lost pairs are those with grade > 0. `no_lost` is "zero" (a user without
    lost pairs scores 0 and counts) or "exclude" (left out).
    """
    if no_lost not in ("zero", "exclude"):
        raise ValueError(no_lost)
    stage_of: dict[int, str | None] = {}
    grade_of: dict[int, dict[int, int]] = {}
    has_split = False
    for row in solution:
        user = int(row["user_id"])
        split = row.get("stage", row.get("Usage"))
        has_split = has_split or split is not None
        stage_of[user] = None if split is None else split.lower()
        grades = grade_of.setdefault(user, {})
        if row["edition_id"] != "":
            grades[int(row["edition_id"])] = int(row.get("grade") or 1)

    ranked: dict[int, dict[int, int]] = {}
    for row in submission:
        ranked.setdefault(int(row["user_id"]), {})[int(row["rank"])] = int(row["edition_id"])

    users: dict[int, UserScore] = {}
    for user, stage in stage_of.items():
        if stage == "ignored":
            continue
        truth = grade_of[user]
        relevant = [g for g in truth.values() if g > 0]
        if not relevant and no_lost == "exclude":
            continue
        by_rank = ranked[user]
        grades = [truth.get(by_rank[r], 0) for r in sorted(by_rank)]
        n = len(relevant)
        users[user] = UserScore(
            user_id=user,
            stage=stage,
            n_relevant=n,
            hits=sum(hits(grades, K)),
            ndcg=ndcg(grades, K, relevant),
            recall=float(recall(grades, K, n)),
            precision=float(precision(grades, K)),
            hit_rate=float(hit_rate(grades, K)),
            mrr=float(reciprocal_rank(grades, K)),
            map=float(average_precision(grades, K, n)),
        )

    splits: dict[str, dict[str, float] | None] = {"overall": _means(list(users.values()))}
    for split in ("public", "private"):
        part = [u for u in users.values() if u.stage == split]
        splits[split] = _means(part) if has_split else None
    ignored = sum(1 for s in stage_of.values() if s == "ignored")
    return Scores(users=users, splits=splits, ignored=ignored)


def _means(users: list[UserScore]) -> dict[str, float] | None:
    if not users:
        return None
    means: dict[str, float] = {"users": len(users)}
    for metric in METRICS:
        exact = sum((Fraction(getattr(u, metric)) for u in users), Fraction(0))
        means[metric] = float(exact / len(users))
    return means


# ---------------------------------------------------------------------------------------------
# The submission rules
# ---------------------------------------------------------------------------------------------

SUBMISSION_COLUMNS = ("user_id", "edition_id", "rank")


def _id(cell: str) -> int | None:
    """A non-negative integer written in ASCII digits that fits 64 bits, or None."""
    if not _DIGITS.fullmatch(cell):
        return None
    value = int(cell)
    return value if value <= _INT64_MAX else None


def _rank(cell: str) -> int | None:
    value = _id(cell)
    return value if value is not None and 1 <= value <= K else None


def _unquote(cell: str) -> str:
    if len(cell) >= 2 and cell[0] == cell[-1] == '"':
        return cell[1:-1].replace('""', '"')
    return cell


def problems(text: str, targets: Iterable[int]) -> Counter[str]:
    """The problems of a submission's CSV text (no quoted commas or newlines), as counts a
    code. Counting: one a bad cell or a bad line; one a repeated row (a user's rank or edition
    seen before); one a user for row count, missing and unknown users.

    A line with the wrong number of fields is judged no further. A bad cell is left out of
    the rules that need it: a row with a bad user_id belongs to no user; a row with a bad rank
    still counts towards its user's rows but not in the repeated-rank rule; likewise a bad
    edition_id. Blank lines are skipped; line numbers do not matter here.
    """
    lines = text.lstrip("\ufeff").replace("\r\n", "\n").split("\n")
    header = [_unquote(c.strip()) for c in lines[0].split(",")]
    found: Counter[str] = Counter()
    for name in SUBMISSION_COLUMNS:
        if name not in header:
            found["missing_column"] += 1
    seen: set[str] = set()
    for name in header:
        if name in seen:
            found["duplicate_column"] += 1
        elif name not in SUBMISSION_COLUMNS:
            found["unknown_column"] += 1
        seen.add(name)
    if found:
        return found
    body = [line for line in lines[1:] if line.strip()]
    if not body:
        return Counter({"no_rows": 1})

    wanted = set(targets)
    rows: dict[int, int] = Counter()
    ranks_seen: set[tuple[int, int]] = set()
    editions_seen: set[tuple[int, int]] = set()
    unknown: set[int] = set()
    for line in body:
        fields = line.split(",")
        if len(fields) != len(header):
            found["field_count"] += 1
            continue
        cell = dict(zip(header, (_unquote(f) for f in fields), strict=True))
        user = _id(cell["user_id"])
        edition = _id(cell["edition_id"])
        rank = _rank(cell["rank"])
        found["invalid_id"] += (user is None) + (edition is None)
        found["invalid_rank"] += rank is None
        if user is None:
            continue
        if user not in wanted:
            unknown.add(user)
            continue
        rows[user] += 1
        if rank is not None:
            if (user, rank) in ranks_seen:
                found["duplicate_rank"] += 1
            ranks_seen.add((user, rank))
        if edition is not None:
            if (user, edition) in editions_seen:
                found["duplicate_edition"] += 1
            editions_seen.add((user, edition))
    found["wrong_row_count"] += sum(1 for n in rows.values() if n != K)
    found["missing_user"] += len(wanted - set(rows))
    found["unknown_user"] += len(unknown)
    return +found  # drop zero counts


def codes(text: str, targets: Iterable[int]) -> set[str]:
    """The set of problem codes of a submission's CSV text; empty when it is valid."""
    return set(problems(text, targets))
