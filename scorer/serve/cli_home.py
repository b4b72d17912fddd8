"""Where a `scorer serve` command finds its server: the server's folder DIR, or, on a machine
given only the database's address (`--db URL`), a private folder of the competition that
PostgreSQL database holds (`site.from_database`), removed when the command ends.

Every command that opens a made server takes the two the same way: `ServerDir` and
`Database` as its argument and option, and `organiser_home` (the organiser's commands) or
`server_home` (`run` and `worker`) for the folder to work in."""

from __future__ import annotations

import shlex
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated

import typer

from scorer.errors import UsageError
from scorer.serve import site

ServerDir = Annotated[
    Path | None,
    typer.Argument(metavar="DIR", help="The server's folder (or --db URL).", show_default=False),
]
Database = Annotated[
    str | None,
    typer.Option(
        metavar="URL",
        help="The server's PostgreSQL database (postgresql://…), for a machine without DIR.",
    ),
]


def _one_of(folder: Path | None, db: str | None) -> None:
    """DIR or --db: exactly one."""
    if folder is None and db is None:
        raise UsageError("give the server's folder DIR, or --db URL for a machine without it")
    if folder is not None and db is not None:
        raise UsageError(
            "give the server's folder DIR, or --db URL for a machine without it; not both "
            "(a folder's settings name its database)"
        )


@contextmanager
def server_home(
    folder: Path | None, db: str | None, *, solution: bool
) -> Iterator[tuple[Path, Path]]:
    """The server's folder, or, for a machine given only the database, a private folder of
    the competition it holds (`site.from_database`, with the hidden solution when
    `solution`); and this process's own private folder (`site.scratch`), where every
    temporary file it and its judging processes make lives, removed when the command ends,
    or by the next one to start after a kill -9."""
    _one_of(folder, db)
    with site.scratch() as own:
        if folder is None:
            site.from_database(str(db), own, solution=solution)
        yield (own if folder is None else folder), own / "work"


@contextmanager
def organiser_home(
    folder: Path | None, db: str | None, *, solution: bool = False
) -> Iterator[Path]:
    """The folder an organiser's command works in: DIR itself, or, with `--db URL`, a private
    copy of the competition the database holds (its settings, targets and rules, and the
    hidden solution when `solution`), removed when the block ends. A database role that is
    not the organiser's (a web process's) is refused in words."""
    _one_of(folder, db)
    if folder is not None:
        yield folder
        return
    with site.scratch() as own:
        site.from_database(str(db), own, solution=solution, organiser=True)
        yield own


def named(folder: Path | None, db: str | None) -> str:
    """How a command line names the server, for a message: DIR, or `--db URL` (the address
    left out: it may hold a password)."""
    return "--db URL" if folder is None else shlex.quote(str(folder))


#: The server's folder before another argument (a team's NAME): read as text, since with
#: `--db URL` there is no DIR and what stands in its place is that argument (`dir_and`).
DirFirst = Annotated[
    str | None,
    typer.Argument(
        metavar="DIR", help="The server's folder (none with --db URL).", show_default=False
    ),
]


def dir_and(folder: str | None, db: str | None, then: str | None) -> tuple[Path | None, str | None]:
    """DIR and the argument after it, as given: with `--db URL` and one argument, it is the
    one after DIR (`team token --db URL NAME`), kept as written."""
    if db is not None and then is None:
        return None, folder
    return (None if folder is None else Path(folder)), then
