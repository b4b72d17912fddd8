"""The Kaggle kit's metric (issue 23): one self-contained file written for the competition's
spec, needing nothing outside Kaggle's image, held equal to `scorer score` (verdicts and
scores) on drawn competitions and submissions, and keeping Kaggle's metric template rules.

Kaggle's metric template is the notebook Kaggle opens for a new metric; its docstring says:
"You must have a function named score", "you cannot change the first three (solution,
submission, and row_id_column_name)", "All arguments for score must have type annotations",
"score must return a single, finite, non-null float", and that only a
`ParticipantVisibleError`'s message is shown to participants. Kaggle's template repository
is not public; these sentences are quoted from the template as Kaggle shows it.
"""

from __future__ import annotations

import ast
import importlib.util
import math
import sys
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd
import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.paths import ROOT
from support.strategies import ID_STYLES, SPLIT_WORDS, column_names, id_cell, id_kind

import scorer
from scorer import Competition, Metric, SubmissionError
from scorer.competition import LOST_ITEMS, EmptyUsers, IdKind, Ids, Rows
from scorer.platforms import kaggle, kaggle_metric, kit
from scorer.read.cells import MAX_TEXT_ID

#: What Kaggle's image has besides the standard library (the metric may import nothing else).
KAGGLE_IMPORTS = {"numpy", "pandas"}


def load(path: Path) -> Any:
    """A metric file as Kaggle's notebook runs it: a module of its own."""
    spec = importlib.util.spec_from_file_location(f"kaggle_metric_{uuid.uuid4().hex}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def metric_for(competition: Competition, folder: Path) -> Any:
    path = folder / f"metric_{uuid.uuid4().hex}.py"
    path.write_text(kaggle.metric_source(competition), encoding="utf-8")
    return load(path)


# The template's rules, on the file the kit writes ----------------------------------------------


def test_the_metric_imports_nothing_outside_kaggle_s_image() -> None:
    """Nothing is installed when Kaggle runs a metric: the standard library, numpy, pandas."""
    tree = ast.parse(kaggle.metric_source(LOST_ITEMS))
    imported = {
        alias.name.split(".")[0]
        for node in ast.walk(tree)
        if isinstance(node, ast.Import)
        for alias in node.names
    } | {
        (node.module or "").split(".")[0]
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom)
    }
    outside = imported - KAGGLE_IMPORTS - set(sys.stdlib_module_names)
    assert not outside, outside
    assert "scorer" not in imported


def test_the_metric_is_python_3_8() -> None:
    """Kaggle does not say which Python a metric runs on: the file keeps to 3.8's grammar."""
    ast.parse(kaggle.metric_source(LOST_ITEMS), feature_version=(3, 8))


def test_score_keeps_the_template_s_signature(tmp_path: Path) -> None:
    tree = ast.parse(kaggle.metric_source(LOST_ITEMS))
    score = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "score")
    arguments = score.args.args
    assert [a.arg for a in arguments] == ["solution", "submission", "row_id_column_name"]
    assert [ast.unparse(a.annotation) for a in arguments if a.annotation] == [
        "pd.DataFrame",
        "pd.DataFrame",
        "str",
    ]
    assert score.returns is not None and ast.unparse(score.returns) == "float"
    classes = {n.name for n in tree.body if isinstance(n, ast.ClassDef)}
    assert {"ParticipantVisibleError", "HostVisibleError"} <= classes


def test_the_metric_module_holds_lost_items_spec_until_the_kit_writes_another() -> None:
    assert kaggle.spec(LOST_ITEMS) == kaggle_metric.SPEC
    assert kaggle.metric_source(LOST_ITEMS) == Path(kaggle_metric.__file__).read_text("utf-8")


def test_the_spec_is_written_as_data(tmp_path: Path) -> None:
    """A name with quotes, a line break and a placeholder is a string of `SPEC`, not code."""
    name = "a \"b\" 'c'\n@@K@@ \\ ]]} ) # x"
    metric = metric_for(Competition(name=name, k=5, metric=Metric.MAP), tmp_path)
    assert kaggle.spec(Competition(name=name, k=5, metric=Metric.MAP)) == metric.SPEC
    assert metric.SPEC["name"] == name and metric.SPEC["k"] == 5


