"""`scorer serve export`: a server's submissions as a leaderboard log, and what a participant
needs to check the final board with it (`scorer verify`). `scorer leaderboard score` on the
log gives the server's boards to the bit: its rows are the entries of the server's boards
(`SqlStore.entries(on_board=True)`), under the same names, times and picks, each with the
sha256 of its bytes. The final board as published after the reveal carries the manifest's
sha256 (`manifest_sha256`), from the same bytes this module writes (`manifest_bytes`)."""

from __future__ import annotations

import csv
import hashlib
import io
import json
import shutil
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from scorer.errors import UsageError
from scorer.leaderboard.literal import neutralised
from scorer.leaderboard.store import stamp
from scorer.serve import site
from scorer.serve.reveal import NotRevealed, commitment_dict, revealed
from scorer.serve.sql import SqlStore
from scorer.serve.store import Entry
from scorer.verify import BOARD, COMMITMENT, MANIFEST  # what `scorer verify` reads

#: The log's columns: those `leaderboard score` reads, and each file's sha256.
HEADER = ("team", "path", "submitted_at", "selected", "description", "sha256")


def manifest_bytes(entries: Sequence[Entry]) -> bytes:
    """The manifest of `entries`, as the export writes it (CSV, CRLF, UTF-8). A description
    is the team's words, data: one a spreadsheet would read as a formula is written with a
    `'` before it."""
    text = io.StringIO(newline="")
    writer = csv.writer(text)
    writer.writerow(HEADER)
    for e in entries:
        said, _ = neutralised(e.description)
        selected = "1" if e.selected else ""
        writer.writerow([e.team, e.name, stamp(e.submitted_at), selected, said, e.sha256])
    return text.getvalue().encode("utf-8")


def manifest_sha256(store: SqlStore) -> str:
    """The sha256 of the manifest the store's submissions on the boards make now."""
    return hashlib.sha256(manifest_bytes(store.entries(on_board=True))).hexdigest()


def with_manifest(board_json: str, sha256: str) -> str:
    """The JSON of boards (`render(boards, "json")`) with the manifest's `sha256` added."""
    data = json.loads(board_json)
    data["manifest_sha256"] = sha256
    return json.dumps(data, indent=2, ensure_ascii=False) + "\n"


@dataclass(frozen=True)
class Exported:
    """What `export` wrote: how many submissions, and whether the final board (`board`:
    not before the reveal, nor while it is being built for the latest verdicts)."""

    submissions: int
    board: bool


def export(folder: Path, out: Path) -> Exported:
    """Write `out/manifest.csv` (team, path, submitted_at, selected, description, sha256) and
    every file it names, `board.json` (the final boards as published for this very manifest,
    once revealed), `commitment.json` and the competition's rules (`competition.toml`, when
    the server has its own). Submissions still waiting for their verdict are left out, as
    the server's boards leave them out."""
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
        manifest = manifest_bytes(entries)
        (out / MANIFEST).write_bytes(manifest)
        published = store.published("final")
        sha = hashlib.sha256(manifest).hexdigest()
        board = published is not None and json.loads(published[1]).get("manifest_sha256") == sha
        if published is not None and board:
            (out / BOARD).write_text(published[1], encoding="utf-8")
        commitments = commitment_dict(store)
        try:
            commitments["salt"] = revealed(store, Path(scratch) / "revealed")[1]
        except NotRevealed:
            commitments["salt"] = None
    text = json.dumps(commitments, indent=2, sort_keys=True) + "\n"
    (out / COMMITMENT).write_text(text, encoding="utf-8")
    if (folder / site.COMPETITION).is_file():
        shutil.copyfile(folder / site.COMPETITION, out / site.COMPETITION)
    return Exported(len(entries), board)
