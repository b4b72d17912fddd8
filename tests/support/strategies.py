"""Hypothesis strategies shared by the property tests: user ids, stage words and solutions."""

from __future__ import annotations

from dataclasses import dataclass

from hypothesis import strategies as st

#: Ids as large as a packed key's user part holds, and past it (2**40 > 2**31).
ID = st.integers(0, 2**40)

#: A split column's words as organisers write them: any case, every stage.
STAGE_WORDS = ["public", "private", "ignored", "Public", "PRIVATE", "Ignored"]


def user_ids(
    low: int = 0, high: int = 10**6, *, min_size: int = 1, max_size: int = 12
) -> st.SearchStrategy[list[int]]:
    """Distinct user ids, in the order drawn."""
    return st.lists(st.integers(low, high), min_size=min_size, max_size=max_size, unique=True)


@dataclass(frozen=True)
class SolutionRows:
    """A lost-items solution as rows of cells: (user, item or None for an empty cell, the
    split column's word, grade or None for an empty cell)."""

    rows: list[tuple[int, int | None, str, int | None]]
    split: str | None
    graded: bool

    def csv(self) -> str:
        header = ["user_id", "edition_id"]
        header += [self.split] if self.split else []
        header += ["grade"] if self.graded else []
        lines = [",".join(header)]
        for user, item, stage, grade in self.rows:
            cells = [str(user), "" if item is None else str(item)]
            cells += [stage] if self.split else []
            cells += ["" if grade is None else str(grade)] if self.graded else []
            lines.append(",".join(cells))
        return "\n".join(lines) + "\n"


@st.composite
def solutions(
    draw: st.DrawFn, usual: bool = False, ids: st.SearchStrategy[int] = ID
) -> SolutionRows:
    """A valid solution's rows: users with lost items (or one empty row), a split column or
    none, a grade column or none; each user's rows together, in the order drawn.

    `usual`: the file the short paths of `solution_of` take, every time: users in order,
    every item listed, binary grades (no grade column, or 1 on every row), one stage a
    user. Otherwise the users come in any order and a user may have no lost items or a
    grade of 0 (not relevant)."""
    users = draw(st.lists(ids, min_size=1, max_size=12, unique=True))
    if usual:
        users.sort()
    split = draw(st.sampled_from([None, "stage", "Usage"]))
    graded = draw(st.booleans())
    rows: list[tuple[int, int | None, str, int | None]] = []
    for user in users:
        stage = draw(st.sampled_from(STAGE_WORDS))
        items = draw(st.lists(ids, min_size=1 if usual else 0, max_size=5, unique=True))
        if not items:
            rows.append((user, None, stage, None))
        for item in items:
            grade = 1 if usual or not graded else draw(st.integers(0, 10))
            rows.append((user, item, stage, grade))
    return SolutionRows(rows, split, graded)


@st.composite
def broken_solutions(draw: st.DrawFn, usual: bool = False) -> SolutionRows:
    """A solution that may break the solution's rules too: a user's rows apart or in more
    than one stage, an empty item beside lost ones, a pair repeated. Few ids, so repeats
    are common. `usual` keeps what the short paths need (users in order, items listed,
    grades 1) and may still break a rule they must find (a stage changing within a user,
    a pair repeated)."""
    drawn = draw(solutions(usual=usual, ids=st.integers(0, 6)))
    rows = list(drawn.rows)
    for _ in range(draw(st.integers(0, 3))):
        at = draw(st.integers(0, len(rows) - 1))
        user, item, stage, grade = rows[at]
        flaw = draw(st.sampled_from(["stage", "repeat", "empty", "move"]))
        if flaw == "stage":
            rows[at] = (user, item, draw(st.sampled_from(STAGE_WORDS)), grade)
        elif flaw == "repeat" and item is not None:
            rows.insert(at + 1, rows[at])
        elif flaw == "empty" and not usual:
            rows.insert(at + 1, (user, None, stage, None))
        elif flaw == "move" and not usual:
            rows.append(rows.pop(at))
    if usual and not drawn.split:  # a stage can only change where there is a split column
        return SolutionRows(rows, "stage", drawn.graded)
    return SolutionRows(rows, drawn.split, drawn.graded)


# ---------------------------------------------------------------------------------------------
# Any competition (tests/scoring/test_any_competition.py)
# ---------------------------------------------------------------------------------------------

#: The kinds of id a drawn competition may have (`[ids]`): `id_cell` writes each, the
#: reference reads each.
ID_KINDS = ("integer", "text")

#: How a drawn competition writes its ids (`id_cell`): integers; text ids of letters, of
#: non-ASCII text and of digits with leading zeros, mixed; or text ids all of digits with
#: a leading zero (`0174884004`, as H&M's articles), which a reader that guesses types
#: (pandas, polars) takes for numbers when a column holds nothing else.
ID_STYLES = ("integer", "text", "digits")


def id_kind(style: str) -> str:
    """The `[ids]` kind of a style of `ID_STYLES`."""
    return "integer" if style == "integer" else "text"


#: Column names a competition's files may use: the scorer's own frame columns and the helper
#: columns its readers once added beside a file's columns, names of other roles (a rank
#: called 'position', a user called 'item'), the per-user table's columns, names that differ
#: only in case or fold alike ('Rank', 'user id'), and non-ASCII.
NAME_POOL = (
    "user_id",
    "edition_id",
    "rank",
    "position",
    "item",
    "items",
    "edition_ids",
    "line",
    "stage",
    "Usage",
    "grade",
    "pair",
    "key",
    "n",
    "n_relevant",
    "hits",
    "ndcg",
    "map",
    "idcg",
    "_token",
    "_user",
    "_bad_rank",
    "session_id",
    "track_id",
    "tracks",
    "board",
    "Rank",
    "user id",
    "item-id",
    "Pösition",
    "usuário",
    "排名",
    "ключ",
)

#: A split column's values (public, private, ignored), as organisers name them.
SPLIT_WORDS = (
    ("public", "private", "ignored"),
    ("A", "B", "skip"),
    ("Öffentlich", "privat", "übersprungen"),
)


#: Names a spec refuses in some roles: every reader numbers its rows in `line`, a solution
#: grades in `grade`, and the per-user table holds `stage`, `n_relevant`, `hits` and metrics.
REFUSABLE = frozenset({"line", "grade", "stage", "n_relevant", "hits", "ndcg", "map"})


def column_names(count: int, refusable: bool = True) -> st.SearchStrategy[list[str]]:
    """`count` distinct names from `NAME_POOL`, in any role; without `refusable`, none of
    the names a spec may refuse (`REFUSABLE`)."""
    pool = [n for n in NAME_POOL if refusable or n not in REFUSABLE]
    return st.lists(st.sampled_from(pool), min_size=count, max_size=count, unique=True)


def id_cell(style: str, value: int) -> str:
    """An id as a file writes it for a competition whose ids are of `style` (`ID_STYLES`;
    a kind of `ID_KINDS` is a style too): one text a value, whatever the style."""
    if style == "integer":
        return str(value)
    if style == "digits" or (style == "text" and value % 3 == 0):
        return "0" + str(value).zfill(6)  # zeros that count: 0000012 is not 000012
    if style == "text":  # text beyond ASCII too
        return f"u{value:06d}" if value % 3 == 1 else f"é{value}"
    raise ValueError(f"id style {style!r}")
