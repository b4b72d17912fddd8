"""The JSON contract: every `--json` output is one object that validates against the schema
the package ships, for every outcome, and its status goes with its exit code."""

from __future__ import annotations

import errno
import json
import os
import shlex
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator
from support.doctools import console_commands
from support.leaderboards import score_args
from support.paths import ROOT
from typer.testing import CliRunner

import scorer
from scorer import cli
from scorer.cli import app
from scorer.envelope import SCHEMA_VERSION, Status
from scorer.errors import Failure
from scorer.schemas import COMMANDS, build, file_name, schema

DATA = ROOT / "data"
runner = CliRunner()

#: The status each exit code goes with, for every command.
STATUS = {0: "ok", 1: "rejected", 2: "error", 130: "interrupted"}


def checked(command: str, args: list[str | Path], exit_code: int) -> dict[str, Any]:
    """Run `scorer ARGS`, assert one JSON object on stdout with the exit code's status that
    validates against `command`'s schema, and return it."""
    result = runner.invoke(app, [str(arg) for arg in args])
    assert result.exit_code == exit_code, result.output
    data: dict[str, Any] = json.loads(result.stdout)  # exactly one object, nothing else
    Draft202012Validator(schema(command)).validate(data)
    assert (data["status"], data["schema_version"]) == (STATUS[exit_code], SCHEMA_VERSION)
    assert data["scorer_version"] == scorer.__version__
    return data


@pytest.mark.parametrize("command", COMMANDS)
def test_the_shipped_schema_is_what_the_code_builds(command: str) -> None:
    shipped = json.loads((ROOT / "scorer" / "schemas" / file_name(command)).read_text())
    assert shipped == build(command), "run `python -m scorer.schemas` to refresh the files"
    Draft202012Validator.check_schema(shipped)


def test_scorer_schema_prints_a_command_schema() -> None:
    for name in ("score", "leaderboard score", "leaderboard-score"):
        result = runner.invoke(app, ["schema", name])
        assert result.exit_code == 0
        assert json.loads(result.stdout) == schema(name.replace("-", " "))
    unknown = runner.invoke(app, ["schema", "ndcg"])
    assert unknown.exit_code == 2
    assert "no JSON output for 'ndcg'" in unknown.stderr


def test_scorer_schema_takes_a_two_word_command_as_typed() -> None:
    """`scorer schema leaderboard score`, unquoted as task.md writes it, is the command's
    schema; so are the quoted and the hyphenated spellings. Words that name no command are
    refused, named as given."""
    for words in (["leaderboard", "score"], ["leaderboard", "show"]):
        result = runner.invoke(app, ["schema", *words])
        assert result.exit_code == 0, result.output
        assert json.loads(result.stdout) == schema(" ".join(words))
        assert runner.invoke(app, ["schema", "-".join(words)]).stdout == result.stdout
    for words in (["leaderboard"], ["leaderboard", "demo"], ["score", "validate"]):
        refused = runner.invoke(app, ["schema", *words])
        assert refused.exit_code == 2
        assert refused.stderr == (
            f"Error: no JSON output for {' '.join(words)!r}; expected one of score, validate, "
            "prepare, leaderboard score, leaderboard show\n"
        )


SCORE = ["score", DATA / "sample_submission.csv", "--solution", DATA / "solution.csv"]
BROKEN = DATA / "broken" / "several_problems.csv"


def test_score_ok_rejected_and_a_broken_solution(tmp_path: Path) -> None:
    ok = checked("score", [*SCORE, "--json"], 0)
    assert ok["command"] == "score" and "error" not in ok
    rejected = checked("score", [*SCORE[:1], BROKEN, *SCORE[2:], "--json"], 1)
    error = rejected["error"]
    assert (error["code"], error["role"], error["file"]) == (
        "submission_rejected",
        "submission",
        "several_problems.csv",
    )
    assert error["total"] == sum(p["count"] for p in error["problems"]) == 15
    bad = tmp_path / "solution.csv"
    bad.write_text("user_id,edition_id\n1,2\n1,2\n")  # a pair twice
    broken = checked("score", [*SCORE[:3], bad, "--json"], 2)
    assert (broken["error"]["code"], broken["error"]["role"]) == (
        "organiser_file_broken",
        "solution",
    )


@pytest.mark.parametrize(
    "solution",
    [
        "user_id,edition_id,Usage\n1,1001,Ignored\n2,2001,Ignored\n",  # no user scored
        "user_id,edition_id\n1,1001\n2,2001\n",  # no public or private split
    ],
    ids=["every user ignored", "no split"],
)
def test_a_mean_over_no_users_is_null_in_the_schema_too(solution: str, tmp_path: Path) -> None:
    """A split that scores no user has null for its mean and for its entry of `metrics`
    (task.md, "No user scored"): the schema takes both."""
    (tmp_path / "solution.csv").write_text(solution)
    rows = [f"{user},{1000 * user + rank},{rank}" for user in (1, 2) for rank in range(1, 21)]
    (tmp_path / "submission.csv").write_text("user_id,edition_id,rank\n" + "\n".join(rows))
    args = ["score", tmp_path / "submission.csv", "--solution", tmp_path / "solution.csv"]
    data = checked("score", [*args, "--json"], 0)
    assert (data["public"], data["metrics"]["public"]) == (None, None)


