"""`scorer ndcg`: one list ranked by predicted scores, from JSON to compact JSON."""

from __future__ import annotations

import json

from scorer.metrics import ndcg_from_scores

#: Decimals of every number `scorer ndcg` prints.
DECIMALS = 6


def ndcg_json(text: str) -> str:
    """Read {"y_true": [...], "y_score": [...], "K": k}; return compact JSON with dcg, idcg
    and ndcg rounded to 6 decimals. Any malformed input raises `ValueError` with one line."""
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
    missing = [key for key in ("y_true", "y_score", "K") if key not in data]
    if missing:
        raise ValueError(f"missing field{'s' if len(missing) > 1 else ''}: {', '.join(missing)}")
    extra = sorted(set(data) - {"y_true", "y_score", "K"})
    if extra:
        raise ValueError(f"unexpected field{'s' if len(extra) > 1 else ''}: {', '.join(extra)}")
    y_true, y_score, k = data["y_true"], data["y_score"], data["K"]
    for name, value in (("y_true", y_true), ("y_score", y_score)):
        if not isinstance(value, list):
            raise ValueError(f"{name} must be a list, got {type(value).__name__}")
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise ValueError(f"K = {json.dumps(k)}; expected an integer >= 1")
    result = ndcg_from_scores(y_true, y_score, k)
    return json.dumps(
        {name: _round(getattr(result, name)) for name in ("dcg", "idcg", "ndcg")},
        separators=(",", ":"),
    )


def _round(value: float) -> float:
    return round(value, DECIMALS)
