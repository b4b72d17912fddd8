"""Competitions other than lost items: the spec read from TOML, any k, metric, columns and row
rule, scored equal to the independent reference in `reference.py`."""

from __future__ import annotations

import json
import math
import random
import tempfile
import tomllib
from dataclasses import replace
from pathlib import Path

import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support import reference as ref
from support.paths import ROOT
from typer.testing import CliRunner

import scorer
from scorer import LOST_ITEMS, Competition, SubmissionError
from scorer.board import BoardRules, Correction, Ladder
from scorer.cli import app
from scorer.competition import (
    ITEM,
    MAX_K,
    USER,
    Columns,
    EmptyUsers,
    Metric,
    Rows,
    Split,
    Splits,
)
from scorer.errors import UsageError
from scorer.read import to_wide
from scorer.scoring import MASK_MAX_K

HM = ROOT / "data" / "hm"
runner = CliRunner()

SCORE_SAMPLE = [
    "score",
    str(ROOT / "data/sample_submission.csv"),
    "--solution",
    str(ROOT / "data/solution.csv"),
]
SCORE_HM = ["score", str(HM / "sample_submission.csv"), "--solution", str(HM / "solution.csv")]
VALIDATE_HM = ["validate", str(HM / "sample_submission.csv"), "--targets", str(HM / "targets.csv")]


def rules_of(competition: Competition) -> ref.Rules:
    """The reference's rules for a competition: the same fields, read independently."""
    columns = competition.columns
    return ref.Rules(
        k=competition.k,
        metric=str(competition.metric),
        rows=str(competition.rows),
        user=columns.user,
        item=columns.item,
        rank=columns.rank,
        list=columns.list,
    )


# The spec.


def test_the_default_competition_is_lost_items() -> None:
    assert Competition() == LOST_ITEMS
    assert (LOST_ITEMS.k, LOST_ITEMS.metric, LOST_ITEMS.rows) == (20, Metric.NDCG, Rows.EXACTLY)
    assert LOST_ITEMS.columns == Columns("user_id", "edition_id", "rank", "edition_ids")
    assert LOST_ITEMS.title == "NDCG@20"


def test_a_spec_is_read_from_toml() -> None:
    hm = Competition.load(HM / "competition.toml")
    assert (hm.name, hm.k, hm.metric, hm.rows) == ("H&M-style", 12, Metric.MAP, Rows.AT_MOST)
    assert hm.columns == Columns("customer_id", "article_id", "rank", "prediction")
    assert hm.words.item == "item"  # a spec file says what it means: no lost-items words
    assert next(iter(hm.labels.values())) == "map@12"  # the competition's metric first
    assert hm.fingerprint() != LOST_ITEMS.fingerprint()
    assert Competition.of(hm.to_dict()) == hm  # what a database records reads back
    assert hm.empty_users is EmptyUsers.EXCLUDE  # Kaggle's H&M rule, stated in the file
    assert LOST_ITEMS.empty_users is Competition.of({}).empty_users is EmptyUsers.ZERO


def test_the_empty_user_rule_is_part_of_the_fingerprint() -> None:
    """A leaderboard's verdicts and a run's key follow the rule: another rule, another key."""
    excluding = replace(LOST_ITEMS, empty_users=EmptyUsers.EXCLUDE)
    assert excluding.fingerprint() != LOST_ITEMS.fingerprint()
    assert json.loads(excluding.fingerprint())["competition"]["empty_users"] == "exclude"
    assert Competition(empty_users="exclude") == excluding  # named as text in Python too
    assert scorer.NoLost is EmptyUsers  # the former name: one enum, not two


def test_the_board_table_reads_back_and_changes_no_key_of_a_spec_without_it() -> None:
    """`[board]` says how boards show scores: written only when not the default, so a spec
    and the verdicts' key of a competition made before it are unchanged."""
    assert LOST_ITEMS.board == BoardRules() and "board" not in LOST_ITEMS.to_dict()
    assert "[board]" not in LOST_ITEMS.to_toml()
    text = "[board]\npublic_digits = 3\nladder = 'parameter-free'\ntie_margin = 0\n"
    rules = Competition.of(tomllib.loads(text))
    assert rules.board == BoardRules(tie_margin=0.0, public_digits=3, ladder=Ladder.PARAMETER_FREE)
    assert rules.board.correction is Correction.HOLM and rules.board.alpha == 0.05
    assert Competition.of(tomllib.loads(rules.to_toml())) == rules
    assert Competition.of(json.loads(rules.fingerprint())["competition"]) == rules
    assert rules.fingerprint() != Competition.of({}).fingerprint()


