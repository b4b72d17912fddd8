"""What every command shares: exit codes, the `--json` option, and errors turned into exits."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, TypeVar

import typer
from polars.exceptions import PanicException

from scorer.competition import LOST_ITEMS, Competition
from scorer.errors import FileSystemError, ScorerError

#: Exit codes, stable for automation.
OK, REJECTED, HOST, INTERRUPTED = 0, 1, 2, 130

T = TypeVar("T")

Json = Annotated[bool, typer.Option("--json", help="Print one JSON object on stdout.")]

CompetitionFile = Annotated[
    Path | None,
    typer.Option(
        help="The competition's rules, a TOML file (k, metric, columns, row rule); "
        "default: lost items, NDCG@20.",
    ),
]


def competition_of(path: Path | None) -> Competition:
    """The competition a `--competition` file describes, or lost items without one."""
    return LOST_ITEMS if path is None else Competition.load(path)


def guarded(as_json: bool, action: Callable[[], T], interrupted: str | None = None) -> T:
    """Run an action; a `ScorerError` becomes `Error: …` on stderr (or JSON on stdout) and its
    exit code, an `OSError` the path and the system's reason (exit 2), and any other
    exception an honest one-line message: never a traceback. With
    `interrupted`, Ctrl-C prints that message and exits with 130."""
    try:
        return action()
    except ScorerError as exc:
        _fail(as_json, str(exc), exc.to_dict())
        raise typer.Exit(exc.exit_code) from None
    except KeyboardInterrupt:
        if interrupted is None:
            raise
        typer.echo(interrupted, err=True)
        raise typer.Exit(INTERRUPTED) from None
    except OSError as exc:  # the system refused (a full disk…): its reason, not a bug report
        failure = FileSystemError.of(exc)
        _fail(as_json, str(failure), failure.to_dict())
        raise typer.Exit(failure.exit_code) from None
    except (Exception, PanicException) as exc:  # a bug: no traceback, an honest message
        message = f"internal error ({type(exc).__name__}: {exc}); please report this"
        _fail(as_json, message, {"error": "internal", "message": message})
        raise typer.Exit(HOST) from None


def _fail(as_json: bool, message: str, data: dict[str, object]) -> None:
    if as_json:
        typer.echo(json.dumps({"status": "error", **data}))
    else:
        typer.echo(f"Error: {message}", err=True)
