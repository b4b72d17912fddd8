"""The submission log: a manifest CSV (team, path, submitted_at, selected) or one folder a team."""

from __future__ import annotations

import csv
import io
import os
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path, PurePosixPath

from scorer.errors import Code, HostError, Issue, Report, shorten
from scorer.leaderboard.names import clash_issues, name_issues, normal

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


#: The codes the reader can report; `task.md` documents each for the log.
MANIFEST_CODES = frozenset(
    {
        Code.FILE_NOT_FOUND,
        Code.FILE_EMPTY,
        Code.FILE_ENCODING,
        Code.FILE_FORMAT,
        Code.MISSING_COLUMN,
        Code.UNKNOWN_COLUMN,
        Code.DUPLICATE_COLUMN,
        Code.FIELD_COUNT,
        Code.EMPTY_VALUE,
        Code.INVALID_TIME,
        Code.INVALID_FLAG,
        Code.DUPLICATE_SUBMISSION,
        Code.TOO_MANY_SELECTED,
        Code.UNKNOWN_SELECTION,
        Code.SUBMISSION_NOT_FOUND,
        Code.TEAM_NAME_CHARACTER,
        Code.TEAM_NAME_TOO_LONG,
        Code.TEAM_NAME_CLASH,
    }
)


class ManifestError(HostError):
    """The organiser's submission log is broken: every problem, grouped by code (exit 2)."""

    def __init__(self, file: str, issues: Iterable[Issue]) -> None:
        super().__init__("manifest", Report.of_issues(file, issues))


def read_log(source: Path) -> list[Submission]:
    """Read a manifest CSV, or a folder with one sub-folder per team; `ManifestError` lists
    every problem at once."""
    if source.is_dir():
        return read_folder(source)
    if source.is_file():
        return read_manifest(source)
    raise ManifestError(
        source.name,
        [Issue(Code.FILE_NOT_FOUND, f"{source}: no such file or folder")],
    )


def read_manifest(path: Path) -> list[Submission]:
    """Read `team,path,submitted_at[,selected]`; paths are relative to the manifest's folder.
    A time without a zone is taken as UTC."""
    file = path.name
    try:
        text = path.read_bytes().decode("utf-8-sig")
    except UnicodeDecodeError:
        issue = Issue(Code.FILE_ENCODING, "the file is not UTF-8")
        raise ManifestError(file, [issue]) from None
    try:
        rows = list(csv.reader(io.StringIO(text, newline="")))
    except csv.Error as exc:
        issue = Issue(Code.FILE_FORMAT, f"not a CSV file ({exc})")
        raise ManifestError(file, [issue]) from None
    if not rows or not any(cell.strip() for cell in rows[0]):
        raise ManifestError(file, [Issue(Code.FILE_EMPTY, "the file is empty", 1)])
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
                Issue(
                    Code.FIELD_COUNT,
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
    issues += clash_issues((entry.team, f"line {line}", line) for line, entry in found)
    if issues:
        raise ManifestError(file, issues)
    return [entry for _, entry in found]


def read_folder(root: Path) -> list[Submission]:
    """Read `ROOT/TEAM/…/FILE`: every file under a team's folder is a submission (hidden files
    and `selected.txt` aside), submitted at its modification time. `TEAM/selected.txt` names
    the team's selected files, one a line, relative to the team's folder."""
    issues: list[Issue] = []
    found: list[Submission] = []
    for team_dir in sorted(p for p in root.iterdir() if p.is_dir() and not _hidden(p.name)):
        team = normal(team_dir.name)
        issues += name_issues(team, f"folder {team_dir.name!r}")
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
    teams = dict.fromkeys(entry.team for entry in found)
    issues += clash_issues((team, f"folder {team!r}", None) for team in teams)
    if issues:
        raise ManifestError(root.name, issues)
    return found


def _hidden(name: str) -> bool:
    return name.startswith(".")


def _selection(team_dir: Path, names: set[str], issues: list[Issue]) -> set[str]:
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
                Issue(
                    Code.UNKNOWN_SELECTION,
                    f"{where} line {line}: {name!r} is not a file of team {team_dir.name!r}",
                    line,
                )
            )
        chosen.add(name)
    if len(chosen) > MAX_SELECTED:
        issues.append(
            Issue(
                Code.TOO_MANY_SELECTED,
                f"{where}: {len(chosen)} submissions selected; at most {MAX_SELECTED} may be",
            )
        )
    return chosen


