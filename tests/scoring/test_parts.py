"""Scoring in parts (files split by user, scored part by part) gives what scoring the files
whole gives: the same bits for a valid submission, the same report for a broken one."""

from __future__ import annotations

import gzip
import json
import tempfile
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.competitions import Competition, competitions
from support.paths import CORPUS
from typer.testing import CliRunner

import scorer
from scorer import HostError, SubmissionError
from scorer.cli import app
from scorer.competition import Competition as Spec
from scorer.competition import IdKind, Ids
from scorer.contract import Role, spec_of
from scorer.errors import ScorerError, UsageError
from scorer.parts import (
    BASE_BYTES,
    BYTES_PER_BYTE,
    CAREFUL_BYTES_PER_BYTE,
    LEAST_BUDGET,
    SPLIT_BYTES,
    TEXT_BYTES_PER_BYTE,
    Plan,
    plan,
)
from scorer.read import DEFAULT_LIMITS, Bound, Limits, read_table
from scorer.read.limits import WHOLE_ROWS_FLOOR
from scorer.read.split import split

MANIFEST: dict[str, Any] = json.loads((CORPUS / "expected.json").read_text(encoding="utf-8"))
SOLUTION = CORPUS / MANIFEST["solution"]
VALID = CORPUS / MANIFEST["valid_submission"]


def outcome(
    submission: Path, solution: Path, parts: int | None = None, limits: Limits = DEFAULT_LIMITS
) -> dict[str, Any]:
    """A score's figures and per-user rows, or the error's kind and full report."""
    try:
        result = scorer.score(submission, solution, parts=parts, limits=limits)
    except ScorerError as exc:
        report = getattr(exc, "report", None)
        return {"error": type(exc).__name__, "report": report.to_dict() if report else str(exc)}
    score = result.to_dict()
    del score["parts"]  # how the work was split: the only thing allowed to differ
    return {"score": score, "per_user": result.per_user.rows()}


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(competition=competitions(), parts=st.integers(2, 7))
def test_a_valid_submission_scores_the_same_bits_in_parts(
    competition: Competition, parts: int
) -> None:
    with tempfile.TemporaryDirectory() as folder:
        submission, solution = competition.write_csv(Path(folder))
        whole = scorer.score(submission, solution, no_lost=competition.no_lost, parts=1)
        split = scorer.score(submission, solution, no_lost=competition.no_lost, parts=parts)
    assert (whole.parts, split.parts) == (1, parts)  # a splitter that gives up fails here
    assert {**split.to_dict(), "parts": 1} == whole.to_dict()
    assert split.per_user.equals(whole.per_user)


SUBMISSIONS = sorted(case["file"] for case in MANIFEST["cases"] if case["role"] == "submission")
SOLUTIONS = sorted(case["file"] for case in MANIFEST["cases"] if case["role"] == "solution")


@pytest.mark.parametrize("name", SUBMISSIONS)
def test_every_corpus_submission_gets_the_same_outcome_in_parts(name: str) -> None:
    """Counts, codes and examples (line, user, value, message) as when read whole."""
    path = CORPUS / name
    assert outcome(path, SOLUTION, parts=3) == outcome(path, SOLUTION, parts=1)


@pytest.mark.parametrize("name", SOLUTIONS)
def test_every_corpus_solution_gets_the_same_outcome_in_parts(name: str) -> None:
    path = CORPUS / name
    assert outcome(VALID, path, parts=3) == outcome(VALID, path, parts=1)


def test_problems_of_every_part_are_reported_together(tmp_path: Path) -> None:
    """Users in different parts, each with a problem: one report, counts added, examples in
    line order."""
    lines = VALID.read_text().splitlines(keepends=True)
    header, rows = lines[0], lines[1:]
    users = sorted({int(row.split(",")[0]) for row in rows})
    # Drop one row of three users that fall in three different parts (user_id % 3).
    victims = {next(u for u in users if u % 3 == r) for r in range(3)}
    kept, dropped = [], set()
    for row in rows:
        user = int(row.split(",")[0])
        if user in victims and user not in dropped:
            dropped.add(user)
            continue
        kept.append(row)
    path = tmp_path / "short.csv"
    path.write_text(header + "".join(kept))
    with pytest.raises(SubmissionError) as caught:
        scorer.score(path, SOLUTION, parts=3)
    problem = caught.value.report.problems[0]
    assert problem.code == "wrong_row_count" and problem.count == 3
    shown = [issue.line for issue in problem.examples]
    assert shown == sorted(shown)
    with pytest.raises(SubmissionError) as whole:
        scorer.score(path, SOLUTION, parts=1)
    assert caught.value.report == whole.value.report


