"""The `scorer` command: a thin shell over the library that maps errors to exit codes."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated, Any

import typer

from scorer.api import Validation
from scorer.api import score as score_submission
from scorer.api import validate as validate_submission
from scorer.competition import EmptyUsers
from scorer.errors import MAX_EXAMPLES, FileSystemError, UsageError, showing, size
from scorer.ndcg_json import ndcg_json
from scorer.parts import LEAST_BUDGET
from scorer.platforms.cli import platforms_app
from scorer.prepared import PreparedInfo
from scorer.prepared import prepare as prepare_solution
from scorer.read import DEFAULT_LIMITS, Limits
from scorer.read.files import READABLE
from scorer.read.limits import LINE_FLOOR
from scorer.schemas import COMMANDS
from scorer.schemas import schema as schema_of
from scorer.scoring import ScoreResult
from scorer.shell import (
    HOST,
    REJECTED,
    CompetitionFile,
    Json,
    JsonGroup,
    Problems,
    competition_of,
    emit,
    examples_asked,
    explain,
    fail,
    guarded,
    score_table,
    typer_app,
)
from scorer.version import __version__
from scorer.write import output_kind, write_table

app = typer_app(
    cls=JsonGroup,
    no_args_is_help=True,
    context_settings={"help_option_names": ["-h", "--help"]},
)

app.add_typer(platforms_app)  # `leaderboard`, `serve` and `submit`: `shell.LAZY`


def _version(asked: bool) -> None:
    if asked:
        typer.echo(f"scorer {__version__}")
        raise typer.Exit()


@app.callback()
def _main(
    version: Annotated[
        bool,
        typer.Option(
            "--version", callback=_version, is_eager=True, help="Print the version and exit."
        ),
    ] = False,
) -> None:
    """Validate and score ranked-list submissions: 'lost items' (NDCG@20, public/private) by
    default, or any competition a TOML file describes (--competition)."""


Submission = Annotated[
    Path,
    typer.Argument(metavar="SUBMISSION", help=f"Submission file: {READABLE}."),
]


def _cap(metavar: str, least: int, default: str, help: str) -> Any:
    """A cap's option: its unit, its least value, its default as people read it."""
    return typer.Option(metavar=metavar, min=least, show_default=default, help=help)


MaxBytes = Annotated[
    int,
    _cap(
        "BYTES",
        1,
        size(DEFAULT_LIMITS.max_file_bytes),
        "Largest file accepted (compressed size for .gz).",
    ),
]
MaxDecompressed = Annotated[
    int,
    _cap(
        "BYTES",
        1,
        size(DEFAULT_LIMITS.max_decompressed_bytes),
        "Largest decompressed size of a .csv.gz file.",
    ),
]
MaxMemory = Annotated[
    int,
    _cap(
        "BYTES",
        1 << 20,
        size(DEFAULT_LIMITS.max_memory),
        "Memory budget: files estimated to need more when read whole are read in parts "
        f"(CSV, from {size(LEAST_BUDGET)} up) or refused (too_large_for_memory).",
    ),
]
MaxRows = Annotated[
    int, _cap("ROWS", 1, f"{DEFAULT_LIMITS.max_rows:,}", "Most rows a file may have.")
]
MaxLine = Annotated[
    int | None,
    _cap(
        "BYTES",
        16,
        f"from the competition's k and ids, at least {LINE_FLOOR:,} bytes",
        "Longest line of a CSV file.",
    ),
]
#: `--no-lost`: an override of the competition's `empty_users` (None: the spec's rule).
NoLostOption = Annotated[
    EmptyUsers | None,
    typer.Option(
        show_default=False,
        help="How a target user with no relevant item counts; overrides the competition's "
        "empty_users (default: its rule; lost items: zero).",
    ),
]
Parts = Annotated[
    int | None,
    typer.Option(
        metavar="N",
        min=1,
        help="Split the CSV files by user into this many parts and check one part at a time, "
        "in bounded memory (same rules, messages and scores). Default: as many as keep "
        "the estimated memory within --max-memory.",
    ),
]


def _limits(
    max_bytes: int, max_decompressed: int, max_rows: int, max_line: int | None, max_memory: int
) -> Limits:
    return Limits(
        max_file_bytes=max_bytes,
        max_decompressed_bytes=max_decompressed,
        max_rows=max_rows,
        max_line_bytes=max_line,
        max_memory=max_memory,
    )


