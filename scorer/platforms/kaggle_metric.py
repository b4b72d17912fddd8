"""Kaggle metric: the mean of one metric@k over the users of one leaderboard, with scorer's rules.

`scorer kit kaggle` writes this file as the competition's metric with `SPEC` filled in for the
competition. It needs nothing outside Kaggle's image: Python (3.8 or later), numpy, pandas and
the standard library; nothing is installed when it runs.

Kaggle calls `score(solution, submission, row_id_column_name)` once for the public users and
once for the private ones, each frame holding that leaderboard's rows only, and routes errors
by class name: a `ParticipantVisibleError`'s message is shown to the participant, anything
else to the host only. Both frames are wide, one row a user: the user column and the list
column (the ranked ids separated by spaces; the solution's cell holds the user's relevant ids,
empty for none).

A call that sees one split must not tell which users share it: a rejected file is named only
for problems of its header (the same in both calls); any problem of a row gets one fixed
sentence that points to `scorer validate` with the targets file, which reports every problem
with its line. The rules are scorer's (task.md, "The wide submission format"), held equal to
`scorer score` by tests/platforms/test_kit_kaggle.py.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from typing import Any

import numpy as np
import pandas as pd

# --- the competition (written by `scorer kit kaggle`) ---
SPEC: dict[str, Any] = {
    "name": "lost items",
    "k": 20,
    "metric": "ndcg",
    "rows": "exactly",
    "empty_users": "zero",
    "user_column": "user_id",
    "list_column": "edition_ids",
    "user_ids": "integer",
    "item_ids": "integer",
    "max_line": 4096,
}
# --- end of the competition ---

#: The largest integer id (int64), and the longest text id in bytes of UTF-8.
MAX_ID = 2**63 - 1
MAX_TEXT_ID = 256

#: More columns than this is refused before any is read.
MAX_COLUMNS = 1000

#: A frame is refused for its row count alone past twice the rows a valid one has, and this.
WHOLE_ROWS_FLOOR = 1_000_000

#: An integer id: an optional '+' and ASCII digits (spaces or tabs around it are dropped).
_INTEGER = re.compile(r"\+?[0-9]+")

#: An id written in ASCII digits alone: one pandas may have read as a number.
_DIGITS = re.compile(r"[0-9]+")

#: What a text id may not hold: whitespace or a control character.
_NOT_IN_TEXT_ID = re.compile(r"[\s\x00-\x1f\x7f]")

#: The separators of a list cell: spaces, tabs and commas, a run of them counting as one.
_SEPARATORS = re.compile(r"[ \t,]+")

#: Ids told apart by leading zeros alone, when one file's column was read as numbers.
ZEROS_LOST = (
    "pandas read the {column} column of one file as numbers and of the other as text, so "
    "those ids lost their leading zeros, and ids that differ in those zeros alone "
    "({example}) can no longer be told apart; read both files as text: "
    "pd.read_csv(path, dtype=str, keep_default_na=False)"
)

#: What a participant reads for any problem of a row: the same words whatever the rows.
ROW_PROBLEMS = (
    "submission rejected: some rows break the submission rules. Kaggle checks the public "
    "and the private users one part at a time, so this message names no row, user or "
    "count. Run `scorer validate submission.csv --targets targets.csv` (targets.csv is on "
    "the competition's data page) to see every problem with its line."
)


class ParticipantVisibleError(Exception):
    """Kaggle shows this error's message to the participant."""


class HostVisibleError(Exception):
    """The host's side failed (the solution, the call); Kaggle shows it to the host only."""


def score(solution: pd.DataFrame, submission: pd.DataFrame, row_id_column_name: str) -> float:
    """The mean of the competition's metric@k over the users of `solution`.

    `row_id_column_name` names the user column in both frames (read as the competition's
    user column); a `Usage` column is dropped. A user without relevant ids scores 0 and counts
    (`empty_users` "zero") or is left out ("exclude").
    """
    user, listed = SPEC["user_column"], SPEC["list_column"]
    solution = _renamed(solution, row_id_column_name, "solution")
    truth = _relevant(solution)
    frame = _renamed(submission, row_id_column_name, "submission")
    header = _header_problems(frame, user, listed)
    if header:
        lines = "\n".join(f"  [{code}] {message}" for code, message in header)
        raise ParticipantVisibleError(
            f"submission rejected: the file's columns break the submission rules:\n{lines}"
        )
    # Text ids that pandas read as numbers on one side only match through the solution's ids.
    users = _by_value(solution[user], frame[user], truth, SPEC["user_ids"])
    every: set[object] = set().union(*truth.values())
    items = _by_value(solution[listed], frame[listed], every, SPEC["item_ids"])
    ranked = _ranked(frame, truth, users)
    if ranked is None:
        raise ParticipantVisibleError(ROW_PROBLEMS)
    values = [
        user_score(_through(ranked[who], items, listed), relevant)
        for who, relevant in truth.items()
        if relevant or SPEC["empty_users"] == "zero"
    ]
    if not values:
        raise HostVisibleError(
            "no user of this leaderboard has a relevant id, and users without one are "
            "left out (empty_users = exclude): there is no mean to take"
        )
    return math.fsum(values) / len(values)  # the exact sum, rounded once


