"""One error model: the problems of a file, grouped by stable code, safe for participants."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

#: Examples each code shows by default (`showing`: `--problems N`); the count covers every row.
MAX_EXAMPLES = 5

#: The most examples a code shows, whatever is asked (`--problems all`): 10M bad cells, not 10M.
MOST_EXAMPLES = 10_000

_SHOWN: ContextVar[int] = ContextVar("examples shown", default=MAX_EXAMPLES)


def examples_shown() -> int:
    """How many examples each code of a report keeps: `MAX_EXAMPLES`, or what `showing` set."""
    return _SHOWN.get()


@contextmanager
def showing(examples: int | None) -> Iterator[None]:
    """Reports made inside keep this many examples a code (None: as many as `MOST_EXAMPLES`).
    A context, not a parameter of every reader: the readers, the rules and the parts all cut
    their examples with `examples_shown`, and a command sets it once around its work."""
    count = MOST_EXAMPLES if examples is None else min(max(examples, 1), MOST_EXAMPLES)
    token = _SHOWN.set(count)
    try:
        yield
    finally:
        _SHOWN.reset(token)


#: Offending values are shown up to this many characters, so a 100 MB line stays readable.
MAX_VALUE_CHARS = 40


class Code(StrEnum):
    """Stable problem codes; `task.md` documents each one with an example message."""

    # The file as a whole: rows cannot be judged, so these are reported alone.
    FILE_NOT_FOUND = "file_not_found"
    NOT_A_FILE = "not_a_file"
    FILE_TOO_LARGE = "file_too_large"
    FILE_EMPTY = "file_empty"
    FILE_FORMAT = "file_format"
    FILE_ENCODING = "file_encoding"
    FILE_CORRUPT = "file_corrupt"
    UNSUPPORTED_COMPRESSION = "unsupported_compression"  # a zip member's method: bzip2, LZMA…
    TOO_MANY_ROWS = "too_many_rows"
    TOO_LARGE_FOR_MEMORY = "too_large_for_memory"
    TOO_MANY_COLUMNS = "too_many_columns"
    NO_ROWS = "no_rows"
    BAD_DELIMITER = "bad_delimiter"
    MISSING_COLUMN = "missing_column"
    UNKNOWN_COLUMN = "unknown_column"
    DUPLICATE_COLUMN = "duplicate_column"
    COLUMN_TYPE = "column_type"
    # One row: every such problem of a file is reported together.
    LINE_TOO_LONG = "line_too_long"
    FIELD_COUNT = "field_count"
    REPEATED_HEADER = "repeated_header"  # a CSV written in chunks, each with its header
    INVALID_ID = "invalid_id"
    ID_TOO_LONG = "id_too_long"  # a text id longer than `MAX_TEXT_ID` bytes
    INVALID_RANK = "invalid_rank"
    DUPLICATE_RANK = "duplicate_rank"
    DUPLICATE_EDITION = "duplicate_edition"
    WRONG_ROW_COUNT = "wrong_row_count"
    MISSING_USER = "missing_user"
    UNKNOWN_USER = "unknown_user"
    # The organiser's files only (solution, targets).
    INVALID_STAGE = "invalid_stage"
    MIXED_STAGE = "mixed_stage"
    DUPLICATE_PAIR = "duplicate_pair"
    DUPLICATE_USER = "duplicate_user"
    INVALID_GRADE = "invalid_grade"
    EMPTY_AND_PAIRS = "empty_and_pairs"
    STALE_PREPARED = "stale_prepared"  # a prepared solution whose source or rules changed
    # The organiser's submission log (leaderboards).
    EMPTY_VALUE = "empty_value"
    INVALID_TIME = "invalid_time"
    INVALID_FLAG = "invalid_flag"
    DUPLICATE_SUBMISSION = "duplicate_submission"
    TOO_MANY_SELECTED = "too_many_selected"
    UNKNOWN_SELECTION = "unknown_selection"
    SUBMISSION_NOT_FOUND = "submission_not_found"
    TEAM_NAME_CHARACTER = "team_name_character"
    TEAM_NAME_TOO_LONG = "team_name_too_long"
    TEAM_NAME_CLASH = "team_name_clash"


def shorten(value: object) -> str:
    """A value as a participant typed it, cut to `MAX_VALUE_CHARS` with its full length noted."""
    text = str(value)
    if len(text) <= MAX_VALUE_CHARS:
        return text
    return f"{text[:MAX_VALUE_CHARS]}… ({len(text):,} characters)"


def size(n: int) -> str:
    """A byte count for people: `4 GiB` when it is a whole number of a binary unit."""
    for unit, shift in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if n >= 1 << shift and n % (1 << shift) == 0:
            return f"{n >> shift:,} {unit}"
    return f"{n:,} bytes"


@dataclass(frozen=True)
class Issue:
    """One offending place of a file: where it is, what was found and what was expected."""

    code: Code
    message: str
    line: int | None = None
    user: str | None = None
    column: str | None = None
    value: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "code": str(self.code),
            "line": self.line,
            "user": self.user,
            "column": self.column,
            "value": self.value,
            "message": self.message,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Issue:
        """The inverse of `to_dict`."""
        return cls(
            code=Code(data["code"]),
            message=data["message"],
            line=data.get("line"),
            user=data.get("user"),
            column=data.get("column"),
            value=data.get("value"),
        )


@dataclass(frozen=True)
class Problem:
    """Every occurrence of one code in a file: the full count, the first few examples, and
    perhaps a `hint`: one line on how to fix a common mistake behind it (never hidden data)."""

    code: Code
    count: int
    examples: tuple[Issue, ...]
    hint: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "code": str(self.code),
            "count": self.count,
            "examples": [issue.to_dict() for issue in self.examples],
            "hint": self.hint,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Problem:
        """The inverse of `to_dict`."""
        return cls(
            code=Code(data["code"]),
            count=int(data["count"]),
            examples=tuple(Issue.from_dict(example) for example in data["examples"]),
            hint=data.get("hint"),
        )


@dataclass(frozen=True)
class Report:
    """All problems of one file, in the order of the codes in `Code`."""

    file: str
    problems: tuple[Problem, ...] = field(default=())

    @classmethod
    def of(cls, file: str, problems: Iterable[Problem]) -> Report:
        kept = [p for p in problems if p.count > 0]
        order = {code: i for i, code in enumerate(Code)}
        kept.sort(key=lambda p: order[p.code])
        return cls(file=file, problems=tuple(kept))

    @classmethod
    def of_issues(
        cls, file: str, issues: Iterable[Issue], hints: Mapping[Code, str | None] | None = None
    ) -> Report:
        """A report of a flat list of issues, grouped by code in the order of `Code`: each
        code's full count, its first `examples_shown()` issues as examples, and its hint if
        `hints` has one."""
        groups: dict[Code, list[Issue]] = {}
        for issue in issues:
            groups.setdefault(issue.code, []).append(issue)
        hints = hints or {}
        return cls.of(
            file,
            [problem(code, len(found), found, hints.get(code)) for code, found in groups.items()],
        )

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Report:
        """The inverse of `to_dict` (a report stored as JSON), its problems in stored order."""
        return cls(
            file=data["file"],
            problems=tuple(Problem.from_dict(problem) for problem in data["problems"]),
        )

    @property
    def total(self) -> int:
        return sum(p.count for p in self.problems)

    @property
    def codes(self) -> list[str]:
        return [str(p.code) for p in self.problems]

    def __bool__(self) -> bool:
        return bool(self.problems)

    def render(self) -> str:
        """The report for people: a headline with the total, then each code with examples."""
        noun = "problem" if self.total == 1 else "problems"
        lines = [f"{self.file}: {self.total:,} {noun} found"]
        for problem in self.problems:
            times = "time" if problem.count == 1 else "times"
            lines.append(f"  [{problem.code}] {problem.count:,} {times}")
            lines.extend(f"    {issue.message}" for issue in problem.examples)
            hidden = problem.count - len(problem.examples)
            if hidden > 0:
                cap = (
                    f" (at most {MOST_EXAMPLES:,} are shown)"
                    if len(problem.examples) >= MOST_EXAMPLES
                    else ""
                )
                lines.append(f"    … and {hidden:,} more{cap}")
            if problem.hint is not None:
                lines.append(f"    hint: {problem.hint}")
        return "\n".join(lines)

    def to_dict(self) -> dict[str, Any]:
        return {
            "file": self.file,
            "total": self.total,
            "problems": [p.to_dict() for p in self.problems],
        }


class Failure(StrEnum):
    """Why a command failed: every JSON output's `error.code`, in task.md ("For robots")."""

    SUBMISSION_REJECTED = "submission_rejected"  # exit 1: the participant's file
    ORGANISER_FILE_BROKEN = "organiser_file_broken"  # exit 2: solution, targets, manifest, spec
    USAGE_ERROR = "usage_error"  # exit 2: a wrong argument or option
    OS_ERROR = "os_error"  # exit 2: the system refused (permission, disk full, a folder)
    INTERNAL_ERROR = "internal_error"  # exit 2: a bug in the scorer
    INTERRUPTED = "interrupted"  # exit 130: Ctrl-C
    SUBMISSIONS_REJECTED = "submissions_rejected"  # exit 1: `leaderboard score --strict`
    SUBMISSIONS_FAILED = "submissions_failed"  # exit 2: a leaderboard batch had failures
    SOLUTION_MISMATCH = "solution_mismatch"  # exit 2: a leaderboard run stopped (wrong solution?)
    SERVER_REFUSED = "server_refused"  # exit 2: `submit`: the server said no (token, limit, end)
    NOT_VERIFIED = "not_verified"  # exit 1: `verify`: the export does not check out (`verify`)
    # Why one submission of a leaderboard batch failed (its `error.code` in the batch).
    OUT_OF_MEMORY = "out_of_memory"  # its worker went over the memory budget
    TIMED_OUT = "timed_out"  # its worker went over the time limit
    WORKER_DIED = "worker_died"  # its worker ended without a verdict (a signal, an abort)


