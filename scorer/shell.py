"""What every command shares: exit codes, the `--json` option, and errors turned into exits,
with one JSON object on stdout for every outcome when `--json` is given; and the score
table people read."""

from __future__ import annotations

import errno
import importlib
import json
import os
import shutil
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Annotated, Any, NoReturn

import typer
from polars.exceptions import PanicException
from typer.core import TyperGroup

from scorer.competition import LOST_ITEMS, Competition, EmptyUsers
from scorer.envelope import INTERRUPTED_EARLY, Status, command_of, envelope
from scorer.errors import (
    MAX_EXAMPLES,
    MOST_EXAMPLES,
    Failure,
    FileSystemError,
    ScorerError,
    UsageError,
    error_object,
)
from scorer.scoring import ScoreResult

#: Exit codes, stable for automation; each goes with one JSON `status`.
OK, REJECTED, HOST, INTERRUPTED = 0, 1, 2, 130
STATUS_OF_EXIT = {OK: Status.OK, REJECTED: Status.REJECTED, INTERRUPTED: Status.INTERRUPTED}


Json = Annotated[bool, typer.Option("--json", help="Print one JSON object on stdout.")]

Problems = Annotated[
    str,
    typer.Option(
        "--problems",
        metavar="N",
        help=f"Examples shown for each problem code: a number, or all (at most "
        f"{MOST_EXAMPLES:,}). Default: {MAX_EXAMPLES}.",
    ),
]


def examples_asked(value: str) -> int | None:
    """How many examples `--problems` asks for a code: a number from 1, or None for `all`
    (which `errors.showing` caps at `MOST_EXAMPLES`)."""
    if value.strip().lower() == "all":
        return None
    try:
        count = int(value)
    except ValueError:
        count = 0
    if count < 1:
        raise UsageError(f"--problems takes a number from 1 or 'all', not {value!r}")
    return count


CompetitionFile = Annotated[
    Path | None,
    typer.Option(
        metavar="FILE",
        help="The competition's rules, a TOML file (k, metric, columns, row rule); "
        "default: lost items, NDCG@20.",
    ),
]


def competition_of(path: Path | None) -> Competition:
    """The competition a `--competition` file describes, or lost items without one."""
    return LOST_ITEMS if path is None else Competition.load(path)


def emit(command: str, payload: dict[str, Any], exit_code: int = OK) -> None:
    """Print a command's JSON output: `payload` in the envelope, its status from the exit."""
    status = STATUS_OF_EXIT.get(exit_code, Status.ERROR)
    typer.echo(json.dumps(envelope(command, status, payload)))
    _emitted.append(command)


#: The commands whose JSON was printed in this process: an interrupted one that printed none
#: gets its one object from `JsonGroup.main`.
_emitted: list[str] = []


def fail(
    command: str,
    as_json: bool,
    exit_code: int,
    message: str,
    error: dict[str, Any],
    done: dict[str, Any] | None = None,
) -> typer.Exit:
    """Report a failure (`Error: …` on stderr, or JSON on stdout, with what was `done` before
    it, such as the scores); the exit to raise."""
    if as_json:
        emit(command, {**(done or {}), "error": error}, exit_code)
    else:
        typer.echo(f"Error: {message}", err=True)
    return typer.Exit(exit_code)


@contextmanager
def guarded(command: str, as_json: bool, interrupted: str | None = None) -> Iterator[None]:
    """Run a command's work in this block; any exception becomes `Error: …` on stderr (or JSON
    on stdout) and an exit code, as `explain` says: never a traceback. With `interrupted`,
    Ctrl-C prints that message and exits with 130. A block, not a callback, so that the work
    stays in the command's own module and this one calls nothing above it."""
    try:
        yield
    except KeyboardInterrupt:
        if interrupted is None:
            raise
        error = error_object(Failure.INTERRUPTED, interrupted)
        raise fail(command, as_json, INTERRUPTED, interrupted, error) from None
    except (Exception, PanicException) as exc:
        raise fail(command, as_json, *explain(exc)) from None


def explain(exc: BaseException) -> tuple[int, str, dict[str, Any]]:
    """An exception as (exit code, message, JSON error): a `ScorerError` as it says, an
    `OSError` as the path and the system's reason, anything else as a bug, honestly."""
    if isinstance(exc, ScorerError):
        return exc.exit_code, str(exc), exc.to_dict()
    if isinstance(exc, OSError):  # the system refused: a permission, a full disk, a folder
        failure = FileSystemError.of(exc)
        return failure.exit_code, str(failure), failure.to_dict()
    message = f"internal error ({type(exc).__name__}: {exc}); please report this"
    return HOST, message, error_object(Failure.INTERNAL_ERROR, message)


#: The commands whose modules are imported when first named, not whenever `scorer` starts:
#: the server's and the leaderboard's modules (its pages, SQL, pyarrow's compute) take about
#: 0.17 s to import, which `scorer score` and `scorer validate` do without. Each is the
#: module, its Typer app or command function, and the command it is listed before (None:
#: last), so that `scorer --help` lists them where they were registered.
LAZY: dict[str, tuple[str, str, str | None]] = {
    "submit": ("scorer.serve.cli", "submit", "score"),
    "leaderboard": ("scorer.leaderboard.cli", "board_app", "codabench"),
    "serve": ("scorer.serve.cli", "serve_app", None),
}


def typer_app(**settings: Any) -> typer.Typer:
    """A Typer app with the `scorer` command's settings: plain help (no boxes, no `<bool>`
    on every flag) and Python's own tracebacks, which `guarded` keeps from users."""
    return typer.Typer(rich_markup_mode=None, pretty_exceptions_enable=False, **settings)


