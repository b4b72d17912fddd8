"""The one loop that checks and scores a submission, in one part or in several.

`plan` decides from cheap facts, before any work, how many parts two files are read in: one
for most files, more for a CSV submission too large to hold at once. `run` then reads the
organiser's file and the submission part by part (`scorer.read.split`: every user's rows in the
same part of both files) and applies the same rules to each part as to a whole file; a whole
file is one part. Every rule and every score is decided within one user's rows, so the parts'
problems added up are the file's problems, and their per-user tables put together are the
file's; means are exact sums (`scoring.aggregate`): the same bits in any number of parts.
"""

from __future__ import annotations

import math
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar, cast

import polars as pl

from scorer.competition import LOST_ITEMS, Competition
from scorer.contract import Role, Solution, reading, solution_of, spec_of, targets_of
from scorer.errors import (
    Code,
    HostError,
    Problem,
    Report,
    ScorerError,
    SubmissionError,
    merge,
    single,
    size,
)
from scorer.read import (
    DEFAULT_LIMITS,
    Bound,
    Clues,
    Limits,
    NeedsParts,
    Parts,
    Spec,
    Table,
    TableLike,
    describe,
    footprint,
    hinted,
    kind_of,
    read_table,
    split,
)

R = TypeVar("R")

#: Peak memory of a read by the typed (fast) reader, per byte of the two tables read
#: (measured at 1M users: 1.84 GB for 731 MB of CSV; 2.0 GB for 2 x 480 MB of decoded
#: Parquet), with a margin.
BYTES_PER_BYTE = 3

#: The same with text ids (`Competition.ids`): a byte of a long id costs a byte of text, not
#: the 8 of an integer written in a few digits (measured at 1M users, 32-character users and
#: 10-digit items: 2.9 GB for 1.73 GB of CSV, 1.7 a byte), with a margin.
TEXT_BYTES_PER_BYTE = 2

#: The same for the careful reader, which judges every line as text: a CSV file with a sign,
#: a space or a bare carriage return anywhere (`scorer.read.text.misreadable`). Measured at
#: 10M users in 8 parts: 7.1 GB for parts of 0.96 GB (the typed reader: 4.5 GB); parts are
#: sized by it.
CAREFUL_BYTES_PER_BYTE = 8

#: Memory a process holds before any table: the interpreter, polars, pyarrow.
BASE_BYTES = 300 << 20

#: Memory a read in parts holds beyond its part's tables (the splitter's buffers).
SPLIT_BYTES = 700 << 20


#: The least room a part needs beyond `BASE_BYTES` and `SPLIT_BYTES`: below it, a budget leaves
#: no room for a part, and two files over it are refused rather than split into millions.
PART_BYTES = 1 << 20

#: The least budget under which two files too large to read whole can be read in parts.
LEAST_BUDGET = BASE_BYTES + SPLIT_BYTES + PART_BYTES


@dataclass(frozen=True)
class Plan:
    """How two files are read, decided from cheap facts before any work, and why."""

    #: The parts to read them in (1: whole).
    parts: int
    #: The reader the parts are sized for: "typed", or "careful" when they are too large
    #: for the budget whole (`CAREFUL_BYTES_PER_BYTE`).
    reader: str
    #: Why, in a few words.
    reason: str
    #: The estimated peak memory of reading both whole with the typed reader, in bytes.
    estimate: int
    #: The parts that keep the careful reader within the budget, when a plan of one part
    #: turns out to need it (`run` reads again in them); 1 when it fits whole or the files
    #: cannot be split.
    careful_parts: int = 1


