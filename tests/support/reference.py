"""A slow, obviously correct reference scorer and validator: plain Python, no polars, no scorer.

Everything here is written from the specification (issues 2 and 3), not from `scorer`'s code:
discounts are ln 2 / ln(r + 1) in 40-digit decimals, every other quantity is an exact fraction,
and a result becomes a float only at the very end. A competition's rules (k, metric, row rule,
column names, split values) are a `Rules` value of its own here, read apart from scorer's spec;
`score` and `problems` default to those of lost items.
"""

from __future__ import annotations

import csv
import re
import tomllib
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

#: An integer cell as pandas' `read_csv` (the official script's reader) takes one: spaces or tabs
#: around it, an optional '+', ASCII digits.
_DIGITS = re.compile(r"[ \t]*\+?([0-9]+)[ \t]*")
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

#: The row rules: every target user has exactly k ranked items, or 0..k of them.
ROW_RULES = ("exactly", "at_most")

#: The largest k a competition may have.
MAX_K = 100


#: An id's value: an integer, or text as written (`Rules.user_ids`).
Id = int | str


@dataclass(frozen=True)
class Rules:
    """One competition's rules as the reference reads them; the defaults are lost items'.

    `k` ranked positions a user; `metric` ranks the leaderboard (every metric is computed);
    `rows` is "exactly" (k items a user) or "at_most" (0..k: an empty list in the wide layout,
    1..k rows in the long one, where a missing rank is an empty position). Files name their
    columns `user`, `item`, `rank` (long layout) and `list` (wide layout: one line a user,
    items in rank order separated by single spaces); a solution names its users and items as
    the submission does. The solution's split column is the first of `split_columns` it has;
    its values name `public`, `private` and `ignored` users, compared without regard to case.
    `empty_users` is "zero" (a user with no relevant item scores 0 and counts) or "exclude"
    (left out of every mean).
    """

    k: int = K
    metric: str = "ndcg"
    rows: str = "exactly"
    user: str = "user_id"
    item: str = "edition_id"
    rank: str = "rank"
    list: str = "edition_ids"
    split_columns: tuple[str, ...] = ("stage", "Usage")
    public: str = "public"
    private: str = "private"
    ignored: str = "ignored"
    empty_users: str = "zero"
    #: What ids are: "integer" (digits, `0101` is 101) or "text" (matched as written).
    user_ids: str = "integer"
    item_ids: str = "integer"

    def user_of(self, cell: str) -> Id:
        """A user id cell's value."""
        return cell if self.user_ids == "text" else int(cell)

    def item_of(self, cell: str) -> Id:
        """An item id cell's value."""
        return cell if self.item_ids == "text" else int(cell)

    def __post_init__(self) -> None:
        if type(self.k) is not int or not 1 <= self.k <= MAX_K:
            raise ValueError(f"k = {self.k!r}; expected an integer 1..{MAX_K}")
        if self.metric not in METRICS:
            raise ValueError(f"metric = {self.metric!r}; expected one of {METRICS}")
        if self.rows not in ROW_RULES:
            raise ValueError(f"rows = {self.rows!r}; expected one of {ROW_RULES}")
        if len({v.lower() for v in (self.public, self.private, self.ignored)}) != 3:
            raise ValueError("the public, private and ignored values must differ")

    @classmethod
    def lost_items(cls) -> Rules:
        """The first competition: NDCG@20, exactly 20 rows a user, user_id/edition_id/rank."""
        return cls()

    @classmethod
    def load(cls, path: Path) -> Rules:
        """The rules of a competition.toml: top-level k, metric, rows and empty_users, a
        [columns] table (user, item, rank, list), an [ids] table (user, item) and a [splits]
        table (columns, public, private, ignored). What is left out takes the defaults; keys
        the reference has no use for (name, relevance, words) are skipped."""
        data = tomllib.loads(path.read_text(encoding="utf-8"))
        columns = data.get("columns", {})
        splits = data.get("splits", {})
        values = {key: data[key] for key in ("k", "metric", "rows", "empty_users") if key in data}
        values |= {key: columns[key] for key in ("user", "item", "rank", "list") if key in columns}
        values |= {key: splits[key] for key in ("public", "private", "ignored") if key in splits}
        values |= {f"{key}_ids": kind for key, kind in data.get("ids", {}).items()}
        if "columns" in splits:
            values["split_columns"] = tuple(splits["columns"])
        return cls(**values)

    def stage(self, value: str) -> str:
        """The stage a split cell names: "public", "private" or "ignored"."""
        for stage in ("public", "private", "ignored"):
            if value.lower() == getattr(self, stage).lower():
                return stage
        raise ValueError(f"split value {value!r}; expected {self.public}/{self.private}/...")


