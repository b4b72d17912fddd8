"""The submission log: a manifest CSV (team, path, submitted_at, selected, description) or one
folder a team."""

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
from scorer.read import Rejected, inside, open_regular, refusal, walk

#: Columns of a manifest; `selected` may be left out (then nothing is selected), and so may
#: `description`: a team's words for a submission (`scorer serve export` writes them), read
#: and ignored, for the organiser's eyes only; no score or board depends on it; and so may
#: `sha256`, the file's as the server accepted it (`scorer serve export`), read and ignored
#: here: `scorer verify` checks the files against it.
REQUIRED = ("team", "path", "submitted_at")
OPTIONAL = ("selected", "description", "sha256")

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
    `team` it identifies the submission in the database. `submitted_at` is in UTC.
    `refusal`: why the file is rejected without being opened (in a team's folder, a link
    that leads out of it, or something other than a file), or None."""

    team: str
    key: str
    path: Path
    submitted_at: datetime
    selected: bool
    refusal: str | None = None


#: The largest `selected.txt` read: it names at most a few files.
MAX_SELECTION_BYTES = 64 << 10

#: Why a team's file that is a symbolic link leading out of the team's folder is not read.
OUTSIDE = "is a symbolic link that leads out of the team's folder; it is not followed"


class ManifestError(HostError):
    """The organiser's submission log is broken: every problem, grouped by code (exit 2)."""

    def __init__(self, file: str, issues: Iterable[Issue]) -> None:
        super().__init__("manifest", Report.of_issues(file, issues))


def read_log(source: Path) -> list[Submission]:
    """Read a manifest CSV, or a folder with one sub-folder per team; `ManifestError` lists
    every problem at once."""
    if source.is_dir():
        return read_folder(source)
    if not os.path.lexists(source):
        raise ManifestError(
            source.name,
            [Issue(Code.FILE_NOT_FOUND, f"{source}: no such file or folder")],
        )
    return read_manifest(source)


def _read(path: Path, file: str, limit: int | None = None) -> bytes:
    """The bytes of a regular file (at most `limit` of them); `ManifestError` for anything
    else (a pipe is never opened, so never waited on)."""
    try:
        with open_regular(path, file) as handle:
            return handle.read() if limit is None else handle.read(limit)
    except Rejected as exc:
        raise ManifestError(file, [i for p in exc.report.problems for i in p.examples]) from None


def read_manifest(path: Path) -> list[Submission]:
    """Read `team,path,submitted_at[,selected]`; paths are relative to the manifest's folder.
    A time without a zone is taken as UTC."""
    file = path.name
    try:
        text = _read(path, file).decode("utf-8-sig")
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
    the team's selected files, one a line, relative to the team's folder. Links are not
    followed out of a team's folder, nor into a sub-folder: such an entry, or one that is not
    a regular file, is a submission rejected without being opened (`Submission.refusal`)."""
    issues: list[Issue] = []
    found: list[Submission] = []
    for team_dir in sorted(p for p in root.iterdir() if p.is_dir() and not _hidden(p.name)):
        team = normal(team_dir.name)
        issues += name_issues(team, f"folder {team_dir.name!r}")
        entries = {p.relative_to(team_dir).as_posix(): p for p in walk(team_dir, _hidden)}
        entries.pop(SELECTION_FILE, None)
        chosen = _selection(team_dir, set(entries), issues)
        for name, path in sorted(entries.items()):
            refusal = _refusal(path, team_dir)
            mtime = datetime.fromtimestamp(path.lstat().st_mtime, UTC)
            found.append(
                Submission(
                    team=team,
                    key=path.relative_to(root).as_posix(),
                    path=path,
                    submitted_at=mtime,
                    selected=name in chosen,
                    refusal=refusal,
                )
            )
    teams = dict.fromkeys(entry.team for entry in found)
    issues += clash_issues((team, f"folder {team!r}", None) for team in teams)
    if issues:
        raise ManifestError(root.name, issues)
    return found


def _refusal(path: Path, team_dir: Path) -> str | None:
    """Why a team's entry is not read: a link out of the team's folder, or a path that is
    not a regular file; None for a file (or a missing one: the scorer says so)."""
    if not inside(path, team_dir):
        return OUTSIDE
    try:
        mode = path.stat().st_mode
    except OSError:
        return None
    return refusal(mode)


def _hidden(name: str) -> bool:
    return name.startswith(".")


def _selection(team_dir: Path, names: set[str], issues: list[Issue]) -> set[str]:
    path = team_dir / SELECTION_FILE
    if not os.path.lexists(path):
        return set()
    where = f"{team_dir.name}/{SELECTION_FILE}"
    if not inside(path, team_dir):  # never read: it would show another file's lines
        issues.append(Issue(Code.NOT_A_FILE, f"{where}: {OUTSIDE}"))
        return set()
    try:
        text = _read(path, where, MAX_SELECTION_BYTES).decode("utf-8-sig")
    except ManifestError as exc:
        issues += [i for p in exc.report.problems for i in p.examples]
        return set()
    except UnicodeDecodeError:
        issues.append(Issue(Code.FILE_ENCODING, f"{where}: the file is not UTF-8"))
        return set()
    chosen: set[str] = set()
    for line, text_line in enumerate(text.splitlines(), start=1):
        name = text_line.strip()
        if not name or name.startswith("#"):
            continue
        if name not in names:
            issues.append(
                Issue(
                    Code.UNKNOWN_SELECTION,
                    f"{where} line {line}: {shorten(name)!r} is not a file of team "
                    f"{team_dir.name!r}",
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
            f"{','.join(REQUIRED + OPTIONAL)} (selected, description and sha256 are optional)",
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
    if cells["path"] and not path.exists():
        # The organiser's log names a file that is not there: the log's mistake, not a
        # participant's rejected submission (a folder or a pipe there is the submission's
        # refusal, below).
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
        refusal=refusal(path.stat().st_mode),
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
