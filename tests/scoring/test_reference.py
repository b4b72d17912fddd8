"""The reference scorer itself: hand-computed cases under other rules (MAP@12, short and empty
lists, the wide layout, the at_most row rule), its defaults, and the bundled H&M-style data."""

from __future__ import annotations

import importlib.util
import math
from collections import Counter
from dataclasses import replace
from math import log2
from pathlib import Path

import pytest
from support import reference as ref
from support.paths import DATA
from support.reference import Rules, score, score_rules

HM = DATA / "hm"

#: The H&M-style rules, spelt out here as the task states them.
HM_RULES = Rules(
    k=12,
    metric="map",
    rows="at_most",
    empty_users="exclude",
    user="customer_id",
    item="article_id",
    rank="rank",
    list="prediction",
)


def close(got: float | None, want: float) -> bool:
    """Within a few ulps: the reference rounds once, a formula in floats a few times."""
    return got is not None and math.isclose(got, want, rel_tol=1e-14, abs_tol=1e-15)


def wide(lists: dict[int, str]) -> list[dict[str, str]]:
    """Wide submission rows: one a customer, articles separated by single spaces."""
    return [{"customer_id": str(c), "prediction": p} for c, p in lists.items()]


def long(ranked: dict[int, dict[int, int]]) -> list[dict[str, str]]:
    """Long submission rows from customer -> {rank: article}."""
    return [
        {"customer_id": str(c), "article_id": str(a), "rank": str(r)}
        for c, by_rank in ranked.items()
        for r, a in by_rank.items()
    ]


def truth(lost: dict[int, list[int]], usage: dict[int, str] | None = None) -> list[dict[str, str]]:
    """Solution rows: a customer's lost articles, one empty row for a customer with none."""
    rows = []
    for customer, articles in lost.items():
        for article in articles or [None]:
            row = {
                "customer_id": str(customer),
                "article_id": "" if article is None else str(article),
            }
            if usage is not None:
                row["Usage"] = usage[customer]
            rows.append(row)
    return rows


# ---------------------------------------------------------------------------------------------
# One user under MAP@12, at most 12 items
# ---------------------------------------------------------------------------------------------


def test_map_at_12_with_a_short_list() -> None:
    """Lost {11, 22, 33}; the list is 11, 5, 22: hits at positions 1 and 3."""
    user = score_rules(wide({1: "11 5 22"}), truth({1: [11, 22, 33]}), HM_RULES).users[1]
    assert (user.n_relevant, user.hits) == (3, 2)
    assert close(user.map, (1 / 1 + 2 / 3) / min(3, 12))
    assert close(user.recall, 2 / 3)
    assert close(user.mrr, 1 / 1)
    assert close(user.hit_rate, 1)
    assert close(user.ndcg, (1 + 1 / log2(4)) / (1 + 1 / log2(3) + 1 / log2(4)))


def test_map_divides_by_k_when_more_items_are_lost() -> None:
    """15 lost, hits at positions 1 and 2 of 12: AP divides by min(15, 12), not by 15."""
    lost = list(range(100, 115))
    user = score_rules(wide({1: "100 101 7 8"}), truth({1: lost}), HM_RULES).users[1]
    assert close(user.map, (1 / 1 + 2 / 2) / min(15, 12))
    assert close(user.recall, 2 / 15)


def test_precision_divides_by_k_for_a_short_list() -> None:
    """Two items, both hits: precision@12 is 2/12, not 2/2."""
    user = score_rules(wide({1: "11 22"}), truth({1: [11, 22]}), HM_RULES).users[1]
    assert close(user.precision, 2 / 12)
    assert close(user.map, (1 / 1 + 2 / 2) / min(2, 12))
    assert close(user.ndcg, 1.0)  # both lost items at the top: perfect


def test_a_wide_row_with_an_empty_list_scores_zero_and_counts() -> None:
    lists = {1: "", 2: "11"}
    result = score_rules(wide(lists), truth({1: [11, 22], 2: [11]}), HM_RULES)
    empty = result.users[1]
    assert empty.n_relevant == 2
    assert empty.hits == 0
    for metric in ref.METRICS:
        assert getattr(empty, metric) == 0.0, metric
    overall = result.splits["overall"]
    assert overall is not None
    assert overall["users"] == 2
    assert close(overall["map"], (0 + 1) / 2)  # the empty list counts as a 0


