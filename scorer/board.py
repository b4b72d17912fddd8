"""A spec's `[board]` table: how its leaderboards show scores, never how they are computed.

Tiers (which neighbours differ beyond noise and beyond a floor) and the defences against
probing the public board (rounded public scores, the Ladder) change what a board shows; no
verdict depends on them. task.md, "How sure a board is" and "Probing the public board", says
what each does and what it does not protect against.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, fields
from enum import StrEnum
from typing import Any, overload

from scorer.errors import UsageError

#: The most digits `public_digits` may keep: a float64 holds about 15 significant ones.
MAX_DIGITS = 15


class Correction(StrEnum):
    """How the paired tests between neighbours are corrected for being many: `holm` controls
    the chance of any false split into tiers (Holm 1979); `bh` the expected share of false
    splits among those made (Benjamini & Hochberg 1995), and splits more."""

    HOLM = "holm"
    BH = "bh"


class Ladder(StrEnum):
    """`off`: a submission's public score is shown as computed. `parameter-free`: Blum &
    Hardt's parameter-free Ladder (ICML 2015), a score is shown only when it beats the team's
    best so far by more than its own noise; else the best is shown again."""

    OFF = "off"
    PARAMETER_FREE = "parameter-free"


@dataclass(frozen=True)
class BoardRules:
    """The `[board]` table. `alpha` and `correction`: the paired tests that split the board
    into tiers; `tie_margin`: a gap below it is one tier whatever the tests say (in the
    metric's units: at 10^5 users almost any gap is significant, not every one matters).
    `public_digits`: public scores rounded to that many decimals until the reveal (None:
    exact). `ladder`: see `Ladder`."""

    alpha: float = 0.05
    correction: Correction = Correction.HOLM
    tie_margin: float = 0.001
    public_digits: int | None = None
    ladder: Ladder = Ladder.OFF

    def __post_init__(self) -> None:
        for name, enum in (("correction", Correction), ("ladder", Ladder)):
            value = getattr(self, name)
            if value not in [str(v) for v in enum]:
                names = ", ".join(repr(str(v)) for v in enum)
                raise UsageError(f"board.{name} = {value!r}; expected one of {names}")
            object.__setattr__(self, name, enum(value))
        if not _number(self.alpha) or not 0 < self.alpha < 1:
            raise UsageError(f"board.alpha = {self.alpha!r}; expected a number in (0, 1)")
        if not _number(self.tie_margin) or not 0 <= self.tie_margin < 1:
            raise UsageError(f"board.tie_margin = {self.tie_margin!r}; expected a number in [0, 1)")
        digits = self.public_digits
        if digits is not None and (type(digits) is not int or not 0 <= digits <= MAX_DIGITS):
            raise UsageError(
                f"board.public_digits = {digits!r}; expected an integer 0..{MAX_DIGITS}"
            )
        object.__setattr__(self, "alpha", float(self.alpha))
        object.__setattr__(self, "tie_margin", float(self.tie_margin))

    @overload
    def shown(self, score: float) -> float: ...
    @overload
    def shown(self, score: None) -> None: ...
    def shown(self, score: float | None) -> float | None:
        """A public score as shown before the reveal: rounded to `public_digits` decimals
        (Python's `round`: to the nearest, ties to even, of the binary value), or exact."""
        if score is None or self.public_digits is None:
            return score
        return round(score, self.public_digits)

    @property
    def default(self) -> bool:
        return self == BoardRules()

    def to_dict(self) -> dict[str, Any]:
        """The table as TOML and JSON write it: `public_digits` left out when exact."""
        data: dict[str, Any] = {f.name: getattr(self, f.name) for f in fields(self)}
        if self.public_digits is None:
            del data["public_digits"]
        return {key: str(v) if isinstance(v, StrEnum) else v for key, v in data.items()}

    @classmethod
    def of(cls, given: Mapping[str, Any], where: str) -> BoardRules:
        """The table as TOML gives it (its keys known); a `UsageError` naming a bad value."""
        try:
            return cls(**given)
        except UsageError as exc:
            raise UsageError(f"{where}: {exc}") from None


def _number(value: object) -> bool:
    """A finite int or float, not a bool (TOML's `true` is no alpha)."""
    return type(value) in (int, float) and math.isfinite(value)  # type: ignore[arg-type]
