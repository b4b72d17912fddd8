"""`scorer verify` (scorer/verify.py): a participant with a server's export, the revealed
solution and the salt reproduces the final board; a one-byte change to any of them, to the
commitment, the manifest, the board or a submission fails it, saying which. Through Typer's
CliRunner, as a participant runs it."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
from support.revealed import Served, export
from support.serve_live import POPULAR, SAMPLE
from typer.testing import CliRunner

from scorer.cli import app

runner = CliRunner()


class Checker:
    """What a participant has after the reveal: the export, the solution as downloaded, the
    salt and the commitment as the API published them."""

    def __init__(self, export: Path, solution: Path, salt: str, commitment: str) -> None:
        self.export, self.solution, self.salt, self.commitment = export, solution, salt, commitment

    def verify(self, *extra: str) -> tuple[int, str]:
        args = [
            "verify",
            str(self.export),
            "--solution",
            str(self.solution),
            "--salt",
            self.salt,
            "--commitment",
            self.commitment,
            *extra,
        ]
        said = runner.invoke(app, args)
        return said.exit_code, said.output


@pytest.fixture(scope="module")
def revealed(tmp_path_factory: pytest.TempPathFactory) -> Checker:
    """A competition of two teams, judged and revealed, exported, and what the API gives."""
    tmp = tmp_path_factory.mktemp("revealed")
    served = Served(tmp, None)
    served.upload("alpha", SAMPLE)
    served.upload("beta", POPULAR)
    served.upload("alpha", POPULAR)
    served.judged_and_revealed()
    out = export(served, tmp / "export")
    solution = tmp / "solution.csv"
    solution.write_bytes(served.get("/api/v1/solution.csv").content)
    answer = served.get("/api/v1/solution").json()
    return Checker(out, solution, answer["salt"], answer["commitment"]["hash"])


@pytest.fixture
def checker(revealed: Checker, tmp_path: Path) -> Checker:
    """A copy of the participant's files, each test's own to change."""
    shutil.copytree(revealed.export, tmp_path / "export")
    shutil.copyfile(revealed.solution, tmp_path / "solution.csv")
    return Checker(
        tmp_path / "export", tmp_path / "solution.csv", revealed.salt, revealed.commitment
    )


def test_the_export_with_the_revealed_solution_and_salt_reproduces_the_board(
    checker: Checker,
) -> None:
    code, said = checker.verify()
    assert code == 0, said
    assert said.startswith("Verified: the solution (sha256 ")
    assert f"(commitment {checker.commitment})" in said
    assert "3 files of manifest.csv, each with the manifest's sha256" in said
    assert "2 teams on the public board, 2 teams on the private one" in said
    code, said = checker.verify("--json")
    data = json.loads(said)
    assert (code, data["status"], data["files"]) == (0, "ok", 3)
    assert data["commitment"]["hash"] == checker.commitment


def flipped(text: str, at: int) -> str:
    """`text` with the hex digit or digit at `at` changed to another."""
    old = text[at]
    new = "0" if old != "0" else "1"
    return text[:at] + new + text[at + 1 :]


def change_file(path: Path, find: Callable[[str], int]) -> None:
    text = path.read_text(encoding="utf-8")
    path.write_text(flipped(text, find(text)), encoding="utf-8")


def last_digit(text: str) -> int:
    return len(text.rstrip("\n")) - 1


def an_edition(text: str) -> int:
    """The last digit of the edition id of the solution's last line (user,edition,stage)."""
    start = text.rstrip("\n").rindex("\n") + 1
    return text.index(",", text.index(",", start) + 1) - 1


def private_score(text: str) -> int:
    """The last digit of the first private row's score in board.json."""
    start = text.index('"score": ', text.index('"private"')) + len('"score": ')
    return text.index(",", start) - 1


def a_time(text: str) -> int:
    """The last digit of the manifest's first time."""
    return text.index("+00:00", text.index("\n")) - 1


CHANGES: dict[str, tuple[Callable[[Checker], None], str]] = {
    "solution": (
        lambda c: change_file(c.solution, an_edition),
        "the solution does not match the commitment",
    ),
    "salt": (
        lambda c: setattr(c, "salt", flipped(c.salt, 5)),
        "the salt is not the one the server revealed",
    ),
    "commitment": (
        lambda c: setattr(c, "commitment", flipped(c.commitment, 7)),
        "is not the one the server published last",
    ),
    "manifest": (
        lambda c: change_file(c.export / "manifest.csv", a_time),
        "the manifest differs from the one the board was published with",
    ),
    "board": (
        lambda c: change_file(c.export / "board.json", private_score),
        "team alpha: private score ",
    ),
    "submission": (
        lambda c: change_file(c.export / "submissions" / "1.csv", last_digit),
        "submissions/1.csv: its bytes differ from the manifest's sha256",
    ),
    "submission removed": (
        lambda c: (c.export / "submissions" / "1.csv").unlink(),
        "submissions/1.csv: not in the export",
    ),
}


@pytest.mark.parametrize("what", CHANGES)
def test_a_one_byte_change_fails_verify_saying_which(checker: Checker, what: str) -> None:
    change, message = CHANGES[what]
    change(checker)
    code, said = checker.verify()
    assert code == 1, said
    assert said.startswith("Error: not verified: ")
    assert message in said
    assert "Traceback" not in said


def test_a_changed_board_names_both_scores(checker: Checker) -> None:
    board = json.loads((checker.export / "board.json").read_text())
    row = board["private"]["rows"][0]
    change_file(checker.export / "board.json", private_score)
    changed = json.loads((checker.export / "board.json").read_text())["private"]["rows"][0]
    _, said = checker.verify()
    expected = f"team {row['team']}: private score {row['score']!r} here, "
    assert f"{expected}{changed['score']!r} on the board" in said


def test_a_failure_is_not_verified_in_json_and_a_missing_board_is_a_usage_error(
    checker: Checker,
) -> None:
    checker.salt = flipped(checker.salt, 0)
    code, said = checker.verify("--json")
    data = json.loads(said)
    assert (code, data["status"], data["error"]["code"]) == (1, "rejected", "not_verified")
    (checker.export / "board.json").unlink()
    code, said = checker.verify()
    assert code == 2
    assert "board.json: no such file; the final board is exported after the reveal" in said