def plan(
    submission: TableLike,
    truth: object,
    parts: int | None = None,
    limits: Limits = DEFAULT_LIMITS,
    role: Role = Role.SOLUTION,
    competition: Competition = LOST_ITEMS,
) -> Plan:
    """How many parts to read two files in, decided from cheap facts before any work: `parts`
    if given; else 1 when reading both whole is estimated to fit the memory budget
    (`Limits.max_memory`: `BYTES_PER_BYTE` for every byte of their tables, `footprint`, or
    `TEXT_BYTES_PER_BYTE` for a `competition` of text ids, plus `BASE_BYTES`); else as many
    parts as keep each one within it, at the careful reader's cost. Only CSV and CSV.gz files
    are split (a frame is in memory already; a Parquet file, a `Solution` or a targets series
    is read whole), so any other pair is one part whatever is asked; a Parquet submission
    over the budget is refused (too_large_for_memory) before it is read, and so are two CSV
    files when the budget leaves no room for a part (`LEAST_BUDGET`). Two files that fit
    whole for the typed reader but not for the careful one are one part here: `run` reads
    them in parts only if the careful reader turns out to be needed, which the reader's own
    scan finds (`Plan.careful_parts`)."""
    if parts is not None and parts < 1:
        raise ValueError(f"parts = {parts}; expected 1 or more")
    sizes = {"sub": _footprint(submission), "truth": _footprint(truth)}  # once per file
    total = sum(sizes.values())
    per_byte = TEXT_BYTES_PER_BYTE if competition.ids.text else BYTES_PER_BYTE
    estimate = per_byte * total + BASE_BYTES
    splittable = _splittable(submission) and _splittable(truth)
    careful = _careful_parts(total, splittable, limits)
    if splittable and parts is not None:
        return Plan(parts, "typed", "asked for", estimate, careful or 1)
    if parts is not None:
        return Plan(1, "typed", "cannot be split", estimate)
    if estimate <= limits.max_memory:
        return Plan(1, "typed", "fits the budget whole", estimate, careful or 1)
    if careful is not None:
        return Plan(careful, "careful", "over the budget whole", estimate)
    raise _too_large(submission, truth, sizes, limits, role)


def _careful_parts(total: int, splittable: bool, limits: Limits) -> int | None:
    """How many parts keep the careful reader of two files of `total` bytes within the
    budget (1: both fit whole); None when they cannot be split or the budget leaves no room
    for a part."""
    if CAREFUL_BYTES_PER_BYTE * total + BASE_BYTES <= limits.max_memory:
        return 1
    room = limits.max_memory - BASE_BYTES - SPLIT_BYTES
    if not splittable or room < PART_BYTES:
        return None
    return max(2, math.ceil(CAREFUL_BYTES_PER_BYTE * total / room))


def _footprint(source: object) -> int:
    return footprint(Path(source)) if isinstance(source, str | Path) else 0


def _too_large(
    submission: TableLike, truth: object, sizes: dict[str, int], limits: Limits, role: Role
) -> ScorerError:
    """The file that makes two files too large for the budget: the larger one's error (the
    participant's for a submission, the organiser's for a solution or targets file). Two CSV
    files are refused only when the budget leaves no room for a part: the message names the
    least budget that reads them in parts; any other pair is not read in parts at all."""
    ours = sizes["sub"] >= sizes["truth"]
    file = describe(cast(TableLike, submission if ours else truth))
    hint = "raise the budget with --max-memory (max_memory in Limits)"
    if _splittable(submission) and _splittable(truth):
        message = (
            f"{file}: the budget of {size(limits.max_memory)} leaves no room to read it in "
            f"parts; reading in parts needs at least {size(LEAST_BUDGET)}"
        )
    else:
        need = BYTES_PER_BYTE * sum(sizes.values()) + BASE_BYTES
        message = (
            f"{file}: reading it needs about {need / (1 << 20):,.0f} MiB of memory, over the "
            f"budget of {size(limits.max_memory)}, and a file of its kind is not read in parts"
        )
        hint += ", or use a CSV file"
    report = single(file, Code.TOO_LARGE_FOR_MEMORY, message, hint=hint)
    return SubmissionError(report) if ours else HostError(str(role), report)


def _splittable(source: object) -> bool:
    if not isinstance(source, str | Path):
        return False
    path = Path(source)
    return kind_of(path) in ("csv", "csv.gz") and path.is_file()


@dataclass(frozen=True)
class _Whole:
    """A source read as one part."""

    source: TableLike
    spec: Spec
    problems: tuple[Problem, ...] = ()

    @property
    def file(self) -> str:
        return describe(self.source)

    def table(self, part: int, limits: Limits) -> Table:
        return read_table(self.source, self.spec, limits)


@dataclass(frozen=True)
class Pair:
    """The two files of a run: the submission and the organiser's file of `role` (a solution
    or a targets file), or a `Solution` read already, used as it is in one part."""

    submission: TableLike
    truth: TableLike | Solution
    role: Role

    @property
    def ready(self) -> bool:
        return isinstance(self.truth, Solution)