def test_a_broken_solution_is_a_host_error_in_parts_too(tmp_path: Path) -> None:
    path = tmp_path / "solution.csv"
    path.write_text(SOLUTION.read_text() + SOLUTION.read_text().splitlines()[1] + "\n")
    with pytest.raises(HostError) as caught:
        scorer.score(VALID, path, parts=4)
    assert [p.code for p in caught.value.report.problems] == ["duplicate_pair"]


def sparse(path: Path, size: int) -> Path:
    """A file of `size` bytes that takes no disk."""
    with path.open("wb") as handle:
        handle.truncate(size)
    return path


def test_files_over_the_memory_budget_are_scored_in_parts_by_default(tmp_path: Path) -> None:
    small = tmp_path / "small.csv"
    small.write_text("user_id,edition_id,rank\n")
    budget = Limits(max_memory=4 << 30)
    fits = (budget.max_memory - BASE_BYTES) // BYTES_PER_BYTE - small.stat().st_size
    assert plan(sparse(tmp_path / "fits.csv", fits), small, limits=budget).parts == 1
    large = sparse(tmp_path / "large.csv", 3 << 30)
    room = budget.max_memory - BASE_BYTES - SPLIT_BYTES
    expected = -(-CAREFUL_BYTES_PER_BYTE * ((3 << 30) + small.stat().st_size) // room)
    assert plan(large, small, limits=budget).parts == expected == 8  # sized for the careful reader
    assert plan(large, small, limits=Limits(max_memory=32 << 30)).parts == 1  # a bigger budget
    assert plan(large, small, 2, limits=budget).parts == 2  # asked for: as asked
    assert plan(tmp_path / "missing.csv", small).parts == 1  # the reader says it is missing


def test_a_parquet_file_over_the_memory_budget_is_refused_before_it_is_read(
    tmp_path: Path,
) -> None:
    """A Parquet file is not read in parts: over the budget (from its footer's decoded
    size), it is refused by name, the participant's when it is the submission."""
    path = tmp_path / "submission.parquet"
    pl.read_csv(VALID).write_parquet(path)
    tight = Limits(max_memory=256 << 20)  # less than the process itself
    with pytest.raises(SubmissionError) as caught:
        scorer.validate(path, targets=TARGETS, limits=tight)
    (found,) = caught.value.report.problems
    assert found.code == "too_large_for_memory"
    assert found.examples[0].message.startswith("submission.parquet: reading it needs about ")
    assert found.examples[0].message.endswith(
        "of memory, over the budget of 256 MiB, and a file of its kind is not read in parts"
    )
    assert (
        found.hint == "raise the budget with --max-memory (max_memory in Limits), or use a CSV file"
    )
    assert scorer.validate(path, targets=TARGETS).rows > 0  # the default budget reads it


def test_the_cli_takes_a_memory_budget(tmp_path: Path) -> None:
    path = tmp_path / "submission.parquet"
    pl.read_csv(VALID).write_parquet(path)
    args = ["validate", str(path), "--targets", str(TARGETS), "--json"]
    tight = CliRunner().invoke(app, [*args, "--max-memory", str(256 << 20)])
    assert tight.exit_code == 1
    assert json.loads(tight.stdout)["error"]["problems"][0]["code"] == "too_large_for_memory"
    assert CliRunner().invoke(app, args).exit_code == 0


def test_parts_must_be_positive() -> None:
    with pytest.raises(UsageError):
        scorer.score(VALID, SOLUTION, parts=0)


def test_the_cli_takes_a_number_of_parts() -> None:
    args = ["score", str(VALID), "--solution", str(SOLUTION), "--json"]
    whole = CliRunner().invoke(app, args)
    split = CliRunner().invoke(app, [*args, "--parts", "4"])
    assert whole.exit_code == split.exit_code == 0
    whole_json, split_json = json.loads(whole.stdout), json.loads(split.stdout)
    assert (whole_json.pop("parts"), split_json.pop("parts")) == (1, 4)
    assert split_json == whole_json


TARGETS = CORPUS / MANIFEST["targets"]


def checked(submission: Path, parts: int, **truth: Path) -> dict[str, Any]:
    """Rows checked, or the error's kind and full report."""
    try:
        return {"rows": scorer.validate(submission, parts=parts, **truth).rows}
    except ScorerError as exc:
        report = getattr(exc, "report", None)
        return {"error": type(exc).__name__, "report": report.to_dict() if report else str(exc)}


@pytest.mark.parametrize("name", SUBMISSIONS)
def test_every_corpus_submission_validates_the_same_in_parts(name: str) -> None:
    path = CORPUS / name
    assert checked(path, 3, targets=TARGETS) == checked(path, 1, targets=TARGETS)


@pytest.mark.parametrize(
    "name", ["sub/all_users_missing.csv", VALID.relative_to(CORPUS).as_posix()]
)
def test_a_submission_validates_against_a_solution_in_parts(name: str) -> None:
    path = CORPUS / name
    assert checked(path, 2, solution=SOLUTION) == checked(path, 1, solution=SOLUTION)


def test_a_broken_targets_file_is_a_host_error_in_parts_too(tmp_path: Path) -> None:
    path = tmp_path / "targets.csv"
    lines = TARGETS.read_text().splitlines()
    path.write_text("\n".join([*lines, lines[1], lines[2]]) + "\n")
    whole = checked(VALID, 1, targets=path)
    assert checked(VALID, 3, targets=path) == whole
    assert whole["error"] == "HostError"
    assert [p["code"] for p in whole["report"]["problems"]] == ["duplicate_user"]


# The splitter itself: a parts path that quietly stopped splitting would still give the same
# scores, so these look at the parts.


@pytest.mark.parametrize("name", ["valid.csv", "valid_crlf.csv", "valid_excel.csv"])
def test_each_part_holds_its_own_users_with_the_file_s_line_numbers(
    name: str, tmp_path: Path
) -> None:
    source = CORPUS / "sub" / name
    whole = read_table(source, spec_of(Role.SUBMISSION), DEFAULT_LIMITS).frame
    parts = split(source, spec_of(Role.SUBMISSION), 3, tmp_path, DEFAULT_LIMITS)
    frames = [parts.table(part, DEFAULT_LIMITS).frame for part in range(3)]
    users = [set(frame.get_column("user_id")) for frame in frames]
    assert all(0 < len(own) < len(set(whole.get_column("user_id"))) for own in users)
    assert not (users[0] & users[1] or users[0] & users[2] or users[1] & users[2])
    for part, own in enumerate(users):
        assert all(user % 3 == part for user in own)
    together = pl.concat(frames).sort("line")
    assert together.equals(whole.sort("line"))  # every row once, on its own line


def test_a_gzip_file_is_split_as_its_text(tmp_path: Path) -> None:
    plain = CORPUS / "sub" / "valid.csv"
    packed = tmp_path / "valid.csv.gz"
    packed.write_bytes(gzip.compress(plain.read_bytes()))
    assert outcome(packed, SOLUTION, parts=4) == outcome(plain, SOLUTION, parts=1)
    assert scorer.score(packed, SOLUTION, parts=4).parts == 4


def test_frames_and_parquet_files_are_one_part(tmp_path: Path) -> None:
    frame = pl.read_csv(VALID)
    assert plan(frame, SOLUTION, 4).parts == 1
    frame.write_parquet(tmp_path / "valid.parquet")
    assert plan(tmp_path / "valid.parquet", SOLUTION, 4).parts == 1
    assert scorer.score(frame, SOLUTION, parts=4).parts == 1


def test_a_file_for_the_careful_reader_is_read_in_parts_when_its_scan_finds_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Between the two readers' estimates, two files are planned whole; the reader's own scan
    finds the one the careful reader must read (a space after a value), and the run is then
    read in parts sized for that reader: the same scores as whole. Its clean twin stays one
    part."""
    import scorer.parts as parts

    monkeypatch.setattr(parts, "BASE_BYTES", 0)  # a budget small tables can cross
    monkeypatch.setattr(parts, "SPLIT_BYTES", 0)
    monkeypatch.setattr(parts, "PART_BYTES", 1)
    padded = tmp_path / "padded.csv"
    header, *rows = VALID.read_text().splitlines()
    padded.write_text("\n".join([header, *(row.replace(",", " ,", 1) for row in rows)]) + "\n")
    total = padded.stat().st_size + SOLUTION.stat().st_size
    budget = Limits(max_memory=BYTES_PER_BYTE * total + 1)  # the typed reader fits, whole
    assert CAREFUL_BYTES_PER_BYTE * total > budget.max_memory  # the careful one does not
    assert (
        plan(padded, SOLUTION, limits=budget).parts
        == plan(VALID, SOLUTION, limits=budget).parts
        == 1
    )
    expected = -(-CAREFUL_BYTES_PER_BYTE * total // budget.max_memory)
    careful = scorer.score(padded, SOLUTION, limits=budget)
    assert careful.parts == expected > 1
    assert outcome(padded, SOLUTION, limits=budget) == outcome(VALID, SOLUTION, parts=1)
    assert scorer.score(VALID, SOLUTION, limits=budget).parts == 1
    assert scorer.validate(padded, solution=SOLUTION, limits=budget).rows == len(rows)


@pytest.mark.parametrize("parts", [1, 3])
def test_one_users_rows_past_a_million_are_refused_by_count(tmp_path: Path, parts: int) -> None:
    """A file whose rows are nearly all one user's (the skewed upload that took 12 GB) is
    too_many_rows from its row count, before its rows are judged: whole, or in the one part
    that holds that user, before the part is loaded."""
    path = tmp_path / "skewed.csv"
    row = f"{MANIFEST['users'][0]},1,1\n".encode()
    path.write_bytes(b"user_id,edition_id,rank\n" + row * (WHOLE_ROWS_FLOOR + 1))
    with pytest.raises(SubmissionError) as caught:
        scorer.validate(path, targets=TARGETS, parts=parts)
    codes = caught.value.report.codes
    assert "too_many_rows" in codes
    message = caught.value.report.problems[codes.index("too_many_rows")].examples[0].message
    assert f"has {WHOLE_ROWS_FLOOR + 1:,} rows" in message


def test_the_plan_says_what_it_decided_and_why(tmp_path: Path) -> None:
    small = tmp_path / "small.csv"
    small.write_text("user_id,edition_id,rank\n")
    large = sparse(tmp_path / "large.csv", 3 << 30)
    total = (3 << 30) + small.stat().st_size
    estimate = BYTES_PER_BYTE * total + BASE_BYTES
    room = (4 << 30) - BASE_BYTES - SPLIT_BYTES
    careful = -(-CAREFUL_BYTES_PER_BYTE * total // room)
    assert plan(large, small, limits=Limits(max_memory=4 << 30)) == Plan(
        careful, "careful", "over the budget whole", estimate
    )
    # Asked for one part, it keeps the careful reader's parts for a file that needs them.
    assert plan(large, small, 3) == Plan(3, "typed", "asked for", estimate, careful)


def test_a_budget_with_no_room_for_a_part_is_refused_with_the_least_budget() -> None:
    # Before: "a file of its kind is not read in parts ... or use a CSV file", for a CSV.
    result = CliRunner().invoke(
        app,
        [
            "score",
            "data/sample_submission.csv",
            "--solution",
            "data/solution.csv",
            "--max-memory",
            "315000000",
        ],
    )
    assert result.exit_code == 1
    assert "[too_large_for_memory]" in result.output
    assert "leaves no room to read it in parts; reading in parts needs at least 1,001 MiB" in (
        result.output
    )
    assert "not read in parts" not in result.output
    assert LEAST_BUDGET == BASE_BYTES + SPLIT_BYTES + (1 << 20)
    help_text = CliRunner().invoke(app, ["score", "--help"], terminal_width=200).output
    assert "from 1,001 MiB up" in help_text


def test_limits_hold_the_users_caps_only() -> None:
    with pytest.raises(TypeError):
        Limits(careful_whole=False)  # type: ignore[call-arg]
    with pytest.raises(TypeError):
        Limits(valid_rows=3)  # type: ignore[call-arg]
    bound = Bound.of(Limits(max_memory=5 << 30), valid_rows=3)
    assert (bound.max_memory, bound.whole_rows(), bound.careful_whole()) == (5 << 30, 3, True)


def test_a_file_that_needs_the_careful_reader_is_scored_under_any_limits(tmp_path: Path) -> None:
    # A minus sign sends a file to the careful reader; `NeedsParts` never leaves the API.
    lines = VALID.read_text().splitlines()
    head, first = lines[0], lines[1].split(",")
    first[-1] = "-1"
    path = tmp_path / "minus.csv"
    path.write_text("\n".join([head, ",".join(first), *lines[2:]]) + "\n")
    for limits in (DEFAULT_LIMITS, Limits(max_memory=LEAST_BUDGET)):
        with pytest.raises(SubmissionError):
            scorer.score(path, SOLUTION, limits=limits)


def test_text_ids_are_planned_at_their_own_cost_per_byte(tmp_path: Path) -> None:
    """A byte of a long text id costs a byte of memory, not the 8 of an integer written in
    a few digits: two files of text ids fit a budget that the same bytes of integers do not."""
    text = Spec(ids=Ids(user=IdKind.TEXT, item=IdKind.TEXT))
    large = sparse(tmp_path / "large.csv", 600 << 20)
    small = sparse(tmp_path / "small.csv", 600 << 20)
    budget = Limits(max_memory=3 << 30)
    assert plan(large, small, limits=budget).parts > 1
    texts = plan(large, small, limits=budget, competition=text)
    assert texts.parts == 1
    assert texts.estimate == TEXT_BYTES_PER_BYTE * (1200 << 20) + BASE_BYTES