@pytest.mark.parametrize(
    ("args", "command"),
    [
        (["score", "x.csv", "--json"], "score"),  # a missing --solution
        ([*SCORE, "--json", "--no-lost", "maybe"], "score"),  # a bad choice
        ([*SCORE, "--json", "--bogus"], "score"),  # an unknown option
        (["validate", "x.csv", "--json"], "validate"),  # neither --targets nor --solution
        (["leaderboard", "show", "--db", "nope.db", "--json"], "leaderboard show"),
        (["leaderboard", "show", "--json", "--phase", "later"], "leaderboard show"),
        (["leaderboard", "score", "--json"], "leaderboard score"),  # a missing argument
    ],
    ids=lambda value: " ".join(map(str, value)) if isinstance(value, list) else value,
)
def test_a_usage_error_is_one_json_object_with_exit_2(
    args: list[str | Path], command: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    data = checked(command, args, 2)
    assert data["command"] == command
    assert data["error"]["code"] == Failure.USAGE_ERROR
    assert data["error"]["problems"] == []


def test_an_unknown_option_before_any_command_is_json_too() -> None:
    result = runner.invoke(app, ["--bogus", "--json"])
    assert result.exit_code == 2
    data = json.loads(result.stdout)
    assert (data["command"], data["status"], data["error"]["code"]) == (
        "",
        "error",
        "usage_error",
    )


def test_a_failed_per_user_write_keeps_the_scores(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = tmp_path / "per_user.csv"

    def disk_full(frame: object, path: Path) -> None:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(path))

    monkeypatch.setattr(cli, "write_table", disk_full)
    data = checked("score", [*SCORE, "--json", "--per-user", target], 2)
    assert data["error"]["code"] == Failure.OS_ERROR
    assert data["error"]["message"] == f"{target}: No space left on device"
    assert data["overall"] == checked("score", [*SCORE, "--json"], 0)["overall"]
    text = runner.invoke(app, [*map(str, SCORE), "--per-user", str(target)])
    assert text.exit_code == 2
    assert text.stdout.startswith("split      users")  # the scores, then the failure
    assert text.stderr == f"Error: {target}: No space left on device\n"


def test_validate_ok_and_rejected() -> None:
    targets = ["--targets", DATA / "targets.csv", "--json"]
    ok = checked("validate", ["validate", DATA / "sample_submission.csv", *targets], 0)
    assert (ok["file"], ok["rows"]) == ("sample_submission.csv", 20_000)
    rejected = checked("validate", ["validate", BROKEN, *targets], 1)
    assert rejected["error"]["code"] == "submission_rejected"


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("contract") / "demo"
    assert runner.invoke(app, ["leaderboard", "demo", str(root)]).exit_code == 0
    return root


def board_args(root: Path, *more: str) -> list[str | Path]:
    return ["leaderboard", *score_args(root, *more)]


def test_leaderboard_score_and_show(demo: Path) -> None:
    done = checked("leaderboard score", board_args(demo, "--json"), 0)
    assert (done["total"], done["rejected"]) == (12, 2)
    strict = checked("leaderboard score", board_args(demo, "--json", "--strict"), 1)
    assert strict["error"]["code"] == Failure.SUBMISSIONS_REJECTED
    assert strict["error"]["message"] == "2 of 12 submissions rejected"
    assert [s["path"] for s in strict["submissions"]] == [s["path"] for s in done["submissions"]]
    for phase in ("public", "final"):
        args = ["leaderboard", "show", "--db", demo / "board.db", "--phase", phase, "--json"]
        shown = checked("leaderboard show", args, 0)
        assert shown["phase"] == phase
        assert ("private" in shown) is (phase == "final")


def test_a_broken_manifest_is_the_organisers_error(tmp_path: Path) -> None:
    manifest = tmp_path / "manifest.csv"
    manifest.write_text("team,path,submitted_at\nalpha,a.csv,yesterday\n")
    args = board_args(tmp_path, "--json")
    args[2] = manifest
    data = checked("leaderboard score", args, 2)
    assert (data["error"]["code"], data["error"]["role"]) == ("organiser_file_broken", "manifest")


def test_every_failure_code_has_its_status() -> None:
    """The vocabulary is closed: each code goes with one exit code and status (task.md)."""
    documented = (ROOT / "task.md").read_text(encoding="utf-8")
    missing = [code.value for code in Failure if f"`{code.value}`" not in documented]
    assert missing == []
    assert {str(s) for s in Status} == set(STATUS.values())


def documented_json() -> list[tuple[str, str, str]]:
    """(document, command, output) of every documented `--json` command."""
    found = []
    for name in ("README.md", "examples.md", "task.md"):
        text = (ROOT / name).read_text(encoding="utf-8")
        for command, output in console_commands(text):
            words = shlex.split(command.split(" && ")[-1])
            if "--json" in words and output.lstrip().startswith("{"):
                found.append((name, " ".join(words[1:3]), output))
    return found


@pytest.mark.parametrize(("name", "command", "output"), documented_json())
def test_every_documented_json_output_validates(name: str, command: str, output: str) -> None:
    named = command if command in COMMANDS else command.split()[0]
    Draft202012Validator(schema(named)).validate(json.loads(output))


def test_the_documents_show_json_outputs() -> None:
    assert {name for name, _, _ in documented_json()} >= {"README.md", "examples.md"}