def _header_issues(header: list[str]) -> list[Issue]:
    issues = [
        Issue(
            Code.MISSING_COLUMN,
            f"line 1: column {name!r} is missing; expected the header "
            f"{','.join(REQUIRED + OPTIONAL)} (selected is optional)",
            line=1,
            column=name,
        )
        for name in REQUIRED
        if name not in header
    ]
    seen: set[str] = set()
    for name in header:
        if name in seen:
            issues.append(
                Issue(
                    Code.DUPLICATE_COLUMN,
                    f"line 1: column {name!r} appears twice",
                    line=1,
                    column=name,
                )
            )
        elif name not in REQUIRED + OPTIONAL:
            issues.append(
                Issue(
                    Code.UNKNOWN_COLUMN,
                    f"line 1: unexpected column {name!r}; expected only "
                    f"{', '.join(REQUIRED + OPTIONAL)}",
                    line=1,
                    column=name,
                )
            )
        seen.add(name)
    return issues


def _entry(cells: dict[str, str], line: int, base: Path, issues: list[Issue]) -> Submission | None:
    ok = True
    for name in ("team", "path"):
        if not cells[name]:
            issues.append(
                Issue(Code.EMPTY_VALUE, f"line {line}: {name} is empty", line=line, column=name)
            )
            ok = False
    team = normal(cells["team"])
    found = name_issues(team, f"line {line}", line)
    issues += found
    written = Path(cells["path"])
    path = written if written.is_absolute() else base / written
    if cells["path"] and not path.is_file():
        # The organiser's log names a file that is not there: the log's mistake, not a
        # participant's rejected submission.
        issues.append(
            Issue(
                Code.SUBMISSION_NOT_FOUND,
                f"line {line}: path {cells['path']!r} names no file (paths are relative to "
                "the manifest's folder, or absolute)",
                line=line,
                column="path",
                value=shorten(cells["path"]),
            )
        )
        ok = False
    when = parse_time(cells["submitted_at"])
    if when is None:
        issues.append(
            _bad_cell(
                Code.INVALID_TIME,
                line,
                "submitted_at",
                cells["submitted_at"],
                "an ISO 8601 time (expected e.g. 2024-05-01T12:30:00Z)",
            )
        )
        ok = False
    flag = cells.get("selected", "").lower()
    if flag not in TRUE_WORDS | FALSE_WORDS:
        issues.append(
            _bad_cell(
                Code.INVALID_FLAG,
                line,
                "selected",
                cells["selected"],
                "a yes/no value (expected 1, 0, true, false, yes, no or empty)",
            )
        )
        ok = False
    if not ok or found or when is None:
        return None
    key = PurePosixPath(os.path.normpath(cells["path"]).replace(os.sep, "/")).as_posix()
    return Submission(
        team=team,
        key=key,
        path=path,
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


def _log_issues(found: Iterable[tuple[int, Submission]]) -> list[Issue]:
    issues: list[Issue] = []
    first: dict[tuple[str, str], int] = {}
    selected: dict[str, list[int]] = {}
    for line, entry in found:
        key = (entry.team, entry.key)
        if key in first:
            issues.append(
                Issue(
                    Code.DUPLICATE_SUBMISSION,
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
                Issue(
                    Code.TOO_MANY_SELECTED,
                    f"lines {', '.join(map(str, lines))}: team {team!r} selects {len(lines)} "
                    f"submissions; at most {MAX_SELECTED} may be selected",
                    lines[0],
                )
            )
    return issues


def _bad_cell(code: Code, line: int, column: str, raw: str, expected: str) -> Issue:
    """A manifest cell that is not what its column holds."""
    return Issue(
        code,
        f"line {line}: {column} {raw!r} is not {expected}",
        line=line,
        column=column,
        value=shorten(raw),
    )
