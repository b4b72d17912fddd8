"""`scorer serve run` and `scorer serve worker`: the commands that run until they are stopped,
each in a private folder of its own (`site.scratch`), stopped cleanly by Ctrl-C or SIGTERM."""

from __future__ import annotations

import datetime as dt
import signal
from collections.abc import Callable, Iterator
from contextlib import contextmanager, nullcontext
from typing import Annotated, Any

import typer

from scorer.errors import UsageError
from scorer.leaderboard.cli import WorkerBudget, WorkerTimeout
from scorer.leaderboard.worker import DEFAULT_BUDGET, DEFAULT_TIMEOUT
from scorer.serve import site
from scorer.serve.cli_home import Database, ServerDir, server_home
from scorer.serve.store import WORKER_LEASE
from scorer.shell import guarded


def run(
    folder: ServerDir = None,
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
    with (
        guarded("serve run", False),
        server_home(folder, db, solution=not no_workers) as (home, own),
    ):
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
                scratch=own,
            )
            app = build(home, server)
            # uvicorn stops gracefully on SIGINT and SIGTERM, then raises the signal again for
            # the handler it found: a handler that does nothing, so that a clean stop exits 0
            with _on_stop(_stopped):
                wire.serve(app, sock, limits)


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

    with guarded("serve worker", False), server_home(None, db, solution=True) as (home, own):
        from scorer.serve.settings import Schedule
        from scorer.serve.worker import Worker

        store = site.store_of(home)
        own.mkdir(mode=0o700)
        isolation = Isolation(workers=workers, budget=max_memory, timeout=timeout)
        scoring = Worker(
            store,
            own,
            home / site.SOLUTION,
            site.rules_of(home),
            isolation,
            dt.timedelta(seconds=lease),
            schedule=Schedule(store, site.settings_of(home), lambda: scoring.boards.nudge()),
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
