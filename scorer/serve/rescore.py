"""A fixed solution put in place of a live server's: checked as `init` checks one, the same
target users, kept and named in the store in one transaction that sends every judged
submission to be judged again (`Queue.rescore`), then in the folder."""

from __future__ import annotations

import hashlib
import os
import shutil
from dataclasses import dataclass
from pathlib import Path

from scorer.commitment import NEW_SOLUTION, commit, counts_of, new_salt
from scorer.contract import read_solution, read_targets
from scorer.errors import UsageError
from scorer.serve import site
from scorer.serve.queue import Solution
from scorer.version import __version__


@dataclass(frozen=True)
class Replaced:
    """What `replace` did: the sha256 of the solution before (`was`) and after (`now`), and
    how many submissions are judged again (none when the file was the one in force)."""

    was: str
    now: str
    rescored: int

    @property
    def changed(self) -> bool:
        return self.was != self.now


def sha256_of(path: Path) -> str:
    with path.open("rb") as handle:
        return hashlib.file_digest(handle, "sha256").hexdigest()


def replace(folder: Path, solution: Path, *, targets: Path | None = None) -> Replaced:
    """Make `solution` the hidden solution of the server in `folder`, running or not. It is
    checked first, as at `init`; its target users must be the server's, which participants
    were given and submitted for (`targets`, when given, must list them too). Every judged
    submission is judged again against it, and the boards say so until they all are. A new
    solution gets a new salt and a new commitment, added to the published history; after
    the reveal, which publishes the solution, none is taken."""
    rules = site.rules_of(folder)
    truth = read_solution(solution, competition=rules)  # a broken solution: refused here
    given = set(read_targets(folder / site.TARGETS, competition=rules).to_list())
    if targets is not None and set(read_targets(targets, competition=rules).to_list()) != given:
        raise UsageError(
            f"{targets}: its users are not the server's target users; the target users of a "
            "live competition do not change (participants submitted for them)"
        )
    users = set(truth.written_targets.to_list())
    if users != given:
        raise UsageError(
            f"{solution}: its target users are not the server's ({len(given - users):,} of "
            f"them missing, {len(users - given):,} others); the target users of a live "
            "competition do not change (participants submitted for them)"
        )
    store, kept = site.store_of(folder), folder / site.SOLUTION
    if store.revealed() is not None:
        raise UsageError(
            "the final board is revealed, and the solution with it: a solution replaced now "
            "would not be the one participants check the board with"
        )
    now = sha256_of(solution)
    named = store.solution()
    was = named.sha256 if named is not None else sha256_of(kept)
    whole = folder / f".{site.SOLUTION}.new"  # beside it: put in place at once
    salt = folder / f".{site.SALT}.new"
    try:
        shutil.copyfile(solution, whole)
        os.chmod(whole, 0o600)
        rescored = 0
        if now != was:  # a new solution: a new salt, a new commitment, in the same transaction
            since = store.clock().isoformat()
            site.write_salt(salt, new_salt())
            split, made = counts_of(truth.users), salt.read_text(encoding="ascii")
            sealed = commit(now, split, made, __version__, since, NEW_SOLUTION)
            moved = Solution(now, was, since)
            rescored = store.rescore(moved, site.SOLUTION, whole, (sealed, salt))
            os.replace(salt, folder / site.SALT)
        # after the store names it: a worker that finds the file not yet the one named waits
        # for it, and a command cut short here is finished by running it again
        os.replace(whole, kept)
    finally:
        whole.unlink(missing_ok=True)
        salt.unlink(missing_ok=True)
    return Replaced(was, now, rescored)
