"""NDCG@20 with pytrec_eval (the `pytrec-eval-terrier` wheel): trec_eval's ndcg_cut.20, with
binary qrels, gain = relevance and discount 1 / log2(rank + 1), ideal from all relevant docs:
the competition's definition. Run it with the peers' venv (bench/requirements-peers.txt).

    bench/.venv-peers/bin/python bench/baselines/pytrec_scorer.py SUBMISSION.csv SOLUTION.csv
"""

from __future__ import annotations

import sys

import pytrec_eval
from common import read_qrels, read_run, report


def main(submission: str, solution: str) -> None:
    qrels, stage = read_qrels(solution)
    run = read_run(submission)
    judged = {u: docs for u, docs in qrels.items() if docs}  # trec_eval skips empty queries
    evaluator = pytrec_eval.RelevanceEvaluator(judged, {"ndcg_cut.20"})
    scores = evaluator.evaluate(run)
    report("pytrec_eval", {u: m["ndcg_cut_20"] for u, m in scores.items()}, stage)


if __name__ == "__main__":
    main(*sys.argv[1:3])
