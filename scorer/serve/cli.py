"""`scorer serve`: make a competition server's folder and its teams, run the server, export
its submissions as a leaderboard log."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from typing import Annotated

import typer

from scorer.errors import UsageError
from scorer.leaderboard.boards import Boards, Phase
from scorer.leaderboard.cli import (
    BoardsFormat,
    BoardsJson,
    BoardsOutput,
)
from scorer.leaderboard.manifest import MAX_SELECTED
from scorer.leaderboard.render import Format
from scorer.serve import site
from scorer.serve.cli_run import run, worker
from scorer.shell import CompetitionFile, emit, guarded

serve_app = typer.Typer(
    help="A competition server: its folder, its teams, the server itself.", no_args_is_help=True
)
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
    picks: Annotated[
        int, typer.Option(min=1, max=MAX_SELECTED, help="Submissions a team selects.")
    ] = MAX_SELECTED,
    freeze: Annotated[str | None, typer.Option(help="When the public board freezes (ISO).")] = None,
    end: Annotated[str | None, typer.Option(help="When uploads end (ISO, UTC).")] = None,
    db: Annotated[
        str | None,
        typer.Option(
            metavar="URL",
            help="A PostgreSQL database for the store (postgresql://…); default: SQLite in DIR.",
        ),
    ] = None,
    web_role: Annotated[
        str | None,
        typer.Option(
            metavar="ROLE",
            help="With --db: the database role of the web processes, given what they need "
            "and never the solution.",
        ),
    ] = None,
    sample: Annotated[
        Path | None,
        typer.Option(
            metavar="FILE",
            help="The sample submission participants download (.csv, checked as an upload "
            "is); default: every target user with the placeholder ids 1..k.",
        ),
    ] = None,
    description: Annotated[
        Path | None,
        typer.Option(
            metavar="FILE",
            help="The competition's description, Markdown (UTF-8, at most 64 KiB), shown on "
            "the page with any HTML in it as text.",
        ),
    ] = None,
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
            db=db,
        )
        token = site.init(
            folder,
            solution,
            targets=targets,
            competition=competition,
            settings=settings,
            web_role=web_role,
            sample=sample,
            description=description,
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
        Path | None,
        typer.Option(
            metavar="FILE",
            help="A new file (0600) for the token instead of the screen; with --from, for "
            "every team's (CSV).",
        ),
    ] = None,
    as_json: AsJson = False,
) -> None:
    """Add a team and print its token, shown this once (or write it to --out); or, with
    --from and --out, every team of a CSV file, their tokens written to a CSV file to print
    as slips."""
    with guarded("serve team add", as_json):
        if (name is None) == (from_file is None):
            raise UsageError("give a team NAME, or --from FILE with --out FILE")
        if name is not None:
            if out is not None and out.exists():
                raise UsageError(f"--out {out}: exists already; tokens are written to a new file")
            token = site.add_team(folder, name)
            if out is not None:
                site.write_private(out, f"{token}\n")
        else:
            if out is None:
                raise UsageError("--from needs --out FILE, where the tokens go")
            names = site.names_in(from_file)  # type: ignore[arg-type]
            tokens = [(team, site.add_team(folder, team)) for team in names]
            site.write_tokens(out, tokens)
    if name is None:
        typer.echo(f"Added {len(tokens)} teams; their tokens are in {out}")
    elif out is not None:
        typer.echo(f"Team {name!r}: its token is in {out}, and shown nowhere else")
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


serve_app.command()(run)
serve_app.command()(worker)


@serve_app.command()
def reveal(folder: Folder) -> None:
    """Reveal the final board: the private scores, on every route and page of the server
    (running or not). It cannot be undone."""
    with guarded("serve reveal", False):
        site.store_of(folder).reveal()
    typer.echo("The final board is revealed: every route and page of the server shows it")


@serve_app.command()
def show(
    folder: Folder,
    phase: Annotated[
        Phase,
        typer.Option(help="public: as participants see it; final: both boards, revealed or not."),
    ] = Phase.PUBLIC,
    fmt: BoardsFormat = None,
    as_json: BoardsJson = False,
    output: BoardsOutput = None,
) -> None:
    """Print the server's boards from its verdicts now, as `scorer leaderboard show` prints a
    leaderboard's: the organiser's view, the final boards before the reveal included."""
    from scorer.leaderboard.cli import print_boards
    from scorer.serve.boards import current

    def boards() -> Boards:
        settings = site.settings_of(folder)
        freeze = None if settings.freeze is None else dt.datetime.fromisoformat(settings.freeze)
        return current(site.store_of(folder), site.rules_of(folder), phase, freeze)

    print_boards("serve show", boards, phase, Format.JSON if as_json else fmt, output, None)


@serve_app.command()
def export(
    folder: Folder,
    out: Annotated[Path, typer.Option(metavar="DIR", help="A new folder for the log.")],
    as_json: AsJson = False,
) -> None:
    """Write the server's submissions as a leaderboard log (OUT/manifest.csv and the files):
    `scorer leaderboard score` on it gives the server's boards."""
    from scorer.serve.export import MANIFEST
    from scorer.serve.export import export as write

    with guarded("serve export", as_json):
        count = write(folder, out)
    if as_json:
        typer.echo(
            json.dumps({"status": "ok", "submissions": count, "manifest": str(out / MANIFEST)})
        )
    else:
        typer.echo(f"Wrote {count} submissions and {out / MANIFEST}")


def submit(
    file: Annotated[Path, typer.Argument(metavar="FILE", help="The submission to upload.")],
    server: Annotated[str, typer.Option(metavar="URL", help="The server's address.")],
    token: Annotated[
        str, typer.Option(metavar="TOKEN", envvar="SCORER_TOKEN", help="Your team's token.")
    ],
    wait: Annotated[
        float, typer.Option(metavar="SECONDS", min=0, help="How long to wait for the verdict.")
    ] = 600.0,
    insecure_http: Annotated[
        bool,
        typer.Option(
            "--insecure-http",
            help="Send the token over plain http:// to another machine than this one, "
            "where anyone on the way can read it.",
        ),
    ] = False,
    as_json: AsJson = False,
) -> None:
    """Check a submission against the server's rules and targets, upload it, and print its
    verdict: the public score, or the same report as `scorer validate`. Exit 0 when it is
    scored or still queued, 1 when it is rejected, 2 when the server refuses it. The token
    goes to --server only: no redirect is followed, and plain http:// goes to this machine
    only, unless --insecure-http."""
    from scorer.serve.client import submit as send

    with guarded("submit", as_json):
        verdict = send(file, server, token, wait, insecure_http)
        if verdict.status == "failed":
            raise UsageError(
                f"submission {verdict.submission['id']} failed on the server: "
                f"{(verdict.submission.get('report') or {}).get('message', '')}"
            )
    entry = verdict.submission
    if as_json:
        emit("submit", {"submission": entry})
        return
    left = entry.get("remaining_today")
    quota = {None: "no daily limit", 0: "no upload left today: the next opens at 00:00 UTC"}
    said = quota.get(left, f"{left} upload{'s' if left != 1 else ''} left today")
    if verdict.status == "scored":
        typer.echo(
            f"{file.name}: scored, public score {entry['public_score']:.6f} "
            f"(submission {entry['id']}; {said})"
        )
    else:
        typer.echo(f"{file.name}: {verdict.status} (submission {entry['id']}); ask again later")
