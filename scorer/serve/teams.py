"""A server's teams: names checked as the leaderboard's manifest reads them (one team per
name, whatever its case, spaces or Unicode form), added all or none, their tokens made, replaced
and written to the organiser's private files."""

from __future__ import annotations

import csv
import datetime as dt
import io
import os
import shlex
from pathlib import Path
from typing import Any

from scorer.errors import UsageError
from scorer.leaderboard.names import escaped, name_issues, normal, quoted, same_team
from scorer.serve.site import store_of
from scorer.serve.sqlcore import TeamTaken
from scorer.serve.store import Rekeyed
from scorer.serve.tokens import digest, new_token


class NameTaken(UsageError):
    """A team name that is a team of the server already (`existing`, as the store spells
    it), revoked or not."""

    def __init__(self, message: str, existing: str, revoked: bool) -> None:
        super().__init__(message)
        self.existing, self.revoked = existing, revoked


def taken(server: str, where: str, name: str, existing: str, revoked: bool) -> NameTaken:
    """`name` refused as the team `existing` of the server (`server`: how a command line
    names it, `cli_home.named`); a revoked one is not given to a new team, and the message
    says how to let it back in."""
    said = f"{where}team {quoted(name)}"
    if name != existing:
        said += f" is team {quoted(existing)} written differently, and it"
    if revoked:
        command = f"scorer serve team token {server} {shlex.quote(existing)}"
        said += (
            " is a revoked team of the server; its name is not given to another team: "
            f"`{escaped(command)}` gives it a new token and lets it back in"
        )
    else:
        said += " exists already"
    return NameTaken(said, existing, revoked)


#: A team name as listed: the name, and its line in a file (None: given alone).
Listed = tuple[str, int | None]


def team_problems(server: str, listed: list[Listed], held: dict[str, Any]) -> list[UsageError]:
    """Every problem with names to add as teams (already NFC), in their order: empty, a
    refused character, too long, listed twice as one team (`same_team`: the rule of
    `leaderboard score`'s `team_name_clash`), or a team of the server already (`held`: the
    store's `team_keys`)."""
    first: dict[str, Listed] = {}
    problems: list[UsageError] = []
    for name, line in listed:
        where = "" if line is None else f"line {line}: "
        if not name.strip():
            problems.append(UsageError(f"{where}a team name may not be empty"))
            continue
        issues = name_issues(name, where.removesuffix(": ") or "the name", line)
        problems += [UsageError(issue.message) for issue in issues]
        key = same_team(name)
        if key in held:
            problems.append(taken(server, where, name, *held[key]))
        elif key in first:
            seen, on = first[key]
            twice = "listed twice" if seen == name else f"team {quoted(seen)} written differently"
            problems.append(
                UsageError(
                    f"{where}team {quoted(name)} is {twice} (line {on}); a name is one team "
                    "whatever its case, spaces or Unicode form"
                )
            )
        first.setdefault(key, (name, line))
    return problems


def add_teams(
    folder: Path, listed: list[Listed], source: Path | None = None, server: str | None = None
) -> list[tuple[str, str]]:
    """Add teams, all or none: every name is checked first (`team_problems`), then all are
    added in one transaction. Each team's name as stored and its token, which is stored
    only as its hash and shown this once. The problems of a file (`source`) are reported
    all at once; a name given alone is refused with its one. `server`: how a command line
    names the server, in a message (default: `folder`)."""
    store = store_of(folder)
    server = server or shlex.quote(str(folder))
    names = [(normal(name), line) for name, line in listed]
    problems = team_problems(server, names, store.team_keys())
    if problems and source is None:
        raise problems[0]
    if problems:
        count = f"{len(problems)} problem{'s' if len(problems) > 1 else ''}"
        lines = "\n".join(f"  {problem}" for problem in problems)
        raise UsageError(f"{source}: {count} with the teams; none was added:\n{lines}")
    tokens = [(name, new_token()) for name, _ in names]
    try:
        store.add_teams([(name, digest(token)) for name, token in tokens])
    except TeamTaken as exc:  # added meanwhile, by another process
        line = dict(names).get(exc.name)
        where = "" if line is None else f"line {line}: "
        raise taken(server, where, exc.name, exc.existing, exc.revoked) from None
    return tokens


def add_team(folder: Path, name: str, server: str | None = None) -> str:
    """Add a team (`add_teams`); its token, stored only as its hash and shown this once."""
    ((_, token),) = add_teams(folder, [(name, None)], server=server)
    return token


def replace_token(folder: Path, name: str, server: str | None = None) -> tuple[Rekeyed, str]:
    """Give a team (`name`, or another spelling of it) a new token, the old one refused at
    once; a revoked team is let back in. The team and its token, shown this once. `server`:
    how a command line names the server, in a message (default: `folder`)."""
    token = new_token()
    found = store_of(folder).replace_token(normal(name), digest(token), dt.datetime.now(dt.UTC))
    if found is None:
        raise UsageError(f"{server or folder}: no team named {quoted(name)}")
    return found, token


def names_in(path: Path) -> list[Listed]:
    """The teams of a CSV file with a `team` column, in its order, each with its line."""
    try:
        with path.open(newline="", encoding="utf-8-sig") as handle:
            reader = csv.DictReader(handle)
            rows: list[Listed] = [(row.get("team") or "", reader.line_num) for row in reader]
            header = reader.fieldnames or []
    except (OSError, UnicodeDecodeError, csv.Error) as exc:
        raise UsageError(f"{path}: cannot read the teams ({exc})") from None
    if "team" not in header:
        raise UsageError(f"{path}: expected a CSV file with a 'team' column")
    if not rows:
        raise UsageError(f"{path}: lists no team")
    return rows


def write_tokens(path: Path, tokens: list[tuple[str, str]]) -> None:
    """The teams' tokens as a CSV file to print as slips: only its owner may read it. Lines
    end in LF, not the csv module's CRLF: a token copied from a line keeps no CR."""
    lines = io.StringIO(newline="")
    writer = csv.writer(lines, lineterminator="\n")
    writer.writerow(["team", "token"])
    writer.writerows(tokens)
    write_private(path, lines.getvalue())


def write_private(path: Path, text: str) -> None:
    """A new file only its owner may read (a token, slips of tokens)."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w", newline="", encoding="utf-8") as handle:
        handle.write(text)
