"""`scorer leaderboard …` commands (placeholder: filled in by the leaderboard work)."""

from __future__ import annotations

import typer

board_app = typer.Typer(
    no_args_is_help=True,
    help="Score many submissions into public and private leaderboards.",
)
