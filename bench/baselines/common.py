"""Reading shared by the peer baselines: the files into the dicts of dicts that pytrec_eval and
ranx take (string ids; run scores K + 1 - rank, so the tools rank exactly as the file does), and
the split means with `scorer`'s policy for a user with no lost pairs (scores 0, counts)."""

from __future__ import annotations

import csv
import json
import math
from collections.abc import Mapping

K = 20


def read_qrels(path: str) -> tuple[dict[str, dict[str, int]], dict[str, str]]:
    """Binary qrels (every lost pair has relevance 1) and each user's stage."""
    qrels: dict[str, dict[str, int]] = {}
    stage: dict[str, str] = {}
    with open(path, newline="", encoding="utf-8") as handle:
        rows = csv.reader(handle)
        header = next(rows)
        u, e, s = header.index("user_id"), header.index("edition_id"), header.index("stage")
        for row in rows:
            stage[row[u]] = row[s]
            judged = qrels.setdefault(row[u], {})
            if row[e]:
                judged[row[e]] = 1
    return qrels, stage


def read_run(path: str) -> dict[str, dict[str, float]]:
    run: dict[str, dict[str, float]] = {}
    with open(path, newline="", encoding="utf-8") as handle:
        rows = csv.reader(handle)
        header = next(rows)
        u, e, r = header.index("user_id"), header.index("edition_id"), header.index("rank")
        for row in rows:
            run.setdefault(row[u], {})[row[e]] = float(K + 1 - int(row[r]))
    return run


def report(tool: str, per_user: Mapping[str, float], stage: Mapping[str, str]) -> None:
    """Print the split means as one JSON line. Users the tool did not score (no lost pairs: the
    tools leave out a query without relevant documents) score 0.0, as in `scorer`."""
    result: dict[str, object] = {"tool": tool}
    users: dict[str, int] = {}
    for split in ("overall", "public", "private"):
        values = [float(per_user.get(u, 0.0)) for u, s in stage.items() if split in ("overall", s)]
        result[split] = math.fsum(values) / len(values) if values else None
        users[split] = len(values)
    result["users"] = users
    result["unscored"] = sum(1 for u in stage if u not in per_user)
    print(json.dumps(result))
