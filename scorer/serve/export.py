"""`scorer serve export`: a server's submissions as a leaderboard log. `scorer leaderboard
score` on it gives the server's boards to the bit: its rows are the entries of the server's
own runs (`jobs.exported`), under the same names, times and picks."""

from __future__ import annotations

import csv
import shutil
from pathlib import Path

from scorer.errors import UsageError
from scorer.leaderboard.store import stamp
from scorer.serve import site
from scorer.serve.jobs import exported
from scorer.serve.store import upload_name

#: The log's name in the export folder.
MANIFEST = "manifest.csv"


def export(folder: Path, out: Path) -> int:
    """Write `out/manifest.csv` (team, path, submitted_at, selected) and every file it
    names; how many submissions. Submissions still waiting for their verdict are left out,
    as the server's boards leave them out."""
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise UsageError(f"{out}: not a new or empty folder")
    store = site.store_of(folder)
    entries = [e for e in store.entries() if exported(e)]
    (out / "submissions").mkdir(parents=True, exist_ok=True)
    for entry in entries:
        if store.HOLDS_FILES:  # PostgreSQL: the uploads are in the database
            site.postgres(store).fetch(upload_name(entry.id), out / entry.name)
        else:
            shutil.copyfile(folder / entry.path, out / entry.name)
    with (out / MANIFEST).open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["team", "path", "submitted_at", "selected"])
        for e in entries:
            writer.writerow([e.team, e.name, stamp(e.submitted_at), "1" if e.selected else ""])
    return len(entries)
