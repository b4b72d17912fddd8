"""The competition spec: everything that makes one competition differ from another, in one place.

A `Competition` says how many items a user's list holds (`k`), which metric ranks the
leaderboard, what the files' columns are called, how many rows a user may have, how the
solution names its splits, whether relevance is graded and how a user with nothing relevant
counts. Every module takes one as a parameter; `LOST_ITEMS`, the first competition, is the
default everywhere. A spec is read from a TOML file by `Competition.load` (see task.md, "Other
competitions").
"""

from __future__ import annotations

import json
import tomllib
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, fields
from enum import StrEnum
from pathlib import Path
from typing import Any

from scorer.board import BoardRules
from scorer.errors import UsageError

#: The largest k: a user's ranks ride in 7 bits of a packed key (`scorer.keys`).
MAX_K = 100

#: What the scorer calls the user, item and rank columns of a frame, whatever a competition's
#: files call them (`Columns`): the read layer renames a file's own columns to these once its
#: cells are judged, and only those (never a column a reader made itself, which may share a
#: file column's name), and every output names them as the competition's files do again.
USER, ITEM, RANK = "user_id", "edition_id", "rank"

#: What the scorer calls a solution's split column, whichever of `Splits.columns` a file has:
#: renamed with the user, item and rank columns, so no file column keeps its name inside.
STAGE = "stage"

#: The column every reader numbers a file's rows in (`scorer.read`): no file column's name.
LINE = "line"


class Metric(StrEnum):
    """The per-user metrics; the competition's `metric` ranks the leaderboard, the others are
    diagnostics reported beside it. Report order is the order here."""

    NDCG = "ndcg"
    RECALL = "recall"
    PRECISION = "precision"
    HIT_RATE = "hit_rate"
    MRR = "mrr"
    MAP = "map"


class Rows(StrEnum):
    """How many ranked items a target user must have: `exactly` k (every list full), or
    `at_most` k (a short list is allowed, as in Kaggle's MAP@12 competitions)."""

    EXACTLY = "exactly"
    AT_MOST = "at_most"


class Relevance(StrEnum):
    """`binary`: a solution lists relevant items only (no grade column). `graded`: a solution
    may carry a `grade` column, 0..10 (1 when absent), and gains are 2**grade - 1."""

    BINARY = "binary"
    GRADED = "graded"


class IdKind(StrEnum):
    """What an id is: a non-negative 64-bit `integer` written in digits (`0101` is 101), or
    `text` matched exactly as written (`0101` is not `101`), as Kaggle's H&M customer ids and
    most recommendation datasets have them."""

    INTEGER = "integer"
    TEXT = "text"


class EmptyUsers(StrEnum):
    """How a target user with no relevant item counts (IDCG = 0, so no ranking can score it).

    `zero`: the formula's own rule, every metric 0, and the user counts in every mean (lost
    items' rule: every target user weighs the same, and a submission gains nothing from such
    users). `exclude`: the user is left out of every mean and of the per-user table (Kaggle's
    H&M MAP@12: "customers that did not make any purchase ... are excluded from the scoring").
    """

    ZERO = "zero"
    EXCLUDE = "exclude"

    @classmethod
    def of(cls, value: EmptyUsers | str, key: str = "no_lost") -> EmptyUsers:
        """The rule a name gives; a `UsageError` naming `key` for any other name."""
        try:
            return cls(value)
        except ValueError:
            names = ", ".join(rule.value for rule in cls)
            raise UsageError(f"{key} = {value!r}; expected one of {names}") from None


class Split(StrEnum):
    """The users a mean is taken over: every scored user, or the public or private ones."""

    OVERALL = "overall"
    PUBLIC = "public"
    PRIVATE = "private"


class Stage(StrEnum):
    """What a solution's split column says of a user; `ignored` users are never scored."""

    PUBLIC = "public"
    PRIVATE = "private"
    IGNORED = "ignored"


@dataclass(frozen=True)
class Columns:
    """Column names in the files: `user`, `item` and `rank` in the long layout (one row a
    ranked item), `user` and `list` in the wide one (one row a user, items in rank order
    separated by spaces). The solution names its users and items as the submission does."""

    user: str = "user_id"
    item: str = "edition_id"
    rank: str = "rank"
    list: str = "edition_ids"


@dataclass(frozen=True)
class Ids:
    """What the user and item ids of the files are (`IdKind`): integers, as in lost items, or
    text. Text ids are matched against the solution's exactly, then numbered once, so every
    rule and metric runs on integers."""

    user: IdKind = IdKind.INTEGER
    item: IdKind = IdKind.INTEGER

    @property
    def text(self) -> bool:
        """Whether either id is text."""
        return IdKind.TEXT in (self.user, self.item)


@dataclass(frozen=True)
class Splits:
    """The solution's split: the column names it may have (one at a time), and the values
    that mean public, private and ignored (compared without regard to case)."""

    columns: tuple[str, ...] = ("stage", "Usage")
    public: str = "public"
    private: str = "private"
    ignored: str = "ignored"

    def stage_of(self, value: str) -> Stage | None:
        """The stage a cell's value names, or None."""
        folded = value.lower()
        for stage in Stage:
            if folded == getattr(self, stage.value).lower():
                return stage
        return None


