"""The submission log: a manifest CSV (team, path, submitted_at, selected) or one folder a team."""

from __future__ import annotations

import csv
import io
import os
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from enum import StrEnum
from pathlib import Path, PurePosixPath
from typing import Any

from scorer.errors import MAX_EXAMPLES, ScorerError

#: Columns of a manifest; `selected` may be left out (then nothing is selected).
REQUIRED = ("team", "path", "submitted_at")
OPTIONAL = ("selected",)

#: Kaggle's rule: a team picks at most two submissions for the private board.
MAX_SELECTED = 2

#: In the folder layout, this file of a team's folder names its selected submissions.
SELECTION_FILE = "selected.txt"

#: How `selected` may be written (case-insensitive); an empty cell means not selected.
TRUE_WORDS = frozenset({"1", "true", "yes", "y", "x"})
FALSE_WORDS = frozenset({"", "0", "false", "no", "n"})


@dataclass(frozen=True)
class Submission:
    """One entry of the log. `key` is the path as the log names it (posix, normalised): with
    `team` it identifies the submission in the database. `submitted_at` is in UTC."""

    team: str
    key: str
    path: Path
    submitted_at: datetime
    selected: bool


class ManifestCode(StrEnum):
    """Stable codes of the problems a submission log can have (all the organiser's)."""

    FILE_NOT_FOUND = "file_not_found"
    FILE_EMPTY = "file_empty"
    FILE_ENCODING = "file_encoding"
    FILE_FORMAT = "file_format"
    MISSING_COLUMN = "missing_column"
    UNKNOWN_COLUMN = "unknown_column"
    DUPLICATE_COLUMN = "duplicate_column"
    FIELD_COUNT = "field_count"
    EMPTY_VALUE = "empty_value"
    INVALID_TIME = "invalid_time"
    INVALID_FLAG = "invalid_flag"
    DUPLICATE_SUBMISSION = "duplicate_submission"
    TOO_MANY_SELECTED = "too_many_selected"
    UNKNOWN_SELECTION = "unknown_selection"


@dataclass(frozen=True)
class ManifestIssue:
    code: ManifestCode
    message: str
    line: int | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"code": str(self.code), "line": self.line, "message": self.message}


class ManifestError(ScorerError):
    """The organiser's submission log is broken: every problem, grouped by code (exit 2)."""

    exit_code = 2

    def __init__(self, file: str, issues: list[ManifestIssue]) -> None:
        self.file = file
        self.issues = issues
        super().__init__(
            f"the manifest is broken (an organiser's problem, not a participant's): {self.render()}"
        )

    def _groups(self) -> dict[ManifestCode, list[ManifestIssue]]:
        """Issues by code, in the order of `ManifestCode`."""
        groups: dict[ManifestCode, list[ManifestIssue]] = {code: [] for code in ManifestCode}
        for issue in self.issues:
            groups[issue.code].append(issue)
        return {code: issues for code, issues in groups.items() if issues}

    def render(self) -> str:
        noun = "problem" if len(self.issues) == 1 else "problems"
        lines = [f"{self.file}: {len(self.issues):,} {noun} found"]
        for code, issues in self._groups().items():
            lines.append(f"  [{code}] {len(issues):,} {'time' if len(issues) == 1 else 'times'}")
            lines.extend(f"    {issue.message}" for issue in issues[:MAX_EXAMPLES])
            if len(issues) > MAX_EXAMPLES:
                lines.append(f"    … and {len(issues) - MAX_EXAMPLES:,} more")
        return "\n".join(lines)

    def to_dict(self) -> dict[str, Any]:
        return {
            "error": "host_error",
            "role": "manifest",
            "report": {
                "file": self.file,
                "total": len(self.issues),
                "problems": [
                    {
                        "code": str(code),
                        "count": len(issues),
                        "examples": [i.to_dict() for i in issues[:MAX_EXAMPLES]],
                    }
                    for code, issues in self._groups().items()
                ],
            },
        }