def run(
    pair: Pair,
    competition: Competition,
    planned: Plan,
    limits: Limits,
    check: Callable[[Any, Table], R],
) -> list[R]:
    """For each part of `planned`, check the organiser's part (`solution_of` or `targets_of`,
    by its role) and `check` the submission's part against what that gave: a `Solution`, or
    the target users (a Series) of a targets file. The submission's part is read knowing that
    a valid one has k rows for each target user (`Bound.valid_rows`).

    A file refused as a whole raises at once, the organiser's first, as when read whole.
    Otherwise the problems of every part are reported together (the organiser's first and
    alone); returns what `check` gave for each part. Two files read whole that fit the
    budget for the typed reader but not for the careful one (`plan`) are read again in
    `Plan.careful_parts` parts if either turns out to need the careful reader: the whole
    read's readers raise `NeedsParts`, which never leaves this function."""
    if planned.parts == 1 and not pair.ready and planned.careful_parts > 1:
        try:
            return _each_part(pair, competition, 1, Bound.of(limits, careful=False), check)
        except NeedsParts:
            return _each_part(pair, competition, planned.careful_parts, limits, check)
    return _each_part(pair, competition, planned.parts, limits, check)


def _each_part(
    pair: Pair,
    competition: Competition,
    count: int,
    limits: Limits,
    check: Callable[[Any, Table], R],
) -> list[R]:
    """`run`'s loop over `count` parts, under `limits` as `run` bounds them."""
    read = solution_of if pair.role is Role.SOLUTION else targets_of
    with _sources(pair, competition, count, limits) as (host, entry):
        broken: list[Problem] = list(host.problems) if host else []
        rejected: list[Problem] = list(entry.problems)
        # A hint may count over the whole file: each part's clues, added up, give the file's.
        host_clues, entry_clues = Clues(), Clues()
        results: list[R] = []
        for part in range(count):
            try:
                if host is None:
                    known: Solution | pl.Series = cast(Solution, pair.truth)
                else:
                    table = _table(host, part, limits, pair.role)
                    host_clues += table.clues
                    known = read(table)
                    del table  # its frame, as read, is not held while the submission is read
            except HostError as exc:
                broken += exc.report.problems
                continue
            if broken:
                continue  # the organiser's problems are reported alone
            users = known.targets.len() if isinstance(known, Solution) else known.len()
            bound = Bound.of(limits, valid_rows=users * competition.k)
            try:
                table = _table(entry, part, bound, Role.SUBMISSION)
                entry_clues += table.clues
                results.append(check(known, table))
            except SubmissionError as exc:
                rejected += exc.report.problems
        if broken and host is not None:
            problems = hinted(merge(broken), host_clues, competition)
            raise HostError(str(pair.role), Report.of(host.file, problems))
        if rejected:
            problems = hinted(merge(rejected), entry_clues, competition)
            raise SubmissionError(Report.of(entry.file, problems))
    return results


@contextmanager
def _sources(
    pair: Pair, competition: Competition, count: int, limits: Limits
) -> Iterator[tuple[_Whole | Parts | None, _Whole | Parts]]:
    """Both files as sources of parts: read whole, or split into a temporary folder that is
    removed at the end (a refused file raises here, the organiser's first)."""
    entry_spec = spec_of(Role.SUBMISSION, competition)
    host_spec = spec_of(pair.role, competition)
    if count == 1:
        host = None if pair.ready else _Whole(cast(TableLike, pair.truth), host_spec)
        yield host, _Whole(pair.submission, entry_spec)
        return
    with tempfile.TemporaryDirectory(prefix="scorer-parts-") as folder:
        with reading(pair.role):
            truth = Path(str(pair.truth))
            host_parts = split(truth, host_spec, count, Path(folder) / "truth", limits)
        with reading(Role.SUBMISSION):
            entry_parts = split(
                Path(str(pair.submission)), entry_spec, count, Path(folder) / "submission", limits
            )
        yield host_parts, entry_parts


def _table(source: _Whole | Parts, part: int, limits: Limits, role: Role) -> Table:
    with reading(role):
        return source.table(part, limits)