@dataclass(frozen=True)
class Words:
    """How messages name a user and an item ('user 1007 has 19 rows', 'edition 5 repeats'),
    and what a solution lists of a user ('lost pairs'; left empty, the items: 'lost items')."""

    user: str = "user"
    item: str = "item"
    pairs: str = ""

    @property
    def listed(self) -> str:
        """What a solution lists of a user, as messages say it: `pairs`, else the items."""
        return self.pairs or f"{self.item}s"


@dataclass(frozen=True)
class Competition:
    """One competition's rules. Frozen: a spec is a value, compared and hashed as a whole."""

    name: str = "lost items"
    k: int = 20
    metric: Metric = Metric.NDCG
    rows: Rows = Rows.EXACTLY
    relevance: Relevance = Relevance.GRADED
    #: How users of the solution with no relevant item count; `--no-lost` overrides it.
    empty_users: EmptyUsers = EmptyUsers.ZERO
    columns: Columns = field(default_factory=Columns)
    ids: Ids = field(default_factory=Ids)
    splits: Splits = field(default_factory=Splits)
    words: Words = field(default_factory=lambda: Words(item="edition", pairs="pairs"))
    #: How boards show scores; written only when not the default (older specs' keys hold).
    board: BoardRules = field(default_factory=BoardRules)

    def __post_init__(self) -> None:
        _check(self)

    def label(self, metric: Metric | str) -> str:
        """A metric's name in reports: `ndcg@20`."""
        return f"{Metric(metric)}@{self.k}"

    @property
    def labels(self) -> dict[Metric, str]:
        """Every metric's name in reports, in report order: the competition's metric first,
        then the others in the order of `Metric`."""
        order = [self.metric, *[m for m in Metric if m != self.metric]]
        return {metric: self.label(metric) for metric in order}

    @property
    def title(self) -> str:
        """The primary metric as titles say it: `NDCG@20`, `MAP@12`."""
        return self.label(self.metric).upper()

    @property
    def rank_bits(self) -> int:
        """Bits that ranks 1..k take as 0..k-1."""
        return max(self.k - 1, 1).bit_length()

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["splits"]["columns"] = list(self.splits.columns)
        data["ids"] = {key: str(v) for key, v in data["ids"].items()}
        data.pop("board")
        if not self.board.default:
            data["board"] = self.board.to_dict()
        return {key: str(v) if isinstance(v, StrEnum) else v for key, v in data.items()}

    def to_toml(self) -> str:
        """The spec as a competition file that `load` reads back to this very spec: every
        key written, so no default of a new competition stands in for one of lost items."""
        data = self.to_dict()
        lines = [f"{key} = {_toml(v)}" for key, v in data.items() if not isinstance(v, dict)]
        for key, table in ((k, v) for k, v in data.items() if isinstance(v, dict)):
            lines += ["", f"[{key}]", *(f"{name} = {_toml(v)}" for name, v in table.items())]
        return "\n".join(lines) + "\n"

    def fingerprint(self, **options: object) -> str:
        """The one key of what is judged under this competition: every rule, and each option
        given that can change a result, as canonical JSON (`{"competition": …, **options}`,
        keys sorted, no spaces). A prepared solution holds for one key (with the scorer's
        version), a leaderboard's verdicts for one (with its no-lost policy and limits)."""
        rules = {"competition": self.to_dict(), **options}
        return json.dumps(rules, sort_keys=True, separators=(",", ":"))

    @classmethod
    def load(cls, path: Path | str) -> Competition:
        """Read a spec from a TOML file; any unknown key or bad value is a `UsageError`
        naming it (exit 2)."""
        path = Path(path)
        try:
            data = tomllib.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise UsageError(f"{path}: no such competition file") from None
        except (OSError, UnicodeDecodeError) as exc:
            raise UsageError(f"{path}: cannot read the competition file ({exc})") from None
        except tomllib.TOMLDecodeError as exc:
            raise UsageError(f"{path}: not valid TOML ({exc})") from None
        except RecursionError:  # tomllib parses nested arrays and tables by recursion
            raise UsageError(f"{path}: not a competition file (nested too deeply)") from None
        return cls.of(data, where=path.name)

    @classmethod
    def of(cls, data: Mapping[str, Any], where: str = "competition") -> Competition:
        """A spec from a mapping as TOML gives it: top-level keys and [columns], [ids], [splits],
        [words] and [board] tables; what is left out takes the defaults of a new competition
        (not those of lost items: a spec file says what it means)."""
        tables: dict[str, type] = {"columns": Columns, "ids": Ids, "splits": Splits}
        tables |= {"words": Words, "board": BoardRules}
        scalars = {"name": str, "k": int, "metric": Metric, "rows": Rows, "relevance": Relevance}
        scalars["empty_users"] = EmptyUsers
        _known(data, [*scalars, *tables], where)
        values: dict[str, Any] = {"words": Words()}
        for key, kind in scalars.items():
            if key in data:
                values[key] = _value(data[key], kind, key, where)
        for key, table in tables.items():
            if key not in data:
                continue
            given = data[key]
            if not isinstance(given, Mapping):
                raise UsageError(f"{where}: [{key}] must be a table")
            names = [f.name for f in fields(table)]
            _known(given, names, where, prefix=f"{key}.")
            if key == "board":  # numbers and names of its own
                values[key] = BoardRules.of(given, where)
                continue
            parts: dict[str, Any] = {}
            for name, value in given.items():
                if key == "splits" and name == "columns":
                    if (
                        not isinstance(value, list)
                        or not value
                        or not all(isinstance(v, str) and v for v in value)
                    ):
                        raise UsageError(
                            f"{where}: splits.columns = {value!r}; expected a list of names"
                        )
                    parts[name] = tuple(value)
                elif key == "words" and name == "pairs" and value == "":
                    parts[name] = value  # as `to_dict` writes the default: the items
                elif key == "ids":
                    parts[name] = _value(value, IdKind, f"{key}.{name}", where)
                else:
                    parts[name] = _value(value, str, f"{key}.{name}", where)
            values[key] = table(**parts)
        try:
            return cls(**values)
        except UsageError as exc:
            raise UsageError(f"{where}: {str(exc).removeprefix('competition: ')}") from None