def user_score(items: list[object], relevant: set[object]) -> float:
    """The metric@k of one user's ranked items against the user's relevant ones (task.md,
    "The metric"): binary relevance, positions past k ignored. Sums are taken term by term in
    rank order, as scorer takes them, so both give the same bits."""
    k, metric = int(SPEC["k"]), str(SPEC["metric"])
    hits = [item in relevant for item in items[:k]]
    n = len(relevant)
    found = sum(hits)
    if metric == "precision":
        return found / k
    if metric == "hit_rate":
        return 1.0 if found else 0.0
    if not n:
        return 0.0
    if metric == "recall":
        return found / n
    if metric == "mrr":
        return 1.0 / (hits.index(True) + 1) if found else 0.0
    if metric == "map":
        total, seen = 0.0, 0
        for rank, hit in enumerate(hits, start=1):
            if hit:
                seen += 1
                total += seen / rank
        return total / min(n, k)
    dcg = idcg = 0.0
    for rank, hit in enumerate(hits, start=1):
        if hit:
            dcg += discount(rank)
    for rank in range(1, min(n, k) + 1):
        idcg += discount(rank)
    return dcg / idcg


def discount(rank: int) -> float:
    """1 / log2(rank + 1): 1 at rank 1, 1 / log2(3) at rank 2, ..."""
    return 1.0 / math.log2(rank + 1)


def _renamed(frame: object, row_id: str, role: str) -> pd.DataFrame:
    """The frame with its row id column named as the competition names its users."""
    if not isinstance(frame, pd.DataFrame):
        raise HostVisibleError(f"the {role} is a {type(frame).__name__}; expected a DataFrame")
    user = SPEC["user_column"]
    if row_id != user and row_id in frame.columns and user not in frame.columns:
        frame = frame.rename(columns={row_id: user})
    return frame


def _header_problems(frame: pd.DataFrame, user: str, listed: str) -> list[tuple[str, str]]:
    """The header's problems as (code, message): the same in the public and the private call."""
    names = [str(name) for name in frame.columns]
    if len(names) > MAX_COLUMNS:
        return [
            (
                "too_many_columns",
                f"submission: the table has {len(names):,} columns; at most {MAX_COLUMNS:,} "
                "columns are accepted",
            )
        ]
    problems: list[tuple[str, str]] = []
    for name in (user, listed):
        if name not in names:
            problems.append(
                (
                    "missing_column",
                    f"submission: column {name!r} is missing; expected the columns {user},{listed}",
                )
            )
    seen: set[str] = set()
    for name in names:
        if name in seen:
            problems.append(
                ("duplicate_column", f"submission: column {_shown(name)} appears more than once")
            )
        elif name not in (user, listed):
            problems.append(
                (
                    "unknown_column",
                    f"submission: unexpected column {_shown(name)}; expected only {user}, {listed}",
                )
            )
        seen.add(name)
    return problems


def _relevant(frame: pd.DataFrame) -> dict[object, set[object]]:
    """Each user of the solution with the user's relevant ids; a broken solution is the
    host's error, with the details (Kaggle shows them to the host only)."""
    user, listed = SPEC["user_column"], SPEC["list_column"]
    missing = [name for name in (user, listed) if name not in frame.columns]
    if missing:
        raise HostVisibleError(f"the solution file is broken: it has no column {missing[0]!r}")
    truth: dict[object, set[object]] = {}
    for row, (cell, ids) in enumerate(zip(frame[user], frame[listed]), start=1):
        who = _id(_text(cell, user=True), SPEC["user_ids"])
        words = _words(_text(ids, user=False))
        items = [_id(word, SPEC["item_ids"]) for word in words]
        if who is None or who in truth:
            wrong = "is not a valid user id" if who is None else "is listed twice"
            raise HostVisibleError(f"the solution file is broken: row {row}: user {cell!r} {wrong}")
        seen: set[object] = set()
        for word, item in zip(words, items):
            if item is None or item in seen:
                wrong = "is not a valid id" if item is None else "is listed twice"
                raise HostVisibleError(
                    f"the solution file is broken: row {row}: id {word!r} of user {cell!r} {wrong}"
                )
            seen.add(item)
        truth[who] = seen
    return truth


def _numbers(column: pd.Series) -> bool:
    """Whether pandas read a column as numbers: then an id of digits lost its leading zeros."""
    return any(
        isinstance(value, (int, float, np.integer, np.floating))
        and not isinstance(value, (bool, np.bool_))
        and value == value  # an empty cell is NaN in a column of text too
        for value in column
    )