@dataclass(frozen=True)
class UserScore:
    """Every metric of one scored user, as exact values turned into floats at the end."""

    user_id: Id
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

    users: dict[Id, UserScore]
    splits: dict[str, dict[str, float] | None]
    ignored: int


def read_csv(path: Path) -> list[dict[str, str]]:
    """A CSV file as one dict a row, every cell as text."""
    with path.open(newline="", encoding="utf-8-sig") as handle:
        return [dict(row) for row in csv.DictReader(handle)]


def score(submission: Iterable[Row], solution: Iterable[Row], no_lost: str = "zero") -> Scores:
    """Score a valid lost-items submission against a valid solution (see `score_rules`)."""
    return score_rules(submission, solution, Rules.lost_items(), no_lost)


def score_rules(
    submission: Iterable[Row], solution: Iterable[Row], rules: Rules, no_lost: str | None = None
) -> Scores:
    """Score a valid submission against a valid solution, both as rows of text cells.

    Submission: long (user, item, rank) or wide (user, list), told apart by the list column.
    Solution: user, item ('' for a user with no lost items), an optional split column (the
    first of `rules.split_columns` present) and an optional `grade` (0..10, default 1). The
    lost items are those with grade > 0. `no_lost` is "zero" (a user without lost items scores
    0 and counts), "exclude" (left out) or None (the rules' `empty_users`).
    """
    no_lost = rules.empty_users if no_lost is None else no_lost
    if no_lost not in ("zero", "exclude"):
        raise ValueError(no_lost)
    stage_of: dict[Id, str | None] = {}
    grade_of: dict[Id, dict[Id, int]] = {}
    has_split = False
    for row in solution:
        user = rules.user_of(row[rules.user])
        split = next((row[c] for c in rules.split_columns if c in row), None)
        has_split = has_split or split is not None
        stage_of[user] = None if split is None else rules.stage(split)
        grades = grade_of.setdefault(user, {})
        if row[rules.item] != "":
            grades[rules.item_of(row[rules.item])] = int(row.get("grade") or 1)

    placed = positions(submission, rules)
    k = rules.k
    users: dict[Id, UserScore] = {}
    for user, stage in stage_of.items():
        if stage == "ignored":
            continue
        truth = grade_of[user]
        relevant = [g for g in truth.values() if g > 0]
        if not relevant and no_lost == "exclude":
            continue
        if user not in placed:
            raise ValueError(f"user {user} has no row: not a valid submission")
        grades = [0 if item is None else truth.get(item, 0) for item in placed[user]]
        n = len(relevant)
        users[user] = UserScore(
            user_id=user,
            stage=stage,
            n_relevant=n,
            hits=sum(hits(grades, k)),
            ndcg=ndcg(grades, k, relevant),
            recall=float(recall(grades, k, n)),
            precision=float(precision(grades, k)),
            hit_rate=float(hit_rate(grades, k)),
            mrr=float(reciprocal_rank(grades, k)),
            map=float(average_precision(grades, k, n)),
        )

    splits: dict[str, dict[str, float] | None] = {"overall": _means(list(users.values()))}
    for split in ("public", "private"):
        part = [u for u in users.values() if u.stage == split]
        splits[split] = _means(part) if has_split else None
    ignored = sum(1 for s in stage_of.values() if s == "ignored")
    return Scores(users=users, splits=splits, ignored=ignored)


def positions(submission: Iterable[Row], rules: Rules) -> dict[Id, list[Id | None]]:
    """Each user's items at positions 1, 2, ... (None for an empty position), at most k.

    Wide row (it has the list column): the items in the order written, '' for none. Long
    rows: the item at each rank 1..k; a rank nobody took is an empty position.
    """
    by_rank: dict[Id, dict[int, Id]] = {}
    placed: dict[Id, list[Id | None]] = {}
    for row in submission:
        user = rules.user_of(row[rules.user])
        if rules.list in row:
            cell = row[rules.list]
            placed[user] = [rules.item_of(i) for i in cell.split(" ")][: rules.k] if cell else []
        else:
            by_rank.setdefault(user, {})[int(row[rules.rank])] = rules.item_of(row[rules.item])
    for user, items in by_rank.items():
        last = max((r for r in items if r <= rules.k), default=0)
        placed[user] = [items.get(r) for r in range(1, last + 1)]
    return placed


def primary(scores: Scores, rules: Rules, split: str = "overall") -> float | None:
    """The leaderboard number: the mean of the competition's metric over a split."""
    means = scores.splits[split]
    return None if means is None else means[rules.metric]


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

