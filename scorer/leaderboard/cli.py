"""`scorer leaderboard …`: score a submission log into a database, then show its boards."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, TypeVar

import typer
from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

from scorer.errors import UsageError
from scorer.leaderboard.batch import BatchResult, Outcome, score_log
from scorer.leaderboard.batch import Progress as OnProgress
from scorer.leaderboard.boards import Phase, load
from scorer.leaderboard.confidence import RESAMPLES, SEED
from scorer.leaderboard.demo import DEMO_USERS, make_demo
from scorer.leaderboard.render import Format, batch_text, render, renderables, table_text
from scorer.leaderboard.schema import Status
from scorer.scoring import NoLost
from scorer.shell import HOST, REJECTED, CompetitionFile, Json, competition_of, guarded
from scorer.write import write_text

board_app = typer.Typer(
    no_args_is_help=True,
    help="Score many submissions into public and private leaderboards.",
)

T = TypeVar("T")

Db = Annotated[Path, typer.Option(help="The leaderboard database (SQLite).")]


def _guard(as_json: bool, action: Callable[[], T]) -> T:
    return guarded(as_json, action, "Interrupted: every submission finished so far is saved.")


@contextmanager
def _progress(show: bool) -> Iterator[OnProgress | None]:
    """A rich progress bar on stderr (counts, elapsed, ETA), or nothing when `show` is off."""
    if not show:
        yield None
        return
    bar = Progress(
        TextColumn("[bold]Scoring"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("{task.fields[tally]}"),
        TimeElapsedColumn(),
        TextColumn("ETA"),
        TimeRemainingColumn(),
        console=Console(stderr=True),
        transient=False,
    )
    task = bar.add_task("score", total=None, tally="")
    # Counted as in `BatchResult.counts`: a reused verdict is "cached", whatever its status.
    tally: dict[str, int] = {Status.SCORED: 0, "cached": 0, Status.REJECTED: 0, Status.FAILED: 0}

    def update(done: int, total: int, outcome: Outcome | None) -> None:
        if outcome is not None:
            tally["cached" if outcome.cached else outcome.status] += 1
        text = ", ".join(f"{n} {k}" for k, n in tally.items() if n)
        bar.update(task, completed=done, total=total, tally=text)

    with bar:
        yield update


@board_app.command("score")
def score(
    log: Annotated[
        Path,
        typer.Argument(
            help="A manifest CSV (team,path,submitted_at[,selected]) or a folder with one "
            "sub-folder per team."
        ),
    ],
    solution: Annotated[Path, typer.Option(help="The organiser's solution file.")],
    db: Db,
    as_json: Json = False,
    no_lost: Annotated[
        NoLost, typer.Option(help="How a target user with no lost pairs counts.")
    ] = NoLost.ZERO,
    strict: Annotated[
        bool, typer.Option("--strict", help="Exit 1 when any submission is rejected.")
    ] = False,
    competition: CompetitionFile = None,
) -> None:
    """Score every new or changed submission of the log into the database; the rest is
    reused from it. A broken file never stops the batch: every rejected or failed submission
    is listed at the end.

    Exit 0: the batch ran to the end (rejections are recorded, listed and normal). 1: with
    --strict, some submission is rejected. 2: a usage error, a broken manifest or solution,
    or a submission that failed (unreadable, or a scorer bug). 130: interrupted (finished work
    is kept).
    """
    show_bar = not as_json and sys.stdout.isatty()

    def run() -> BatchResult:
        with _progress(show_bar) as progress:
            return score_log(
                log,
                solution,
                db,
                competition=competition_of(competition),
                no_lost=no_lost,
                progress=progress,
            )

    result = _guard(as_json, run)
    if as_json:
        typer.echo(json.dumps({"status": "done", **result.to_dict()}))
    else:
        typer.echo(batch_text(result, log.name))
    counts = result.counts
    if counts["failed"]:
        raise typer.Exit(HOST)
    if strict and counts["rejected"]:
        raise typer.Exit(REJECTED)


@board_app.command()
def show(
    db: Db,
    phase: Annotated[
        Phase,
        typer.Option(
            help="public: no private figure at all (during the competition); final: both boards."
        ),
    ] = Phase.PUBLIC,
    fmt: Annotated[Format, typer.Option("--format", help="Output format.")] = Format.TABLE,
    as_json: Annotated[bool, typer.Option("--json", help="Same as --format json.")] = False,
    output: Annotated[
        Path | None, typer.Option(help="Write to this file (atomically) instead of stdout.")
    ] = None,
    resamples: Annotated[
        int, typer.Option(help="Bootstrap resamples and permutations.", min=1)
    ] = RESAMPLES,
    seed: Annotated[int, typer.Option(help="Seed of the bootstrap and the test.")] = SEED,
) -> None:
    """Print the public board, or in the final phase the public and private boards, with a
    95% interval per team and statistical ties flagged. Exit 0, or 2 on a usage error."""
    chosen = Format.JSON if as_json else fmt

    def run() -> str | None:
        boards = load(db, phase, resamples=resamples, seed=seed)
        if output is not None:
            if not output.parent.is_dir():
                raise UsageError(f"{output}: the folder {output.parent} does not exist")
            write_text(render(boards, chosen), output)
            return None
        if chosen is Format.TABLE and sys.stdout.isatty():
            Console().print(renderables(boards))
            return None
        return table_text(boards) if chosen is Format.TABLE else render(boards, chosen)

    text = _guard(chosen is Format.JSON, run)
    if text is not None:
        typer.echo(text, nl=not text.endswith("\n"))
    elif output is not None:
        typer.echo(f"Wrote the {phase} leaderboard ({chosen}) to {output}", err=True)


@board_app.command()
def demo(
    folder: Annotated[Path, typer.Argument(help="Where to write the demo competition.")],
    users: Annotated[int, typer.Option(help="Target users.", min=10)] = DEMO_USERS,
) -> None:
    """Write a small deterministic competition to try the commands on: a solution, a manifest
    and twelve submissions of seven teams (valid, rejected, tied, selected, overfitted)."""

    def run() -> Path:
        if folder.exists() and any(folder.iterdir()):
            raise UsageError(f"{folder}: the folder is not empty")
        return make_demo(folder, n_users=users)

    manifest = _guard(False, run)
    typer.echo(
        f"Wrote {folder / 'solution.csv'}, {manifest} and the files it lists under "
        f"{folder / 'submissions'}"
    )
