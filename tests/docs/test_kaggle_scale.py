"""bench/kaggle_scale.py, issue 35's Kaggle-sized replay: the deadline day's queue
(bench/deadline.py) against cases worked by hand, and the replay end to end at its --quick
size. No time is asserted: speed is the benchmark's report."""

from __future__ import annotations

import importlib
import json
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import numpy as np
import pytest
from support.paths import ROOT

BENCH = ROOT / "bench"


def bench(name: str) -> ModuleType:
    """A module of bench/, which imports its neighbours as top-level modules."""
    if str(BENCH) not in sys.path:
        sys.path.insert(0, str(BENCH))
    return importlib.import_module(name)


deadline = bench("deadline")


def test_one_worker_serves_first_come_first_served() -> None:
    rng = np.random.default_rng(0)
    found = deadline.simulate(np.array([0.0, 1.0, 2.0, 40.0]), np.array([10.0]), 1, rng)
    assert found.waits.tolist() == [0.0, 10 - 1, 20 - 2, 0.0]
    assert found.responses.tolist() == [10.0, 10 + 9, 10 + 18, 10.0]
    assert found.most_queued == 2  # at 2.0: the uploads of 1.0 and 2.0 wait


def test_enough_workers_never_queue() -> None:
    rng = np.random.default_rng(0)
    when = np.sort(rng.random(50) * 100)
    found = deadline.simulate(when, np.array([3.0, 5.0]), 50, rng)
    assert found.waits.tolist() == [0.0] * 50
    assert set(found.responses.tolist()) <= {3.0, 5.0}
    assert found.p95() <= 5.0


def test_more_workers_are_never_slower() -> None:
    service = np.array([20.0, 30.0, 45.0])
    p95s = [deadline.day("rush", service, workers).p95(23) for workers in (8, 12, 16, 24)]
    assert p95s == sorted(p95s, reverse=True)


def test_a_day_has_its_uploads_spread_by_the_profile() -> None:
    for shares in deadline.PROFILES.values():
        assert sum(shares) == pytest.approx(1.0) and len(shares) == 24
        when = deadline.arrivals(shares, deadline.UPLOADS, np.random.default_rng(1))
        assert abs(when.size - deadline.UPLOADS) < 5 * deadline.UPLOADS**0.5
        assert (np.diff(when) >= 0).all() and when[0] >= 0 and when[-1] < 24 * 3600
        expected = shares[23] * deadline.UPLOADS  # the final hour's mean
        assert abs((when >= 23 * 3600).sum() - expected) < 5 * expected**0.5


def test_the_fewest_workers_and_the_headroom_meet_the_goal_just() -> None:
    service = np.array([40.0, 60.0, 90.0])
    fewest = deadline.fewest_workers("rush", service)
    assert fewest is not None
    assert deadline.meets(deadline.day("rush", service, fewest), "rush")
    assert not deadline.meets(deadline.day("rush", service, fewest - 1), "rush")
    short = deadline.headroom("rush", service, fewest - 1)  # verdicts must be faster
    assert short < 1.0
    assert deadline.meets(deadline.day("rush", service * short, fewest - 1), "rush")
    assert not deadline.meets(deadline.day("rush", service * short * 1.02, fewest - 1), "rush")
    spare = deadline.headroom("rush", service, fewest)
    assert spare >= 1.0
    assert deadline.meets(deadline.day("rush", service * spare, fewest), "rush")
    assert not deadline.meets(deadline.day("rush", service * spare * 1.02, fewest), "rush")


@pytest.mark.slow
def test_the_replay_runs_its_quick_size_end_to_end(tmp_path: Path) -> None:
    """A server started, uploads judged, the report written with every section; its
    figures sane (positive, every upload scored), none of them a time to meet."""
    out = tmp_path / "KAGGLE_SCALE.md"
    command = [sys.executable, str(BENCH / "kaggle_scale.py"), "--quick", "--teams", "2"]
    command += ["--work", str(tmp_path / "work"), "--output", str(out)]
    subprocess.run(command, check=True, cwd=ROOT, capture_output=True, timeout=600)
    text = out.read_text(encoding="utf-8")
    for section in (
        "## The verdicts",
        "## Throughput and memory",
        "## Bytes kept per upload",
        "## The page while the workers run",
        "## A deadline day on one 16-core machine",
    ):
        assert section in text
    assert "`.venv/bin/python bench/kaggle_scale.py --quick --teams 2" in text
    assert "**Yes**, when the 16 cores" in text or "**No**: under `rush`" in text
    results = json.loads((tmp_path / "work" / "kaggle-scale" / "results.json").read_text())
    run = results["replay"]
    assert [row["status"] for row in run["batch"]] == ["scored"] * 4
    for row in run["batch"]:
        assert row["posted"] <= row["accepted_by_client"]
        assert row["accepted"] <= row["claimed"] <= row["verdict"]
    kept = sum(run["disk"]["after"].values()) - sum(run["disk"]["before"].values())
    assert kept > 0 and run["csv_bytes"] == 6 * results["data"]["bytes"]["submission-0.csv"]
    assert run["peaks"]["server"] > 0 and len(run["peaks"]) > 1  # judging processes seen
    assert [len(run["pages"][phase]["/"]) for phase in ("idle", "after")] == [10, 10]
    assert results["alone"]["exit"] == 0
    assert not (tmp_path / "work" / "kaggle-scale" / "server").exists()  # removed
