"""The platform commands: `scorer kit kaggle|codabench|evalai` and `scorer codabench`."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Annotated

import typer

from scorer.platforms import codabench as codabench_program
from scorer.platforms.common import Platform
from scorer.shell import CompetitionFile, competition_of, guarded

# The kits (and with Kaggle's metric, pandas) are imported by `kit` alone: the `scorer` command
# loads this module for every command, `scorer score` included. Registered without a name
# (`scorer/cli.py`), so its commands are the `scorer` command's own.
platforms_app = typer.Typer()


@platforms_app.command("codabench")
def codabench(
    input_dir: Annotated[
        Path, typer.Argument(metavar="INPUT", help="Holds ref/ (solution) and res/ (submission).")
    ],
    output_dir: Annotated[
        Path, typer.Argument(metavar="OUTPUT", help="Where scores.json and the report go.")
    ],
    competition: CompetitionFile = None,
    phase: Annotated[
        codabench_program.CodabenchPhase,
        typer.Option(help="public: the public split's scores; final: the private split's."),
    ] = codabench_program.CodabenchPhase.PUBLIC,
) -> None:
    """CodaBench/CodaLab scoring program: write scores.json and detailed_results.html; exit 1
    for a rejected submission, 2 for a host failure, so neither is ranked. The public phase
    prints only what participants may see; the final phase prints a host failure's details
    on stderr (its logs are the organisers')."""
    with guarded("codabench", False):
        output = codabench_program.run(input_dir, output_dir, competition_of(competition), phase)
    typer.echo(codabench_program.summary(output))


@platforms_app.command("kit")
def kit(
    platform: Annotated[
        Platform, typer.Argument(help="The platform: kaggle, codabench or evalai.")
    ],
    solution: Annotated[Path, typer.Option(metavar="FILE", help="The organiser's solution.")],
    out: Annotated[Path, typer.Option(metavar="DIR", help="A new or empty folder for the kit.")],
    targets: Annotated[
        Path | None,
        typer.Option(metavar="FILE", help="The target users (default: the solution's)."),
    ] = None,
    competition: CompetitionFile = None,
    image: Annotated[
        str | None,
        typer.Option(metavar="NAME", help="codabench: the scoring image you push."),
    ] = None,
    start: Annotated[
        dt.datetime | None,
        typer.Option(formats=["%Y-%m-%d"], help="The first day (default: today)."),
    ] = None,
    end: Annotated[
        dt.datetime | None,
        typer.Option(
            formats=["%Y-%m-%d"], help="The end of the public phase (default: start + 60 days)."
        ),
    ] = None,
    wheels: Annotated[
        str,
        typer.Option(
            metavar="download|none|DIR",
            help="participants/: scorer's dependencies as wheels, downloaded by pip for this "
            "machine, none (pip fetches them), or copied from a folder of wheels.",
        ),
    ] = "download",
    force: Annotated[
        bool, typer.Option("--force", help="Make again a kit made into OUT before.")
    ] = False,
) -> None:
    """Write a ready-to-upload deployment for a platform, with a README.md of numbered steps."""
    from scorer.platforms.kit import PLACEHOLDER_IMAGE
    from scorer.platforms.kit import build as build_kit

    with guarded("kit", False):
        written = build_kit(
            platform,
            solution,
            out,
            targets=targets,
            competition=competition,
            image=image,
            start=start.date() if start else None,
            end=end.date() if end else None,
            wheels=None if wheels == "none" else (wheels if wheels == "download" else Path(wheels)),
            force=force,
        )
    for path in written:
        typer.echo(f"wrote {path}")
    if Platform(platform) is Platform.CODABENCH and image is None:  # CodaBench cannot pull it
        typer.echo(
            f"warning: docker_image is a placeholder ({PLACEHOLDER_IMAGE}); push the scoring "
            "image under your own name and make the kit again with --image NAME --force",
            err=True,
        )
    typer.echo(f"next: follow the steps of {out / 'README.md'}")