def _by_value(
    truth: pd.Series, given: pd.Series, ids: Iterable[object], kind: str
) -> dict[int, list[str]] | None:
    """For text ids whose column pandas read as numbers in one file only (a column of one
    id a row, every id all digits: `0174884004` became 174884004): the solution's ids of
    digits by their value, to match the other file's ids through (two ids may share one,
    `007` and `0007`: which one a number meant is lost). None when both files were read
    alike, so ids match as written."""
    if kind != "text" or _numbers(truth) == _numbers(given):
        return None
    found: dict[int, list[str]] = {}
    for value in ids:
        if isinstance(value, str) and _DIGITS.fullmatch(value):
            found.setdefault(int(value), []).append(value)
    return found


def _through(
    values: list[object], by_value: dict[int, list[str]] | None, column: str
) -> list[object]:
    """Ids as the solution writes them (`_by_value`): an id of digits is the solution's id
    of its value, if it has one (else it is relevant to no one, whatever it was). A
    `HostVisibleError` where that is lost: the solution's ids of the value are several, or
    two of `values` become one."""
    if by_value is None:
        return values
    out: list[object] = []
    seen: dict[object, object] = {}  # an id as the solution writes it -> as given
    for value in values:
        digits = isinstance(value, str) and _DIGITS.fullmatch(value) is not None
        same = by_value.get(int(str(value)), []) if digits else []
        if len(same) > 1:
            twins = " and ".join(sorted(same))
            raise HostVisibleError(ZEROS_LOST.format(column=column, example=twins))
        found = same[0] if same else value
        if found in seen and seen[found] != value:
            twins = f"{seen[found]} and {value}"
            raise HostVisibleError(ZEROS_LOST.format(column=column, example=twins))
        seen[found] = value
        out.append(found)
    return out


def _ranked(
    frame: pd.DataFrame,
    truth: dict[object, set[object]],
    users: dict[int, list[str]] | None = None,
) -> dict[object, list[object]] | None:
    """Each user's ranked ids, or None if any row breaks a rule: a user id the competition
    takes, listed once, a target user; the ids valid and none repeated; exactly k ids a user
    (`rows` "exactly") or at most k ("at_most"); every target user listed. `users`: as
    `_by_value` gives them, to read each user through."""
    user, listed, k = SPEC["user_column"], SPEC["list_column"], SPEC["k"]
    if len(frame) > max(2 * len(truth), WHOLE_ROWS_FLOOR):
        return None
    ranked: dict[object, list[object]] = {}
    allowed = range(k, k + 1) if SPEC["rows"] == "exactly" else range(k + 1)
    # A cell is refused before it is split past the longest line a valid file has (scorer's
    # line cap, from k and the id kinds): no cell of a valid file is that long.
    cap = int(SPEC["max_line"])
    for cell, ids in zip(frame[user], frame[listed]):
        text, words = _text(cell, user=True), _text(ids, user=False)
        if len(text) > cap or len(words) > cap:
            return None
        who = _id(text, SPEC["user_ids"])
        if who is not None:
            who = _through([who], users, user)[0]
        items = [_id(word, SPEC["item_ids"]) for word in _words(words)]
        if who is None or who in ranked or who not in truth or None in items:
            return None
        if len(set(items)) < len(items) or len(items) not in allowed:
            return None
        ranked[who] = items
    return ranked if len(ranked) == len(truth) else None


def _text(value: object, user: bool) -> str:
    """A cell as the text it was written as. pandas reads a column of numbers as integers, or
    as floats once a cell is empty: an empty cell is empty text, and a whole float of a list
    cell (a user with one id) the integer it was; a user id written as a float stays one."""
    if isinstance(value, (list, tuple, dict, set, np.ndarray)):  # no cell of a CSV file
        return str(value)
    if value is None or (not isinstance(value, str) and bool(pd.isna(value))):  # type: ignore[call-overload]
        return ""
    if isinstance(value, (bool, np.bool_)):
        return str(value)
    if isinstance(value, (int, np.integer)):
        return str(int(value))
    if isinstance(value, (float, np.floating)):
        number = float(value)
        return str(int(number)) if number.is_integer() and not user else repr(number)
    return str(value)


def _words(cell: str) -> list[str]:
    """A list cell's ids: split on spaces, tabs or commas; an empty cell holds none."""
    return [word for word in _SEPARATORS.split(cell) if word]


def _id(text: str, kind: str) -> object:
    """The value of an id cell (an int, or the text as written), or None if the kind's rule
    refuses it: integers are digits with an optional '+' (0101 is 101), at most 2**63 - 1;
    text ids are 1 to 256 bytes with no whitespace or control character."""
    if kind == "text":
        size = len(text.encode("utf-8", "surrogatepass"))
        return text if 0 < size <= MAX_TEXT_ID and not _NOT_IN_TEXT_ID.search(text) else None
    digits = text.strip(" \t")
    if not _INTEGER.fullmatch(digits):
        return None
    value = int(digits)
    return value if value <= MAX_ID else None


def _shown(value: object) -> str:
    """A value for a message: quoted, at most 40 characters, control characters escaped."""
    text = str(value)
    return repr(text if len(text) <= 40 else text[:39] + "…")
