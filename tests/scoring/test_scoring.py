"""The vectorised scorer against the reference on random competitions, its invariants, and the
worked examples of issue 2 through the API."""

from __future__ import annotations

import json
import math
import os
import random
import subprocess
import sys
import tempfile
from math import log2
from pathlib import Path
from typing import ClassVar

import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support import reference as ref
from support.competitions import Competition, competitions
from support.paths import DATA

import scorer
from scorer import NoLost, ScoreResult

#: Agreement asked of the polars path against the reference.
TOL = 1e-12

METRICS = ("ndcg", "recall", "precision", "hit_rate", "mrr", "map")
REPORT_NAMES = {m: f"{m}@20" for m in METRICS}


# ---------------------------------------------------------------------------------------------
# Random competitions (support/competitions.py), judged by the reference
# ---------------------------------------------------------------------------------------------


def reference_of(competition: Competition) -> ref.Scores:
    return ref.score(
        competition.submission_rows(), competition.solution_rows(), competition.no_lost
    )


def assert_agrees(result: ScoreResult, expected: ref.Scores) -> None:
    """Every per-user metric and every split mean within 1e-12 of the reference."""
    table = {row["user_id"]: row for row in result.per_user.iter_rows(named=True)}
    assert set(table) == set(expected.users)
    for user_id, want in expected.users.items():
        got = table[user_id]
        assert got["stage"] == want.stage
        assert got["n_relevant"] == want.n_relevant
        assert got["hits"] == want.hits
        for metric in METRICS:
            assert math.isclose(got[metric], getattr(want, metric), abs_tol=TOL), (user_id, metric)
    for split, want_split in expected.splits.items():
        got_split = result.splits[split]
        if want_split is None:
            assert got_split is None, split
            continue
        assert got_split is not None, split
        assert got_split.users == want_split["users"]
        for metric in METRICS:
            assert math.isclose(getattr(got_split, metric), want_split[metric], abs_tol=TOL)
    assert result.ignored == expected.ignored
    overall = expected.splits["overall"]
    if overall is not None:
        assert math.isclose(result.overall, overall["ndcg"], abs_tol=TOL)
    for split in ("public", "private"):
        want_split = expected.splits[split]
        got = getattr(result, split)
        assert (got is None) == (want_split is None)
        if want_split is not None:
            assert math.isclose(got, want_split["ndcg"], abs_tol=TOL)


def assert_identical(a: ScoreResult, b: ScoreResult) -> None:
    """The same bits: per-user table and every mean."""
    assert a.per_user.equals(b.per_user)
    assert a.to_dict() == b.to_dict()


# ---------------------------------------------------------------------------------------------
# The polars path against the reference
# ---------------------------------------------------------------------------------------------


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(competition=competitions())
def test_frames_agree_with_the_reference(competition: Competition) -> None:
    result = scorer.score(
        competition.submission_frame(), competition.solution_frame(), no_lost=competition.no_lost
    )
    assert_agrees(result, reference_of(competition))


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(competition=competitions())
def test_csv_files_agree_with_the_reference_and_with_frames(competition: Competition) -> None:
    with tempfile.TemporaryDirectory() as folder:
        submission, solution = competition.write_csv(Path(folder))
        result = scorer.score(submission, solution, no_lost=competition.no_lost)
        expected = ref.score(ref.read_csv(submission), ref.read_csv(solution), competition.no_lost)
    assert_agrees(result, expected)
    from_frames = scorer.score(
        competition.submission_frame(), competition.solution_frame(), no_lost=competition.no_lost
    )
    assert_identical(result, from_frames)