def read_log(source: Path) -> list[Submission]:
    """Read a manifest CSV, or a folder with one sub-folder per team; `ManifestError` lists
    every problem at once."""
    if source.is_dir():
        return read_folder(source)
    if source.is_file():
        return read_manifest(source)
    raise ManifestError(
        source.name,
        [ManifestIssue(ManifestCode.FILE_NOT_FOUND, f"{source}: no such file or folder")],
    )


def read_manifest(path: Path) -> list[Submission]:
    """Read `team,path,submitted_at[,selected]`; paths are relative to the manifest's folder.
    A time without a zone is taken as UTC."""
    file = path.name
    try:
        text = path.read_bytes().decode("utf-8-sig")
    except UnicodeDecodeError:
        issue = ManifestIssue(ManifestCode.FILE_ENCODING, "the file is not UTF-8")
        raise ManifestError(file, [issue]) from None
    try:
        rows = list(csv.reader(io.StringIO(text, newline="")))
    except csv.Error as exc:
        issue = ManifestIssue(ManifestCode.FILE_FORMAT, f"not a CSV file ({exc})")
        raise ManifestError(file, [issue]) from None
    if not rows or not any(cell.strip() for cell in rows[0]):
        raise ManifestError(file, [ManifestIssue(ManifestCode.FILE_EMPTY, "the file is empty", 1)])
    header = [name.strip() for name in rows[0]]
    issues = _header_issues(header)
    if issues:
        raise ManifestError(file, issues)
    where = {name: header.index(name) for name in header}
    found: list[tuple[int, Submission]] = []
    for line, row in enumerate(rows[1:], start=2):
        if not any(cell.strip() for cell in row):
            continue  # blank lines, as spreadsheets leave at the end
        if len(row) != len(header):
            issues.append(
                ManifestIssue(
                    ManifestCode.FIELD_COUNT,
                    f"line {line}: {len(row)} fields; expected {len(header)} ({','.join(header)})",
                    line,
                )
            )
            continue
        cells = {name: row[i].strip() for name, i in where.items()}
        entry = _entry(cells, line, path.parent, issues)
        if entry is not None:
            found.append((line, entry))
    issues += _log_issues(found)
    if issues:
        raise ManifestError(file, issues)
    return [entry for _, entry in found]


def read_folder(root: Path) -> list[Submission]:
    """Read `ROOT/TEAM/…/FILE`: every file under a team's folder is a submission (hidden files
    and `selected.txt` aside), submitted at its modification time. `TEAM/selected.txt` names
    the team's selected files, one a line, relative to the team's folder."""
    issues: list[ManifestIssue] = []
    found: list[Submission] = []
    for team_dir in sorted(p for p in root.iterdir() if p.is_dir() and not _hidden(p.name)):
        team = team_dir.name
        files = sorted(
            p
            for p in team_dir.rglob("*")
            if p.is_file()
            and not any(_hidden(part) for part in p.relative_to(team_dir).parts)
            and p.relative_to(team_dir).as_posix() != SELECTION_FILE
        )
        chosen = _selection(team_dir, {p.relative_to(team_dir).as_posix() for p in files}, issues)
        for path in files:
            mtime = datetime.fromtimestamp(path.stat().st_mtime, UTC)
            name = path.relative_to(team_dir).as_posix()
            found.append(
                Submission(
                    team=team,
                    key=path.relative_to(root).as_posix(),
                    path=path,
                    submitted_at=mtime,
                    selected=name in chosen,
                )
            )
    if issues:
        raise ManifestError(root.name, issues)
    return found


def _hidden(name: str) -> bool:
    return name.startswith(".")


def _selection(team_dir: Path, names: set[str], issues: list[ManifestIssue]) -> set[str]:
    path = team_dir / SELECTION_FILE
    if not path.is_file():
        return set()
    where = f"{team_dir.name}/{SELECTION_FILE}"
    chosen: set[str] = set()
    for line, text in enumerate(path.read_text(encoding="utf-8-sig").splitlines(), start=1):
        name = text.strip()
        if not name or name.startswith("#"):
            continue
        if name not in names:
            issues.append(
                ManifestIssue(
                    ManifestCode.UNKNOWN_SELECTION,
                    f"{where} line {line}: {name!r} is not a file of team {team_dir.name!r}",
                    line,
                )
            )
        chosen.add(name)
    if len(chosen) > MAX_SELECTED:
        issues.append(
            ManifestIssue(
                ManifestCode.TOO_MANY_SELECTED,
                f"{where}: {len(chosen)} submissions selected; at most {MAX_SELECTED} may be",
            )
        )
    return chosen


