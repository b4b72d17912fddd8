"""`scorer verify`: anyone checks a server's final board from its export, the revealed solution
and the salt. The solution, with the salt and the scorer version the export records, must give
the commitment published from the start (`scorer.commitment`); every exported file must have
the manifest's sha256, the manifest the sha256 the final board was published with; and the
leaderboard engine, rescoring the export, must give that board to the bit."""

from __future__ import annotations

import csv
import hashlib
import io
import json
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from scorer.commitment import Commitment, SplitCounts, commitment_of, file_sha256, split_of
from scorer.competition import LOST_ITEMS, Competition
from scorer.errors import Failure, ScorerError, UsageError
from scorer.leaderboard.batch import Isolation, score_log
from scorer.leaderboard.boards import load
from scorer.leaderboard.names import escaped
from scorer.leaderboard.schema import Phase
from scorer.version import __version__

#: The files of a server's export (`scorer serve export` writes them): the log, the final
#: boards as published (after the reveal), the commitments (with the salt of the latest once
#: revealed) and the server's rules, when it has its own.
MANIFEST, BOARD, COMMITMENT, RULES = (
    "manifest.csv",
    "board.json",
    "commitment.json",
    "competition.toml",
)

#: What a board row is compared by first: its rank and score, then every other figure.
FIRST = ("rank", "score")


class NotVerified(ScorerError):
    """The export does not check out: each message says which part fails (exit 1)."""

    exit_code = 1
    failure = Failure.NOT_VERIFIED

    def __init__(self, failures: list[str]) -> None:
        self.failures = failures
        super().__init__("not verified: " + "; ".join(failures))


@dataclass(frozen=True)
class Verified:
    """A board that checks out: the commitment, the solution's sha256, the files of the
    manifest, the teams on each board, and the scorer that rescored it."""

    commitment: Commitment
    solution_sha256: str
    files: int
    public_teams: int
    private_teams: int
    scorer_version: str = __version__

    def summary(self) -> str:
        """One paragraph: what was checked, and how."""
        split = self.commitment.split
        under = (
            f"scorer {self.scorer_version}"
            if self.scorer_version == self.commitment.scorer_version
            else f"scorer {self.scorer_version} (the server committed to scorer "
            f"{self.commitment.scorer_version})"
        )
        return (
            f"Verified: the solution (sha256 {self.solution_sha256}; {split.public:,} public, "
            f"{split.private:,} private, {split.ignored:,} ignored users) and the salt give "
            f"the commitment made at {self.commitment.committed_at} (commitment "
            f"{self.commitment.hash}); {_many(self.files, 'file')} of {MANIFEST}, each with "
            f"the manifest's sha256; the manifest is the one the final board was published "
            f"with, and {under} rescoring it gives that board to the bit: "
            f"{_many(self.public_teams, 'team')} on the public board, "
            f"{_many(self.private_teams, 'team')} on the private one."
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "commitment": self.commitment.to_dict(),
            "solution_sha256": self.solution_sha256,
            "files": self.files,
            "teams": {"public": self.public_teams, "private": self.private_teams},
            "rescored_with": self.scorer_version,
        }


def verify(
    export: Path,
    solution: Path,
    salt: str,
    commitment: str,
    *,
    isolation: Isolation | None = None,
) -> Verified:
    """Check the export of a server (`scorer serve export`, after the reveal) against the
    revealed solution, its `salt` and the `commitment` published from the start; the first
    part that fails raises `NotVerified`, saying which (every file of it that fails)."""
    latest, revealed_salt = _commitments(export)  # every file there first, then the checks
    manifest, board = _file(export / MANIFEST, "the export's manifest"), _board(export)
    rules = Competition.load(export / RULES) if (export / RULES).is_file() else LOST_ITEMS
    sha = file_sha256(_file(solution, "--solution"))
    split = split_of(solution, rules)
    salt, commitment = salt.strip(), commitment.strip().lower()
    _check_commitment(latest, sha, split, salt, commitment, revealed_salt)
    files = _check_files(export, manifest)
    if hashlib.sha256(manifest.read_bytes()).hexdigest() != board.get("manifest_sha256"):
        raise NotVerified(["the manifest differs from the one the board was published with"])
    with tempfile.TemporaryDirectory(prefix="scorer-verify-") as scratch:
        db = Path(scratch) / "rescored.sqlite"
        score_log(manifest, solution, db, competition=rules, force=True, isolation=isolation)
        rescored = load(db, Phase.FINAL).to_dict()
    failures = _differences(rescored, board)
    if failures:
        raise NotVerified(failures)
    public, private = (len((board.get(n) or {}).get("rows", [])) for n in ("public", "private"))
    return Verified(latest, sha, files, public, private)