# ---------------------------------------------------------------------------------------------
# Invariants
# ---------------------------------------------------------------------------------------------


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(competition=competitions(), seed=st.randoms(use_true_random=False))
def test_row_and_column_order_change_nothing_bit_for_bit(
    competition: Competition, seed: random.Random
) -> None:
    submission = competition.submission_frame()
    solution = competition.solution_frame()
    baseline = scorer.score(submission, solution, no_lost=competition.no_lost)

    def shuffled(frame: pl.DataFrame) -> pl.DataFrame:
        rows = list(range(frame.height))
        seed.shuffle(rows)
        columns = list(frame.columns)
        seed.shuffle(columns)
        return frame[rows].select(columns)

    assert_identical(
        baseline, scorer.score(shuffled(submission), solution, no_lost=competition.no_lost)
    )
    assert_identical(
        baseline, scorer.score(submission, shuffled(solution), no_lost=competition.no_lost)
    )
    assert_identical(
        baseline,
        scorer.score(shuffled(submission), shuffled(solution), no_lost=competition.no_lost),
    )


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(competition=competitions(), shift_users=st.booleans())
def test_ids_too_large_to_pack_into_one_key_give_the_same_bits(
    competition: Competition, shift_users: bool
) -> None:
    """Pairs are joined on one Int64 key while user_id < 2**31 and edition_id < 2**32; past
    that, on both ids. Moving every id past the bound changes no score."""
    submission = competition.submission_frame()
    solution = competition.solution_frame()
    baseline = scorer.score(submission, solution, no_lost=competition.no_lost)
    column, offset = ("user_id", 2**31) if shift_users else ("edition_id", 2**40)
    moved = scorer.score(
        submission.with_columns(pl.col(column) + offset),
        solution.with_columns(pl.col(column) + offset),
        no_lost=competition.no_lost,
    )
    assert moved.to_dict() == baseline.to_dict()
    assert moved.per_user.with_columns(pl.col("user_id") - (offset if shift_users else 0)).equals(
        baseline.per_user
    )


def test_an_edition_id_past_2_to_the_32_is_never_taken_for_another_users_pair() -> None:
    """Packed naively, (user 1, edition 2**32) would be (user 2, edition 0): user 2's lost
    pair must not count as user 1's hit."""
    editions = {1: [2**32, *range(100, 119)], 2: list(range(0, 20))}
    submission = pl.DataFrame(
        [(u, e, r) for u, ranked in editions.items() for r, e in enumerate(ranked, start=1)],
        schema=["user_id", "edition_id", "rank"],
        orient="row",
    )
    solution = pl.DataFrame({"user_id": [1, 2], "edition_id": [5, 0]})
    result = scorer.score(submission, solution)
    assert result.per_user.select("user_id", "hits", "ndcg").rows() == [(1, 0, 0.0), (2, 1, 1.0)]
    assert result.overall == 0.5


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(competition=competitions())
def test_a_perfect_submission_scores_one_and_no_hits_score_zero(competition: Competition) -> None:
    for user in competition.users:
        best = sorted(user.lost, key=lambda e: -user.lost[e])[:20]
        user.ranked = best + [e for e in range(1000, 1100) if e not in best][: 20 - len(best)]
    perfect = scorer.score(
        competition.submission_frame(), competition.solution_frame(), no_lost=competition.no_lost
    )
    for row in perfect.per_user.iter_rows(named=True):
        relevant = row["n_relevant"] > 0
        assert row["ndcg"] == (1.0 if relevant else 0.0)
        assert row["mrr"] == row["hit_rate"] == (1.0 if relevant else 0.0)
    for user in competition.users:
        user.ranked = list(range(1000, 1020))  # nothing lost
    nothing = scorer.score(
        competition.submission_frame(), competition.solution_frame(), no_lost=competition.no_lost
    )
    for split in nothing.splits.values():
        if split is not None:
            assert split.to_dict() == {
                "users": split.users,
                **{n: 0.0 for n in REPORT_NAMES.values()},
            }


def test_more_than_20_lost_pairs_cap_the_ideal_at_20() -> None:
    """25 lost pairs, the first 20 of them ranked: NDCG 1, recall 20/25, MAP 1."""
    lost = list(range(101, 126))
    result = scorer.score(submission_frame({7: lost[:20]}), solution_frame({7: lost}))
    row = result.per_user.row(0, named=True)
    assert (row["ndcg"], row["recall"], row["precision"], row["map"]) == (1.0, 20 / 25, 1.0, 1.0)


