"""The server's log of submissions, on stderr: one line for each upload accepted and one for
each verdict, with the time (UTC, to the second), the team, the submission's id and what
happened, so that an organiser can follow a competition in the terminal or with grep."""

from __future__ import annotations

import sys
from datetime import UTC, datetime

from scorer.leaderboard.literal import shown
from scorer.leaderboard.names import escaped


def line(team: str, submission: int, what: str, at: datetime) -> str:
    """A line of the log. The team's name is a participant's: every control, bidirectional or
    invisible character in it, or in `what`, is written as a visible escape (`shown`), so
    that no name drives the organiser's terminal, and a line is one line."""
    when = at.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    return f'scorer serve: {when} team "{shown(team)}" submission {submission}: {escaped(what)}'


def logged(team: str, submission: int, what: str, at: datetime) -> None:
    """Write `line` to stderr at once."""
    print(line(team, submission, what, at), file=sys.stderr, flush=True)