@pytest.mark.parametrize(
    ("text", "named"),
    [
        ("kk = 3\n", "unknown key 'kk'"),
        ("[columns]\nusr = 'a'\n", "unknown key 'columns.usr'"),
        ("k = 0\n", "k = 0; expected an integer 1..100"),
        ("k = 101\n", "k = 101; expected an integer 1..100"),
        ("k = '12'\n", "k = '12'; expected an integer"),
        ("metric = 'auc'\n", "metric = 'auc'; expected one of 'ndcg', 'recall'"),
        ("rows = 'some'\n", "rows = 'some'; expected one of 'exactly', 'at_most'"),
        ("empty_users = 'drop'\n", "empty_users = 'drop'; expected one of 'zero', 'exclude'"),
        ("columns = 3\n", "[columns] must be a table"),
        ("[columns]\nuser = 'rank'\n", "column names must differ"),
        # a header naming the rank (or item) column is of the long layout: never wide
        ("[columns]\nlist = 'rank'\n", "column names must differ"),
        ("[columns]\nuser = 'line'\n", "column name 'line' is the scorer's own"),
        ("[columns]\nuser = 'ndcg'\n", "column name 'ndcg' is the scorer's own"),
        ("[columns]\nitem = 'a,b'\n", "column name 'a,b'"),
        ("[splits]\ncolumns = []\n", "splits.columns = []; expected a list of names"),
        ("board = 1\n", "[board] must be a table"),
        ("[board]\ndigits = 2\n", "unknown key 'board.digits'; expected one of board.alpha"),
        ("[board]\nalpha = true\n", "board.alpha = True; expected a number in (0, 1)"),
        ("[board]\nalpha = 1\n", "board.alpha = 1; expected a number in (0, 1)"),
        ("[board]\ntie_margin = -0.1\n", "board.tie_margin = -0.1; expected a number in [0, 1)"),
        ("[board]\ntie_margin = nan\n", "board.tie_margin = nan; expected a number in [0, 1)"),
        ("[board]\npublic_digits = 16\n", "board.public_digits = 16; expected an integer 0..15"),
        ("[board]\npublic_digits = 2.0\n", "board.public_digits = 2.0; expected an integer"),
        (
            "[board]\nladder = 'on'\n",
            "board.ladder = 'on'; expected one of 'off', 'parameter-free'",
        ),
        ("[board]\ncorrection = 'bonferroni'\n", "expected one of 'holm', 'bh'"),
        ("k = \n", "not valid TOML"),
    ],
)
def test_a_bad_spec_exits_2_naming_the_key(text: str, named: str, tmp_path: Path) -> None:
    path = tmp_path / "competition.toml"
    path.write_text(text)
    with pytest.raises(UsageError, match=r"competition\.toml: "):
        Competition.load(path)
    result = runner.invoke(
        app,
        [*SCORE_SAMPLE, "--competition", str(path)],
    )
    assert result.exit_code == 2
    assert named in result.stderr


def test_a_missing_spec_file_is_a_usage_error(tmp_path: Path) -> None:
    result = runner.invoke(
        app,
        [*VALIDATE_HM, "--competition", str(tmp_path / "nope.toml")],
    )
    assert result.exit_code == 2
    assert "nope.toml: no such competition file" in result.stderr


# The H&M-style competition in data/hm, end to end.


def test_the_hm_competition_scores_as_the_reference() -> None:
    result = runner.invoke(
        app,
        [*SCORE_HM, "--competition", str(HM / "competition.toml"), "--json"],
    )
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    rules = ref.Rules.load(HM / "competition.toml")
    expected = ref.score_rules(
        ref.read_csv(HM / "sample_submission.csv"), ref.read_csv(HM / "solution.csv"), rules
    )
    assert (data["metric"], data["k"]) == ("map@12", 12)
    for split in ("overall", "public", "private"):
        means = expected.splits[split]
        assert means is not None
        assert data["metrics"][split]["users"] == means["users"]
        for metric in ref.METRICS:
            assert data["metrics"][split][f"{metric}@12"] == pytest.approx(means[metric], abs=1e-12)
        assert data[split] == pytest.approx(means["map"], abs=1e-12)