class JsonGroup(TyperGroup):
    """The command group: with `--json` among the arguments, a usage error that Click finds
    while parsing (an unknown option, a missing one, a bad choice) is one JSON object on
    stdout too, with exit 2 as always. The `LAZY` commands are built when first named."""

    # `Any`: Click's classes here are Typer's private copy of Click.
    def list_commands(self, ctx: Any) -> list[str]:
        names = [name for name in super().list_commands(ctx) if name not in LAZY]
        for name, (_, _, before) in LAZY.items():  # built or not, each in its place
            names.insert(names.index(before) if before in names else len(names), name)
        return names

    def get_command(self, ctx: Any, name: str) -> Any:
        if name in LAZY and name not in self.commands:
            self.add_command(_built(name), name)
        return super().get_command(ctx, name)

    def main(  # type: ignore[override]
        self,
        args: Sequence[str] | None = None,
        prog_name: str | None = None,
        complete_var: str | None = None,
        standalone_mode: bool = True,
        **extra: Any,
    ) -> Any:
        argv = list(sys.argv[1:] if args is None else args)
        try:
            if "--json" not in argv:
                return super().main(argv, prog_name, complete_var, standalone_mode, **extra)
            try:
                code = super().main(argv, prog_name, complete_var, standalone_mode=False, **extra)
            except typer.TyperException as exc:  # Click's usage errors
                error = error_object(Failure.USAGE_ERROR, exc.format_message())
                emit(_command_of(exc), {"error": error}, exc.exit_code)
                code = exc.exit_code
            except typer.Abort:
                code = REJECTED
        except OSError as exc:  # the work is done, caught in `guarded`: writing its output failed
            _unwritable(exc)
        if code == INTERRUPTED and not _emitted:  # Ctrl-C outside `guarded`: Typer exits 130
            error = error_object(Failure.INTERRUPTED, INTERRUPTED_EARLY)
            emit(command_of(argv), {"error": error}, INTERRUPTED)
        if not standalone_mode:
            return code
        sys.exit(code or OK)


def _built(name: str) -> Any:
    """A `LAZY` command, built by Typer as it builds the others."""
    module, attribute, _ = LAZY[name]
    target = getattr(importlib.import_module(module), attribute)
    root = typer_app()
    if isinstance(target, typer.Typer):
        root.add_typer(target, name=name)
    else:
        root.command(name)(target)
    return typer.main.get_group(root).commands[name]


def _unwritable(exc: OSError) -> NoReturn:
    """The output could not be written (a full disk, a closed pipe): stdout is silenced, for
    Python flushes it again at exit, and stderr says why; exit 2, a system error. A reader
    that stopped reading (`| head`) took what it wanted: no message for that."""
    with suppress(OSError, ValueError):  # ValueError: stdout is no file (a test's capture)
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    if exc.errno != errno.EPIPE:
        reason = exc.strerror or str(exc)
        print(f"Error: cannot write the output: {reason}", file=sys.stderr)
    sys.exit(HOST)


def _command_of(exc: typer.TyperException) -> str:
    """The command a usage error is about, as typed after `scorer` (`leaderboard score`)."""
    ctx = getattr(exc, "ctx", None)
    names = []
    while ctx is not None and ctx.parent is not None:
        names.append(ctx.info_name or "")
        ctx = ctx.parent
    return " ".join(reversed(names))


def score_table(result: ScoreResult, width: int | None = None) -> str:
    """The scores for people, `width` characters wide at most (the terminal's, `COLUMNS`, or
    80): the metrics that do not fit beside the split and user columns are stacked below
    in another block of the same rows, the competition's metric always in the first."""
    width = width or shutil.get_terminal_size().columns
    names = list(result.competition.labels.values())
    rows = [(split, values) for split, values in result.splits.items() if values is not None]
    if not rows:
        return _no_user_scored(result)
    cell = max(12, *map(len, names))  # 'precision@100' is 13 characters
    users = max(7, *(len(f"{values.users:,}") for _, values in rows))
    fits = max(1, (width - 8 - 1 - users) // (cell + 2))
    per_block = -(-len(names) // -(-len(names) // fits))  # blocks of even size: 3 and 3
    lines: list[str] = []
    for start in range(0, len(names), per_block):
        block = names[start : start + per_block]
        if lines:
            lines.append("")
        lines.append(
            f"{'split':<8} {'users':>{users}}  " + "  ".join(f"{n:>{cell}}" for n in block)
        )
        for split, values in rows:
            row = values.to_dict(result.competition)
            cells = "  ".join(f"{row[n]:>{cell}.6f}" for n in block)
            lines.append(f"{split:<8} {values.users:>{users},}  {cells}")
    if result.ignored:
        lines.append(_ignored_line(result.ignored, users))
    return "\n".join(lines)


def _ignored_line(ignored: int, width: int) -> str:
    """The table's line for the ignored users, their count right-aligned in `width`."""
    noun = "user" if ignored == 1 else "users"
    return (
        f"ignored  {ignored:>{width},}  {noun} of the solution's ignored stage: checked, not scored"
    )


def _no_user_scored(result: ScoreResult) -> str:
    """What the table says in place of its rows when no user is scored: why, and that the
    means have no value (None in the library, null in --json), never a 0."""
    if result.no_lost is not EmptyUsers.EXCLUDE:
        why = "every target user is in the solution's ignored stage"
    elif result.ignored:
        why = (
            "every target user is in the solution's ignored stage or has no relevant item, "
            "and empty_users = exclude leaves the latter out"
        )
    else:
        why = "no target user has a relevant item, and empty_users = exclude leaves such users out"
    line = f"no user scored ({why}): a mean over no users has no value, null in --json"
    return "\n".join([line, _ignored_line(result.ignored, 7)] if result.ignored else [line])