@app.command()
def score(
    submission: Submission,
    solution: Annotated[
        Path, typer.Option(metavar="FILE", help=f"The organiser's solution file: {READABLE}.")
    ],
    as_json: Json = False,
    per_user: Annotated[
        Path | None,
        typer.Option(
            metavar="FILE", help="Write the per-user table here (.csv, .csv.gz or .parquet)."
        ),
    ] = None,
    no_lost: NoLostOption = None,
    max_bytes: MaxBytes = DEFAULT_LIMITS.max_file_bytes,
    max_decompressed: MaxDecompressed = DEFAULT_LIMITS.max_decompressed_bytes,
    max_rows: MaxRows = DEFAULT_LIMITS.max_rows,
    max_line: MaxLine = DEFAULT_LIMITS.max_line_bytes,
    max_memory: MaxMemory = DEFAULT_LIMITS.max_memory,
    parts: Parts = None,
    competition: CompetitionFile = None,
    problems: Problems = str(MAX_EXAMPLES),
) -> None:
    """Validate a submission against the solution and print its public, private and overall
    scores (NDCG@20 by default) (exit 0), or every problem of the file (exit 1)."""
    limits = _limits(max_bytes, max_decompressed, max_rows, max_line, max_memory)

    def run() -> ScoreResult:
        rules = competition_of(competition)
        if per_user is not None:
            output_kind(per_user)  # fail before the work, not after it
        with showing(examples_asked(problems)):
            return score_submission(
                submission, solution, competition=rules, no_lost=no_lost, limits=limits, parts=parts
            )

    with guarded("score", as_json):
        result = run()
    if not as_json:
        typer.echo(score_table(result))
    try:
        if per_user is not None:
            write_table(result.per_user, per_user)
    except Exception as exc:  # the scores are printed (or kept in the JSON) all the same
        raise fail("score", as_json, *explain(exc), done=result.to_dict()) from None
    if as_json:
        emit("score", result.to_dict())


@app.command()
def validate(
    submission: Submission,
    targets: Annotated[
        Path | None,
        typer.Option(metavar="FILE", help=f"The target users (one user column): {READABLE}."),
    ] = None,
    solution: Annotated[
        Path | None,
        typer.Option(
            metavar="FILE", help="Or the organiser's solution, whose users are the targets."
        ),
    ] = None,
    as_json: Json = False,
    max_bytes: MaxBytes = DEFAULT_LIMITS.max_file_bytes,
    max_decompressed: MaxDecompressed = DEFAULT_LIMITS.max_decompressed_bytes,
    max_rows: MaxRows = DEFAULT_LIMITS.max_rows,
    max_line: MaxLine = DEFAULT_LIMITS.max_line_bytes,
    max_memory: MaxMemory = DEFAULT_LIMITS.max_memory,
    parts: Parts = None,
    competition: CompetitionFile = None,
    problems: Problems = str(MAX_EXAMPLES),
) -> None:
    """Check a submission with the same rules and messages as `score`, without scoring it:
    run it before every upload."""
    limits = _limits(max_bytes, max_decompressed, max_rows, max_line, max_memory)

    def run() -> Validation:
        rules = competition_of(competition)
        if (targets is None) == (solution is None):
            raise UsageError("give exactly one of --targets or --solution")
        with showing(examples_asked(problems)):
            return validate_submission(
                submission,
                targets=targets,
                solution=solution,
                competition=rules,
                limits=limits,
                parts=parts,
            )

    with guarded("validate", as_json):
        rows = run().rows
    if as_json:
        emit("validate", {"file": submission.name, "rows": rows})
    else:
        typer.echo(f"{submission.name}: valid ({rows:,} rows)")