#: Lost items' submission columns; another competition's are its rules' user, item and rank.
SUBMISSION_COLUMNS = ("user_id", "edition_id", "rank")

#: Codes that make the rest of a file unreadable: a report holding one holds nothing else.
STRUCTURAL = frozenset(
    {
        "file_not_found",
        "not_a_file",
        "file_too_large",
        "file_empty",
        "file_format",
        "file_encoding",
        "file_corrupt",
        "unsupported_compression",
        "too_many_rows",
        "too_large_for_memory",
        "too_many_columns",
        "no_rows",
        "bad_delimiter",
        "missing_column",
        "unknown_column",
        "duplicate_column",
        "column_type",
    }
)


def _id(cell: str) -> int | None:
    """A non-negative integer written in ASCII digits that fits 64 bits, or None."""
    found = _DIGITS.fullmatch(cell)
    if found is None:
        return None
    value = int(found.group(1))
    return value if value <= _INT64_MAX else None


def _text_id(cell: str) -> str | None:
    """A text id: 1 to 256 bytes of UTF-8, no whitespace, no control character (task.md,
    "Text ids"), or None."""
    size = len(cell.encode())
    bad = any(c.isspace() or ord(c) < 0x20 or ord(c) == 0x7F for c in cell)
    return cell if 0 < size <= 256 and not bad else None


def _rank(cell: str, k: int = K) -> int | None:
    value = _id(cell)
    return value if value is not None and 1 <= value <= k else None


def _unquote(cell: str) -> str:
    if len(cell) >= 2 and cell[0] == cell[-1] == '"':
        return cell[1:-1].replace('""', '"')
    return cell


def problems(text: str, targets: Iterable[Id], rules: Rules | None = None) -> Counter[str]:
    """The problems of a long-layout submission's CSV text (no quoted commas or newlines), as
    counts a code, under `rules` (lost items' by default): columns user, item and rank, ranks
    1..k, and exactly k rows a user, or 1..k for "at_most" (a user without rows is missing).
    Counting: one a bad cell or a bad line; one a repeated row (a user's rank or edition seen
    before); one a user for row count, missing and unknown users.

    A line with the wrong number of fields is judged no further, but for its user cell: a
    user written there is in the file, so it is not missing (the line is its problem). A
    bad cell is left out of
    the rules that need it: a row with a bad user id belongs to no user; a row with a bad rank
    still counts towards its user's rows but not in the repeated-rank rule; likewise a bad
    item id. Blank lines are skipped; line numbers do not matter here.
    """
    lines = text.lstrip("\ufeff").replace("\r\n", "\n").split("\n")
    header = [_unquote(c.strip()) for c in lines[0].split(",")]
    rules = Rules.lost_items() if rules is None else rules
    columns = (rules.user, rules.item, rules.rank)
    found: Counter[str] = Counter()
    for name in columns:
        if name not in header:
            found["missing_column"] += 1
    seen: set[str] = set()
    for name in header:
        if name in seen:
            found["duplicate_column"] += 1
        elif name not in columns:
            found["unknown_column"] += 1
        seen.add(name)
    if found:
        return found
    body = [line for line in lines[1:] if line.strip()]
    if not body:
        return Counter({"no_rows": 1})

    wanted = set(targets)
    rows: dict[Id, int] = Counter()
    ranks_seen: set[tuple[Id, int]] = set()
    editions_seen: set[tuple[Id, Id]] = set()
    unknown: set[Id] = set()
    refused: set[Id] = set()  # users of lines of the wrong number of fields
    read_user = _text_id if rules.user_ids == "text" else _id
    for line in body:
        fields = line.split(",")
        if len(fields) != len(header):
            found["field_count"] += 1
            at = header.index(rules.user)
            user = read_user(_unquote(fields[at])) if at < len(fields) else None
            refused |= {user} if user is not None else set()
            continue
        cell = dict(zip(header, (_unquote(f) for f in fields), strict=True))
        user = read_user(cell[rules.user])
        item = cell[rules.item]
        edition = _text_id(item) if rules.item_ids == "text" else _id(item)
        rank = _rank(cell[rules.rank], rules.k)
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
    allowed = range(rules.k, rules.k + 1) if rules.rows == "exactly" else range(1, rules.k + 1)
    found["wrong_row_count"] += sum(1 for n in rows.values() if n not in allowed)
    found["missing_user"] += len(wanted - set(rows) - refused)
    found["unknown_user"] += len(unknown)
    return +found  # drop zero counts


def codes(text: str, targets: Iterable[Id], rules: Rules | None = None) -> set[str]:
    """The set of problem codes of a submission's CSV text; empty when it is valid."""
    return set(problems(text, targets, rules))
