"""A submission's text written line by line."""

from __future__ import annotations

HEADER = "user_id,edition_id,rank"


def text(lines: list[str], header: str = HEADER, end: str = "\n") -> str:
    return end.join([header, *lines]) + end
