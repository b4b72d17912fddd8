"""Deployment kits: `scorer kit kaggle|codabench|evalai` writes what an organiser uploads."""

from __future__ import annotations

import datetime as dt
import shutil
import struct
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum
from importlib import resources
from pathlib import Path

import polars as pl

from scorer import version
from scorer.api import score as score_submission
from scorer.competition import LOST_ITEMS, Competition, Split
from scorer.contract import Solution, read_solution, read_targets
from scorer.errors import UsageError

__all__ = ["Kit", "Platform", "build"]


class Platform(StrEnum):
    KAGGLE = "kaggle"
    CODABENCH = "codabench"
    EVALAI = "evalai"


@dataclass(frozen=True)
class Kit:
    """What a kit is made of: the organiser's files, read and checked, and where it goes."""

    solution_path: Path
    solution: Solution
    targets: pl.Series
    competition: Competition
    competition_path: Path | None
    out: Path
    image: str
    start: dt.date
    end: dt.date

    @property
    def title(self) -> str:
        return "Lost items" if self.competition == LOST_ITEMS else self.competition.name

    @property
    def split_users(self) -> dict[str, int]:
        users = self.solution.users
        return {
            split: users.filter(pl.col("stage") == split).height
            for split in (Split.PUBLIC, Split.PRIVATE)
        }

    def sample(self) -> pl.DataFrame:
        """A wide sample submission: every target user with the placeholder ids 1..k (valid,
        scoring 0): derived from nothing hidden."""
        ids = " ".join(str(i) for i in range(1, self.competition.k + 1))
        return pl.DataFrame(
            {"user_id": self.targets, "edition_ids": [ids] * self.targets.len()},
            schema={"user_id": pl.Int64, "edition_ids": pl.String},
        )

    def long(self) -> pl.DataFrame:
        """The solution as long rows (user_id, edition_id, stage), whatever form it came in;
        a user with no lost item has one row with an empty edition_id."""
        users = self.solution.users.select("user_id", "stage")
        pairs = self.solution.pairs.select("user_id", "edition_id")
        return users.join(pairs, on="user_id", how="left", maintain_order="left").select(
            "user_id", "edition_id", "stage"
        )

    def write(self, relative: str, text: str) -> Path:
        path = self.out / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        return path


def template(name: str, **values: str) -> str:
    """A file of `templates/` with each `@@KEY@@` replaced by its value."""
    text = resources.files("scorer.kits").joinpath("templates", name).read_text(encoding="utf-8")
    for key, value in values.items():
        text = text.replace(f"@@{key.upper()}@@", value)
    if "@@" in text:
        raise ValueError(f"{name}: a placeholder was left unfilled")
    return text


def logo() -> bytes:
    """A 64 by 64 PNG in one colour: the logo both CodaBench and EvalAI require."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))

    rows = b"".join(b"\x00" + b"\x2a\x6f\x97" * 64 for _ in range(64))
    header = struct.pack(">IIBBBBB", 64, 64, 8, 2, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(rows))
        + chunk(b"IEND", b"")
    )


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
) -> list[Path]:
    """Check the organiser's files and write the platform's kit into `out`; the files written.

    The solution is read and a placeholder submission scored against it first, so a broken
    solution is the organiser's error here, with every detail, never a participant's later.
    """
    platform = Platform(platform)
    rules = LOST_ITEMS if competition is None else Competition.load(competition)
    if platform != Platform.CODABENCH and rules != LOST_ITEMS:
        raise UsageError(
            f"--competition: the {platform} kit scores the lost-items competition only; the "
            "codabench kit takes other competitions"
        )
    truth = read_solution(solution, competition=rules)
    users = truth.targets
    if targets is not None:
        listed = read_targets(targets, competition=rules)
        if set(listed.to_list()) != set(users.to_list()):
            raise UsageError(f"{targets}: its users are not the solution's target users")
        users = listed
    if not truth.has_split:
        raise UsageError(
            f"{solution}: the solution has no split column (stage or Usage); a competition "
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
        image=image or f"YOUR_REGISTRY_USER/ranklist-scorer:{version.__version__}",
        start=begin,
        end=end or begin + dt.timedelta(days=60),
    )
    if kit.end <= kit.start:
        raise UsageError(f"--end {kit.end} is not after --start {kit.start}")
    score_submission(kit.sample(), truth)  # the sample must pass the very rules it shows
    if out.exists() and any(out.iterdir()):
        raise UsageError(f"{out}: the folder is not empty; give a new or empty folder")
    out.mkdir(parents=True, exist_ok=True)
    from scorer.kits import codabench, evalai, kaggle

    writers: dict[Platform, Callable[[Kit], list[Path]]] = {
        Platform.KAGGLE: kaggle.write,
        Platform.CODABENCH: codabench.write,
        Platform.EVALAI: evalai.write,
    }
    try:
        return writers[platform](kit)
    except BaseException:
        shutil.rmtree(out, ignore_errors=True)  # never half a kit
        raise
