"""`scorer kit kaggle|codabench|evalai`: check the organiser's files, write one platform's kit."""

from __future__ import annotations

import datetime as dt
import shutil
from collections.abc import Callable
from pathlib import Path

from scorer.api import score as score_submission
from scorer.competition import LOST_ITEMS, Competition
from scorer.contract import read_solution, read_targets
from scorer.errors import SubmissionError, UsageError
from scorer.platforms import codabench, evalai, kaggle, participants
from scorer.platforms.common import Kit, Platform
from scorer.version import __version__

__all__ = ["PLACEHOLDER_IMAGE", "build"]

#: The scoring image a kit names until the organiser gives theirs (`--image`).
PLACEHOLDER_IMAGE = f"YOUR_REGISTRY_USER/ranklist-scorer:{__version__}"

#: What writes each platform's kit into its folder.
WRITERS: dict[Platform, Callable[[Kit], list[Path]]] = {
    Platform.KAGGLE: kaggle.write,
    Platform.CODABENCH: codabench.write,
    Platform.EVALAI: evalai.write,
}


def build(
    platform: Platform | str,
    solution: Path,
    out: Path,
    *,
    targets: Path | None = None,
    competition: Path | None = None,
    image: str | None = None,
    start: dt.date | None = None,
    end: dt.date | None = None,
    wheels: Path | str | None = None,
    force: bool = False,
) -> list[Path]:
    """Check the organiser's files and write the platform's kit into `out`; the files written.

    The solution is read and a placeholder submission scored against it first, so a broken
    solution is the organiser's error here, with every detail, never a participant's later.
    `wheels` is what `participants/` ships beside scorer's wheel: the dependencies' wheels
    downloaded by pip (`participants.DOWNLOAD`), copied from a folder, or none (`None`).
    `force` makes the kit again into a folder that holds a kit made before.
    """
    platform = Platform(platform)
    rules = LOST_ITEMS if competition is None else Competition.load(competition)
    truth = read_solution(solution, competition=rules)
    users = truth.written_targets
    if targets is not None:
        listed = read_targets(targets, competition=rules)
        if set(listed.to_list()) != set(users.to_list()):
            raise UsageError(f"{targets}: its users are not the solution's target users")
        users = listed
    if not truth.has_split:
        columns = " or ".join(rules.splits.columns)  # as the competition names them
        raise UsageError(
            f"{solution}: the solution has no split column ({columns}); a competition "
            "kit needs public and private users"
        )
    begin = start or dt.date.today()
    kit = Kit(
        solution_path=solution,
        solution=truth,
        targets=users,
        competition=rules,
        competition_path=competition,
        out=out,
        image=image or PLACEHOLDER_IMAGE,
        start=begin,
        end=end or begin + dt.timedelta(days=60),
    )
    if kit.end <= kit.start:
        raise UsageError(f"--end {kit.end} is not after --start {kit.start}")
    try:  # the sample must pass the very rules it shows
        score_submission(kit.sample(), truth, competition=rules)
    except SubmissionError as exc:  # a fault of the kit itself, never the organiser's files
        raise UsageError(f"internal error: the kit's own sample breaks the rules: {exc}") from None
    _clear(out, force)
    out.mkdir(parents=True, exist_ok=True)
    try:
        written = WRITERS[platform](kit)
        written += participants.write(kit, wheels)
        (out / MARKER).write_text(f"scorer kit {platform} {__version__}\n", encoding="utf-8")
    except BaseException:
        shutil.rmtree(out, ignore_errors=True)  # never half a kit
        raise
    return written


#: The file that tells a folder a kit made (`--force` empties only such a folder).
MARKER = ".scorer-kit"


def _clear(out: Path, force: bool) -> None:
    """Make way for the kit: `out` is new or empty, or (with `force`) a kit made before,
    emptied; any other folder is the organiser's, and is left as it is."""
    if not out.exists() or not any(out.iterdir()):
        return
    if not force:
        raise UsageError(
            f"{out}: the folder is not empty; give a new or empty folder, or --force to make "
            "a kit made there before again"
        )
    if not (out / MARKER).is_file():
        raise UsageError(f"{out}: --force makes again only a kit made there; no kit is there")
    shutil.rmtree(out)
