"""A straightforward pure-Python NDCG@20 scorer, the kind of script organisers write: the csv
module, dicts and sets, math.log2; the same metric and policy as `scorer` (a user with no lost
pairs scores 0 and counts), with the basic checks such a script has.

    python bench/baselines/dict_scorer.py SUBMISSION.csv SOLUTION.csv
"""

from __future__ import annotations

import csv
import json
import math
import sys

K = 20


def read_solution(path: str) -> tuple[dict[str, set[str]], dict[str, str]]:
    lost: dict[str, set[str]] = {}
    stage: dict[str, str] = {}
    with open(path, newline="", encoding="utf-8") as handle:
        rows = csv.reader(handle)
        header = next(rows)
        u, e, s = header.index("user_id"), header.index("edition_id"), header.index("stage")
        for row in rows:
            user = row[u]
            stage[user] = row[s]
            editions = lost.setdefault(user, set())
            if row[e]:
                editions.add(row[e])
    return lost, stage


def read_submission(path: str) -> dict[str, dict[int, str]]:
    ranked: dict[str, dict[int, str]] = {}
    with open(path, newline="", encoding="utf-8") as handle:
        rows = csv.reader(handle)
        header = next(rows)
        u, e, r = header.index("user_id"), header.index("edition_id"), header.index("rank")
        for row in rows:
            ranks = ranked.setdefault(row[u], {})
            rank = int(row[r])
            if not 1 <= rank <= K or rank in ranks:
                sys.exit(f"user {row[u]}: bad or repeated rank {rank}")
            ranks[rank] = row[e]
    return ranked


def ndcg(ranks: dict[int, str], truth: set[str]) -> float:
    dcg = sum(1 / math.log2(r + 1) for r in sorted(ranks) if ranks[r] in truth)
    idcg = sum(1 / math.log2(r + 1) for r in range(1, min(len(truth), K) + 1))
    return dcg / idcg if idcg > 0 else 0.0


def main(submission: str, solution: str) -> None:
    lost, stage = read_solution(solution)
    ranked = read_submission(submission)
    for user, ranks in ranked.items():
        if user not in lost:
            sys.exit(f"user {user} is not a target user")
        if len(ranks) != K or len(set(ranks.values())) != K:
            sys.exit(f"user {user}: expected {K} distinct editions")
    if len(ranked) != len(lost):
        sys.exit(f"{len(lost) - len(ranked)} target users are missing")
    scores = {user: ndcg(ranked[user], truth) for user, truth in lost.items()}
    result: dict[str, object] = {"tool": "dict"}
    users: dict[str, int] = {}
    for split in ("overall", "public", "private"):
        values = [v for u, v in scores.items() if split == "overall" or stage[u] == split]
        result[split] = math.fsum(values) / len(values) if values else None
        users[split] = len(values)
    result["users"] = users
    print(json.dumps(result))


if __name__ == "__main__":
    main(*sys.argv[1:3])
