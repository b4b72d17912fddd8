"""`scorer leaderboard …`: score a submission log into a database, then show its boards."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from scorer.competition import EmptyUsers
from scorer.errors import Failure, UsageError, error_object, size
from scorer.leaderboard.boards import Boards, load
from scorer.leaderboard.confidence import RESAMPLES, SEED
from scorer.leaderboard.demo import DEMO_USERS
from scorer.leaderboard.render import Format, format_for, render
from scorer.leaderboard.schema import Phase, Status
from scorer.leaderboard.worker import DEFAULT_BUDGET, DEFAULT_TIMEOUT, default_workers
from scorer.read import DEFAULT_LIMITS
from scorer.read.files import READABLE
from scorer.shell import (
    HOST,
    OK,
    REJECTED,
    CompetitionFile,
    Json,
    competition_of,
    emit,
    guarded,
)
from scorer.write import write_text

if TYPE_CHECKING:
    from scorer.leaderboard.batch import Progress as OnProgress
    from scorer.leaderboard.results import BatchResult

# The batch, the terminal's tables and rich are imported by the commands that use them: the
# `scorer` command loads this module for every command, `scorer score` included.

board_app = typer.Typer(
    no_args_is_help=True,
    help="Score many submissions into public and private leaderboards.",
)


Db = Annotated[Path, typer.Option(metavar="FILE", help="The leaderboard database (SQLite).")]

#: How a worker is held, for `leaderboard score` and `serve run` alike: its memory budget and
#: its time on one submission. A submission past either fails, and the others go on.
WorkerBudget = Annotated[
    int,
    typer.Option(
        metavar="BYTES",
        min=1 << 20,
        show_default=size(DEFAULT_BUDGET),
        help="Memory budget of one submission: files over it are read in parts, or refused "
        "(too_large_for_memory); a worker past it is killed, the submission fails "
        "(out_of_memory) and the others go on.",
    ),
]
WorkerTimeout = Annotated[
    float,
    typer.Option(
        metavar="SECONDS",
        min=0.001,
        help="Time a worker may spend on one submission; past it the submission fails "
        "(timed_out) and the others go on.",
    ),
]


def _guard(command: str, as_json: bool) -> AbstractContextManager[None]:
    return guarded(command, as_json, "Interrupted: every submission finished so far is saved.")


@contextmanager
def _progress(show: bool) -> Iterator[OnProgress | None]:
    """A rich progress bar on stderr (counts, elapsed, ETA), or nothing when `show` is off."""
    if not show:
        yield None
        return
    from rich.console import Console
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    from scorer.leaderboard.results import Outcome

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
    # Counted as in `BatchResult.counts`: a reused score is "cached", a reused rejection
    # "rejected".
    tally: dict[str, int] = {Status.SCORED: 0, "cached": 0, Status.REJECTED: 0, Status.FAILED: 0}

    def update(done: int, total: int, outcome: Outcome | None) -> None:
        if outcome is not None:
            reused = outcome.cached and outcome.status == Status.SCORED
            tally["cached" if reused else outcome.status] += 1
        text = ", ".join(f"{n} {k}" for k, n in tally.items() if n)
        bar.update(task, completed=done, total=total, tally=text)

    with bar:
        yield update


@board_app.command("score")
def score(
    log: Annotated[
        Path,
        typer.Argument(
            metavar="LOG",
            help="A manifest CSV (team,path,submitted_at[,selected]) or a folder with one "
            "sub-folder per team.",
        ),
    ],
    solution: Annotated[
        Path, typer.Option(metavar="FILE", help=f"The organiser's solution file: {READABLE}.")
    ],
    db: Db,
    as_json: Json = False,
    no_lost: Annotated[
        EmptyUsers | None,
        typer.Option(
            show_default=False,
            help="How a target user with no relevant item counts; overrides the "
            "competition's empty_users (default: its rule; lost items: zero).",
        ),
    ] = None,
    strict: Annotated[
        bool, typer.Option("--strict", help="Exit 1 when any submission is rejected.")
    ] = False,
    competition: CompetitionFile = None,
    force: Annotated[
        bool,
        typer.Option(
            "--force",
            help="Score even when most submissions miss the solution's users (a new "
            "solution that is right after all).",
        ),
    ] = False,
    public: Annotated[
        bool,
        typer.Option(
            "--public",
            help="Print the summary that may be published: counts, and each team's entries "
            "and best public score (no file, no report).",
        ),
    ] = False,
    workers: Annotated[
        int | None,
        typer.Option(
            metavar="N",
            min=0,
            help="Worker processes judging submissions (0: in this process, unguarded). "
            "Default: one a core, as many as the memory holds at --max-memory each.",
        ),
    ] = None,
    max_memory: WorkerBudget = DEFAULT_BUDGET,
    timeout: WorkerTimeout = DEFAULT_TIMEOUT,
    retry_failed: Annotated[
        bool,
        typer.Option(
            "--retry-failed",
            help="Judge again the submissions whose worker ran out of memory or time or died (by "
            "default the same bytes keep that verdict; the scorer's own failures are always "
            "judged again).",
        ),
    ] = False,
) -> None:
    """Score every new or changed submission of the log into the database; the rest is
    reused from it. A broken file never stops the batch: every rejected or failed submission
    is listed at the end (the organiser's output; --public for one to publish). The boards
    change when the run finishes.

    Under a new solution, scorer version or options, the run stops, keeping nothing, once
    more than half of the log is rejected for missing or unknown users (a wrong --solution),
    unless --force.

    Exit 0: the batch ran to the end (rejections are recorded, listed and normal). 1: with
    --strict, some submission is rejected. 2: a usage error, a broken manifest or solution,
    a run stopped for a likely wrong solution, or a submission that failed on a scorer bug
    in this run. A submission that runs out of memory or time, or takes its worker down, is
    recorded as failed with its reason and does not change the exit code. 130: interrupted
    (finished work is kept; the boards are unchanged).
    """
    from scorer.leaderboard.batch import Isolation, score_log
    from scorer.leaderboard.terminal import batch_text, summary_text

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
                force=force,
                limits=replace(DEFAULT_LIMITS, max_memory=max_memory),
                isolation=Isolation(
                    workers=default_workers(max_memory) if workers is None else workers,
                    budget=max_memory,
                    timeout=timeout,
                ),
                retry_failed=retry_failed,
            )

    with _guard("leaderboard score", as_json):
        result = run()
    counts = result.counts
    if result.host_failures:
        code, failure, what = HOST, Failure.SUBMISSIONS_FAILED, "failed"
    elif strict and counts["rejected"]:
        code, failure, what = REJECTED, Failure.SUBMISSIONS_REJECTED, "rejected"
    else:
        code = OK
    if not as_json:
        typer.echo(summary_text(result, log.name) if public else batch_text(result, log.name))
    else:
        done = result.public_dict() if public else result.to_dict()
        if code == OK:
            emit("leaderboard score", done)
        else:
            found = len(result.host_failures) if what == "failed" else counts[what]
            message = f"{found} of {counts['total']} submissions {what}"
            emit("leaderboard score", {**done, "error": error_object(failure, message)}, code)
    if code != OK:
        raise typer.Exit(code)


#: How `leaderboard show` and `serve show` print boards: a format, or JSON, to a file or not.
BoardsFormat = Annotated[
    Format | None,
    typer.Option("--format", help="Output format; default: the --output file's suffix, or table."),
]
BoardsJson = Annotated[bool, typer.Option("--json", help="Same as --format json.")]
BoardsOutput = Annotated[
    Path | None,
    typer.Option(
        metavar="FILE",
        help="Write to this file (atomically) instead of stdout; its suffix names the "
        "format (.txt, .csv, .json, .md, .html).",
    ),
]


@board_app.command()
def show(
    db: Db,
    phase: Annotated[
        Phase,
        typer.Option(
            help="public: no private figure at all (during the competition); final: both boards."
        ),
    ] = Phase.PUBLIC,
    fmt: BoardsFormat = None,
    as_json: BoardsJson = False,
    output: BoardsOutput = None,
    title: Annotated[
        str | None,
        typer.Option(
            help="The page's and the Markdown post's heading; default: the competition's name."
        ),
    ] = None,
    resamples: Annotated[int, typer.Option(help="Bootstrap resamples.", min=1)] = RESAMPLES,
    seed: Annotated[int, typer.Option(help="Seed of the bootstrap.")] = SEED,
    forecast: Annotated[
        bool,
        typer.Option(
            "--forecast",
            help="Add the forecast of the private board from the public one: each team's "
            "90% interval of private rank and score (the organiser's, before the reveal; "
            "beside the ranks got, after it).",
        ),
    ] = False,
) -> None:
    """Print the public board, or in the final phase the public and private boards, with a
    95% interval per team and the tiers of teams that cannot be told apart: the boards of
    the last run that finished (marked stale while a newer run has not finished). The
    public phase names no file in any format. Exit 0, or 2 on a usage error."""
    print_boards(
        "leaderboard show",
        lambda: load(db, phase, resamples=resamples, seed=seed, forecast=forecast),
        phase,
        Format.JSON if as_json else fmt,
        output,
        title,
    )


def print_boards(
    command: str,
    boards_of: Callable[[], Boards],
    phase: Phase,
    asked: Format | None,
    output: Path | None,
    title: str | None,
) -> None:
    """The boards `boards_of` builds, printed (or written to `output`) as `leaderboard show`
    prints them, in the format asked for (`format_for`)."""
    wants_json = asked is Format.JSON or (
        asked is None and output is not None and output.suffix.lower() == ".json"
    )

    def run() -> tuple[str | None, Format]:
        chosen = format_for(asked, output)
        boards = boards_of()
        if output is not None:
            if not output.parent.is_dir():
                raise UsageError(f"{output}: the folder {output.parent} does not exist")
            text = render(boards, chosen, heading_text=title)
            write_text(text, output)
            # --json promises one JSON object on stdout for every outcome: the one written
            return (text if asked is Format.JSON else None), chosen
        from scorer.leaderboard.terminal import renderables, table_text

        if chosen is Format.TABLE and sys.stdout.isatty():
            from rich.console import Console

            console = Console()
            console.print(
                renderables(boards, console.width, shading=console.color_system is not None)
            )
            return None, chosen
        if chosen is Format.TABLE:
            return table_text(boards), chosen
        return render(boards, chosen, heading_text=title), chosen

    with _guard(command, wants_json):
        text, chosen = run()
    if text is not None:
        typer.echo(text, nl=not text.endswith("\n"))
    if output is not None:
        typer.echo(f"Wrote the {phase} leaderboard ({chosen}) to {output}", err=True)


@board_app.command()
def demo(
    folder: Annotated[
        Path, typer.Argument(metavar="FOLDER", help="Where to write the demo competition.")
    ],
    users: Annotated[int, typer.Option(help="Target users.", min=10)] = DEMO_USERS,
) -> None:
    """Write a small deterministic competition to try the commands on: a solution, a manifest
    and twelve submissions of seven teams (valid, rejected, tied, selected, overfitted)."""

    from scorer.leaderboard.demo import make_demo

    def run() -> Path:
        if folder.exists() and any(folder.iterdir()):
            raise UsageError(f"{folder}: the folder is not empty")
        return make_demo(folder, n_users=users)

    with _guard("leaderboard demo", False):
        manifest = run()
    typer.echo(
        f"Wrote {folder / 'solution.csv'}, {manifest} and the files it lists under "
        f"{folder / 'submissions'}"
    )
