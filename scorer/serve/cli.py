"""`scorer serve`: make a competition server's folder and its teams (first version: the web
app that takes uploads is the next step of issue 24)."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from typing import Annotated

import typer

from scorer.errors import UsageError
from scorer.serve import site
from scorer.shell import CompetitionFile, guarded

serve_app = typer.Typer(help="A competition server: its folder, its teams.", no_args_is_help=True)
team_app = typer.Typer(help="The teams of a server folder.", no_args_is_help=True)
serve_app.add_typer(team_app, name="team")

Folder = Annotated[Path, typer.Argument(metavar="DIR", help="The server's folder.")]
AsJson = Annotated[bool, typer.Option("--json", help="One JSON object on stdout.")]


@serve_app.command()
def init(
    folder: Folder,
    solution: Annotated[Path, typer.Option(metavar="FILE", help="The hidden solution.")],
    targets: Annotated[
        Path | None,
        typer.Option(metavar="FILE", help="The target users (default: the solution's)."),
    ] = None,
    competition: CompetitionFile = None,
    title: Annotated[str | None, typer.Option(help="The competition's title.")] = None,
    daily_limit: Annotated[int, typer.Option(min=1, help="Scored uploads a team a UTC day.")] = 5,
    rejected_limit: Annotated[int, typer.Option(min=1, help="Rejected uploads a team.")] = 20,
    total_limit: Annotated[int | None, typer.Option(min=1, help="Uploads a team in all.")] = None,
    picks: Annotated[int, typer.Option(min=1, help="Submissions a team selects.")] = 2,
    freeze: Annotated[str | None, typer.Option(help="When the public board freezes (ISO).")] = None,
    end: Annotated[str | None, typer.Option(help="When uploads end (ISO, UTC).")] = None,
    as_json: AsJson = False,
) -> None:
    """Make a new server folder: the solution checked and copied in, the limits, and the
    admin token, printed this once (only its hash is kept)."""
    with guarded("serve init", as_json):
        settings = site.Settings(
            title=title or "",  # the competition's name without it
            daily_limit=daily_limit,
            rejected_limit=rejected_limit,
            total_limit=total_limit,
            picks=picks,
            freeze=site.moment(freeze, "--freeze"),
            end=site.moment(end, "--end"),
        )
        token = site.init(
            folder, solution, targets=targets, competition=competition, settings=settings
        )
    if as_json:
        typer.echo(json.dumps({"status": "ok", "admin_token": token}))
    else:
        typer.echo(f"Made {folder}. Admin token, shown this once (keep it secret): {token}")


@team_app.command("add")
def team_add(
    folder: Folder,
    name: Annotated[str | None, typer.Argument(help="The team's name.")] = None,
    from_file: Annotated[
        Path | None,
        typer.Option("--from", metavar="FILE", help="A CSV of teams, a 'team' column."),
    ] = None,
    out: Annotated[
        Path | None, typer.Option(metavar="FILE", help="With --from: where the tokens go (CSV).")
    ] = None,
    as_json: AsJson = False,
) -> None:
    """Add a team and print its token, shown this once; or, with --from and --out, every
    team of a CSV file, their tokens written to a CSV file to print as slips."""
    with guarded("serve team add", as_json):
        now = dt.datetime.now(dt.UTC)
        if (name is None) == (from_file is None):
            raise UsageError("give a team NAME, or --from FILE with --out FILE")
        if name is not None:
            token = site.add_team(folder, name, now)
        else:
            if out is None:
                raise UsageError("--from needs --out FILE, where the tokens go")
            names = site.names_in(from_file)  # type: ignore[arg-type]
            tokens = [(team, site.add_team(folder, team, now)) for team in names]
            site.write_tokens(out, tokens)
    if name is None:
        typer.echo(f"Added {len(tokens)} teams; their tokens are in {out}")
    elif as_json:
        typer.echo(json.dumps({"team": name, "token": token}))
    else:
        typer.echo(f"Team {name!r}: token, shown this once: {token}")


@team_app.command("revoke")
def team_revoke(folder: Folder, name: Annotated[str, typer.Argument()]) -> None:
    """Revoke a team's token: its uploads are refused from now on; its submissions stay."""
    with guarded("serve team revoke", False):
        if not site.store_of(folder).revoke_team(name, dt.datetime.now(dt.UTC)):
            raise UsageError(f"{folder}: no team named {name!r}")
    typer.echo(f"Revoked {name!r}")


@team_app.command("list")
def team_list(folder: Folder, as_json: AsJson = False) -> None:
    """Every team and whether its token is revoked (tokens are never shown again)."""
    with guarded("serve team list", as_json):
        teams = site.store_of(folder).teams()
    if as_json:
        typer.echo(json.dumps([{"team": t, "revoked": r} for t, r in teams]))
        return
    for team, revoked in teams:
        typer.echo(f"{team}{' (revoked)' if revoked else ''}")