def test_a_customer_without_lost_items_scores_zero_or_is_left_out() -> None:
    rows, solution = wide({1: "", 2: "11"}), truth({1: [], 2: [11]})
    assert score_rules(rows, solution, HM_RULES, no_lost="zero").users[1].map == 0.0
    assert set(score_rules(rows, solution, HM_RULES, no_lost="exclude").users) == {2}
    assert set(score_rules(rows, solution, HM_RULES).users) == {2}  # the rules' own: exclude


def test_a_missing_rank_in_the_long_layout_is_an_empty_position() -> None:
    """at_most, long: ranks 1 and 3 only; the hit at rank 3 is discounted as rank 3."""
    user = score_rules(long({1: {1: 5, 3: 11}}), truth({1: [11, 22]}), HM_RULES).users[1]
    assert close(user.mrr, 1 / 3)
    assert close(user.map, (1 / 3) / min(2, 12))
    assert close(user.ndcg, (1 / log2(4)) / (1 + 1 / log2(3)))
    assert close(user.precision, 1 / 12)


def test_the_wide_and_long_layouts_agree() -> None:
    lists = {1: "11 5 22", 2: "", 3: "7 8 9 10 11 12 13 14 15 16 17 33"}
    ranked = {c: dict(enumerate(map(int, p.split()), start=1)) for c, p in lists.items() if p}
    solution = truth(
        {1: [11, 22, 33], 2: [11], 3: [33, 11]}, {1: "Public", 2: "Private", 3: "Public"}
    )
    from_wide = score_rules(wide(lists), solution, HM_RULES)
    from_long = score_rules(wide({2: ""}) + long(ranked), solution, HM_RULES)
    assert from_wide == from_long


def test_items_past_k_change_nothing() -> None:
    solution = truth({1: [11, 99]})
    twelve = " ".join(str(a) for a in range(1, 12)) + " 11"
    assert score_rules(wide({1: twelve}), solution, HM_RULES) == score_rules(
        wide({1: twelve + " 99"}), solution, HM_RULES
    )


def test_split_values_are_the_rules_and_any_case() -> None:
    rules = Rules(k=3, public="A", private="B", ignored="X", split_columns=("Usage",))
    rows = [
        {"user_id": str(u), "edition_id": str(e), "rank": str(r)}
        for u in (1, 2, 3)
        for r, e in enumerate((11, 12, 13), start=1)
    ]
    solution = [
        {"user_id": "1", "edition_id": "11", "Usage": "a"},
        {"user_id": "2", "edition_id": "13", "Usage": "B"},
        {"user_id": "3", "edition_id": "11", "Usage": "x"},
    ]
    result = score_rules(rows, solution, rules)
    assert {u: s.stage for u, s in result.users.items()} == {1: "public", 2: "private"}
    assert result.ignored == 1
    assert close(ref.primary(result, rules, "public"), 1.0)
    assert close(ref.primary(result, rules, "private"), (1 / log2(4)) / 1)
    assert close(ref.primary(result, rules), (1 + 1 / log2(4)) / 2)


def test_primary_is_the_rules_metric() -> None:
    result = score_rules(wide({1: "5 11"}), truth({1: [11]}), HM_RULES)
    assert close(ref.primary(result, HM_RULES), (1 / 2) / min(1, 12))
    ndcg_rules = replace(HM_RULES, metric="ndcg")
    assert close(ref.primary(result, ndcg_rules), 1 / log2(3))
    assert ref.primary(result, HM_RULES, "public") is None  # no split column


@pytest.mark.parametrize(
    "change",
    [{"k": 0}, {"k": 101}, {"k": 12.0}, {"metric": "auc"}, {"rows": "some"}, {"ignored": "PUBLIC"}],
)
def test_rules_out_of_range_are_refused(change: dict[str, object]) -> None:
    with pytest.raises(ValueError):
        Rules(**change)  # type: ignore[arg-type]


# ---------------------------------------------------------------------------------------------
# The at_most row rule in `problems`
# ---------------------------------------------------------------------------------------------


def csv_text(header: str, rows: list[tuple[int, int, int]]) -> str:
    return header + "\n" + "".join(f"{u},{a},{r}\n" for u, a, r in rows)


HEADER = "customer_id,article_id,rank"


