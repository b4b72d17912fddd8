"""`scorer serve team`: a server's teams, added (one or a file of them, all or none), given a
new token, revoked and listed."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from typing import Annotated

import typer

from scorer.errors import UsageError
from scorer.leaderboard.literal import shown
from scorer.serve import site, teams
from scorer.serve.cli_home import Database, DirFirst, ServerDir, dir_and, named, organiser_home
from scorer.shell import guarded

team_app = typer.Typer(help="The teams of a server folder.", no_args_is_help=True)

Folder = Annotated[Path, typer.Argument(metavar="DIR", help="The server's folder.")]
AsJson = Annotated[bool, typer.Option("--json", help="One JSON object on stdout.")]


@team_app.command("add")
def team_add(
    given: DirFirst = None,
    name: Annotated[str | None, typer.Argument(help="The team's name.")] = None,
    from_file: Annotated[
        Path | None,
        typer.Option("--from", metavar="FILE", help="A CSV of teams, a 'team' column."),
    ] = None,
    out: Annotated[
        Path | None,
        typer.Option(
            metavar="FILE",
            help="A new file (0600) for the token instead of the screen; with --from, for "
            "every team's (CSV).",
        ),
    ] = None,
    db: Database = None,
    as_json: AsJson = False,
) -> None:
    """Add a team and print its token, shown this once (or write it to --out); or, with
    --from and --out, every team of a CSV file, their tokens written to a CSV file to print
    as slips."""
    folder, name = dir_and(given, db, name)
    with guarded("serve team add", as_json), organiser_home(folder, db) as home:
        if (name is None) == (from_file is None):
            raise UsageError("give a team NAME, or --from FILE with --out FILE")
        if out is not None and out.exists():
            raise UsageError(f"--out {out}: exists already; tokens are written to a new file")
        if name is not None:
            token = teams.add_team(home, name, named(folder, db))
            if out is not None:
                teams.write_private(out, f"{token}\n")
        else:
            if out is None:
                raise UsageError("--from needs --out FILE, where the tokens go")
            listed = teams.names_in(from_file)  # type: ignore[arg-type]
            tokens = teams.add_teams(home, listed, from_file, named(folder, db))  # all or none
            teams.write_tokens(out, tokens)
    if name is None:
        if as_json:
            typer.echo(json.dumps({"status": "ok", "teams": len(tokens), "out": str(out)}))
        else:
            typer.echo(f"Added {len(tokens)} teams; their tokens are in {out}")
    elif out is not None:
        typer.echo(f"Team {name!r}: its token is in {out}, and shown nowhere else")
    elif as_json:
        typer.echo(json.dumps({"team": name, "token": token}))
    else:
        typer.echo(f"Team {name!r}: token, shown this once: {token}")


@team_app.command("token")
def team_token(
    given: DirFirst = None,
    name: Annotated[str | None, typer.Argument(help="The team's name.")] = None,
    out: Annotated[
        Path | None,
        typer.Option(metavar="FILE", help="A new file (0600) for the token instead of the screen."),
    ] = None,
    db: Database = None,
    as_json: AsJson = False,
) -> None:
    """Give a team a new token, shown this once (or written to --out): its old token stops
    working at once. A revoked team is let back in with it."""
    folder, name = dir_and(given, db, name)
    with guarded("serve team token", as_json), organiser_home(folder, db) as home:
        if name is None:
            raise UsageError("give the team's NAME")
        if out is not None and out.exists():
            raise UsageError(f"--out {out}: exists already; tokens are written to a new file")
        team, token = teams.replace_token(home, name, named(folder, db))
        if out is not None:
            teams.write_private(out, f"{token}\n")
    back = "; it was revoked, and this token lets it back in" if team.was_revoked else ""
    if as_json:
        where = {"token": token} if out is None else {"out": str(out)}
        typer.echo(json.dumps({"team": team.name, **where, "was_revoked": team.was_revoked}))
    elif out is not None:
        typer.echo(
            f"Team {team.name!r}: its new token is in {out}; the old one no longer works{back}"
        )
    else:
        typer.echo(
            f"Team {team.name!r}: new token, shown this once: {token}; the old one no longer "
            f"works{back}"
        )


@team_app.command("revoke")
def team_revoke(
    given: DirFirst = None,
    name: Annotated[str | None, typer.Argument(help="The team's name.")] = None,
    db: Database = None,
) -> None:
    """Revoke a team's token: its uploads are refused from now on; its submissions stay.
    `team token` gives it a new one and lets it back in."""
    folder, name = dir_and(given, db, name)
    with guarded("serve team revoke", False), organiser_home(folder, db) as home:
        if name is None:
            raise UsageError("give the team's NAME")
        if not site.store_of(home).revoke_team(name, dt.datetime.now(dt.UTC)):
            raise UsageError(f"{named(folder, db)}: no team named {name!r}")
    typer.echo(f"Revoked {name!r}")


@team_app.command("list")
def team_list(folder: ServerDir = None, db: Database = None, as_json: AsJson = False) -> None:
    """Every team and whether its token is revoked (tokens are never shown again)."""
    with guarded("serve team list", as_json), organiser_home(folder, db) as home:
        teams = site.store_of(home).teams()
    if as_json:
        typer.echo(json.dumps([{"team": t, "revoked": r} for t, r in teams]))
        return
    for team, revoked in teams:
        typer.echo(f"{shown(team)}{' (revoked)' if revoked else ''}")
