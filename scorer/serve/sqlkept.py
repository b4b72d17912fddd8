"""An upload's bytes as a store keeps them: as received until its verdict, then in their kept
form (`scorer.kept`: the same bytes, coded against the public targets, in about an eighth of
the room), beside the reference it names; and the one reader of both (`upload_file`), which
gives the bytes as received, whichever form holds them.

The kept form gives back the very bytes the team sent (their sha256, checked at every read),
so a verdict judged from it, a rejection's report included, is the one judged from the
upload: nothing of the scoring knows the difference. The references are kept by their
sha256 for as long as the store holds a kept form: a server's targets never change while it
runs (`rescore.replace` refuses a solution of other users), so there is one."""

from __future__ import annotations

import hashlib
import threading
from pathlib import Path

from scorer.kept import KeptError, Reference, unpacked
from scorer.serve.sqlcore import SqlCore
from scorer.serve.store import utc

#: The references read last, by sha256: one a server, about 70 bytes a target user.
_REFERENCES: dict[str, Reference] = {}
_REFERENCES_LOCK = threading.Lock()


def reference_of(path: Path) -> Reference:
    """The `Reference` of the file at `path`, read once a process for each sha256."""
    data = path.read_bytes()
    sha = hashlib.sha256(data).hexdigest()
    with _REFERENCES_LOCK:
        if sha not in _REFERENCES:
            _REFERENCES.clear()  # the one in force: a server has one set of targets
            _REFERENCES[sha] = Reference.of(data)
        return _REFERENCES[sha]


def _drop_fetched(path: Path, scratch: Path) -> None:
    """Remove a file a dialect fetched into `scratch` once read (one in the server's folder
    stays)."""
    if path.is_relative_to(scratch):
        path.unlink(missing_ok=True)


class KeptUploads(SqlCore):
    """Uploads kept small, for every dialect: which are (`kept`), keeping one
    (`keep_small`), and reading any (`upload_file`). A dialect gives where the bytes lie:
    `_received_file`, `_kept_file`, `_reference_file`, `_targets_file`, `_put_kept`."""

    def kept(self, submission: int) -> str | None:
        """The sha256 of the reference a kept upload names; None while it is as received."""
        row = self._read("SELECT reference FROM kept WHERE submission = ?", submission)
        found = row.fetchone()
        return None if found is None else str(found[0])

    def upload_file(self, submission: int, path: str, sha256: str, scratch: Path) -> Path:
        """An upload's bytes as received, under the name its team gave it (the name its
        report says): where the store keeps them, or a file in `scratch` (a folder of the
        caller's own, removed when it is done), checked against the `sha256` the upload was
        accepted with. The one way any part of a server reads an upload's bytes."""
        for attempt in range(2):
            reference = self.kept(submission)
            try:
                if reference is None:
                    return self._received_file(submission, path, sha256, scratch)
                return self._unpacked(submission, path, sha256, reference, scratch)
            except FileNotFoundError:  # kept small between the look and the read: again
                if attempt:
                    raise
        raise AssertionError("unreachable")

    def _unpacked(
        self, submission: int, path: str, sha256: str, reference: str, scratch: Path
    ) -> Path:
        """A kept upload's bytes as received, written in `scratch` from its kept form."""
        with _REFERENCES_LOCK:
            known = _REFERENCES.get(reference)
        if known is None:
            found = self._reference_file(reference, scratch)
            known = reference_of(found)
            _drop_fetched(found, scratch)
        blob = self._kept_file(submission, path, scratch)
        kept = blob.read_bytes()
        _drop_fetched(blob, scratch)
        dest = scratch / Path(path).name
        hashed = hashlib.sha256()
        try:
            with dest.open("wb") as out:
                for piece in unpacked(kept, known):
                    hashed.update(piece)
                    out.write(piece)
        except KeptError as exc:
            dest.unlink(missing_ok=True)
            raise KeptError(f"submission {submission}: its kept form is broken ({exc})") from None
        if hashed.hexdigest() != sha256:
            dest.unlink(missing_ok=True)
            raise KeptError(
                f"submission {submission}: its bytes are not those it was accepted with"
            )
        return dest

    def targets_file(self, scratch: Path) -> Path:
        """The server's public targets, which uploads are kept against: where they lie, or
        a copy in `scratch`."""
        return self._targets_file(scratch)

    def keep_small(
        self, submission: int, path: str, blob: bytes, reference: str, scratch: Path
    ) -> None:
        """Put an upload's kept form (`blob`, checked by the caller to give back its bytes)
        in place of its bytes as received, and keep the public targets it was packed
        against (their sha256: `reference`) for as long as it is kept: each step such that
        a stop at any point, kill -9 included, leaves the upload readable (`upload_file`)
        and no file the store does not name, or one its sweep removes at the next start
        (`SqliteStore.recover`). Targets that are not those of `reference` any more keep
        nothing (`KeptError`)."""
        self._put_kept(submission, path, blob, reference, utc().isoformat(), scratch)

    # a dialect's

    def _received_file(self, submission: int, path: str, sha256: str, scratch: Path) -> Path:
        """An upload's bytes as received (`FileNotFoundError` when kept small meanwhile)."""
        raise NotImplementedError

    def _kept_file(self, submission: int, path: str, scratch: Path) -> Path:
        """A kept upload's kept form, where it lies or fetched into `scratch`."""
        raise NotImplementedError

    def _reference_file(self, sha256: str, scratch: Path) -> Path:
        """The reference of this sha256, where it lies or fetched into `scratch`."""
        raise NotImplementedError

    def _targets_file(self, scratch: Path) -> Path:
        """The server's public targets (`store.TARGETS`), where they lie or fetched."""
        raise NotImplementedError

    def _put_kept(
        self, submission: int, path: str, blob: bytes, reference: str, at: str, scratch: Path
    ) -> None:
        raise NotImplementedError


#: The kept form's name in an upload's own folder, and its name while it is written: a
#: name an upload never has (`uploads.stored_name` keeps no name that starts with a dot).
KEPT, PARTIAL = ".kept", ".kept.partial"

#: Where the references lie, by sha256: a folder of the server's, or names of its database.
REFERENCES = "references"
