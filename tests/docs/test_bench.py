"""bench/run.py's pure parts (bench/report.py): the targets table, the README's performance
block, the careful twins; and one small run end to end. No timing is asserted: speed is the
benchmark's report."""

from __future__ import annotations

import importlib
import json
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from support.paths import ROOT

import scorer

BENCH = ROOT / "bench"


def bench(name: str) -> ModuleType:
    """A module of bench/, which imports its neighbours as top-level modules."""
    if str(BENCH) not in sys.path:
        sys.path.insert(0, str(BENCH))
    return importlib.import_module(name)


report, generate = bench("report"), bench("generate")


def row(name: str, wall: float, rss_mb: float = 1000.0) -> dict[str, Any]:
    return {
        "name": name,
        "label": name,
        "command": name,
        "wall": wall,
        "walls": [wall],
        "cpu": wall,
        "rss_mb": rss_mb,
    }


def record(**sizes: list[dict[str, Any]]) -> dict[str, Any]:
    """A record as RESULTS.json holds it, one run per keyword (`s1000000`: key 1000000)."""
    runs = [
        {
            "key": key[1:],
            "users": int(key[1:].removeprefix("k100-")),
            "repeats": 3,
            "rows": {"submission": 20, "solution": 15},
            "bytes": {"submission.csv": 2_000_000, "solution.csv": 1_500_000},
            "table": table,
            "notes": ["a note"],
            "load": [1.0, 1.5],
        }
        for key, table in sizes.items()
    ]
    info = {"date": "2026-12-03 15:00 UTC", "code": "commit abc", "cpu": "cpu, 2 cores"}
    return {"info": info, "argv": ["--users", "1000000"], "repeats": 3, "seed": 0, "runs": runs}


MILLION = [
    row("floor", 3.6, rss_mb=1000),
    row("scorer_csv", 7.1, rss_mb=1700),
    row("floor_parquet", 1.0),
    row("scorer_parquet", 3.0),
    row("floor_submission", 2.0),
    row("prepare", 5.0),
    row("scorer_prepared", 3.0),
    row("scorer_quoted", 7.2),
    row("scorer_spaced", 20.0),
    row("before_spaced", 19.0),
]


def verdicts(rec: dict[str, Any]) -> dict[str, tuple[str, bool | None]]:
    return {t.what: (t.figure, t.met) for t in report.targets(rec["runs"])}


def test_targets_met_and_not_met_from_the_figures() -> None:
    got = verdicts(record(s1000000=MILLION))
    csv = got["1M users, CSV, full validation: wall ≤ 2.0× the floor"]
    assert csv == (f"7.10 s / 3.60 s = {7.1 / 3.6:.2f}×", True)
    assert got["1M users, CSV: peak RSS ≤ 1.8× the floor's"] == (
        f"1,700 MB / 1,000 MB = {1700 / 1000:.2f}×",
        True,
    )
    parquet = got["1M users, Parquet: wall ≤ 2.5× the floor that reads both Parquet files"]
    assert parquet == (f"3.00 s / 1.00 s = {3.0 / 1.0:.2f}×", False)
    prepared = (
        "1M users, a prepared solution: wall ≤ 1.6× the floor that reads the submission alone"
    )
    assert got[prepared][1] is True  # 3.0 / 2.0 = 1.5
    assert got["1M users: one quoted cell ≤ 1.5× its clean twin"][1] is True
    spaced = got["1M users: a space after one value (the careful reader), against its clean twin"]
    assert spaced == (f"20.00 s / 7.10 s = {20 / 7.1:.2f}×", None)  # reported, no target
    slower = got[f"1M users: the careful reader not slower, {report.SLOWER}"]
    assert slower[1] is False  # 20 / 19 = 1.053 > 1 + NOISE


def test_a_target_without_its_figures_is_not_measured() -> None:
    got = verdicts(record(s1000000=MILLION))
    for what in (
        f"100k users: not slower, {report.SLOWER}",
        f"K = 100, 200k users: not slower, {report.SLOWER}",
        f"10M users in parts: not slower, {report.SLOWER}",
        "10M users in parts: peak RSS ≤ 4 GiB",
    ):
        assert got[what] == ("not measured", None)


def test_ten_million_in_parts_against_the_budget_and_before() -> None:
    ten = [row("scorer_csv", 200.0, rss_mb=3500), row("before_csv", 210.0, rss_mb=3400)]
    got = verdicts(record(s10000000=ten))
    assert got["10M users in parts: peak RSS ≤ 4 GiB"] == ("3,500 MB", True)
    assert got[f"10M users in parts: not slower, {report.SLOWER}"][1] is True
    ten[0]["rss_mb"] = 4097
    assert verdicts(record(s10000000=ten))["10M users in parts: peak RSS ≤ 4 GiB"][1] is False


