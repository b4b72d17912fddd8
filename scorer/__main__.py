"""`python -m scorer`: the same command as `scorer`."""

from __future__ import annotations

from scorer.cli import app

app(prog_name="scorer")
