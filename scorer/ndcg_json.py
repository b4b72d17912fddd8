"""`scorer ndcg`: one list ranked by predicted scores, from JSON to compact JSON."""

from __future__ import annotations

import json

from scorer.metrics import ndcg_from_scores

#: Decimals of every number `scorer ndcg` prints.
DECIMALS = 6


#: The cut-off's names: `K` as sklearn-style scripts write it, `k` as a competition's TOML does.
CUTOFFS = ("K", "k")


def ndcg_json(text: str) -> str:
    """Read {"y_true": [...], "y_score": [...], "K": k} (or "k": k, not both); return compact
    JSON with dcg, idcg and ndcg rounded to 6 decimals. Any malformed input raises
    `ValueError` with one line."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValueError(
            f"malformed JSON: {exc.msg} at line {exc.lineno}, column {exc.colno}"
        ) from None
    except RecursionError:  # "[[[[…" thousands deep: the parser's stack, not a traceback
        raise ValueError("malformed JSON: nested too deeply") from None
    if not isinstance(data, dict):
        raise ValueError('expected a JSON object {"y_true": [...], "y_score": [...], "K": k}')
    cutoffs = [key for key in CUTOFFS if key in data]
    if len(cutoffs) > 1:  # two values for one thing: neither is assumed to win
        raise ValueError("both K and k given; expected one of them (they name the same cut-off)")
    name = cutoffs[0] if cutoffs else "K"
    missing = [key for key in ("y_true", "y_score") if key not in data]
    missing += [] if cutoffs else ["K (or k)"]
    if missing:
        raise ValueError(f"missing field{'s' if len(missing) > 1 else ''}: {', '.join(missing)}")
    extra = sorted(set(data) - {"y_true", "y_score", name})
    if extra:
        raise ValueError(f"unexpected field{'s' if len(extra) > 1 else ''}: {', '.join(extra)}")
    y_true, y_score, k = data["y_true"], data["y_score"], data[name]
    for field, value in (("y_true", y_true), ("y_score", y_score)):
        if not isinstance(value, list):
            raise ValueError(f"{field} must be a list, got {type(value).__name__}")
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise ValueError(f"{name} = {json.dumps(k)}; expected an integer >= 1")
    result = ndcg_from_scores(y_true, y_score, k)
    return json.dumps(
        {name: _round(getattr(result, name)) for name in ("dcg", "idcg", "ndcg")},
        separators=(",", ":"),
    )


def _round(value: float) -> float:
    return round(value, DECIMALS)
