"""Commit, then reveal: what a server publishes so that anyone can check its final board. The
commitment (`scorer.commitment`) is public from `init` on; the solution and the salt of its
commitment only once the final board is revealed, when the store itself hands them over
(`SqlStore.revealed_file`: a web role of PostgreSQL reads them only then)."""

from __future__ import annotations

from functools import cache
from html import escape
from itertools import pairwise
from pathlib import Path
from typing import Any

from scorer.commitment import file_sha256
from scorer.serve.settings import shown_time
from scorer.serve.sql import SqlStore
from scorer.serve.sqlcommit import SALT, SOLUTION

#: Where `GET /api/v1/solution` says the solution's bytes are.
SOLUTION_CSV = "/api/v1/solution.csv"


class NotRevealed(Exception):
    """The solution is asked for before the reveal."""


def commitment_dict(store: SqlStore) -> dict[str, Any]:
    """The commitment in force (the latest; None for a server made before commitments) and
    every one made, oldest first, each with its time and reason: never a salt."""
    made = [c.to_dict() for c in store.commitments()]
    return {"commitment": made[-1] if made else None, "commitment_history": made}


def revealed(store: SqlStore, scratch: Path) -> tuple[Path, str]:
    """The solution file and the salt of its commitment, once revealed (a store that holds
    the files copies them into `scratch`); `NotRevealed` before."""
    solution, salt = (store.revealed_file(name, scratch) for name in (SOLUTION, SALT))
    if solution is None or salt is None:
        if store.revealed() is not None:  # a server of a scorer before commitments
            raise NotRevealed("this server made no commitment: it has no solution to publish")
        raise NotRevealed("the solution is published with the final board, at the reveal")
    return solution, salt.read_text(encoding="ascii").strip()


def solution_dict(store: SqlStore, scratch: Path) -> dict[str, Any]:
    """What a participant checks the final board with (`scorer verify`), once revealed: the
    commitment in force, its salt, scorer version and split, the solution's sha256, and
    where its bytes are."""
    path, salt = revealed(store, scratch)
    latest = commitment_dict(store)["commitment"]
    return {
        "commitment": latest,
        "salt": salt,
        "scorer_version": None if latest is None else latest["scorer_version"],
        "split": None if latest is None else latest["split"],
        "solution_sha256": sha256_once(path),
        "csv": SOLUTION_CSV,
    }


@cache
def _sha256_of(path: Path, size: int, mtime_ns: int) -> str:
    return file_sha256(path)


def sha256_once(path: Path) -> str:
    """A revealed file's sha256, computed once (a solution of a million users takes a
    second to hash, and every request of `/api/v1/solution` asks for it)."""
    found = path.stat()
    return _sha256_of(path, found.st_size, found.st_mtime_ns)


def commitment_html(store: SqlStore) -> list[str]:
    """The page's section on the commitment: the latest, short with the whole hash to copy,
    when each solution was replaced, and after the reveal where the solution and salt are."""
    made = store.commitments()
    if not made:
        return []
    latest, split = made[-1], made[-1].split
    full = escape(latest.hash)
    lines = [
        '<section id="commitment"><h2>Commitment</h2>',
        f"<p>The organiser committed to the hidden solution on "
        f"{escape(shown_time(latest.committed_at))}: commitment <code>{full[:12]}…</code>, "
        f"the SHA-256 of the solution file's, its split ({split.public:,} public, "
        f"{split.private:,} private, {split.ignored:,} ignored users), scorer "
        f"{escape(latest.scorer_version)} and a secret salt.</p>",
        f'<p><label>The whole commitment: <input readonly size="64" value="{full}"></label></p>',
    ]
    for before, then in pairwise(made):
        lines.append(
            f"<p>The solution was replaced on {escape(shown_time(then.committed_at))} "
            f"({escape(then.reason)}): commitment <code>{escape(before.hash)}</code> before.</p>"
        )
    if store.revealed() is None:
        lines.append(
            "<p>The solution and the salt are published with the final board: anyone can "
            "then check the board with <code>scorer verify</code>.</p>"
        )
    else:
        lines.append(
            '<p>Revealed: <a href="/api/v1/solution.csv">the solution</a> and '
            '<a href="/api/v1/solution">its salt and sha256</a>; check the final board with '
            "<code>scorer verify</code>.</p>"
        )
    return [*lines, "</section>"]