def error_object(
    failure: Failure, message: str, role: str | None = None, report: Report | None = None
) -> dict[str, Any]:
    """The `error` of a JSON output: the same keys for every failure, problems or none."""
    return {
        "code": str(failure),
        "message": message,
        "role": role,
        "file": report.file if report is not None else None,
        "total": report.total if report is not None else 0,
        "problems": [p.to_dict() for p in report.problems] if report is not None else [],
    }


class ScorerError(Exception):
    """Base of every error the scorer raises on purpose; `exit_code` is the CLI's."""

    exit_code = 2
    failure = Failure.USAGE_ERROR

    def to_dict(self) -> dict[str, Any]:
        """The error as `error_object` describes it."""
        return error_object(self.failure, str(self))


class SubmissionError(ScorerError):
    """The participant's file breaks the contract; safe to show to the participant as it is."""

    exit_code = 1
    failure = Failure.SUBMISSION_REJECTED

    def __init__(self, report: Report) -> None:
        self.report = report
        super().__init__(f"submission rejected: {report.render()}")

    def to_dict(self) -> dict[str, Any]:
        return error_object(self.failure, headline(self), "submission", self.report)


class HostError(ScorerError):
    """The organiser's own file (solution or targets) is broken: never the participant's fault."""

    exit_code = 2
    failure = Failure.ORGANISER_FILE_BROKEN

    def __init__(self, role: str, report: Report) -> None:
        self.role = role
        self.report = report
        super().__init__(
            f"the {role} file is broken (an organiser's problem, not the participant's): "
            f"{report.render()}"
        )

    def to_dict(self) -> dict[str, Any]:
        return error_object(self.failure, headline(self), self.role, self.report)