def _toml(value: object) -> str:
    """A TOML value of a spec: a number, or a string or a list of strings, as JSON writes
    them (a JSON string is a TOML basic string; DEL, which TOML refuses raw, escaped)."""
    if isinstance(value, list):
        return "[" + ", ".join(_toml(v) for v in value) + "]"
    if isinstance(value, int | float):
        return repr(value)
    return json.dumps(str(value), ensure_ascii=False).replace("\x7f", "\\u007f")


def _known(data: Mapping[str, Any], names: list[str], where: str, prefix: str = "") -> None:
    unknown = [key for key in data if key not in names]
    if unknown:
        raise UsageError(
            f"{where}: unknown key '{prefix}{unknown[0]}'; expected one of "
            + ", ".join(f"{prefix}{n}" for n in names)
        )


def _value(value: object, kind: type, key: str, where: str) -> Any:
    if kind is int:
        if type(value) is not int:
            raise UsageError(f"{where}: {key} = {value!r}; expected an integer")
        return value
    if not isinstance(value, str) or not value:  # a StrEnum member is a str too
        raise UsageError(f"{where}: {key} = {value!r}; expected a non-empty string")
    if kind is str:
        return value
    if isinstance(value, kind):
        return value
    try:
        return kind(value)
    except ValueError:
        names = ", ".join(repr(str(v)) for v in kind)  # type: ignore[attr-defined]
        raise UsageError(f"{where}: {key} = {value!r}; expected one of {names}") from None


def _check(spec: Competition) -> None:
    """Rules a spec must keep to: k in range, every column name distinct and non-empty."""
    if type(spec.k) is not int or not 1 <= spec.k <= MAX_K:
        raise UsageError(f"k = {spec.k!r}; expected an integer 1..{MAX_K}")
    enums: tuple[tuple[str, type[StrEnum]], ...] = (
        ("metric", Metric),
        ("rows", Rows),
        ("relevance", Relevance),
        ("empty_users", EmptyUsers),
    )
    for name, enum in enums:
        # a spec built in Python may name them as text: `Competition(metric="map")`
        object.__setattr__(spec, name, _value(getattr(spec, name), enum, name, "competition"))
    for name in ("user", "item"):  # `Ids(user="text")` too
        value = _value(getattr(spec.ids, name), IdKind, f"ids.{name}", "competition")
        object.__setattr__(spec.ids, name, value)
    columns = spec.columns
    names = [columns.user, columns.item, columns.rank, *spec.splits.columns, "grade"]
    for name in [*names, columns.list]:
        if not name or name != name.strip() or any(c in name for c in ',"\r\n'):
            raise UsageError(
                f"column name {name!r}; expected a name with no comma, quote or line break "
                "and no spaces around it"
            )
    # The list column names the wide layout: a header naming the item or rank column is long.
    clash = (columns.user, columns.item, columns.rank, *spec.splits.columns)
    if len(set(names)) != len(names) or columns.list in clash:
        raise UsageError(
            "column names must differ: " + ", ".join(repr(n) for n in [*names, columns.list])
        )
    if LINE in [*names, columns.list]:
        raise UsageError(
            f"column name {LINE!r} is the scorer's own (the line of a row); expected another name"
        )
    # The per-user table names its user as the files do, beside the scorer's own columns.
    if columns.user in ("stage", "n_relevant", "hits", *Metric):
        raise UsageError(
            f"column name {columns.user!r} is the scorer's own (a column of the per-user "
            "scores); expected another name for the user column"
        )
    values = [spec.splits.public, spec.splits.private, spec.splits.ignored]
    if len({v.lower() for v in values}) != 3:
        raise UsageError(f"split values {values}; expected three different names")


#: The first competition: lost wishlist/read pairs of a book service, NDCG@20 (task.md).
LOST_ITEMS = Competition()
