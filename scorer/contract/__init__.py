"""The file contract: what a submission, a solution and a targets file must hold.

`files`: the kinds of file, their columns in a competition, what they share; `solution`: the
organiser's solution and targets, checked; `submission`: every rule of a submission; `codes`:
text ids numbered against the solution's.
"""

from __future__ import annotations

from scorer.contract.codes import Codes
from scorer.contract.files import Role, reading, spec_of
from scorer.contract.solution import Solution, read_solution, read_targets, solution_of, targets_of
from scorer.contract.submission import (
    check_against,
    check_submission,
    checked_rows,
    read_submission,
)

__all__ = [
    "Codes",
    "Role",
    "Solution",
    "check_against",
    "check_submission",
    "checked_rows",
    "read_solution",
    "read_submission",
    "read_targets",
    "reading",
    "solution_of",
    "spec_of",
    "targets_of",
]