def _many(count: int, thing: str) -> str:
    return f"{count:,} {thing}{'' if count == 1 else 's'}"


def _file(path: Path, what: str) -> Path:
    if not path.is_file():
        raise UsageError(f"{what} {path}: no such file")
    return path


def _json(path: Path) -> Any:
    try:
        return json.loads(_file(path, "the export's").read_text(encoding="utf-8"))
    except (UnicodeDecodeError, ValueError):
        raise NotVerified([f"{path.name}: not the JSON `scorer serve export` writes"]) from None


def _commitments(export: Path) -> tuple[Commitment, str | None]:
    """The latest commitment the export records, and the salt revealed with it (None when
    the export was made before the reveal)."""
    data = _json(export / COMMITMENT)
    try:
        latest = Commitment.from_dict(data["commitment"])
    except (KeyError, TypeError, ValueError):
        raise NotVerified([f"{COMMITMENT}: it holds no commitment"]) from None
    salt = data.get("salt")
    return latest, (str(salt) if salt is not None else None)


def _board(export: Path) -> dict[str, Any]:
    path = export / BOARD
    if not path.is_file():
        raise UsageError(
            f"{path}: no such file; the final board is exported after the reveal "
            "(`scorer serve export` once the board is revealed)"
        )
    board = _json(path)
    if not isinstance(board, dict) or board.get("phase") != "final":
        raise NotVerified([f"{BOARD}: not the final board"])
    return board


def _check_commitment(
    latest: Commitment, sha: str, split: SplitCounts, salt: str, given: str, revealed: str | None
) -> None:
    """The commitment `given` must be what the solution (`sha`, `split`), the `salt` and the
    scorer version of the export's latest commitment make, and that commitment itself."""
    made = commitment_of(sha, split, latest.scorer_version, salt)
    if made == given == latest.hash:
        return
    if revealed is not None and salt != revealed:
        why = "the salt is not the one the server revealed; with it, the solution does not match"
    elif given != latest.hash:
        why = (
            f"the commitment given ({given}) is not the one the server published last "
            f"({latest.hash}, at {latest.committed_at})"
        )
    else:
        why = (
            f"the solution does not match the commitment: its bytes (sha256 {sha}), its "
            f"split ({split.public} public, {split.private} private, {split.ignored} ignored "
            f"users), scorer {latest.scorer_version} and the salt give {made}, not {given}"
        )
    raise NotVerified([why])


def _check_files(export: Path, manifest: Path) -> int:
    """Every file the manifest names has its sha256; how many files."""
    try:
        rows = list(csv.DictReader(io.StringIO(manifest.read_text(encoding="utf-8-sig"))))
    except (UnicodeDecodeError, csv.Error):
        raise NotVerified([f"{MANIFEST}: not the CSV `scorer serve export` writes"]) from None
    if rows and "sha256" not in rows[0]:
        raise NotVerified([f"{MANIFEST}: no sha256 column (export it with scorer 0.2 or later)"])
    failures = []
    for row in rows:
        name = row.get("path") or ""  # a short row: no path, or no sha256
        path = export / name
        if not name or not path.resolve().is_relative_to(export.resolve()) or not path.is_file():
            failures.append(f"{escaped(name) or 'a row without a path'}: not in the export")
        elif file_sha256(path) != row.get("sha256"):
            failures.append(f"{name}: its bytes differ from the manifest's sha256")
    if failures:
        raise NotVerified(failures)
    return len(rows)


def _differences(rescored: dict[str, Any], board: dict[str, Any]) -> list[str]:
    """Where the rescored boards differ from the published ones, team by team."""
    failures = []
    for name in ("public", "private"):
        here = {r["team"]: r for r in (rescored.get(name) or {}).get("rows", [])}
        there = {r["team"]: r for r in (board.get(name) or {}).get("rows", [])}
        for team in sorted(here.keys() | there.keys()):
            shown = escaped(team)  # a team's name is data: no terminal escape goes through
            if team not in there:
                failures.append(f"team {shown}: on the {name} board here, not on the board")
            elif team not in here:
                failures.append(f"team {shown}: on the {name} board, not here")
            else:
                keys = [*FIRST, *(k for k in here[team] | there[team] if k not in FIRST)]
                wrong = next((k for k in keys if here[team].get(k) != there[team].get(k)), None)
                if wrong is not None:
                    ours, theirs = here[team].get(wrong), there[team].get(wrong)
                    failures.append(
                        f"team {shown}: {name} {wrong} {ours!r} here, {theirs!r} on the board"
                    )
    if rescored.get("unranked", []) != board.get("unranked", []):
        failures.append("the teams without a scored submission differ from the board's")
    return failures