# Equal to scorer ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Drawn:
    competition: Competition
    solution: str  # the long solution file, as `scorer score` reads it
    submission: str  # the wide submission file
    users: dict[str, str]  # user cell -> Kaggle's Usage


@st.composite
def drawn(draw: st.DrawFn) -> Drawn:
    """A competition (any columns, k, metric, row rule, empty-user rule, id kind, split
    words), a solution, and a wide submission, valid or with one drawn flaw. Text ids may
    all be digits with a leading zero, and lists may hold one id at most: pandas then reads
    such a column as numbers (`ID_STYLES`)."""
    ids = draw(st.sampled_from(ID_STYLES))
    names = column_names(4, refusable=False).filter(lambda n: not {"stage", "Usage"} & set(n))
    user, item, rank, listed = draw(names)
    public, private, ignored = draw(st.sampled_from(SPLIT_WORDS))
    k = draw(st.sampled_from([1, 1, *range(2, 13)]))
    rows = draw(st.sampled_from(list(Rows)))
    competition = Competition.of(
        {
            "name": "drawn",
            "k": k,
            "metric": str(draw(st.sampled_from(list(Metric)))),
            "rows": str(rows),
            "empty_users": str(draw(st.sampled_from(list(EmptyUsers)))),
            "columns": {"user": user, "item": item, "rank": rank, "list": listed},
            "ids": {"user": id_kind(ids), "item": id_kind(ids)},
            "splits": {
                "columns": ["stage"],
                "public": public,
                "private": private,
                "ignored": ignored,
            },
        }
    )
    users = draw(st.lists(st.integers(0, 10**6), min_size=2, max_size=7, unique=True))
    pool = st.integers(1, 2 * k + 6)
    most = draw(st.sampled_from([1, 6, 6]))  # one id a list at most, in the solution too
    solution = [f"{user},{item},stage"]
    usage: dict[str, str] = {}
    for u in users:
        stage = draw(st.sampled_from([public, private]))
        usage[id_cell(ids, u)] = "Public" if stage == public else "Private"
        lost = draw(st.lists(pool, max_size=most, unique=True))
        solution += [
            f"{id_cell(ids, u)},{'' if i is None else id_cell(ids, i)},{stage}"
            for i in lost or [None]
        ]
    lists: dict[str, list[str]] = {}
    for u in users:
        low = k if rows is Rows.EXACTLY else 0
        n = draw(st.integers(low, max(low, k if most > 1 else 1)))
        lists[id_cell(ids, u)] = [
            id_cell(ids, i) for i in draw(st.lists(pool, min_size=n, max_size=n, unique=True))
        ]
    lines = [[who, " ".join(items)] for who, items in lists.items()]
    flaw = draw(
        st.sampled_from(
            [
                None,
                None,
                "missing",
                "unknown",
                "twice",
                "bad_id",
                "repeat",
                "short",
                "long",
                "empty_user",
                "column",
            ]
        )
    )
    header = [user, listed]
    if flaw == "missing":
        del lines[draw(st.integers(0, len(lines) - 1))]
    elif flaw == "unknown":
        lines.append([id_cell(ids, 10**6 + 1), " ".join(id_cell(ids, i) for i in range(1, k + 1))])
    elif flaw == "twice":
        lines.append(list(draw(st.sampled_from(lines))))
    elif flaw == "empty_user":
        draw(st.sampled_from(lines))[0] = ""
    elif flaw == "column":
        header = [user, draw(st.sampled_from(["items", f"{listed}_"]))]
    else:
        line = draw(st.sampled_from(lines))
        items = line[1].split(" ") if line[1] else []
        if flaw == "bad_id" and items:
            items[0] = "x" if ids == "integer" else "x\x01"
        elif flaw == "repeat" and len(items) > 1:
            items[-1] = items[0]
        elif flaw == "short" and rows is Rows.EXACTLY:
            items = items[:-1]
        elif flaw == "long":
            items.append(id_cell(ids, 10**6 + 7))
        line[1] = " ".join(items)
    submission = [",".join(header), *(",".join(line) for line in lines)]
    return Drawn(competition, "\n".join(solution) + "\n", "\n".join(submission) + "\n", usage)


