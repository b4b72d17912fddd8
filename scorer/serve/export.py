"""`scorer serve export`: a server's submissions as a leaderboard log. `scorer leaderboard
score` on it gives the server's boards to the bit: its rows are the entries of the server's
boards (`SqlStore.entries(on_board=True)`), under the same names, times and picks."""

from __future__ import annotations

import csv
import shutil
import tempfile
from pathlib import Path

from scorer.errors import UsageError
from scorer.leaderboard.literal import neutralised
from scorer.leaderboard.store import stamp
from scorer.serve import site

#: The log's name in the export folder.
MANIFEST = "manifest.csv"


def export(folder: Path, out: Path) -> int:
    """Write `out/manifest.csv` (team, path, submitted_at, selected, description) and every
    file it names; how many submissions. A description is the team's words, data: one a
    spreadsheet would read as a formula is written with a `'` before it. Submissions still
    waiting for their verdict are left out, as the server's boards leave them out."""
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise UsageError(f"{out}: not a new or empty folder")
    store = site.store_of(folder)
    entries = store.entries(on_board=True)
    (out / "submissions").mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="scorer-export-", dir=out) as scratch:
        for entry in entries:  # where the store keeps it, or fetched into `scratch` first
            kept = store.upload_file(entry.id, entry.path, entry.sha256, Path(scratch))
            shutil.copyfile(kept, out / entry.name)
            if kept.is_relative_to(scratch):
                kept.unlink()
    with (out / MANIFEST).open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["team", "path", "submitted_at", "selected", "description"])
        for e in entries:
            said, _ = neutralised(e.description)
            selected = "1" if e.selected else ""
            writer.writerow([e.team, e.name, stamp(e.submitted_at), selected, said])
    return len(entries)
