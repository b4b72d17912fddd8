"""`scorer serve`: make a competition server's folder and its teams, run the server, export
its submissions as a leaderboard log."""

from __future__ import annotations

import datetime as dt
import json
import signal
from collections.abc import Callable, Iterator
from contextlib import contextmanager, nullcontext
from pathlib import Path
from typing import Annotated, Any

import typer

from scorer.errors import UsageError
from scorer.leaderboard.cli import WorkerBudget, WorkerTimeout
from scorer.leaderboard.manifest import MAX_SELECTED
from scorer.leaderboard.worker import DEFAULT_BUDGET, DEFAULT_TIMEOUT
from scorer.serve import site
from scorer.serve.store import WORKER_LEASE
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
        now = dt.datetime.now(dt.UTC)
        if (name is None) == (from_file is None):
            raise UsageError("give a team NAME, or --from FILE with --out FILE")
        if name is not None:
            if out is not None and out.exists():
                raise UsageError(f"--out {out}: exists already; tokens are written to a new file")
            token = site.add_team(folder, name, now)
            if out is not None:
                site.write_private(out, f"{token}\n")
        else:
            if out is None:
                raise UsageError("--from needs --out FILE, where the tokens go")
            names = site.names_in(from_file)  # type: ignore[arg-type]
            tokens = [(team, site.add_team(folder, team, now)) for team in names]
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


Database = Annotated[
    str | None,
    typer.Option(
        metavar="URL",
        help="The server's PostgreSQL database (postgresql://…), for a machine without DIR.",
    ),
]


@serve_app.command()
def run(
    folder: Annotated[
        Path | None, typer.Argument(metavar="DIR", help="The server's folder (or --db).")
    ] = None,
    db: Database = None,
    host: Annotated[
        str,
        typer.Option(help="The address to listen on: this machine only unless told otherwise."),
    ] = "127.0.0.1",
    port: Annotated[int, typer.Option(min=0, max=65535, help="The port to listen on.")] = 8000,
    workers: Annotated[
        int, typer.Option(metavar="N", min=1, help="Worker processes scoring uploads.")
    ] = 1,
    no_workers: Annotated[
        bool,
        typer.Option(
            "--no-workers", help="Score nothing here: `scorer serve worker` does (PostgreSQL)."
        ),
    ] = False,
    max_memory: WorkerBudget = DEFAULT_BUDGET,
    timeout: WorkerTimeout = DEFAULT_TIMEOUT,
    max_upload: Annotated[
        int,
        typer.Option(metavar="BYTES", min=1, show_default="1 GiB", help="The largest upload."),
    ] = 1 << 30,
    upload_time: Annotated[
        float,
        typer.Option(
            metavar="SECONDS",
            min=1,
            help="The longest a request may take to arrive, an upload's body included; a "
            "connection still sending then is closed and the upload kept nowhere.",
        ),
    ] = 600.0,  # 1 GiB at 14 Mbit/s
    # 64: a browser opens at most 6 connections to a server, so ten participants behind one
    # NAT (a classroom) fit, while a flood from one address holds 64 connections of ~770
    max_per_address: Annotated[
        int,
        typer.Option(
            metavar="N",
            min=1,
            help="Open connections from one client address (an IPv6 /64); more are refused "
            "at once. Behind a proxy every client is the proxy's address: raise it.",
        ),
    ] = 64,
    max_connections: Annotated[
        int | None,
        typer.Option(
            metavar="N",
            min=1,
            show_default="the open-file limit, less files kept for the store and workers",
            help="Open connections in all; more are refused at once.",
        ),
    ] = None,
    idle_time: Annotated[
        float,
        typer.Option(
            metavar="SECONDS",
            min=0.1,
            hidden=True,  # the 30 s; the tests set less
            help="How long a request's headers, or a pause in its body, may take.",
        ),
    ] = 30.0,
) -> None:
    """Serve the competition: the page, the API under /api/v1, and the scoring of uploads.
    Stops cleanly on Ctrl-C or SIGTERM; queued uploads are scored at the next start, after
    any stop (kill -9 included). With a PostgreSQL store, any number of these can serve one
    competition side by side, behind one proxy."""
    with guarded("serve run", False), _home(folder, db, solution=not no_workers) as home:
        try:
            from scorer.serve import wire
            from scorer.serve.app import build
            from scorer.serve.server import Server
        except ModuleNotFoundError as exc:
            raise UsageError(
                f"scorer serve run needs the server's packages ({exc.name} is missing): "
                "pip install 'ranklist-scorer[serve]'"
            ) from None
        # the settings read first: a folder `init` did not make is told so, not locked
        if site.settings_of(home).db is None and no_workers:
            raise UsageError(
                "--no-workers needs a PostgreSQL store (init --db): on SQLite the server "
                "that receives the uploads scores them"
            )
        limits = wire.bounds(idle_time, upload_time, max_per_address, max_connections)
        # a folder has one server (a --db machine's private one is its own)
        lock = wire.locked(home) if folder is not None else nullcontext()
        with lock, wire.listen(host, port) as sock:
            server = Server(
                home,
                workers=0 if no_workers else workers,
                budget=max_memory,
                timeout=timeout,
                max_upload=max_upload,
            )
            app = build(home, server)
            # uvicorn stops gracefully on SIGINT and SIGTERM, then raises the signal again for
            # the handler it found: a handler that does nothing, so that a clean stop exits 0
            with _on_stop(_stopped):
                wire.serve(app, sock, limits)