def test_the_hm_score_is_kaggles_customers_with_no_purchase_left_out() -> None:
    """data/hm states Kaggle's rule (`empty_users = "exclude"`): 248 of its 300 customers
    bought something and are scored; `no_lost="zero"` overrides the spec and counts all."""
    hm = Competition.load(HM / "competition.toml")
    entry, truth = HM / "sample_submission.csv", HM / "solution.csv"
    kaggle = scorer.score(entry, truth, competition=hm)
    assert kaggle.no_lost is EmptyUsers.EXCLUDE
    assert kaggle.splits[Split.OVERALL] is not None
    assert kaggle.splits[Split.OVERALL].users == 248
    assert round(kaggle.overall, 6) == 0.182559
    assert (round(kaggle.public or 0, 6), round(kaggle.private or 0, 6)) == (0.165116, 0.200001)
    counted = scorer.score(entry, truth, competition=hm, no_lost="zero")
    assert counted.no_lost is EmptyUsers.ZERO
    assert round(counted.overall, 6) == 0.150915  # every customer, the empty ones as 0
    # the same mean over the same per-user values: the empty customers add 0 and 52 users
    assert counted.overall * 300 == pytest.approx(kaggle.overall * 248, rel=1e-12)
    # a solution read under one rule is scored under another: reading does not use it
    read = scorer.read_solution(truth, competition=replace(hm, empty_users=EmptyUsers.ZERO))
    assert scorer.score(entry, read, competition=hm).to_dict() == kaggle.to_dict()
    assert scorer.score(entry, read).overall == counted.overall  # the solution's own rules


def test_the_hm_sample_is_valid_against_its_targets() -> None:
    hm = Competition.load(HM / "competition.toml")
    rows = scorer.validate(
        HM / "sample_submission.csv", targets=HM / "targets.csv", competition=hm
    ).rows
    lines = (HM / "sample_submission.csv").read_text().splitlines()[1:]
    assert rows == sum(len(line.split(",")[1].split()) for line in lines)  # ranked items
    assert any(not line.split(",")[1] for line in lines)  # empty lists among them


# The row rule.


HM_SPEC = Competition.load(HM / "competition.toml")


def reject(lines: list[str], targets: list[int], competition: Competition) -> list[str]:
    """The messages of a rejected submission, under a competition."""
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "s.csv"
        path.write_text("\n".join(lines) + "\n")
        frame = pl.DataFrame({competition.columns.user: targets})
        with pytest.raises(SubmissionError) as caught:
            scorer.validate(path, targets=frame, competition=competition)
    return [i.message for p in caught.value.report.problems for i in p.examples]


def test_at_most_takes_short_lists_and_refuses_long_ones() -> None:
    long_list = " ".join(str(100 + i) for i in range(13))
    messages = reject(
        ["customer_id,prediction", "1,5 6", "2,", f"3,{long_list}"], [1, 2, 3, 4], HM_SPEC
    )
    assert messages == [
        "line 4: user 3 has 13 items; expected at most 12",
        "user 4 is missing; expected a line of at most 12 items for every target user",
    ]


def test_at_most_in_the_long_layout() -> None:
    rows = [f"1,{100 + r},{r}" for r in range(1, 14)]
    messages = reject(["customer_id,article_id,rank", *rows, "2,7,3"], [1, 2, 3], HM_SPEC)
    assert messages == [
        "line 14: rank '13' is not an integer 1..12 (user 1)",
        "line 2: user 1 has 13 rows (lines 2–14); expected at most 12",
        "user 3 is missing; expected 1 to 12 rows for every target user",
    ]


def test_exactly_still_refuses_a_short_list() -> None:
    exact = Competition(k=3, columns=Columns(list="items"))
    messages = reject(["user_id,items", "1,5 6"], [1], exact)
    assert messages == ["line 2: user 1 has 2 editions; expected exactly 3"]