def test_ten_million_in_parts_per_user_against_one_million_whole() -> None:
    what = "10M users in parts: wall per user ≤ 1M users' (issue 35)"
    one = [row("scorer_csv", 4.0), row("floor", 2.0)]
    assert verdicts(record(s1000000=one))[what] == ("not measured", None)
    got = verdicts(record(s1000000=one, s10000000=[row("scorer_csv", 41.0)]))
    assert got[what] == ("41.00 s / 10M ÷ 4.00 s / 1M = 1.02×", True)  # within the noise
    got = verdicts(record(s1000000=one, s10000000=[row("scorer_csv", 43.0)]))
    assert got[what][1] is False  # 1.075 > 1 + NOISE


def test_the_report_has_every_size_and_the_targets_table() -> None:
    rec = record(s1000000=MILLION, **{"sk100-200000": [row("scorer_csv", 5), row("before_csv", 4)]})
    rec["runs"][1]["title"] = "k = 100, 200,000 users"
    text = report.render(rec)
    assert "## 1,000,000 users" in text and "## k = 100, 200,000 users" in text
    assert "## Targets (issues 16, 22 and 35)\n\n| target | figure | met |" in text
    assert (
        f"| K = 100, 200k users: not slower, {report.SLOWER} | 5.00 s / 4.00 s = 1.25× "
        "| **not met** |" in text
    )
    assert rec["info"]["date"] == "2026-12-03 15:00 UTC"  # rendering changes nothing


def test_the_readme_block_is_regenerated_in_place() -> None:
    rec = record(s1000000=MILLION)
    text = f"# x\n\n{report.MARKERS[0]}\nold\n{report.MARKERS[1]}\n\nafter\n"
    once = report.with_block(text, report.readme_block(rec))
    assert report.with_block(once, report.readme_block(rec)) == once
    assert once.startswith(f"# x\n\n{report.MARKERS[0]}\n") and once.endswith(
        f"{report.MARKERS[1]}\n\nafter\n"
    )
    assert "old" not in once and "\n".join(report.targets_table(rec["runs"])) in once
    with pytest.raises(SystemExit):
        report.with_block("# no markers\n", report.readme_block(rec))


def test_the_readme_shows_the_saved_results() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    saved = json.loads((BENCH / "RESULTS.json").read_text(encoding="utf-8"))
    assert report.with_block(readme, report.readme_block(saved)) == readme


CLEAN = b"user_id,edition_id,rank\n100000,1004,1\n100000,1005,2\n100001,1006,1\n"


@pytest.mark.parametrize(
    ("kind", "first"), [("quoted", b'100000,1004,"1"\n'), ("spaced", b"100000,1004 ,1\n")]
)
def test_a_twin_differs_from_its_submission_in_one_cell(
    tmp_path: Path, kind: str, first: bytes
) -> None:
    (tmp_path / "submission.csv").write_bytes(CLEAN)
    made = generate.twin(tmp_path, kind)
    header, _, rest = CLEAN.split(b"\n", 2)
    assert made == tmp_path / f"submission_{kind}.csv"
    assert made.read_bytes() == header + b"\n" + first + rest
    assert not list(tmp_path.glob("*.partial"))


def test_the_twins_score_as_their_clean_file_to_the_bit(tmp_path: Path) -> None:
    data = generate.generate(300, work=tmp_path)
    clean = scorer.score(data / "submission.csv", data / "solution.csv")
    for kind in generate.TWINS:
        got = scorer.score(generate.twin(data, kind), data / "solution.csv")
        assert (got.overall, got.public, got.private) == (
            clean.overall,
            clean.public,
            clean.private,
        )


@pytest.mark.slow
def test_a_small_run_writes_the_report_with_its_targets(tmp_path: Path) -> None:
    out = tmp_path / "RESULTS.md"
    argv = ["--users", "2000", "--repeats", "1", "--no-threads", "--out", str(out)]
    done = subprocess.run(
        [sys.executable, str(BENCH / "run.py"), *argv, "--work", str(tmp_path / "work")],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    text = out.read_text(encoding="utf-8")
    assert "## 2,000 users" in text and "## Targets (issues 16, 22 and 35)" in text
    names = [
        r["name"] for r in json.loads(out.with_suffix(".json").read_text())["runs"][0]["table"]
    ]
    assert {
        "floor_submission",
        "prepare",
        "scorer_prepared",
        "scorer_quoted",
        "scorer_spaced",
    } <= set(names)
