"""What every platform shares: the kit's checked inputs, its templates, and the host failure."""

from __future__ import annotations

import datetime as dt
import os
import re
import stat
import struct
import zlib
from dataclasses import dataclass
from enum import StrEnum
from importlib import resources
from pathlib import Path

import polars as pl

from scorer.competition import ITEM, USER, Competition, Split, Stage
from scorer.contract import Solution
from scorer.errors import Failure, ScorerError
from scorer.leaderboard.literal import markdown

__all__ = [
    "HOST_MESSAGE",
    "HostVisibleError",
    "Kit",
    "Platform",
    "logo",
    "placeholder_sample",
    "template",
]

#: What a participant reads when the organisers' side failed (their files, the system or the
#: scorer): the one message every platform shows for it; the details go to the organisers.
HOST_MESSAGE = (
    "the submission could not be scored because of a problem in the organisers' files or "
    "the scorer, not in the submission; the organisers have the details"
)


class HostVisibleError(ScorerError):
    """The organisers' side failed, never the submission: its message is `HOST_MESSAGE`, safe
    for participants, and `details` says what failed, for the organisers only.

    Named as Kaggle's metric utilities name the error they show to the host only: Kaggle
    routes a metric's errors by class name, and would show any other class's digit-free
    message of an all-numeric solution to the participant. Kaggle's message reaches the host
    alone, so there (`host_only`) the message is the details themselves.
    """

    exit_code = 2
    failure = Failure.ORGANISER_FILE_BROKEN

    def __init__(self, details: str, *, host_only: bool = False) -> None:
        super().__init__(details if host_only else HOST_MESSAGE)
        self.details = details


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
        """The competition's name as a title: its first letter in capitals."""
        name = self.competition.name
        return name[:1].upper() + name[1:]

    @property
    def readme(self) -> dict[str, str]:
        """What every kit's README says of it: the title and each split's number of users."""
        users = self.solution.users
        counts = {
            str(split): f"{users.filter(pl.col('stage') == split).height:,}"
            for split in (Split.PUBLIC, Split.PRIVATE)
        }
        return {"title": markdown(self.title), **counts}  # the name is data, not markup

    @property
    def shown_users(self) -> pl.Series:
        """The target users in the order participants see them: sorted by id, an order that
        carries nothing of the solution's (a solution listing its public users first would
        otherwise tell, through the targets file, which users are public)."""
        return self.targets.sort()

    def sample(self) -> pl.DataFrame:
        """A wide sample submission in the competition's columns (`placeholder_sample`)."""
        return placeholder_sample(self.shown_users, self.competition)

    def target_users(self) -> pl.DataFrame:
        """The targets file: one column, the users, named as the competition's files name it."""
        return pl.DataFrame({self.competition.columns.user: self.shown_users})

    def hidden(self, path: Path) -> Path:
        """`path`, a file the kit wrote that holds the hidden solution, made no more readable
        than the solution it comes from (a 0600 solution gives a 0600 copy); `path`."""
        source = stat.S_IMODE(self.solution_path.stat().st_mode)
        os.chmod(path, stat.S_IMODE(path.stat().st_mode) & source & 0o666)
        return path

    def long(self) -> pl.DataFrame:
        """The solution as long rows (user, item, split) in the competition's columns and
        split words, whatever form it came in; a user with no item has one row with an empty
        item."""
        rules = self.competition
        users = self.solution.users.select(USER, "stage")
        pairs = self.solution.pairs.select(USER, ITEM)
        if self.solution.codes is not None:  # text ids, as the files write them
            users, pairs = self.solution.codes.decode(users), self.solution.codes.decode(pairs)
        words = {stage.value: getattr(rules.splits, stage.value) for stage in Stage}
        return users.join(pairs, on=USER, how="left", maintain_order="left").select(
            pl.col(USER).alias(rules.columns.user),
            pl.col(ITEM).alias(rules.columns.item),
            pl.col("stage").replace_strict(words).alias(rules.splits.columns[0]),
        )

    def write(self, relative: str, text: str) -> Path:
        path = self.out / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        return path


def placeholder_sample(users: pl.Series, competition: Competition) -> pl.DataFrame:
    """A wide sample submission in the competition's columns: every target user of `users`
    (in their order) with the placeholder ids 1..k (valid, scoring 0): derived from nothing
    hidden."""
    columns = competition.columns
    ids = " ".join(str(i) for i in range(1, competition.k + 1))
    return pl.DataFrame(
        {columns.user: users, columns.list: [ids] * users.len()},
        schema={columns.user: users.dtype, columns.list: pl.String},
    )


def template(name: str, **values: str) -> str:
    """A file of `templates/` with each `@@KEY@@` replaced by its value, in one pass: a value
    is data, never read for placeholders (a competition named `@@K@@` stays so named)."""
    folder = resources.files("scorer.platforms").joinpath("templates")
    text = folder.joinpath(name).read_text(encoding="utf-8")
    given = {f"@@{key.upper()}@@": value for key, value in values.items()}
    unfilled = [key for key in _PLACEHOLDER.findall(text) if key not in given]
    if unfilled:  # a fault of the kit itself, not of the organiser's files
        raise ValueError(f"{name}: {unfilled[0]} was left unfilled")
    return _PLACEHOLDER.sub(lambda found: given[found.group(0)], text)


#: A template's placeholder: `@@KEY@@`.
_PLACEHOLDER = re.compile(r"@@[A-Z_]+@@")


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