# ---------------------------------------------------------------------------------------------
# Threads
# ---------------------------------------------------------------------------------------------

SCORE_IN_A_SUBPROCESS = """
import json, sys
import scorer
result = scorer.score(sys.argv[1], sys.argv[2])
result.per_user.write_parquet(sys.argv[3])
print(json.dumps(result.to_dict()))
"""


def _score_with_threads(threads: int, submission: Path, solution: Path, out: Path) -> str:
    env = {**os.environ, "POLARS_MAX_THREADS": str(threads)}
    done = subprocess.run(
        [sys.executable, "-c", SCORE_IN_A_SUBPROCESS, str(submission), str(solution), str(out)],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout


def test_one_thread_and_two_threads_give_the_same_bits(tmp_path: Path) -> None:
    rng = random.Random(3)
    solution = ["user_id,edition_id,stage,grade"]
    submission = ["user_id,edition_id,rank"]
    for u in range(1_500):
        user = 10_000 + 13 * u
        stage = rng.choice(["public", "private"])
        lost = rng.sample(range(1, 200), rng.randint(0, 30))
        solution += [f"{user},{e},{stage},{rng.randint(1, 5)}" for e in lost] or [
            f"{user},,{stage},0"
        ]
        ranked = rng.sample(range(1, 200), 20)
        submission += [f"{user},{e},{r}" for r, e in enumerate(ranked, start=1)]
    rng.shuffle(submission[1:])
    (tmp_path / "solution.csv").write_text("\n".join(solution) + "\n")
    (tmp_path / "submission.csv").write_text("\n".join(submission) + "\n")
    args = (tmp_path / "submission.csv", tmp_path / "solution.csv")
    one = _score_with_threads(1, *args, tmp_path / "one.parquet")
    two = _score_with_threads(2, *args, tmp_path / "two.parquet")
    assert one == two  # JSON floats round-trip: equal text is equal bits
    assert pl.read_parquet(tmp_path / "one.parquet").equals(
        pl.read_parquet(tmp_path / "two.parquet")
    )
    here = scorer.score(*args)
    assert json.loads(one) == here.to_dict()
    assert here.per_user.equals(pl.read_parquet(tmp_path / "one.parquet"))


# ---------------------------------------------------------------------------------------------
# The worked examples of issue 2, through the API
# ---------------------------------------------------------------------------------------------


def submission_frame(ranked: dict[int, list[int]]) -> pl.DataFrame:
    """20 rows a user: the given editions at ranks 1.., then editions no one lost (9000+)."""
    rows = []
    for user, editions in ranked.items():
        filler = (e for e in range(9000, 9100) if e not in editions)
        full = [e if e is not None else next(filler) for e in editions]
        full += [next(filler) for _ in range(20 - len(full))]
        rows += [(user, e, r) for r, e in enumerate(full, start=1)]
    return pl.DataFrame(rows, schema=["user_id", "edition_id", "rank"], orient="row")


def solution_frame(lost: dict[int, list[int]], stage: dict[int, str] | None = None) -> pl.DataFrame:
    rows = [(u, e, (stage or {}).get(u)) for u, es in lost.items() for e in es or [None]]
    frame = pl.DataFrame(
        rows,
        schema={"user_id": pl.Int64, "edition_id": pl.Int64, "stage": pl.String},
        orient="row",
    )
    return frame if stage else frame.drop("stage")


#: NDCG@20 of the three worked examples, written as their formulas.
PERFECT = 1.0
RANKS_2_3 = (1 / log2(3) + 1 / log2(4)) / (1 + 1 / log2(3))
RANKS_1_4 = (1 + 1 / log2(5)) / (1 + 1 / log2(3) + 1 / log2(4))


def test_worked_example_lost_101_202_at_ranks_1_and_2() -> None:
    result = scorer.score(submission_frame({1: [101, 202]}), solution_frame({1: [101, 202]}))
    assert result.overall == PERFECT
    assert (result.public, result.private) == (None, None)  # no split column


def test_worked_example_lost_101_202_at_ranks_2_and_3() -> None:
    """Issue 2 prints 0.6937; its formula gives 0.69343 = 0.6934 at 4 dp (see test_metrics)."""
    result = scorer.score(submission_frame({1: [None, 101, 202]}), solution_frame({1: [101, 202]}))
    assert result.overall == pytest.approx(RANKS_2_3, rel=TOL)
    assert round(result.overall, 4) == 0.6934


def test_worked_example_lost_11_22_33_with_11_at_rank_1_and_22_at_rank_4() -> None:
    result = scorer.score(
        submission_frame({1: [11, None, None, 22]}), solution_frame({1: [11, 22, 33]})
    )
    assert result.overall == pytest.approx(RANKS_1_4, rel=TOL)
    assert math.floor(result.overall * 10**4) / 10**4 == 0.6713  # as issue 2 prints it


class TestPublicPrivateMeans:
    """Public: users 1 (perfect) and 2 (ranks 2 and 3). Private: user 3 (ranks 1 and 4 of
    three) and user 4 (no lost pairs). User 5 is Ignored: validated, never scored."""

    ranked: ClassVar[dict[int, list[int | None]]] = {
        1: [101, 202],
        2: [None, 101, 202],
        3: [11, None, None, 22],
        4: [11, 22],
        5: [101],
    }
    lost: ClassVar[dict[int, list[int]]] = {
        1: [101, 202],
        2: [101, 202],
        3: [11, 22, 33],
        4: [],
        5: [101],
    }
    stage: ClassVar[dict[int, str]] = {
        1: "Public",
        2: "PUBLIC",
        3: "private",
        4: "Private",
        5: "Ignored",
    }

    def solution(self) -> pl.DataFrame:
        return solution_frame(self.lost, self.stage).rename({"stage": "Usage"})

    def test_zero_policy_counts_a_user_without_lost_pairs_as_zero(self) -> None:
        result = scorer.score(submission_frame(self.ranked), self.solution())
        assert result.public == pytest.approx((PERFECT + RANKS_2_3) / 2, rel=TOL)
        assert result.private == pytest.approx((RANKS_1_4 + 0.0) / 2, rel=TOL)
        assert result.overall == pytest.approx((PERFECT + RANKS_2_3 + RANKS_1_4 + 0.0) / 4, rel=TOL)
        assert result.to_dict()["users"] == {
            "overall": 4,
            "public": 2,
            "private": 2,
            "ignored": 1,
        }
        assert result.per_user.get_column("user_id").to_list() == [1, 2, 3, 4]

    def test_exclude_policy_leaves_a_user_without_lost_pairs_out(self) -> None:
        result = scorer.score(submission_frame(self.ranked), self.solution(), no_lost="exclude")
        assert result.no_lost is NoLost.EXCLUDE
        assert result.public == pytest.approx((PERFECT + RANKS_2_3) / 2, rel=TOL)
        assert result.private == pytest.approx(RANKS_1_4, rel=TOL)
        assert result.overall == pytest.approx((PERFECT + RANKS_2_3 + RANKS_1_4) / 3, rel=TOL)
        assert result.per_user.get_column("user_id").to_list() == [1, 2, 3]

    def test_no_user_scored_has_no_mean_in_any_key(self) -> None:
        """Users 4 (no lost pairs) and 5 (Ignored) alone, excluding users without lost pairs:
        no user is scored, and a mean over no users is None everywhere, never 0.0."""
        ranked = {u: self.ranked[u] for u in (4, 5)}
        lost = {u: self.lost[u] for u in (4, 5)}
        stage = {u: self.stage[u] for u in (4, 5)}
        solution = solution_frame(lost, stage).rename({"stage": "Usage"})
        result = scorer.score(submission_frame(ranked), solution, no_lost="exclude")
        assert (result.overall, result.public, result.private) == (None, None, None)
        assert dict(result.splits) == {"overall": None, "public": None, "private": None}
        assert result.per_user.height == 0
        data = result.to_dict()
        assert (data["overall"], data["public"], data["private"]) == (None, None, None)
        assert data["metrics"] == {"overall": None, "public": None, "private": None}
        assert data["users"] == {"overall": 0, "public": 0, "private": 0, "ignored": 1}

    def test_the_secondary_metrics_of_the_public_split(self) -> None:
        public = scorer.score(submission_frame(self.ranked), self.solution()).splits["public"]
        assert public is not None
        assert public.recall == 1.0
        assert public.precision == pytest.approx(2 / 20)
        assert public.hit_rate == 1.0
        assert public.mrr == pytest.approx((1 + 1 / 2) / 2)
        assert public.map == pytest.approx((1 + (1 / 2 + 2 / 3) / 2) / 2)

    def test_pandas_frames_give_the_same_bits(self) -> None:
        """pandas' own nullable integers keep the empty edition_id of user 4 an integer."""
        from_polars = scorer.score(submission_frame(self.ranked), self.solution())
        from_pandas = scorer.score(
            submission_frame(self.ranked).to_pandas(),
            self.solution().to_pandas(use_pyarrow_extension_array=True),
        )
        assert_identical(from_polars, from_pandas)

    def test_a_pandas_solution_with_nan_for_no_lost_pairs_is_read(self) -> None:
        """pandas keeps an integer column with missing values as float64 with NaN."""
        solution = self.solution().to_pandas()
        assert str(solution["edition_id"].dtype) == "float64"
        from_pandas = scorer.score(submission_frame(self.ranked).to_pandas(), solution)
        assert_identical(scorer.score(submission_frame(self.ranked), self.solution()), from_pandas)


def test_an_unknown_policy_is_a_usage_error() -> None:
    with pytest.raises(scorer.ScorerError, match="no_lost = 'sometimes'; expected one of zero"):
        scorer.score(submission_frame({1: [101]}), solution_frame({1: [101]}), no_lost="sometimes")


@settings(max_examples=100, deadline=None)
@given(
    rows=st.lists(
        st.tuples(
            st.sampled_from(["public", "private", None]),
            st.floats(-1e300, 1e300),  # metrics lie in 0..1; sums of these never overflow
        ),
        max_size=60,
    ),
    has_split=st.booleans(),
)
def test_split_means_are_exact_sums_rounded_once_as_fsum_rounds(
    rows: list[tuple[str | None, float]], has_split: bool
) -> None:
    """`aggregate` adds mantissas as integers; each mean must be `math.fsum(values) / n` to the
    bit, whatever the magnitudes (subnormals, cancellations, 1e300)."""
    frame = pl.DataFrame(
        [(stage, *([value] * len(METRICS))) for stage, value in rows],
        schema=[("stage", pl.String), *[(m, pl.Float64) for m in METRICS]],
        orient="row",
    )
    means = scorer.scoring.aggregate(frame, has_split)
    for split in ("overall", "public", "private"):
        part = frame if split == "overall" else frame.filter(pl.col("stage") == split)
        if part.height == 0 or (split != "overall" and not has_split):
            assert means[split] is None
            continue
        got = means[split]
        assert got is not None and got.users == part.height
        for metric in METRICS:
            want = math.fsum(part.get_column(metric).to_list()) / part.height
            assert getattr(got, metric) == want, (split, metric)


def test_a_result_s_repr_is_a_summary_not_the_per_user_table() -> None:
    """`repr` shows the scores and the rules, never the per-user rows (a million of them at
    full size): the table is one attribute away."""
    data = DATA
    result = scorer.score(data / "sample_submission.csv", data / "solution.csv")
    text = repr(result)
    assert "per_user" not in text and "shape:" not in text
    assert text.startswith("ScoreResult(splits=") and "no_lost=<EmptyUsers.ZERO" in text
    assert result.per_user.height == 1000