def _header_issues(header: list[str]) -> list[ManifestIssue]:
    issues = [
        ManifestIssue(
            ManifestCode.MISSING_COLUMN,
            f"line 1: column {name!r} is missing; expected the header "
            f"{','.join(REQUIRED + OPTIONAL)} (selected is optional)",
            1,
        )
        for name in REQUIRED
        if name not in header
    ]
    seen: set[str] = set()
    for name in header:
        if name in seen:
            issues.append(
                ManifestIssue(
                    ManifestCode.DUPLICATE_COLUMN, f"line 1: column {name!r} appears twice", 1
                )
            )
        elif name not in REQUIRED + OPTIONAL:
            issues.append(
                ManifestIssue(
                    ManifestCode.UNKNOWN_COLUMN,
                    f"line 1: unexpected column {name!r}; expected only "
                    f"{', '.join(REQUIRED + OPTIONAL)}",
                    1,
                )
            )
        seen.add(name)
    return issues


def _entry(
    cells: dict[str, str], line: int, base: Path, issues: list[ManifestIssue]
) -> Submission | None:
    ok = True
    for name in ("team", "path"):
        if not cells[name]:
            issues.append(
                ManifestIssue(ManifestCode.EMPTY_VALUE, f"line {line}: {name} is empty", line)
            )
            ok = False
    when = parse_time(cells["submitted_at"])
    if when is None:
        issues.append(
            ManifestIssue(
                ManifestCode.INVALID_TIME,
                f"line {line}: submitted_at {cells['submitted_at']!r} is not an ISO 8601 time "
                "(expected e.g. 2024-05-01T12:30:00Z)",
                line,
            )
        )
        ok = False
    flag = cells.get("selected", "").lower()
    if flag not in TRUE_WORDS | FALSE_WORDS:
        issues.append(
            ManifestIssue(
                ManifestCode.INVALID_FLAG,
                f"line {line}: selected {cells['selected']!r} is not a yes/no value "
                "(expected 1, 0, true, false, yes, no or empty)",
                line,
            )
        )
        ok = False
    if not ok or when is None:
        return None
    written = Path(cells["path"])
    key = PurePosixPath(os.path.normpath(cells["path"]).replace(os.sep, "/")).as_posix()
    return Submission(
        team=cells["team"],
        key=key,
        path=written if written.is_absolute() else base / written,
        submitted_at=when,
        selected=flag in TRUE_WORDS,
    )


def parse_time(text: str) -> datetime | None:
    """An ISO 8601 time in UTC (a time without a zone is taken as UTC), or None."""
    try:
        when = datetime.fromisoformat(text)
    except ValueError:
        return None
    if when.tzinfo is None:
        return when.replace(tzinfo=UTC)
    return when.astimezone(UTC)


def _log_issues(found: Iterable[tuple[int, Submission]]) -> list[ManifestIssue]:
    issues: list[ManifestIssue] = []
    first: dict[tuple[str, str], int] = {}
    selected: dict[str, list[int]] = {}
    for line, entry in found:
        key = (entry.team, entry.key)
        if key in first:
            issues.append(
                ManifestIssue(
                    ManifestCode.DUPLICATE_SUBMISSION,
                    f"line {line}: team {entry.team!r} lists {entry.key!r} again "
                    f"(first on line {first[key]})",
                    line,
                )
            )
        first.setdefault(key, line)
        if entry.selected:
            selected.setdefault(entry.team, []).append(line)
    for team, lines in selected.items():
        if len(lines) > MAX_SELECTED:
            issues.append(
                ManifestIssue(
                    ManifestCode.TOO_MANY_SELECTED,
                    f"lines {', '.join(map(str, lines))}: team {team!r} selects {len(lines)} "
                    f"submissions; at most {MAX_SELECTED} may be selected",
                    lines[0],
                )
            )
    return issues
