"""What the leaderboard tests share: logs and folders broken on purpose, hostile team names
and a manifest that gives each a file, the arguments of `scorer leaderboard score`."""

from __future__ import annotations

import csv
from pathlib import Path

from scorer.errors import Code


def broken_manifest(folder: Path) -> Path:
    """A manifest with one problem of each row code (task.md's catalogue quotes its messages);
    the files it names exist, but for c2.csv."""
    path = folder / "m.csv"
    path.write_text(
        "team,path,submitted_at,selected\n"
        "a,a1.csv,2024-05-01T10:00:00Z,yes\n"
        "a,a2.csv,yesterday,1\n"
        "a,a3.csv,2024-05-01,1\n"
        "a,a4.csv,2024-05-02,1\n"
        "b,b1.csv,2024-05-01,maybe\n"
        "b,b2.csv,2024-05-01,\n"
        "b,b2.csv,2024-05-02,\n"
        ",b3.csv,2024-05-01,\n"
        "c,c1.csv\n"
        "c,c2.csv,2024-05-01,\n"
        '"d\u200b",d1.csv,2024-05-01,\n'
        f"{'d' * 70},d2.csv,2024-05-01,\n"
        "B,b4.csv,2024-05-03,\n",
        encoding="utf-8",
    )
    for name in ("a1", "a2", "a3", "a4", "b1", "b2", "b3", "b4", "c1", "d1", "d2"):
        (folder / f"{name}.csv").write_text("x\n")
    return path


def broken_folder(folder: Path) -> Path:
    """A folder whose one team selects three files and one it does not have."""
    (folder / "t").mkdir(parents=True)
    for name in ("a.csv", "b.csv", "c.csv"):
        (folder / "t" / name).write_text("x\n")
    (folder / "t" / "selected.txt").write_text("a.csv\nb.csv\nc.csv\nmissing.csv\n")
    return folder


#: Names a team may have, however they look: markup, formulas, links, HTML.
ACCEPTED = [
    "[/]",
    "[bold]alpha[/]",
    "[link=https://evil.example/claim]Click to claim prize[/link]",
    '=HYPERLINK("https://evil.example","prize")',
    "+1+1",
    "-2+3",
    "@SUM(1+1)",
    "[text](https://evil.example)",
    "![](https://evil.example/x.png)",
    "<img src=x onerror=alert(1)>",
    "<script>alert(1)</script>",
    "https://evil.example",
    "www.evil.example",
    "a|b",
    "alpha",
]


#: Names the log refuses, with the code it gives each.
REFUSED = {
    "\x1b[31mred\x1b[0m": Code.TEAM_NAME_CHARACTER,  # a terminal's escape sequence
    "\u202eevil": Code.TEAM_NAME_CHARACTER,  # right-to-left override: reads `live`
    "alpha\u200b": Code.TEAM_NAME_CHARACTER,  # zero-width space: looks exactly like alpha
    "x" * 5000: Code.TEAM_NAME_TOO_LONG,
}


#: Two files of the demo competition: every name gets one, in turn.
FILES = ("submissions/alpha/baseline.csv", "submissions/alpha/tuned.csv")


def write_manifest(path: Path, names: list[str]) -> Path:
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle, lineterminator="\n")
        writer.writerow(["team", "path", "submitted_at"])
        for i, name in enumerate(names):
            writer.writerow([name, FILES[i % 2], f"2024-05-02T{i // 60:02d}:{i % 60:02d}:00Z"])
    return path


def score_args(root: Path, *more: str) -> list[str | Path]:
    return [
        "score",
        root / "manifest.csv",
        "--solution",
        root / "solution.csv",
        "--db",
        root / "board.db",
        *more,
    ]