def test_at_most_allows_1_to_k_rows_and_counts_more() -> None:
    rows = [(1, 11, 1), (1, 12, 2), (1, 13, 3)]  # 3 rows: fine
    rows += [(2, 100 + r, r) for r in range(1, 13)]  # 12 rows: fine
    rows += [(3, 100 + r, r) for r in range(1, 13)] + [(3, 200, 12)]  # 13: too many
    rows += [(4, 200, 13)]  # one row, rank 13 > k
    found = ref.problems(csv_text(HEADER, rows), [1, 2, 3, 4, 5], HM_RULES)
    assert found == Counter(
        {"wrong_row_count": 1, "duplicate_rank": 1, "invalid_rank": 1, "missing_user": 1}
    )
    assert ref.codes(csv_text(HEADER, rows[:15]), [1, 2], HM_RULES) == set()


def test_exactly_counts_every_user_without_k_rows() -> None:
    rules = replace(HM_RULES, rows="exactly")
    rows = [(1, 11, 1), (1, 12, 2)] + [(2, 100 + r, r) for r in range(1, 13)]
    assert ref.problems(csv_text(HEADER, rows), [1, 2], rules) == Counter({"wrong_row_count": 1})


def test_problems_read_the_rules_columns() -> None:
    lost_items = "user_id,edition_id,rank\n" + "".join(f"1,{e},{e}\n" for e in range(1, 21))
    assert ref.problems(lost_items, [1]) == Counter()  # lost items by default
    # customer_id and article_id missing, user_id and edition_id unknown; rank is shared
    assert ref.problems(lost_items, [1], HM_RULES) == Counter(
        {"missing_column": 2, "unknown_column": 2}
    )


# ---------------------------------------------------------------------------------------------
# The defaults and the bundled data
# ---------------------------------------------------------------------------------------------


def test_lost_items_rules_are_todays_defaults() -> None:
    rules = Rules.lost_items()
    assert (rules.k, rules.metric, rules.rows) == (ref.K, "ndcg", "exactly")
    assert (rules.user, rules.item, rules.rank, rules.list) == (
        "user_id",
        "edition_id",
        "rank",
        "edition_ids",
    )
    assert rules.split_columns == ("stage", "Usage")


def test_score_is_score_rules_with_the_lost_items_rules() -> None:
    submission = ref.read_csv(DATA / "sample_submission.csv")
    solution = ref.read_csv(DATA / "solution.csv")
    expected = score_rules(submission, solution, Rules.lost_items())
    assert score(submission, solution) == expected
    assert expected.splits["public"] is not None
    assert expected.splits["private"] is not None
    assert len(expected.users) == 1_000


def test_hm_rules_load_from_the_toml() -> None:
    assert Rules.load(HM / "competition.toml") == HM_RULES


def test_hm_files_are_what_the_script_writes(tmp_path: Path) -> None:
    spec = importlib.util.spec_from_file_location("make_data", DATA / "make_data.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    module.write_hm(tmp_path)
    names = ["competition.toml", "solution.csv", "targets.csv", "sample_submission.csv"]
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(names)
    for name in names:
        assert (tmp_path / name).read_bytes() == (HM / name).read_bytes(), name


def test_hm_sample_submission_keeps_the_rules() -> None:
    targets = [row["customer_id"] for row in ref.read_csv(HM / "targets.csv")]
    rows = ref.read_csv(HM / "sample_submission.csv")
    assert [row["customer_id"] for row in rows] == targets
    lengths = Counter()
    for row in rows:
        items = row["prediction"].split(" ") if row["prediction"] else []
        assert len(items) <= 12
        assert len(set(items)) == len(items)
        lengths[len(items)] += 1
    assert lengths[0] > 0  # a few empty lists
    assert sum(n for length, n in lengths.items() if 0 < length < 12) > 0  # some short ones
    solution = ref.read_csv(HM / "solution.csv")
    usage = {(row["customer_id"], row["Usage"]) for row in solution}
    assert sorted(c for c, _ in usage) == sorted(targets)  # one Usage a customer
    assert len(score_rules(rows, solution, HM_RULES, no_lost="zero").users) == len(targets)
    result = score_rules(rows, solution, HM_RULES)  # Kaggle's rule: buyers only
    bought = {row["customer_id"] for row in solution if row["article_id"]}
    assert 0 < len(bought) < len(targets)  # some customers bought nothing that week
    assert {str(user) for user in result.users} == bought
    assert 0 < (ref.primary(result, HM_RULES) or 0) < 1