def test_a_binary_competition_has_no_grade_column(tmp_path: Path) -> None:
    binary = Competition(relevance="binary")
    path = tmp_path / "solution.csv"
    path.write_text("user_id,edition_id,grade\n1,5,2\n")
    with pytest.raises(scorer.HostError) as caught:
        scorer.read_solution(path, competition=binary)
    assert caught.value.report.codes == ["unknown_column"]


# Any k, metric, row rule and layout: the same numbers as the reference.


@st.composite
def competitions(draw: st.DrawFn) -> tuple[Competition, list[dict[str, str]], list[dict[str, str]]]:
    """A competition with its solution and a valid submission, as rows of text cells."""
    k = draw(st.sampled_from([1, 2, 5, 12, 20, 21, 33, 64, 100]))
    rows = draw(st.sampled_from(list(Rows)))
    wide = draw(st.booleans())
    competition = Competition(
        name="drawn",
        k=k,
        metric=draw(st.sampled_from(list(Metric))),
        rows=rows,
        columns=Columns("cid", "aid", "pos", "items"),
    )
    rng = random.Random(draw(st.integers(0, 2**32 - 1)))
    users = rng.sample(range(1, 10**6), rng.randint(1, 25))
    solution: list[dict[str, str]] = []
    submission: list[dict[str, str]] = []
    for user in users:
        stage = rng.choice(["Public", "private"])
        lost = rng.sample(range(1, 3 * k + 10), rng.randint(0, min(2 * k, 40)))
        solution += [{"cid": str(user), "aid": str(a), "stage": stage} for a in lost] or [
            {"cid": str(user), "aid": "", "stage": stage}
        ]
        n = k if rows is Rows.EXACTLY else rng.randint(1 if not wide else 0, k)
        listed = rng.sample(range(1, 3 * k + 10), n)
        if wide:
            submission.append({"cid": str(user), "items": " ".join(map(str, listed))})
        else:
            ranks = rng.sample(range(1, k + 1), n)  # at most: gaps are empty places
            submission += [
                {"cid": str(user), "aid": str(a), "pos": str(r)}
                for a, r in zip(listed, ranks, strict=True)
            ]
    return competition, solution, submission


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(drawn=competitions())
def test_any_competition_scores_as_the_reference(
    drawn: tuple[Competition, list[dict[str, str]], list[dict[str, str]]],
) -> None:
    competition, solution, submission = drawn
    expected = ref.score_rules(submission, solution, rules_of(competition))
    result = scorer.score(pl.DataFrame(submission), pl.DataFrame(solution), competition=competition)
    got = {row["cid"]: row for row in result.per_user.iter_rows(named=True)}
    assert set(got) == set(expected.users)
    for user, want in expected.users.items():
        for metric in ref.METRICS:
            assert got[user][metric] == pytest.approx(getattr(want, metric), abs=1e-12)
    for split in ("overall", "public", "private"):
        means, values = expected.splits[split], result.splits[split]  # type: ignore[index]
        assert (means is None) == (values is None)
        if means is not None and values is not None:
            for metric in Metric:
                assert values.value(metric) == pytest.approx(means[str(metric)], abs=1e-12)
    assert result.overall == pytest.approx(ref.primary(expected, rules_of(competition)), abs=1e-12)


def test_long_lists_are_added_rank_by_rank_with_the_bits_of_the_mask_tables() -> None:
    """Above `MASK_MAX_K` a user's DCG is a running sum in rank order; at or below, a table
    lookup built in the same order: on the same hits both give the same bits."""
    competition = Competition(k=MASK_MAX_K)
    wider = Competition(k=MASK_MAX_K + 1)
    solution = pl.DataFrame({"user_id": [1, 1, 1, 2], "edition_id": [5, 9, 13, 4]})
    ranks = [3, 1, 7, 2, 11, 20, 4, 5, 6, 8, 9, 10, 12, 13, 14, 15, 16, 17, 18, 19]
    rows = {"user_id": [1] * 20, "edition_id": [5, 9, 13, *range(100, 117)], "rank": ranks}
    two = {"user_id": [2] * 20, "edition_id": [4, *range(200, 219)], "rank": list(range(1, 21))}
    table = pl.concat([pl.DataFrame(rows), pl.DataFrame(two)])
    a = scorer.score(table, solution, competition=competition).per_user
    b = scorer.score(
        pl.concat(
            [table, pl.DataFrame({"user_id": [1, 2], "edition_id": [999, 998], "rank": [21, 21]})]
        ),
        solution,
        competition=wider,
    ).per_user
    assert a.select("ndcg", "map", "mrr").equals(b.select("ndcg", "map", "mrr"))


