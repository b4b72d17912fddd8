"""`scorer serve solution`: a fixed solution put in place of a live server's, and every
judged submission judged again against it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from scorer.serve.cli_home import Database, ServerDir, organiser_home
from scorer.serve.cli_team import AsJson
from scorer.shell import guarded

_TARGETS = "The target users, checked to be the server's (they never change)."


def solution(
    new: Annotated[
        Path, typer.Option("--solution", metavar="FILE", help="The fixed hidden solution.")
    ],
    folder: ServerDir = None,
    db: Database = None,
    targets: Annotated[Path | None, typer.Option(metavar="FILE", help=_TARGETS)] = None,
    as_json: AsJson = False,
) -> None:
    """Replace the hidden solution of a server, running or not: checked first, as at `init`,
    with the same target users. Every judged submission is judged again against it, and the
    boards say they are being rescored until they all are; the audit log names the change
    with both files' sha256. With --db, the database's solution is replaced."""
    from scorer.serve.rescore import replace

    with guarded("serve solution", as_json), organiser_home(folder, db, solution=True) as home:
        done = replace(home, new, targets=targets)
    if as_json:
        fields = {"was": done.was, "now": done.now, "rescored": done.rescored}
        typer.echo(json.dumps({"status": "ok", "changed": done.changed, **fields}))
    elif not done.changed:
        typer.echo(f"The solution is unchanged (sha256 {done.now}): nothing to judge again.")
    else:
        many = "submission" if done.rescored == 1 else "submissions"
        typer.echo(
            f"Replaced the solution (sha256 {done.was} -> {done.now}). {done.rescored} {many} "
            "judged again against it; the boards say so until they all are."
        )
