"""`scorer serve`: make a competition server's folder and its teams, run the server, export
its submissions as a leaderboard log."""

from __future__ import annotations

import datetime as dt
import json
from contextlib import ExitStack
from pathlib import Path
from typing import Annotated

import typer

from scorer.errors import UsageError
from scorer.leaderboard.boards import Boards
from scorer.leaderboard.cli import (
    BoardsFormat,
    BoardsJson,
    BoardsOutput,
)
from scorer.leaderboard.literal import shown
from scorer.leaderboard.manifest import MAX_SELECTED
from scorer.leaderboard.render import Format
from scorer.leaderboard.schema import Phase
from scorer.serve import settings as config
from scorer.serve import site
from scorer.serve.cli_home import Database, ServerDir, organiser_home
from scorer.serve.cli_run import run, worker
from scorer.serve.cli_solution import solution
from scorer.serve.cli_team import AsJson, Folder, team_app
from scorer.shell import CompetitionFile, emit, guarded

serve_app = typer.Typer(
    help="A competition server: its folder, its teams, the server itself.", no_args_is_help=True
)
serve_app.add_typer(team_app, name="team")

_TIME = "ISO 8601, UTC unless a zone is given; 'none' clears it"
StartOption = Annotated[
    str | None, typer.Option(metavar="ISO", help=f"When uploads open ({_TIME}).")
]
FreezeOption = Annotated[
    str | None, typer.Option(metavar="ISO", help=f"When the public board freezes ({_TIME}).")
]
EndOption = Annotated[
    str | None,
    typer.Option(
        metavar="ISO", help=f"When uploads end ({_TIME}; a date alone: 23:59:59 that day)."
    ),
]
RevealOption = Annotated[
    str | None,
    typer.Option(metavar="ISO", help=f"When the final board is revealed, on its own ({_TIME})."),
]
ForceOption = Annotated[
    bool, typer.Option("--force", help="Take an end or a reveal in the past: it acts at once.")
]


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
    start: StartOption = None,
    freeze: FreezeOption = None,
    end: EndOption = None,
    reveal_at: RevealOption = None,
    force: ForceOption = False,
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
        asked = {"start": start, "freeze": freeze, "end": end, "reveal_at": reveal_at}
        times, notes = config.parsed({k: v for k, v in asked.items() if v is not None}, None)
        settings = site.Settings(
            title=title or "",  # the competition's name without it
            daily_limit=daily_limit,
            rejected_limit=rejected_limit,
            total_limit=total_limit,
            picks=picks,
            db=db,
            **times,
        )
        config.past(settings, site.Settings(title=""), times, dt.datetime.now(dt.UTC), force)
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
        settings = site.settings_of(folder)
        (made,) = site.store_of(folder).commitments()
    stage = config.stage_of(settings, dt.datetime.now(dt.UTC), revealed=False)
    if as_json:
        understood = config.as_dict(settings, stage, notes=notes)
        answer = {"admin_token": token, "commitment": made.to_dict(), **understood}
        typer.echo(json.dumps({"status": "ok", **answer}))
    else:
        typer.echo(f"Made {folder}. Admin token, shown this once (keep it secret): {token}")
        typer.echo(
            f"Commitment to the solution, published from now on: {made.hash} (its salt is "
            "kept hidden until the reveal, which publishes both)"
        )
        _print_settings(settings, stage, notes)


serve_app.command()(run)
serve_app.command()(worker)
serve_app.command()(solution)


@serve_app.command("settings")
def settings_command(
    folder: ServerDir = None,
    db: Database = None,
    start: StartOption = None,
    freeze: FreezeOption = None,
    end: EndOption = None,
    reveal_at: RevealOption = None,
    daily_limit: Annotated[
        str | None, typer.Option(metavar="N", help="Scored uploads a team a UTC day, or none.")
    ] = None,
    rejected_limit: Annotated[
        str | None, typer.Option(metavar="N", help="Rejected uploads a team, or none.")
    ] = None,
    total_limit: Annotated[
        str | None, typer.Option(metavar="N", help="Uploads a team in all, or none.")
    ] = None,
    picks: Annotated[
        str | None,
        typer.Option(metavar="N", help=f"Submissions a team selects (1 to {MAX_SELECTED})."),
    ] = None,
    title: Annotated[str | None, typer.Option(help="The competition's title.")] = None,
    team: Annotated[
        str | None,
        typer.Option(
            metavar="NAME",
            help="Set this team's own --daily-limit, --rejected-limit or --total-limit "
            "('none': the competition's again).",
        ),
    ] = None,
    description: Annotated[
        Path | None,
        typer.Option(
            metavar="FILE",
            help="A new description for the page, Markdown (UTF-8, at most 64 KiB).",
        ),
    ] = None,
    force: ForceOption = False,
    as_json: AsJson = False,
) -> None:
    """Change a server's settings, running or not, and print them as understood (times in
    UTC). A running server applies them within 5 seconds; each change is an audit event.
    Without options, print them."""
    asked = {
        "start": start,
        "freeze": freeze,
        "end": end,
        "reveal_at": reveal_at,
        "daily_limit": daily_limit,
        "rejected_limit": rejected_limit,
        "total_limit": total_limit,
        "picks": picks,
        "title": title,
    }
    with guarded("serve settings", as_json), organiser_home(folder, db) as home:
        store, base = site.store_of(home), site.settings_of(home)
        given = {key: value for key, value in asked.items() if value is not None}
        if team is not None and not given:
            raise UsageError("--team NAME needs a limit to set: --daily-limit, …")
        about = None if description is None else site.read_description(description)
        made = config.change(store, base, given, team=team, force=force)
        if about is not None and about != store.description():  # audited with its sha256
            store.put_description(about)
            made.changed["description"] = {"was": "…", "now": "…"}
        stage = config.stage_of(made.settings, store.clock(), store.revealed() is not None)
    if as_json:
        typer.echo(json.dumps(config.as_dict(made.settings, stage, made.changed, made.notes)))
        return
    _print_settings(made.settings, stage, made.notes)
    changed = ", ".join(key.replace("_", " ") for key in made.changed)
    typer.echo(f"Changed: {changed}" if changed else "Nothing changed.")