def scorer_scores(case: Drawn, folder: Path) -> dict[str, float | None] | None:
    """`scorer score`'s public and private scores of the case, or None if it rejects it."""
    (folder / "solution.csv").write_text(case.solution, encoding="utf-8")
    (folder / "submission.csv").write_text(case.submission, encoding="utf-8")
    try:
        result = scorer.score(
            folder / "submission.csv", folder / "solution.csv", competition=case.competition
        )
    except SubmissionError:
        return None
    return {"Public": result.public, "Private": result.private}


def kaggle_scores(case: Drawn, metric: Any) -> dict[str, float | None] | None:
    """The metric called as Kaggle calls it: the kit's solution file and the submission read
    as Kaggle's metric template reads them (pandas' default types: a column of one all-digit
    id a row is numbers), then per `Usage` the solution's rows of that split and the
    submission's rows of its users (rows of no solution user reach both calls); None if
    either call rejects the file; a split's score is None when the metric says the host has
    no user to average (every user left out)."""
    columns = case.competition.columns
    written = kaggle.kaggle_solution(
        pl.read_csv(case.solution.encode(), infer_schema=False), case.competition
    ).write_csv()
    wide = pd.read_csv(pd.io.common.StringIO(written))
    frame = pd.read_csv(pd.io.common.StringIO(case.submission))
    found: dict[str, float | None] = {}
    for usage in ("Public", "Private"):
        rows = wide[wide["Usage"] == usage].drop(columns="Usage").reset_index(drop=True)
        if rows.empty:
            found[usage] = None
            continue
        if columns.user in frame.columns:
            ours = frame[columns.user].isin(rows[columns.user]) | ~frame[columns.user].isin(
                wide[columns.user]
            )
            part = frame[ours].reset_index(drop=True)
        else:
            part = frame
        try:
            found[usage] = metric.score(rows, part, columns.user)
        except metric.ParticipantVisibleError:
            return None
        except metric.HostVisibleError as err:
            assert "no user of this leaderboard" in str(err), err
            found[usage] = None
    return found


