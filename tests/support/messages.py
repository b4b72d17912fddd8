"""The hints the scorer gives files written by pandas by mistake, under lost items, as
task.md's "Hints" lists them: checked by the messages tests and the hints tests."""

from __future__ import annotations

JOIN = '" ".join(map(str, ids))'

WIDE = (
    "one line a user is the wide format: the header user_id,edition_ids, each edition_ids "
    f"cell the ids in rank order separated by spaces, written {JOIN}"
)
LISTS = (
    "if each edition_id cell holds a list of ids, that is the wide format: name the columns "
    f"user_id,edition_ids and write each list in rank order separated by spaces, {JOIN}"
)
BRACKETS = (
    "found '[500037': the lists were written as Python prints them, '[1, 2, 3]'; write the "
    f'ids separated by spaces: df["edition_ids"] = df["edition_ids"].map(lambda ids: {JOIN})'
)


def empty_floats(line: int) -> str:
    """The hint for edition_id made floats by one empty cell, on `line`."""
    return (
        f"edition_id has an empty cell (the first on line {line}), and pandas makes a column of "
        "integers with an empty cell floats, written '123.0': drop or fill the empty rows "
        '(df = df.dropna(subset=["edition_id"])), then df["edition_id"] = '
        'df["edition_id"].astype("int64") (or the "Int64" type, which writes integers and '
        "leaves empty cells empty)"
    )


REPEATED = (
    'a file written in chunks with df.to_csv(path, mode="a") repeats its header before each '
    "chunk: write every chunk after the first with header=False"
)
RESET_INDEX = (
    "'user_id' is the frame's index, not one of its columns: df = df.reset_index() makes it a "
    "column"
)
