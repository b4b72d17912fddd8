"""A web process's boards when workers score elsewhere: the verdicts they wrote to the
database, copied into the process's own leaderboard database, whose boards it shows.

Each change of the verdicts or the picks is a leaderboard run that judges nothing: every
submission `serve export` writes, each with the verdict its worker wrote whole (per-user
scores included), so the boards are those `scorer leaderboard score` gives on the export. A
verdict copied once is reused by its content and fingerprint, as the engine reuses its own."""

from __future__ import annotations

import sys
import threading
import traceback
from collections import Counter
from collections.abc import Callable
from pathlib import Path

from scorer.leaderboard import runs
from scorer.leaderboard.store import Store as Board
from scorer.serve.jobs import BOARD, IDLE, exported, submission
from scorer.serve.postgres import PostgresStore
from scorer.serve.sql import StoreUnavailable

#: The least time between two copies, in seconds. Each one builds the boards again (every
#: ranked submission's per-user scores resampled): copied at each verdict, as workers give
#: one a second at 100k users, that took most of a web process's core (bench/SERVE.md). A
#: verdict is its team's at once; the boards show it within this.
EVERY = 5.0


class Mirror:
    """The copying loop, in a thread of its own: `start`, `nudge` (picks changed), `stop`."""

    def __init__(
        self, folder: Path, store: PostgresStore, published: Callable[[], None] = lambda: None
    ) -> None:
        self.folder, self.store, self.published = folder, store, published
        self.cancel = threading.Event()
        self._wake = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="scorer-mirror", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def nudge(self, *, rerun: bool = False) -> None:
        self._wake.set()

    def stop(self, timeout: float = 30.0) -> None:
        self.cancel.set()
        self._wake.set()
        self._thread.join(timeout)

    def _loop(self) -> None:
        seen = -1
        with Board(self.folder / BOARD) as board:
            while not self.cancel.is_set():
                self._wake.clear()
                try:
                    change = self.store.last_change()  # one indexed read while nothing changes
                    if change != seen:
                        copy(self.store, board, self.folder)
                        seen = change
                        self.published()
                        self.cancel.wait(EVERY)  # what comes meanwhile is the next copy's
                except StoreUnavailable as exc:  # the database away: tried again
                    print(f"scorer serve: cannot reach the database ({exc})", file=sys.stderr)
                except Exception:  # a full disk, a bug: told, tried again
                    traceback.print_exc(file=sys.stderr)
                self._wake.wait(IDLE)


def copy(store: PostgresStore, board: Board, folder: Path) -> None:
    """One leaderboard run whose verdicts are the workers': the boards of the database now."""
    judged, fingerprint = store.judged()
    entries = [e for e in store.entries() if exported(e) and e.id in judged]
    if not entries or fingerprint is None:
        return
    # The run is under the newest verdict's fingerprint: workers of one scorer on one
    # solution all write the same one, and a verdict of another is copied as it was written.
    run = runs.start(board, fingerprint, len(entries))
    pairs, counts = [], Counter({"total": len(entries)})
    for entry in entries:
        logged = submission(entry, folder)
        known = runs.cached(board, entry.team, entry.name, entry.sha256, fingerprint)
        if known is not None:
            runs.note_judged(board, run)
            pairs.append((logged, known.id))
            counts[str(known.status)] += 1
            continue
        whole = store.verdict(entry.id)
        if whole is None:  # cannot be: its fingerprint was read above, and none is deleted
            continue
        ident = runs.save(
            board,
            run,
            logged,
            status=whole.status,
            content_hash=entry.sha256,
            scores=whole.scores,
            error=whole.error,
            per_user=whole.arrays(),
            seconds=whole.seconds,
        )
        pairs.append((logged, ident))
        counts[str(whole.status)] += 1
    runs.finish(board, run, pairs, dict(counts))
