"""The boards a server shows, built off the request path: a page never waits for a bootstrap.

Building a board reads every ranked submission's per-user scores and resamples them (a few
seconds at a million users). Each board is built once per leaderboard run, in the scoring
loop's thread right after the run or, the first time one is asked for, by the request; while
a newer one is built, requests get the one before it."""

from __future__ import annotations

import threading
from datetime import datetime
from pathlib import Path

from scorer.leaderboard.boards import Boards, Phase, build
from scorer.leaderboard.store import Store as Board

#: Which boards: the phase, and the freeze they stop at (None: not frozen).
Key = tuple[Phase, datetime | None]


class Shown:
    """The latest boards of a leaderboard database, by `Key`."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._built: dict[Key, tuple[int | None, Boards]] = {}
        self._lock = threading.Lock()  # guards `_built` and `_building`
        self._building: dict[Key, threading.Lock] = {}

    def get(self, key: Key) -> Boards:
        """The boards of the latest run, or, while they are being built, the ones before."""
        with Board(self.path, create=False) as board:
            latest = board.published()
        with self._lock:
            found = self._built.get(key)
        if found is None:
            return self.build(key)
        if found[0] != (None if latest is None else latest.id):
            self.refresh(key)
        return found[1]

    def refresh(self, key: Key) -> None:
        """Build the boards anew in a thread of its own, unless a build is under way."""
        if not self._busy(key):
            threading.Thread(target=self.build, args=(key,), daemon=True).start()

    def _busy(self, key: Key) -> bool:
        with self._lock:
            building = self._building.get(key)
        return building is not None and building.locked()

    def build(self, key: Key) -> Boards:
        """Build the boards of the latest run (once at a time for a key) and keep them."""
        with self._lock:
            building = self._building.setdefault(key, threading.Lock())
        if not building.acquire(blocking=False):  # another thread builds them: wait for it
            with building:
                return self._built[key][1]
        try:
            with Board(self.path, create=False) as board:
                board.db.execute("BEGIN")  # one snapshot, whatever a run writes meanwhile
                try:
                    shown = board.published()
                    boards = build(board, key[0], before=key[1])
                finally:
                    board.db.execute("ROLLBACK")
            with self._lock:
                self._built[key] = (None if shown is None else shown.id, boards)
            return boards
        finally:
            building.release()