@contextmanager
def _home(folder: Path | None, db: str | None, *, solution: bool) -> Iterator[Path]:
    """The server's folder, or, for a machine given only the database, a private folder of
    the competition it holds (`site.from_database`), removed when the command ends."""
    if (folder is None) == (db is None):
        raise UsageError("give the server's folder DIR, or --db URL for a machine without it")
    if folder is not None:
        yield folder
        return
    with site.scratch() as home:
        site.from_database(str(db), home, solution=solution)
        yield home


@serve_app.command()
def worker(
    db: Annotated[
        str, typer.Option(metavar="URL", help="The server's PostgreSQL database (postgresql://…).")
    ],
    workers: Annotated[
        int, typer.Option(metavar="N", min=1, help="Submissions judged at once, each isolated.")
    ] = 1,
    max_memory: WorkerBudget = DEFAULT_BUDGET,
    timeout: WorkerTimeout = DEFAULT_TIMEOUT,
    lease: Annotated[
        float,
        typer.Option(
            metavar="SECONDS",
            min=1,
            help="How long a job waits for a worker that stopped answering before another "
            "takes it (renewed every third of it while judging).",
        ),
    ] = WORKER_LEASE.total_seconds(),
) -> None:
    """Score the uploads of a server whose store is PostgreSQL, on this machine: jobs are
    claimed from the database, judged under the same budget and deadline as `serve run`,
    and each verdict is written once. Any number of workers may run, on any machines; one
    that dies has its jobs taken again when its lease ends. Stops on Ctrl-C or SIGTERM,
    handing back the jobs it holds."""
    from scorer.leaderboard.batch import Isolation

    with guarded("serve worker", False), _home(None, db, solution=True) as home:
        from scorer.serve.remote import Worker

        isolation = Isolation(workers=workers, budget=max_memory, timeout=timeout)
        scoring = Worker(
            site.postgres(site.store_of(home)),
            home,
            home / site.SOLUTION,
            site.rules_of(home),
            isolation,
            dt.timedelta(seconds=lease),
        )
        with _on_stop(lambda *_: scoring.cancel.set()):
            scoring.run()


@contextmanager
def _on_stop(handler: Callable[[int, Any], object]) -> Iterator[None]:
    """`handler` for Ctrl-C and SIGTERM while the block runs, the handlers before it after."""
    before = {sig: signal.signal(sig, handler) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for sig, previous in before.items():
            signal.signal(sig, previous)


def _stopped(signum: int, frame: object) -> None:
    """The signal uvicorn stopped on, raised again once the server stopped: done with."""


@serve_app.command()
def reveal(folder: Folder) -> None:
    """Reveal the final board: the private scores, on every route and page of the server
    (running or not). It cannot be undone."""
    with guarded("serve reveal", False):
        site.store_of(folder).reveal(dt.datetime.now(dt.UTC))
    typer.echo("The final board is revealed: every route and page of the server shows it")


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
    as_json: AsJson = False,
) -> None:
    """Check a submission against the server's rules and targets, upload it, and print its
    verdict: the public score, or the same report as `scorer validate`. Exit 0 when it is
    scored or still queued, 1 when it is rejected, 2 when the server refuses it."""
    from scorer.serve.client import submit as send

    with guarded("submit", as_json):
        verdict = send(file, server, token, wait)
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