def test_k_is_capped_where_ranks_fit_a_packed_key() -> None:
    assert MAX_K == 100
    assert Competition(k=MAX_K).rank_bits == 7


def test_the_codabench_program_takes_a_competition(tmp_path: Path) -> None:
    for folder, name in (("ref", "solution.csv"), ("res", "sample_submission.csv")):
        (tmp_path / "input" / folder).mkdir(parents=True)
        (tmp_path / "input" / folder / name).write_bytes((HM / name).read_bytes())
    args = ["codabench", str(tmp_path / "input"), str(tmp_path / "out")]
    result = runner.invoke(app, [*args, "--competition", str(HM / "competition.toml")])
    assert result.exit_code == 0, result.output
    scores = json.loads((tmp_path / "out" / "scores.json").read_text())
    assert next(iter(scores)) == "map"  # the competition's metric leads
    expected = scorer.score(HM / "sample_submission.csv", HM / "solution.csv", competition=HM_SPEC)
    assert scores["map"] == expected.public  # the public phase: the public split


# The scorer's own columns never meet a file's: a competition may call its columns anything.


def renamed_rank(tmp_path: Path, name: str) -> Path:
    """A copy of data/hm/competition.toml whose rank column is `name`."""
    text = (HM / "competition.toml").read_text()
    assert 'rank = "rank"' in text
    path = tmp_path / "competition.toml"
    path.write_text(text.replace('rank = "rank"', f'rank = "{name}"'))
    return path


def hm_long(rank: str) -> tuple[pl.DataFrame, pl.DataFrame]:
    """data/hm's sample in the long layout, its rank column named `rank`, and the solution of
    its users (one with an empty list has no row there, so it is left out of both)."""
    wide = pl.read_csv(HM / "sample_submission.csv", schema_overrides={"prediction": pl.String})
    long = (
        wide.with_columns(pl.col("prediction").str.split(" "))
        .explode("prediction")
        .filter(pl.col("prediction").is_not_null() & (pl.col("prediction") != ""))
        .select(
            "customer_id",
            pl.col("prediction").cast(pl.Int64).alias("article_id"),
            pl.int_range(1, pl.len() + 1).over("customer_id").alias(rank),
        )
    )
    users = long.get_column("customer_id").unique().implode()
    solution = pl.read_csv(HM / "solution.csv").filter(pl.col("customer_id").is_in(users))
    return long, solution


@pytest.mark.parametrize("name", ["position", "line_no", "user_id", "edition_id"])
def test_a_rank_column_named_like_a_column_of_the_scorer_scores_the_wide_layout(
    name: str, tmp_path: Path
) -> None:
    """The wide reader numbers a list's places in a column of its own ('position'): a rank
    column of that name was once renamed over the ranks (an internal DuplicateError)."""
    spec = renamed_rank(tmp_path, name)
    result = runner.invoke(app, [*SCORE_HM, "--competition", str(spec)])
    assert result.exit_code == 0, result.output
    original = runner.invoke(app, [*SCORE_HM, "--competition", str(HM / "competition.toml")])
    assert result.stdout == original.stdout
    # a wide sample written from the long layout by the wide writer, as a frame
    long, solution = hm_long("rank")
    wide = to_wide(long.rename({"customer_id": USER, "article_id": ITEM}), "prediction")
    wide = wide.rename({USER: "customer_id"})
    moved = scorer.score(wide, solution, competition=Competition.load(spec))
    kept = scorer.score(wide, solution, competition=HM_SPEC)
    assert moved.to_dict() == kept.to_dict()


@pytest.mark.parametrize("name", ["position", "user_id", "edition_id"])
def test_a_rank_column_named_like_a_column_of_the_scorer_scores_the_long_layout(
    name: str, tmp_path: Path
) -> None:
    spec = Competition.load(renamed_rank(tmp_path, name))
    long, solution = hm_long(name)
    moved = scorer.score(long, solution, competition=spec)
    kept = scorer.score(long.rename({name: "rank"}), solution, competition=HM_SPEC)
    assert moved.to_dict() == kept.to_dict()
    assert moved.splits == kept.splits