def _print_settings(settings: site.Settings, stage: config.Stage, notes: list[str]) -> None:
    for note in notes:
        typer.echo(f"Note: {note}")
    for what, value in config.described(settings, stage):
        typer.echo(f"  {shown(what)}: {shown(value)}")


@serve_app.command()
def reveal(folder: ServerDir = None, db: Database = None) -> None:
    """Reveal the final board: the private scores, on every route and page of the server
    (running or not). It cannot be undone."""
    with guarded("serve reveal", False), organiser_home(folder, db) as home:
        site.store_of(home).reveal()
    typer.echo("The final board is revealed: every route and page of the server shows it")


@serve_app.command()
def show(
    folder: ServerDir = None,
    db: Database = None,
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

    with ExitStack() as held:  # the folder, until the boards are printed

        def boards() -> Boards:
            home = held.enter_context(organiser_home(folder, db))
            return current(site.store_of(home), site.rules_of(home), phase)

        print_boards("serve show", boards, phase, Format.JSON if as_json else fmt, output, None)


@serve_app.command()
def export(
    out: Annotated[Path, typer.Option(metavar="DIR", help="A new folder for the log.")],
    folder: ServerDir = None,
    db: Database = None,
    as_json: AsJson = False,
) -> None:
    """Write the server's submissions as a leaderboard log (OUT/manifest.csv and the files):
    `scorer leaderboard score` on it gives the server's boards. With them, the commitments
    (commitment.json) and, after the reveal, the final board as published for this log
    (board.json), which `scorer verify` checks."""
    from scorer.serve.export import export as write
    from scorer.verify import MANIFEST

    with guarded("serve export", as_json), organiser_home(folder, db) as home:
        done = write(home, out)
    if as_json:
        fields = {"submissions": done.submissions, "manifest": str(out / MANIFEST)}
        typer.echo(json.dumps({"status": "ok", **fields, "board": done.board}))
        return
    wrote = f"Wrote {done.submissions} submissions and {out / MANIFEST}"
    if done.board:
        typer.echo(f"{wrote}, the final board and the commitments, for `scorer verify`")
    else:
        typer.echo(
            f"{wrote} and the commitments; no final board yet (it is published after the "
            "reveal, for the latest verdicts: export again then, for `scorer verify`)"
        )


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
    message: Annotated[
        str,
        typer.Option(
            "--message",
            "-m",
            metavar="TEXT",
            help="A short description kept with the submission (at most 200 characters, "
            "one line), shown on your team's page.",
        ),
    ] = "",
    as_json: AsJson = False,
) -> None:
    """Check a submission against the server's rules and targets, upload it, and print its
    verdict: the public score, or the same report as `scorer validate`. Exit 0 when it is
    scored or still queued, 1 when it is rejected, 2 when the server refuses it. The token
    goes to --server only: no redirect is followed, and plain http:// goes to this machine
    only, unless --insecure-http."""
    from scorer.serve.client import submit as send

    with guarded("submit", as_json):
        verdict = send(file, server, token, wait, insecure_http, message)
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
    said = entry.get("closed") or quota.get(
        left, f"{left} upload{'s' if left != 1 else ''} left today"
    )
    if verdict.status == "scored":
        typer.echo(
            f"{file.name}: scored, public score {entry['public_score']:.6f} "
            f"(submission {entry['id']}; {said})"
        )
    else:
        typer.echo(f"{file.name}: {verdict.status} (submission {entry['id']}); ask again later")