@settings(
    max_examples=300,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(case=drawn())
def test_the_metric_gives_scorer_s_verdict_and_scores(case: Drawn, tmp_path: Path) -> None:
    metric = metric_for(case.competition, tmp_path)
    expected = scorer_scores(case, tmp_path)
    found = kaggle_scores(case, metric)
    assert (found is None) == (expected is None), (expected, found)
    if expected is not None and found is not None:
        assert found == expected  # the same sums in the same order: the same bits


def test_a_rejection_names_no_user_count_or_split(tmp_path: Path) -> None:
    metric = metric_for(LOST_ITEMS, tmp_path)
    solution = pd.DataFrame({"user_id": [7, 8], "edition_ids": ["1 2", ""]})
    submission = pd.DataFrame({"user_id": [7, 8], "edition_ids": ["1 2", "3 x"]})
    with pytest.raises(metric.ParticipantVisibleError) as info:
        metric.score(solution, submission, "user_id")
    assert str(info.value) == kaggle.ROW_PROBLEMS
    assert not any(ch.isdigit() for ch in str(info.value))


def test_pandas_numbers_are_read_as_the_ids_they_were(tmp_path: Path) -> None:
    """Kaggle hands over frames pandas typed: integer users, and a list column of floats
    when every list holds one id or none. They score as the text they were written as."""
    metric = metric_for(Competition(k=1, rows=Rows.AT_MOST), tmp_path)
    solution = pd.DataFrame({"user_id": [7, 8, 9], "edition_ids": [5.0, float("nan"), 6.0]})
    submission = pd.DataFrame({"user_id": [9, 7, 8], "edition_ids": [6.0, 4.0, float("nan")]})
    assert metric.score(solution, submission, "user_id") == 1 / 3


# The kit, for any competition --------------------------------------------------------------


@pytest.mark.parametrize("folder", ["hm", "hm-kaggle"])
def test_the_kit_builds_for_another_competition_and_scores_as_scorer(
    tmp_path: Path, folder: str
) -> None:
    """data/hm (H&M's columns, MAP@12, empty users left out) and data/hm-kaggle (its text
    ids): the kit's metric scores the kit's sample 0 and the bundled sample submission as scorer."""
    data = ROOT / "data" / folder
    competition = Competition.load(data / "competition.toml")
    out = tmp_path / "kit"
    kit.build("kaggle", data / "solution.csv", out, competition=data / "competition.toml")
    metric = load(out / "metric.py")
    assert kaggle.spec(competition) == metric.SPEC
    solution = pd.read_csv(out / "solution.csv", dtype=str, keep_default_na=False)
    user = competition.columns.user
    assert list(solution.columns) == [user, competition.columns.list, "Usage"]
    expected = scorer.score(
        data / "sample_submission.csv", data / "solution.csv", competition=competition
    )
    wide = pd.read_csv(data / "sample_submission.csv", dtype=str, keep_default_na=False)
    for path in (out / "sample_submission.csv", None):
        frame = pd.read_csv(path, dtype=str, keep_default_na=False) if path else wide
        for usage, value in (("Public", expected.public), ("Private", expected.private)):
            rows = solution[solution["Usage"] == usage].drop(columns="Usage")
            part = frame[frame[user].isin(rows[user])]
            found = metric.score(rows.reset_index(drop=True), part.reset_index(drop=True), user)
            assert found == (0.0 if path else value)
    assert math.isfinite(expected.public or math.nan)


def as_kaggle_reads(text: str) -> pd.DataFrame:
    """A CSV file as Kaggle's metric template reads it: pandas' default types, so a column
    of one all-digit id a row (or none) is numbers, its leading zeros gone."""
    return pd.read_csv(pd.io.common.StringIO(text))


def test_hm_kaggle_ids_read_as_numbers_on_one_side_score_as_scorer(tmp_path: Path) -> None:
    """data/hm-kaggle with every customer listing one article (or none): pandas reads the
    submission's list as numbers (0174884004 is 174884004.0) and the solution's (several
    ids a row) as text; the metric maps the numbers back through the solution's ids."""
    data = ROOT / "data" / "hm-kaggle"
    competition = Competition.load(data / "competition.toml")
    out = tmp_path / "kit"
    kit.build("kaggle", data / "solution.csv", out, competition=data / "competition.toml")
    metric = load(out / "metric.py")
    user, listed = competition.columns.user, competition.columns.list
    wide = pd.read_csv(data / "sample_submission.csv", dtype=str, keep_default_na=False)
    wide[listed] = wide[listed].str.split(" ").str[0]  # the first article, or none
    (tmp_path / "one.csv").write_text(wide.to_csv(index=False), encoding="utf-8")
    expected = scorer.score(tmp_path / "one.csv", data / "solution.csv", competition=competition)
    solution = as_kaggle_reads((out / "solution.csv").read_text("utf-8"))
    frame = as_kaggle_reads((tmp_path / "one.csv").read_text("utf-8"))
    assert frame[listed].dtype.kind == "f" and solution[listed].dtype.kind not in "iuf"
    assert expected.public and expected.private  # hits: a silent 0 would show
    for usage, value in (("Public", expected.public), ("Private", expected.private)):
        rows = solution[solution["Usage"] == usage].drop(columns="Usage").reset_index(drop=True)
        part = frame[frame[user].isin(rows[user])].reset_index(drop=True)
        assert metric.score(rows, part, user) == value


#: Long lists of long ids: k = 100 text ids a user.
WIDE = Competition(k=100, rows=Rows.AT_MOST, ids=Ids(user=IdKind.TEXT, item=IdKind.TEXT))


@pytest.mark.parametrize("id_bytes", [41, MAX_TEXT_ID])
def test_a_list_of_100_long_ids_scores_as_scorer(tmp_path: Path, id_bytes: int) -> None:
    """k = 100 ids of 41 bytes or more make a list cell past 4,096 bytes; the file is valid
    (`scorer score` takes it: its line cap comes from k and the id kinds), so the metric
    takes it too."""
    items = [f"i{n:0{id_bytes - 1}d}" for n in range(200)]
    long = f"user_id,edition_id,stage\nu1,{items[0]},public\nu2,{items[150]},private\n"
    wide = f"user_id,edition_ids\nu1,{' '.join(items[:100])}\nu2,{' '.join(items[100:])}\n"
    (tmp_path / "solution.csv").write_text(long, encoding="utf-8")
    (tmp_path / "submission.csv").write_text(wide, encoding="utf-8")
    expected = scorer.score(
        tmp_path / "submission.csv", tmp_path / "solution.csv", competition=WIDE
    )
    assert (expected.public, expected.private) == (1.0, 1 / math.log2(52))  # ranks 1 and 51
    metric = metric_for(WIDE, tmp_path)
    solution = as_kaggle_reads(
        kaggle.kaggle_solution(pl.read_csv(long.encode(), infer_schema=False), WIDE).write_csv()
    )
    frame = as_kaggle_reads(wide)
    assert frame["edition_ids"].str.len().min() > 4096
    for usage, value in (("Public", expected.public), ("Private", expected.private)):
        rows = solution[solution["Usage"] == usage].drop(columns="Usage").reset_index(drop=True)
        part = frame[frame["user_id"].isin(rows["user_id"])].reset_index(drop=True)
        assert metric.score(rows, part, "user_id") == value


#: Text ids of one digit string with leading zeros: users 01, 02, 03; user 01 and 02 each
#: have one relevant item (0007, 0008), 03 none, so pandas reads the solution's lists as
#: numbers; the submission's two ids a user stay text.
DIGITS = Competition(k=2, rows=Rows.AT_MOST, ids=Ids(user=IdKind.TEXT, item=IdKind.TEXT))
DIGITS_SOLUTION = "user_id,edition_ids\n01,0007\n02,0008\n03,\n"
DIGITS_SUBMISSION = "user_id,edition_ids\n01,0009 0007\n02,0008 0009\n03,0009 0007\n"


def test_ids_read_as_numbers_in_the_solution_only_score_as_scorer(tmp_path: Path) -> None:
    metric = metric_for(DIGITS, tmp_path)
    long = "user_id,edition_id\n01,0007\n02,0008\n03,\n"
    (tmp_path / "solution.csv").write_text(long, encoding="utf-8")
    (tmp_path / "submission.csv").write_text(DIGITS_SUBMISSION, encoding="utf-8")
    expected = scorer.score(
        tmp_path / "submission.csv", tmp_path / "solution.csv", competition=DIGITS
    ).overall
    solution, submission = as_kaggle_reads(DIGITS_SOLUTION), as_kaggle_reads(DIGITS_SUBMISSION)
    assert solution["user_id"].dtype.kind == "i" and solution["edition_ids"].dtype.kind == "f"
    assert submission["user_id"].dtype.kind == "i"  # 01 is 1 on both sides
    found = metric.score(solution, submission, "user_id")
    assert found == expected == (1 / math.log2(3) + 1 + 0) / 3


def test_ids_told_apart_by_their_zeros_alone_are_refused_naming_the_fix(tmp_path: Path) -> None:
    """The solution holds 007 and 0007 (text: a row of two), the submission 7 (numbers): which
    one it was is lost, so the metric says how to read the files, and scores nothing."""
    metric = metric_for(DIGITS, tmp_path)
    solution = as_kaggle_reads("user_id,edition_ids\nu1,007 0007\n")
    submission = as_kaggle_reads("user_id,edition_ids\nu1,7\n")
    with pytest.raises(metric.HostVisibleError) as info:
        metric.score(solution, submission, "user_id")
    assert "leading zeros" in str(info.value)
    assert "dtype=str" in str(info.value)


def test_a_cell_that_is_no_text_is_judged_as_text(tmp_path: Path) -> None:
    """A frame cell holding a list (no CSV makes one, a pandas frame can): judged as its
    text, a broken row like any other, never an error of the metric."""
    metric = metric_for(Competition(k=2), tmp_path)
    solution = pd.DataFrame({"user_id": [7], "edition_ids": ["1 2"]})
    submission = pd.DataFrame({"user_id": [7], "edition_ids": [[1, 2]]})
    with pytest.raises(metric.ParticipantVisibleError) as info:
        metric.score(solution, submission, "user_id")
    assert str(info.value) == kaggle.ROW_PROBLEMS
