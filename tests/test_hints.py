"""Hints: a problem may carry one line on how to fix the mistake behind it."""

from __future__ import annotations

from scorer.errors import MAX_EXAMPLES, Code, Issue, Problem, Report, merge

# ---------------------------------------------------------------------------------------------
# The error model: a problem's hint in JSON and in the report
# ---------------------------------------------------------------------------------------------


def issue(line: int) -> Issue:
    return Issue(Code.INVALID_RANK, f"line {line}: rank '0' is not an integer 1..20", line=line)


def test_a_problem_has_a_hint_after_its_examples_in_json() -> None:
    hinted = Problem(Code.INVALID_RANK, 1, (issue(2),), hint="count from 1")
    assert list(hinted.to_dict()) == ["code", "count", "examples", "hint"]
    assert hinted.to_dict()["hint"] == "count from 1"
    assert Problem(Code.INVALID_RANK, 1, (issue(2),)).to_dict()["hint"] is None
    assert Problem.from_dict(hinted.to_dict()) == hinted
    stored = {key: value for key, value in hinted.to_dict().items() if key != "hint"}
    assert Problem.from_dict(stored).hint is None  # a report stored before hints


def test_the_hint_is_the_problems_last_line() -> None:
    many = Problem(
        Code.INVALID_RANK, 7, tuple(issue(n) for n in range(2, 2 + MAX_EXAMPLES)), hint="fix"
    )
    plain = Problem(Code.WRONG_ROW_COUNT, 1, (issue(9),))
    lines = Report.of("f.csv", [many, plain]).render().splitlines()
    assert lines[1:9] == [
        "  [invalid_rank] 7 times",
        *[f"    line {n}: rank '0' is not an integer 1..20" for n in range(2, 7)],
        "    … and 2 more",
        "    hint: fix",
    ]
    assert lines[9:] == [
        "  [wrong_row_count] 1 time",
        "    line 9: rank '0' is not an integer 1..20",
    ]


def test_merge_keeps_the_first_hint() -> None:
    parts = [
        Problem(Code.INVALID_ID, 1, (issue(5),)),
        Problem(Code.INVALID_ID, 2, (issue(3),), hint="first"),
        Problem(Code.INVALID_ID, 1, (issue(2),), hint="second"),
    ]
    (merged,) = merge(parts)
    assert (merged.count, merged.hint) == (4, "first")
    assert [example.line for example in merged.examples] == [2, 3, 5]
