"""NDCG@20 with ranx ("ndcg@20": Järvelin's gain = relevance, discount 1 / log2(rank + 1), ideal
from all relevant docs; binary qrels make it the competition's definition). Run it with the
peers' venv (bench/requirements-peers.txt).

    bench/.venv-peers/bin/python bench/baselines/ranx_scorer.py SUBMISSION.csv SOLUTION.csv
"""

from __future__ import annotations

import sys
import warnings

from common import read_qrels, read_run, report
from ranx import Qrels, Run, evaluate


def main(submission: str, solution: str) -> None:
    qrels, stage = read_qrels(solution)
    judged = Qrels({u: docs for u, docs in qrels.items() if docs})
    run = Run(read_run(submission))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # numba's uint64 -> int64 cast warning, harmless here
        evaluate(judged, run, "ndcg@20")
    report("ranx", dict(run.scores["ndcg@20"]), stage)


if __name__ == "__main__":
    main(*sys.argv[1:3])
