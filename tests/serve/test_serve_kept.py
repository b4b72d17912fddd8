"""Uploads kept small (`sqlkept`), on both stores: once judged, an upload's kept form takes the
place of its bytes as received, and every reader gets those bytes back exactly, so that a
rescore judges the very file that was sent, a rejection's report included; a stop at any
step of keeping one leaves it readable, and what it left is swept at the next start."""

from __future__ import annotations

import hashlib
from pathlib import Path

import polars as pl
import pytest
from support.postgres_cluster import new_database
from support.serve_live import DATA, SAMPLE, SOLUTION, own_worker, scorer, until, upload

from scorer.api import score
from scorer.kept import Reference, smaller
from scorer.serve import site
from scorer.serve.sql import SqlStore
from scorer.serve.sqlite import SqliteStore
from scorer.serve.sqlkept import KEPT, PARTIAL, REFERENCES
from scorer.serve.store import Status, kept_name, upload_name

#: A file rejected with many problems at once: its report is long and exact.
BROKEN = DATA / "broken" / "several_problems.csv"


@pytest.fixture(params=["sqlite", "postgres"])
def folder(request: pytest.FixtureRequest, tmp_path: Path) -> Path:
    """A server folder on each store."""
    url = None if request.param == "sqlite" else new_database(request.getfixturevalue("postgres"))
    site.init(tmp_path / "srv", SOLUTION, settings=site.Settings(title="t", db=url))
    return tmp_path / "srv"


def kept_bytes(store: SqlStore, ident: int, scratch: Path) -> bytes:
    entry = store.entry(ident)
    assert entry is not None
    scratch.mkdir(exist_ok=True)
    return store.upload_file(ident, entry.path, entry.sha256, scratch).read_bytes()


def test_a_judged_upload_is_kept_small_and_a_rescore_judges_the_bytes_sent(
    tmp_path: Path, folder: Path
) -> None:
    store = site.store_of(folder)
    team = store.add_team("alpha", "0" * 64)
    scored, rejected = (
        upload(store, folder, team, "one"),
        upload(store, folder, team, "two", BROKEN),
    )
    home = tmp_path / "home"
    running, _ = own_worker(store, folder, home)
    running.start()
    try:
        until(lambda: all(store.kept(i) is not None for i in (scored, rejected)))
        report = store.saved(rejected).error  # type: ignore[union-attr]
        assert store.entry(rejected).status is Status.REJECTED  # type: ignore[union-attr]
        for ident, sent in ((scored, SAMPLE), (rejected, BROKEN)):
            assert kept_bytes(store, ident, tmp_path / f"read-{ident}") == sent.read_bytes()
            (size,) = store._read("SELECT size FROM kept WHERE submission = ?", ident).fetchone()
            assert size <= 0.2 * sent.stat().st_size
        targets = hashlib.sha256((folder / site.TARGETS).read_bytes()).hexdigest()
        assert {store.kept(i) for i in (scored, rejected)} == {targets}
        if store.HOLDS_FILES:  # the bytes as received are gone from the database
            names = {n for (n,) in store._read("SELECT DISTINCT name FROM files").fetchall()}
            assert upload_name(scored) not in names and kept_name(scored) in names
            assert f"{REFERENCES}/{targets}" in names
        else:  # and from the folder: the kept form and the reference are there instead
            sent = folder / store.entry(scored).path  # type: ignore[union-attr]
            assert not sent.exists() and (sent.parent / KEPT).is_file()
            assert (folder / REFERENCES / targets).read_bytes() == (
                folder / site.TARGETS
            ).read_bytes()

        # a fixed solution: both judged again from their kept form, the report unchanged
        fixed = tmp_path / "fixed.csv"
        pl.read_csv(SOLUTION).reverse().write_csv(fixed)  # the same pairs: other bytes
        scorer("serve", "solution", folder, "--solution", fixed)
        until(lambda: store.rescoring() is None and not store.queue()["queued"])
        now = store.entry(scored)
        assert now is not None and now.public_score == score(SAMPLE, fixed).public
        again = store.saved(rejected)
        assert again is not None and again.fingerprint.solution_hash != ""
        assert again.error == report
    finally:
        running.stop()
    assert list(home.iterdir()) == ([home / site.SOLUTION] if store.HOLDS_FILES else [])


def test_a_stop_at_any_step_of_keeping_leaves_the_upload_readable_and_swept(
    tmp_path: Path,
) -> None:
    """Each state a kill -9 can leave `SqliteStore._put_kept` in, made by hand: the upload
    reads as sent in each, and the next start's sweep leaves only what the store names."""
    site.init(tmp_path / "srv", SOLUTION, settings=site.Settings(title="t"))
    folder = tmp_path / "srv"
    store = site.store_of(folder)
    assert isinstance(store, SqliteStore)
    team = store.add_team("alpha", "0" * 64)
    ident = upload(store, folder, team, "one")
    entry = store.entry(ident)
    assert entry is not None
    sent, data = folder / entry.path, SAMPLE.read_bytes()
    reference = Reference.of((folder / site.TARGETS).read_bytes())
    blob = smaller(data, reference, entry.sha256)
    assert blob is not None

    # cut while the kept form was written; then once it was whole, before the record
    for left in (PARTIAL, KEPT):
        (sent.parent / left).write_bytes(blob[: len(blob) // 2] if left == PARTIAL else blob)
        assert kept_bytes(store, ident, tmp_path / "read") == data
        assert store.sweep_kept() == 1
        assert sorted(p.name for p in sent.parent.iterdir()) == [sent.name]

    # cut after the record, before the bytes as received were removed
    (sent.parent / KEPT).write_bytes(blob)
    with store._write() as db:
        store._run(db, "INSERT INTO kept VALUES (?, ?, ?, ?)", ident, reference.sha256, 1, "t")
    (folder / REFERENCES).mkdir()
    (folder / REFERENCES / reference.sha256).write_bytes((folder / site.TARGETS).read_bytes())
    (folder / REFERENCES / f"{PARTIAL}-x").write_bytes(b"half a reference")
    assert kept_bytes(store, ident, tmp_path / "read") == data
    assert store.sweep_kept() == 2
    assert sorted(p.name for p in sent.parent.iterdir()) == [KEPT]
    assert [p.name for p in (folder / REFERENCES).iterdir()] == [reference.sha256]
    assert kept_bytes(store, ident, tmp_path / "read") == data
    assert store.recover(store.clock()) == 0  # the sweep runs at every start: nothing left