@app.command()
def prepare(
    solution: Annotated[
        Path,
        typer.Argument(metavar="SOLUTION", help=f"The organiser's solution: {READABLE}."),
    ],
    out: Annotated[Path, typer.Option(metavar="FILE", help="The prepared file to write.")],
    as_json: Json = False,
    max_bytes: MaxBytes = DEFAULT_LIMITS.max_file_bytes,
    max_decompressed: MaxDecompressed = DEFAULT_LIMITS.max_decompressed_bytes,
    max_rows: MaxRows = DEFAULT_LIMITS.max_rows,
    max_line: MaxLine = DEFAULT_LIMITS.max_line_bytes,
    competition: CompetitionFile = None,
) -> None:
    """Check the solution once and store it ready to score: `score --solution FILE` then loads
    it in a fraction of a second. It records the solution's sha256 and the rules, and is
    refused once either changes."""
    limits = _limits(max_bytes, max_decompressed, max_rows, max_line, DEFAULT_LIMITS.max_memory)

    def run() -> PreparedInfo:
        rules = competition_of(competition)
        return prepare_solution(solution, out, competition=rules, limits=limits)

    with guarded("prepare", as_json):
        info = run()
    if as_json:
        emit("prepare", info.to_dict())
        return
    split = "a public/private split" if info.has_split else "no split"
    grades = "graded" if info.graded else "binary"
    typer.echo(
        f"prepared {solution} (sha256 {info.sha256}): {info.users:,} users, "
        f"{info.pairs:,} pairs, {split}, {grades} relevance"
    )
    typer.echo(f"wrote {out} in {info.seconds:.2f} s")


@app.command()
def verify(
    export: Annotated[
        Path, typer.Argument(metavar="EXPORT_DIR", help="A server's export, after the reveal.")
    ],
    solution: Annotated[Path, typer.Option(metavar="FILE", help="The revealed solution.")],
    salt: Annotated[str, typer.Option(metavar="S", help="The revealed salt.")],
    commitment: Annotated[
        str, typer.Option(metavar="H", help="The commitment the server published at its start.")
    ],
    as_json: Json = False,
) -> None:
    """Check a server's final board: the solution and the salt give the commitment, every
    exported file has the manifest's sha256, the manifest is the board's, and rescoring the
    export gives the board to the bit. Exit 0 when all hold, 1 saying which part does not."""
    from scorer.verify import verify as check

    with guarded("verify", as_json):
        done = check(export, solution, salt, commitment)
    if as_json:
        emit("verify", done.to_dict())
    else:
        typer.echo(done.summary())


@app.command()
def ndcg(
    source: Annotated[
        str,
        typer.Argument(
            metavar="SOURCE", help="A JSON file, - for standard input, or the JSON itself."
        ),
    ],
) -> None:
    """Score one list ranked by predicted scores. Reads {"y_true": [...], "y_score": [...],
    "K": k} ("k" is taken too, not both) and prints {"dcg": …, "idcg": …, "ndcg": …} rounded
    to 6 decimals. Exit 1 for malformed input, 2 for a file that cannot be read."""
    try:
        text = _ndcg_input(source)
    except OSError as exc:
        typer.echo(f"Error: {FileSystemError.of(exc)}", err=True)
        raise typer.Exit(HOST) from None
    try:
        typer.echo(ndcg_json(text if isinstance(text, str) else text.decode("utf-8")))
    except ValueError as exc:  # UnicodeDecodeError included
        typer.echo(f"Error: {_one_line(exc)}", err=True)
        raise typer.Exit(REJECTED) from None


def _ndcg_input(source: str) -> str | bytes:
    """The JSON: inline (it starts with `{`), from standard input (`-`), or a file's bytes."""
    if source.lstrip().startswith("{"):
        return source
    if source == "-":
        return sys.stdin.read()
    return Path(source).read_bytes()


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split()) or type(exc).__name__


@app.command()
def schema(
    command: Annotated[
        list[str],
        typer.Argument(
            metavar="COMMAND",
            help=f"The command whose --json output it describes: {', '.join(COMMANDS)} "
            "(as typed after `scorer`; `leaderboard-score` is taken too).",
        ),
    ],
) -> None:
    """Print the JSON Schema of a command's --json output (draft 2020-12)."""
    # `scorer schema leaderboard score` as the command is typed, quoted or not, or joined by
    # a hyphen as the schema's file is named.
    name = " ".join(" ".join(command).replace("-", " ").split())
    if name not in COMMANDS:
        typer.echo(
            f"Error: no JSON output for {' '.join(command)!r}; expected one of "
            f"{', '.join(COMMANDS)}",
            err=True,
        )
        raise typer.Exit(HOST)
    typer.echo(json.dumps(schema_of(name), indent=2))


def main(argv: list[str] | None = None) -> Any:  # pragma: no cover - console entry
    return app(argv)