@pytest.mark.parametrize("layout", ["long", "wide"])
@pytest.mark.parametrize("name", ["user_id", "edition_id", "rank", "position"])
def test_a_split_column_named_like_a_column_of_the_scorer_scores(
    name: str, layout: str, tmp_path: Path
) -> None:
    """A split column once kept its file's name inside the scorer, beside the user column
    renamed `user_id` (an internal DuplicateError), so a spec refused these names; now it is
    renamed with them. Its messages still name it as the file does."""
    spec = Competition(
        k=2,
        columns=Columns("cid", "aid", "pos", "items"),
        splits=Splits(columns=(name,), public="A", private="B", ignored="skip"),
    )
    words = {"a": "public", "b": "private", "skip": "ignored"}  # any case

    def laid_out(stages: list[str]) -> pl.DataFrame:
        long = pl.DataFrame({"cid": [1, 1, 2, 3], "aid": [5, 6, 7, 8], name: stages})
        if layout == "long":
            return long
        return long.group_by("cid", name, maintain_order=True).agg(
            pl.col("aid").cast(pl.String).str.join(" ").alias("items")
        )

    solution = laid_out(["A", "A", "b", "SKIP"])
    submission = pl.DataFrame({"cid": [1, 1, 2, 2, 3, 3], "aid": [6, 9, 7, 5, 1, 2]})
    submission = submission.with_columns(pos=pl.int_range(1, 3).over("cid"))
    result = scorer.score(submission, solution, competition=spec)
    plain = Competition(k=2, columns=spec.columns)
    renamed = solution.with_columns(pl.col(name).str.to_lowercase().replace_strict(words))
    expected = scorer.score(submission, renamed.rename({name: "stage"}), competition=plain)
    assert result.splits == expected.splits
    # user 1, public, lost 5 and 6, ranked 6 and 9
    assert (result.ignored, result.public) == (1, pytest.approx(1 / (1 + 1 / math.log2(3))))
    with pytest.raises(scorer.HostError) as caught:
        scorer.score(submission, laid_out(["A", "B", "b", "SKIP"]), competition=spec)
    assert caught.value.report.codes == ["mixed_stage"]
    assert f"{name} must be the same on all its rows" in str(caught.value)


def test_the_per_user_scores_name_the_user_as_the_competitions_files_do(tmp_path: Path) -> None:
    """An H&M organiser joins the per-user file to their customers on `customer_id`; the
    other columns are the scorer's own, as in lost items."""
    out = tmp_path / "per_user.csv"
    args = [*SCORE_HM, "--competition", str(HM / "competition.toml"), "--per-user", str(out)]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    header = out.read_text().splitlines()[0].split(",")
    metrics = ["map", "ndcg", "recall", "precision", "hit_rate", "mrr"]
    assert sorted(header) == sorted(["customer_id", "stage", "n_relevant", "hits", *metrics])
    frame = scorer.score(HM / "sample_submission.csv", HM / "solution.csv", competition=HM_SPEC)
    assert frame.per_user.columns[0] == "customer_id"
    # one row a customer who bought something: data/hm leaves the others out (empty_users)
    solution = pl.read_csv(HM / "solution.csv")
    bought = solution.filter(pl.col("article_id").is_not_null()).get_column("customer_id")
    assert frame.per_user.height == bought.n_unique() == 248
    lost = scorer.score(ROOT / "data/sample_submission.csv", ROOT / "data/solution.csv")
    assert lost.per_user.columns[0] == "user_id"  # lost items' own column


def test_rules_equal_to_lost_items_are_lost_items_whoever_made_them() -> None:
    """The rules are compared as values, never by identity: a new `Competition()` is lost
    items, refused against a solution read for another competition exactly as `LOST_ITEMS`
    is; left out, they are the solution's own."""
    hm = Competition.load(HM / "competition.toml")
    truth = scorer.read_solution(HM / "solution.csv", competition=hm)
    entry = HM / "sample_submission.csv"
    for same in (LOST_ITEMS, Competition()):
        with pytest.raises(UsageError, match="the solution was read for another competition"):
            scorer.score(entry, truth, competition=same)
    assert scorer.score(entry, truth).competition == hm
    assert scorer.score(entry, truth, competition=hm).overall == scorer.score(entry, truth).overall