def headline(error: ScorerError) -> str:
    """The first line of an error's message: its report's problems are in `problems`."""
    return str(error).split("\n", 1)[0]


class UsageError(ScorerError):
    """A wrong argument or option: the caller's mistake, not a file's."""

    exit_code = 2


class FileSystemError(ScorerError):
    """The system refused to read or write a path: permission denied, a full disk, a
    read-only database, a folder where a file was expected. Neither a file's fault nor a
    bug: the message names the path and the system's reason (exit 2)."""

    exit_code = 2
    failure = Failure.OS_ERROR

    @classmethod
    def of(cls, exc: OSError, doing: str | None = None, path: object = None) -> FileSystemError:
        """`path: cannot <doing>: <the system's reason>` (`path` defaults to the error's)."""
        where = path if path is not None else exc.filename
        reason = exc.strerror or str(exc) or type(exc).__name__
        said = reason if doing is None else f"cannot {doing}: {reason}"
        return cls(f"{where}: {said}" if where is not None else said)


def file_error(role: str, report: Report) -> ScorerError:
    """The error for a file of `role` that breaks the contract: the participant's for a
    submission (exit 1), the organiser's for a solution, targets file or manifest (exit 2)."""
    if role == "submission":
        return SubmissionError(report)
    return HostError(role, report)


def single(file: str, code: Code, message: str, *, hint: str | None = None, **where: Any) -> Report:
    """A report holding one structural problem (and its hint, if any)."""
    issue = Issue(code=code, message=message, **where)
    return Report.of(file, [Problem(code=code, count=1, examples=(issue,), hint=hint)])


def problem(code: Code, count: int, examples: Sequence[Issue], hint: str | None = None) -> Problem:
    return Problem(code=code, count=count, examples=tuple(examples[: examples_shown()]), hint=hint)


def merge(problems: list[Problem]) -> tuple[Problem, ...]:
    """One problem a code: a code found in several columns (or by the parse and the range
    check, or in several parts of a file) gets one count, its first examples in line order
    and the first hint found."""
    merged: dict[Code, list[Problem]] = {}
    for found in problems:
        merged.setdefault(found.code, []).append(found)
    out = []
    for code, parts in merged.items():
        if len(parts) == 1:
            out.append(parts[0])
            continue
        examples = sorted(
            (issue for part in parts for issue in part.examples),
            key=_place,
        )
        hint = next((part.hint for part in parts if part.hint is not None), None)
        out.append(problem(code, sum(part.count for part in parts), examples, hint))
    return tuple(out)


def _place(issue: Issue) -> tuple[bool, int, int]:
    """Examples come in line order; those without a line (a missing user) by user id."""
    user = int(issue.user) if issue.user is not None and issue.user.isdigit() else -1
    return (issue.line is None, issue.line or 0, user)
