"""Hostile inputs are refused by name, in seconds and bounded memory: never a traceback, a hang
or an exhausted machine.

Files that are small on disk and huge once read are made at test time from a seed
(`hostile_files`) and run through `scorer validate` and `scorer score` as subprocesses,
measured. Paths that are not files (a named pipe, a folder, a link out of a folder), a file
swapped while the leaderboard scores it, and the system refusing a read or a write (a
read-only database, permission denied, a full disk, a folder where an output goes) follow.
"""

from __future__ import annotations

import ctypes
import errno
import gzip
import hashlib
import json
import os
import shutil
import sqlite3
import subprocess
import sys
import threading
import zipfile
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import polars as pl
import pytest
from support.hostile_files import (
    BGZF_EOF,
    HOSTILE,
    KAGGLE_CELL,
    MB,
    ROOT,
    ZIP_BUDGET,
    ZIPS,
    Hostile,
    Measured,
    Member,
    deflated,
    gzip_rows,
    measured,
    scorer_command,
    stored,
    write_zip,
    zip_padded,
)
from typer.testing import CliRunner

import scorer
from scorer.cli import app
from scorer.contract import Role, spec_of
from scorer.errors import FileSystemError, HostError, SubmissionError, UsageError
from scorer.leaderboard import batch, runs
from scorer.leaderboard.manifest import ManifestError, read_log
from scorer.leaderboard.results import BatchResult, Outcome
from scorer.leaderboard.schema import Status
from scorer.leaderboard.store import Store
from scorer.platforms import codabench, evalai, kaggle
from scorer.read import Bound, Limits, Rejected, archive, files, footprint, read_table
from scorer.read import inflate as inflate_module
from scorer.read.limits import WHOLE_ROWS_FLOOR

CORPUS = ROOT / "tests" / "corpus"
SOLUTION = str(CORPUS / "solution.csv")
TARGETS = str(CORPUS / "targets.csv")
VALID = CORPUS / "sub" / "valid.csv"
BROKEN = CORPUS / "sub" / "duplicated_row.csv"

#: What refusing a hostile file may cost at most: the child's own peak RSS and wall time.
MAX_RSS_MB = 4096
MAX_SECONDS = 120

runner = CliRunner()

needs_fifo = pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs named pipes")


def refused(run: Measured, code: str, rss_mb: float = MAX_RSS_MB) -> dict[str, Any]:
    """The one problem of a run that must exit 1 with `code`, cleanly and within bounds (a
    peak RSS under `rss_mb`)."""
    assert "Traceback" not in run.stderr and "panicked" not in run.stderr, run.stderr[-2000:]
    assert run.exit == 1, (run.stdout[-2000:], run.stderr[-2000:])
    data = run.json()
    assert data["error"]["code"] == "submission_rejected"
    problems = data["error"]["problems"]
    assert [p["code"] for p in problems] == [code]
    assert run.rss_mb < rss_mb, f"peak RSS {run.rss_mb:.0f} MiB"
    assert run.wall < MAX_SECONDS, f"{run.wall:.1f} s"
    found: dict[str, Any] = problems[0]
    return found


# -- files small on disk, huge once read -------------------------------------------------------


@pytest.fixture(scope="module")
def made(tmp_path_factory: pytest.TempPathFactory) -> Callable[[Hostile], Path]:
    """Each hostile file, made once for the module."""
    folder = tmp_path_factory.mktemp("hostile")

    def make(hostile: Hostile) -> Path:
        path = folder / hostile.name
        if not path.exists():
            hostile.make(path)
        return path

    return make


HOSTILE_FILES = [
    pytest.param(h, id=h.name, marks=[pytest.mark.slow] if h.slow else []) for h in HOSTILE
]


@pytest.mark.parametrize("hostile", HOSTILE_FILES)
@pytest.mark.parametrize("command", ["validate", "score"])
def test_a_hostile_file_is_refused_by_name_in_bounded_memory(
    hostile: Hostile, command: str, made: Callable[[Hostile], Path]
) -> None:
    path = made(hostile)
    assert path.stat().st_size < 40 * MB, "hostile files are small on disk"
    truth = ["--targets", TARGETS] if command == "validate" else ["--solution", SOLUTION]
    run = measured(scorer_command(command, str(path), *truth, "--json"))
    refused(run, hostile.code)


def test_a_small_gzip_file_is_still_read(tmp_path: Path) -> None:
    """The control: a gzip file within every cap is read and judged row by row."""
    path = tmp_path / "valid.csv.gz"
    path.write_bytes(gzip.compress(VALID.read_bytes()))
    result = runner.invoke(app, ["score", str(path), "--solution", SOLUTION])
    assert result.exit_code == 0, result.output


# -- zip archives: the budget that holds for gzip and Parquet holds for zip --------------------

BUDGET = ["--max-memory", str(ZIP_BUDGET)]
BUDGET_MB = ZIP_BUDGET / MB

#: What each hostile zip's message says.
ZIP_MESSAGES = {
    "bzip2.zip": "bzip2.zip: 'submission.csv' in the zip is compressed with bzip2 (method 12); "
    "only deflate, what zip tools use by default, or no compression is accepted",
    "deflate_bomb.zip": "deflate_bomb.zip: the file expands more than 100 times when decompressed",
    "entries.zip": "entries.zip: the zip holds 1,500,000 entries; expected one .csv or "
    ".parquet file",
}


@pytest.mark.parametrize("hostile", ZIPS, ids=[h.name for h in ZIPS])
@pytest.mark.parametrize("command", ["validate", "score"])
def test_a_hostile_zip_is_refused_by_name_within_the_memory_budget(
    hostile: Hostile, command: str, made: Callable[[Hostile], Path]
) -> None:
    """A bzip2 member was expanded whole (1 GiB of it took 2.1 GB, whatever its entry says),
    a deflate bomb copied out to its end with no ratio check, and a central directory parsed
    whole before its entries were counted (1,500,000 of them took 600 MB, 3 million 1.2 GB
    and 36 s): each is now refused from its directory, unread."""
    path = made(hostile)
    assert path.stat().st_size < 80 * MB
    truth = ["--targets", TARGETS] if command == "validate" else ["--solution", SOLUTION]
    run = measured(scorer_command(command, str(path), *truth, *BUDGET, "--json"))
    found = refused(run, hostile.code, rss_mb=BUDGET_MB)
    assert found["examples"][0]["message"].startswith(ZIP_MESSAGES[hostile.name])


def test_a_deflate_bomb_whose_entry_claims_a_fair_ratio_stops_as_it_expands(
    tmp_path: Path,
) -> None:
    """The entry of a member padded after its stream claims 70 times (within the cap); its
    output is checked against the bytes read as it expands, as a .csv.gz's is, and stops at
    100 times them, after the first MiB (this zip wrote 1 GiB to disk before)."""
    path = tmp_path / "padded.zip"
    zip_padded(path)
    run = measured(scorer_command("score", str(path), "--solution", SOLUTION, "--json"))
    found = refused(run, "file_too_large", rss_mb=BUDGET_MB)
    message = found["examples"][0]["message"]
    assert message.startswith("padded.zip: the file expands more than 100 times")
    assert f"bytes from its first {MB:,});" in message


@pytest.mark.parametrize("tail", [BGZF_EOF, gzip.compress(b"", mtime=0)], ids=["bgzip", "empty"])
def test_an_empty_gzip_member_appended_changes_no_decision(tmp_path: Path, tail: bytes) -> None:
    """The planner took the last member's trailer for the file's size: 16 MiB of rows were
    refused within a 320 MiB budget in one member and read whole with an empty member after
    them (its trailer records 0 bytes). A trailer recording less than the file holds is now
    taken for several members, and the file estimated at the most it may expand to."""
    one = tmp_path / "one.csv.gz"
    gzip_rows(one, expanded=16 * MB)
    two = tmp_path / "two.csv.gz"
    two.write_bytes(one.read_bytes() + tail)
    assert footprint(two) >= footprint(one) > 15 * MB
    budget = ["--max-memory", str(320 * MB)]
    for path in (one, two):
        run = measured(
            scorer_command("score", str(path), "--solution", SOLUTION, *budget, "--json")
        )
        refused(run, "too_large_for_memory", rss_mb=320)


def test_a_40_mb_cell_given_to_the_kaggle_adapter_is_refused_before_conversion() -> None:
    run = measured([sys.executable, "-c", KAGGLE_CELL], timeout=MAX_SECONDS)
    assert run.exit == 1, run.stderr[-2000:]
    # Kaggle names no row (tests/platforms/test_kits.py)
    assert run.stdout == kaggle.ROW_PROBLEMS + "\n"
    assert run.rss_mb < 1024, f"peak RSS {run.rss_mb:.0f} MiB"


def test_a_frame_with_more_rows_than_a_valid_submission_can_have_is_refused() -> None:
    count = WHOLE_ROWS_FLOOR + 1  # a small table is judged row by row, as its CSV twin
    rows = pd.DataFrame({"user_id": 1001, "edition_id": range(count), "rank": 1})
    with pytest.raises(SubmissionError) as caught:
        scorer.validate(rows, targets=TARGETS)
    (found,) = caught.value.report.problems
    assert found.code == "too_many_rows"
    assert "a valid submission has at most 80 rows" in found.examples[0].message


# -- not a file --------------------------------------------------------------------------------


def cli(*args: str, timeout: float = 60, **extra: Any) -> subprocess.CompletedProcess[str]:
    """The CLI in a subprocess, killed after `timeout` seconds: a hang fails, never blocks."""
    return subprocess.run(
        scorer_command(*args),
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=timeout,
        **extra,
    )


@needs_fifo
@pytest.mark.parametrize("command", ["validate", "score"])
def test_a_named_pipe_is_refused_without_being_opened(tmp_path: Path, command: str) -> None:
    pipe = tmp_path / "sub.csv"
    os.mkfifo(pipe)
    truth = ["--targets", TARGETS] if command == "validate" else ["--solution", SOLUTION]
    done = cli(command, str(pipe), *truth, "--json")
    assert done.returncode == 1, done.stderr
    (found,) = json.loads(done.stdout)["error"]["problems"]
    assert found["code"] == "not_a_file"
    assert found["examples"][0]["message"] == (
        "sub.csv: is not a regular file (a named pipe); expected a file"
    )


@needs_fifo
@pytest.mark.parametrize("option", ["--targets", "--solution"])
def test_a_named_pipe_as_the_organisers_file_is_theirs(tmp_path: Path, option: str) -> None:
    pipe = tmp_path / "truth.csv"
    os.mkfifo(pipe)
    done = cli("validate", str(VALID), option, str(pipe), "--json")
    assert done.returncode == 2, done.stderr
    data = json.loads(done.stdout)
    assert data["error"]["code"] == "organiser_file_broken"
    assert data["error"]["problems"][0]["code"] == "not_a_file"


def test_a_folder_is_refused_by_name(tmp_path: Path) -> None:
    folder = tmp_path / "sub.csv"
    folder.mkdir()
    result = runner.invoke(app, ["validate", str(folder), "--targets", TARGETS])
    assert result.exit_code == 1
    assert "sub.csv: is a directory; expected a file" in result.output


@needs_fifo
def test_a_pipe_swapped_in_after_the_check_is_refused_without_blocking(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The descriptor is judged too (`fstat`), and opened without blocking: a pipe put in
    place between the check and the open is refused, not waited on for a writer."""
    pipe = tmp_path / "sub.csv"
    os.mkfifo(pipe)
    monkeypatch.setattr(files, "check_regular", lambda path, file: None)
    outcome: list[BaseException] = []

    def open_it() -> None:
        try:
            with files.open_regular(pipe, "sub.csv"):
                pass
        except Rejected as exc:
            outcome.append(exc)

    worker = threading.Thread(target=open_it, daemon=True)
    worker.start()
    worker.join(timeout=10)
    assert not worker.is_alive(), "opening a named pipe blocked"
    assert isinstance(outcome[0], Rejected)
    assert outcome[0].report.codes == ["not_a_file"]


# -- the leaderboard: links, pipes, swapped files --------------------------------------------


def uploads(root: Path) -> Path:
    """A team-folder log: team a holds the valid file, team b a broken one."""
    (root / "a").mkdir(parents=True)
    (root / "b").mkdir()
    shutil.copy(VALID, root / "a" / "good.csv")
    shutil.copy(BROKEN, root / "b" / "broken.csv")
    return root


def outcomes(result: BatchResult) -> dict[str, Outcome]:
    return {o.path: o for o in result.outcomes}


def test_a_link_out_of_a_team_folder_is_refused_unread(tmp_path: Path) -> None:
    root = uploads(tmp_path / "uploads")
    secret = tmp_path / "secret.csv"
    secret.write_text("user_id,edition_id,rank\nTOP SECRET LINE\n")
    (root / "b" / "stolen.csv").symlink_to(secret)
    (root / "b" / "theirs.csv").symlink_to(root / "a" / "good.csv")  # another team's file
    (root / "a" / "again.csv").symlink_to(root / "a" / "good.csv")  # its own: followed
    result = batch.score_log(root, Path(SOLUTION), tmp_path / "board.db")
    found = outcomes(result)
    for key in ("b/stolen.csv", "b/theirs.csv"):
        assert found[key].status == Status.REJECTED
        assert found[key].error is not None
        (problem,) = found[key].error["problems"]
        assert problem["code"] == "not_a_file"
        assert "leads out of the team's folder" in problem["examples"][0]["message"]
    assert found["a/again.csv"].status == found["a/good.csv"].status == Status.SCORED
    assert "SECRET" not in json.dumps(result.to_dict())


def test_a_selection_file_linked_out_of_the_folder_is_not_read(tmp_path: Path) -> None:
    root = uploads(tmp_path / "uploads")
    secret = tmp_path / "secret.txt"
    secret.write_text("TOP SECRET LINE\n")
    (root / "a" / "selected.txt").symlink_to(secret)
    with pytest.raises(ManifestError) as caught:
        read_log(root)
    assert caught.value.report.codes == ["not_a_file"]
    assert "SECRET" not in str(caught.value)


@needs_fifo
def test_named_pipes_in_a_log_are_rejected_entries_and_the_batch_goes_on(tmp_path: Path) -> None:
    root = uploads(tmp_path / "uploads")
    os.mkfifo(root / "b" / "pipe.csv")
    os.mkfifo(root / "a" / "selected.txt")
    with pytest.raises(ManifestError) as caught:  # the selection is the log's own file
        read_log(root)
    assert caught.value.report.codes == ["not_a_file"]
    (root / "a" / "selected.txt").unlink()
    manifest = tmp_path / "manifest.csv"
    os.mkfifo(tmp_path / "listed.csv")
    manifest.write_text(
        "team,path,submitted_at\n"
        "a,uploads/a/good.csv,2024-05-01T10:00:00Z\n"
        "b,listed.csv,2024-05-01T11:00:00Z\n"
    )
    for log in (root, manifest):
        result = batch.score_log(log, Path(SOLUTION), tmp_path / f"{log.name}.db")
        statuses = {o.path: o.status for o in result.outcomes}
        piped = next(o for o in result.outcomes if o.path.endswith(("pipe.csv", "listed.csv")))
        assert piped.status == Status.REJECTED and piped.error is not None
        assert piped.error["problems"][0]["code"] == "not_a_file"
        assert Status.SCORED in statuses.values()


def test_a_file_swapped_while_it_is_scored_keeps_the_verdict_of_the_bytes_scored(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The cache check hashes the file, then it is swapped (valid → broken) before it is
    read: the verdict stored is the broken file's, under the broken file's hash, so the valid
    file put back is scored again, not served the broken file's verdict from the cache."""
    root = uploads(tmp_path / "uploads")
    path = root / "a" / "good.csv"
    hashed = batch.file_hash

    def hash_then_swap(target: Path, *args: Any) -> str | None:
        digest = hashed(target, *args)
        if target == path:
            shutil.copy(BROKEN, path)
        return digest

    monkeypatch.setattr(batch, "file_hash", hash_then_swap)
    db = tmp_path / "board.db"
    first = outcomes(batch.score_log(root, Path(SOLUTION), db))["a/good.csv"]
    assert first.status == Status.REJECTED  # what was read: the broken bytes
    with sqlite3.connect(db) as con:
        (stored,) = con.execute("SELECT content_hash FROM verdicts WHERE path = 'a/good.csv'")
    assert stored[0] == hashlib.sha256(BROKEN.read_bytes()).hexdigest()
    monkeypatch.undo()
    shutil.copy(VALID, path)
    again = outcomes(batch.score_log(root, Path(SOLUTION), db))["a/good.csv"]
    assert (again.status, again.cached) == (Status.SCORED, False)


def test_a_solution_changed_during_a_run_stops_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = uploads(tmp_path / "uploads")
    solution = tmp_path / "solution.csv"
    shutil.copy(SOLUTION, solution)

    def change_then_look(store: Store, digest: str) -> bool:  # between the hash and the read
        solution.write_bytes(solution.read_bytes() + b"1001,700099,public\n")
        return False

    monkeypatch.setattr(batch.runs, "has_solution", change_then_look)
    with pytest.raises(UsageError, match="the solution file changed during the run"):
        batch.score_log(root, solution, tmp_path / "board.db")


def test_a_codabench_link_to_the_reference_data_is_refused(tmp_path: Path) -> None:
    inputs = tmp_path / "input"
    (inputs / "ref").mkdir(parents=True)
    (inputs / "res").mkdir()
    shutil.copy(SOLUTION, inputs / "ref" / "solution.csv")
    (inputs / "res" / "sub.csv").symlink_to(inputs / "ref" / "solution.csv")
    with pytest.raises(SubmissionError) as caught:
        codabench.run(inputs, tmp_path / "output")
    assert caught.value.report.codes == ["not_a_file"]
    assert not (tmp_path / "output" / "scores.json").exists()
    assert "700001" not in (tmp_path / "output" / "detailed_results.html").read_text()


def test_an_evalai_link_out_of_its_folder_is_refused(tmp_path: Path) -> None:
    (tmp_path / "upload").mkdir()
    link = tmp_path / "upload" / "sub.csv"
    link.symlink_to(SOLUTION)
    with pytest.raises(SubmissionError) as caught:
        evalai.evaluate(SOLUTION, link, "dev")
    assert caught.value.report.codes == ["not_a_file"]


# -- the system refuses ------------------------------------------------------------------------


def honest(text: str) -> None:
    assert "internal error" not in text and "please report" not in text, text
    assert "Traceback" not in text, text


#: Linux capabilities that let root ignore file modes: CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH,
#: CAP_FOWNER. A child of root without them finds a file of mode 0444 read-only, as anyone.
_DAC_CAPABILITIES = (1, 2, 3)
_PR_CAPBSET_DROP = 24


def _without_override() -> None:
    if os.geteuid() != 0:
        return
    libc = ctypes.CDLL(None, use_errno=True)
    for capability in _DAC_CAPABILITIES:
        if libc.prctl(_PR_CAPBSET_DROP, capability, 0, 0, 0) != 0:
            raise OSError(ctypes.get_errno(), "prctl(PR_CAPBSET_DROP)")


def bound_by_modes(*args: str) -> subprocess.CompletedProcess[str]:
    """The CLI in a child that file modes bind: this user, or root without the capabilities
    that override them."""
    if sys.platform != "linux" and os.geteuid() == 0:
        pytest.skip("dropping root's rights to files needs Linux")
    return cli(
        *args,
        timeout=120,
        preexec_fn=_without_override,
    )


def test_a_read_only_database_says_so(tmp_path: Path) -> None:
    root = uploads(tmp_path / "uploads")
    db = tmp_path / "board.db"
    batch.score_log(root, Path(SOLUTION), db)
    with sqlite3.connect(db) as con:  # one file, no journal beside it
        con.execute("PRAGMA journal_mode=DELETE")
    for path in (*tmp_path.rglob("*"), tmp_path):
        path.chmod(0o555 if path.is_dir() else 0o444)
    done = bound_by_modes(
        "leaderboard", "score", str(root), "--solution", SOLUTION, "--db", str(db)
    )
    assert done.returncode == 2, done.stdout + done.stderr
    honest(done.stderr)
    assert str(db) in done.stderr
    assert (
        "readonly" in done.stderr or "read-only" in done.stderr or "unable to open" in done.stderr
    )
    assert "not a leaderboard database" not in done.stderr


def test_an_unreadable_submission_says_permission_denied(tmp_path: Path) -> None:
    """The command line's own check names an unreadable argument; the reader names one it
    meets in a log, with the system's reason, and the batch goes on."""
    root = uploads(tmp_path / "uploads")
    path = root / "b" / "broken.csv"
    path.chmod(0o000)
    done = bound_by_modes("validate", str(path), "--targets", TARGETS)
    assert done.returncode == 2, done.stdout + done.stderr
    honest(done.stderr)
    assert "is not readable" in done.stderr
    db = tmp_path / "board.db"
    done = bound_by_modes(
        "leaderboard", "score", str(root), "--solution", SOLUTION, "--db", str(db), "--json"
    )
    assert done.returncode == 2, done.stdout + done.stderr
    honest(done.stdout + done.stderr)
    (failure,) = json.loads(done.stdout)["failures"]
    assert failure["path"] == "b/broken.csv" and failure["status"] == "failed"
    assert failure["error"]["message"] == f"{path}: cannot read the file: Permission denied"


def test_an_output_path_that_is_a_folder_is_named(tmp_path: Path) -> None:
    out = tmp_path / "per_user.csv"
    out.mkdir()
    result = runner.invoke(
        app, ["score", str(VALID), "--solution", SOLUTION, "--per-user", str(out)]
    )
    assert result.exit_code == 2
    honest(result.output)
    assert f"{out}: is a directory" in result.output
    db = tmp_path / "board.db"
    batch.score_log(uploads(tmp_path / "uploads"), Path(SOLUTION), db)
    page = tmp_path / "page.html"
    page.mkdir()
    args = ["leaderboard", "show", "--db", str(db), "--format", "html", "--output", str(page)]
    result = runner.invoke(app, args)
    assert result.exit_code == 2
    honest(result.output)
    assert f"{page}: is a directory" in result.output
    as_db = runner.invoke(app, ["leaderboard", "show", "--db", str(tmp_path)])
    assert as_db.exit_code == 2
    assert "is a directory" in as_db.output


def test_a_full_disk_is_named_with_the_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def full(self: pl.DataFrame, file: Any, *args: Any, **kwargs: Any) -> None:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(pl.DataFrame, "write_csv", full)
    out = tmp_path / "per_user.csv"
    result = runner.invoke(
        app, ["score", str(VALID), "--solution", SOLUTION, "--per-user", str(out)]
    )
    assert result.exit_code == 2
    honest(result.output)
    assert f"{out}: cannot write the output: No space left on device" in result.output


def test_a_full_database_is_named_with_the_path(tmp_path: Path) -> None:
    db = tmp_path / "board.db"
    with Store(db) as store:
        pages = store.db.execute("PRAGMA page_count").fetchone()[0]
        store.db.execute(f"PRAGMA max_page_count = {pages}")  # SQLite's own 'disk full'
        with pytest.raises(FileSystemError) as caught:
            runs.add_solution(store, "x" * 64, np.arange(100_000), np.zeros(100_000, np.int8))
    assert str(caught.value) == f"{db}: cannot write the database: database or disk is full"


def test_a_file_that_is_not_a_database_is_still_named_so(tmp_path: Path) -> None:
    db = tmp_path / "board.db"
    db.write_bytes(b"this is not SQLite" * 100)
    with pytest.raises(UsageError, match="not a leaderboard database"):
        Store(db)


def test_an_organisers_pipe_is_never_opened_by_the_leaderboard(tmp_path: Path) -> None:
    if not hasattr(os, "mkfifo"):
        pytest.skip("needs named pipes")
    root = uploads(tmp_path / "uploads")
    pipe = tmp_path / "solution.csv"
    os.mkfifo(pipe)
    with pytest.raises(HostError) as caught:
        batch.score_log(root, pipe, tmp_path / "board.db")
    assert caught.value.report.codes == ["not_a_file"]


# -- the read layer's own checks ----------------------------------------------------------------


def parquet(path: Path, columns: dict[str, Any], **options: Any) -> Path:
    import pyarrow as pa
    import pyarrow.parquet as pq

    pq.write_table(pa.table(columns), path, **options)
    return path


def refusal_of(path: Path, limits: Limits | None = None) -> tuple[str, str]:
    """The code and message of the one problem reading `path` as a submission gives."""
    with pytest.raises(Rejected) as caught:
        read_table(path, spec_of(Role.SUBMISSION), limits or Bound(valid_rows=80))
    (found,) = caught.value.report.problems
    return str(found.code), found.examples[0].message


def test_a_parquet_file_of_many_columns_is_refused_before_its_footer_is_parsed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import pyarrow.parquet as pq

    names = ["user_id", "edition_id", "rank", *(f"c{i}" for i in range(998))]
    path = parquet(tmp_path / "wide.parquet", {name: [1] for name in names})

    def never(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("the footer was parsed")

    monkeypatch.setattr(pq, "ParquetFile", never)
    code, message = refusal_of(path)
    assert code == "too_many_columns"
    assert message == (
        "wide.parquet: the schema has 1,001 columns or fields; at most 1,000 columns are accepted"
    )


def test_a_parquet_footer_over_its_cap_is_refused_unparsed(tmp_path: Path) -> None:
    path = parquet(tmp_path / "s.parquet", {"user_id": [1001], "edition_id": [1], "rank": [1]})
    code, message = refusal_of(path, Limits(max_metadata_bytes=100))
    assert code == "file_too_large"
    assert "the Parquet metadata (its footer) has" in message


def test_lists_holding_more_values_than_a_valid_file_are_refused_from_metadata(
    tmp_path: Path,
) -> None:
    lists = [list(range(WHOLE_ROWS_FLOOR // 4 + 1))] * 4
    path = parquet(
        tmp_path / "s.parquet", {"user_id": [1001, 1002, 1003, 1004], "edition_ids": lists}
    )
    code, message = refusal_of(path)
    assert code == "too_many_rows"
    held = 4 * (WHOLE_ROWS_FLOOR // 4 + 1)
    assert f"the lists of 'edition_ids.list.element' hold {held:,} values" in message


def test_repeated_text_is_measured_before_it_is_expanded(tmp_path: Path) -> None:
    """One 3,000-byte value stored once, in four rows: 12,000 bytes once expanded."""
    cells = ["1 " * 1500] * 4
    path = parquet(
        tmp_path / "s.parquet", {"user_id": [1001, 1002, 1003, 1004], "edition_ids": cells}
    )
    code, message = refusal_of(path, Bound(max_decompressed_bytes=10_000, valid_rows=80))
    assert code == "file_too_large"
    assert message == "s.parquet: its text decodes to 12,000 bytes; at most 10,000 are accepted"


@pytest.mark.parametrize("block", [1, 2, 3, 7, 64])
@pytest.mark.parametrize("piece", [1, 5, 4096])
def test_gzip_members_expand_whole_whatever_the_chunk_sizes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, block: int, piece: int
) -> None:
    """Member boundaries (and the two bytes of a member's magic) may fall anywhere in a block
    of input, and zlib may keep output back when a piece is full: none of it is lost."""
    parts = [VALID.read_bytes()[:700], b"1001,5,3\n" * 40, b"", b"1002,6,1\n"]
    path = tmp_path / "s.csv.gz"
    path.write_bytes(b"".join(gzip.compress(part, mtime=0) for part in parts) + b"\0" * 5)
    monkeypatch.setattr(inflate_module, "BLOCK", block)
    monkeypatch.setattr(inflate_module, "PIECE", piece)
    out = tmp_path / "out.csv"
    assert inflate_module.inflate(path, "s.csv.gz", Limits(), out) == sum(map(len, parts))
    assert out.read_bytes() == b"".join(parts)


# -- zip archives, in process -----------------------------------------------------------------

ROWS = VALID.read_bytes()


def zip_refusal(tmp_path: Path, members: list[Member], **layout: Any) -> tuple[str, str]:
    """The code and message of the one problem a hand-made zip of `members` gets
    (`write_zip`'s `layout`)."""
    path = tmp_path / "up.zip"
    write_zip(path, members, **layout)
    return refusal_of(path)


@pytest.mark.parametrize(
    ("method", "name"),
    [
        (9, "Deflate64"),
        (12, "bzip2"),
        (14, "LZMA"),
        (93, "Zstandard"),
        (98, "PPMd"),
        (77, "an unknown method"),
    ],
)
def test_a_member_compressed_with_anything_but_deflate_is_refused_by_name(
    tmp_path: Path, method: int, name: str
) -> None:
    """Deflate64 was called corrupt; bzip2 and LZMA were expanded whole into memory."""
    member = replace(deflated("s.csv", ROWS), method=method)
    code, message = zip_refusal(tmp_path, [member])
    assert code == "unsupported_compression"
    assert message == (
        f"up.zip: 's.csv' in the zip is compressed with {name} (method {method}); only "
        "deflate, what zip tools use by default, or no compression is accepted"
    )


@pytest.mark.parametrize("method", [zipfile.ZIP_BZIP2, zipfile.ZIP_LZMA])
def test_a_valid_file_zipped_with_bzip2_or_lzma_is_refused_not_scored(
    tmp_path: Path, method: int
) -> None:
    path = tmp_path / "up.zip"
    with zipfile.ZipFile(path, "w", method) as archive:
        archive.writestr("submission.csv", ROWS)
    result = runner.invoke(app, ["score", str(path), "--solution", SOLUTION])
    assert result.exit_code == 1, result.output
    assert "[unsupported_compression] 1 time" in result.output
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:  # the control
        archive.writestr("submission.csv", ROWS)
    assert runner.invoke(app, ["score", str(path), "--solution", SOLUTION]).exit_code == 0


@pytest.mark.parametrize(
    ("layout", "count"),
    [
        ({"claimed": 60_000}, "60,000"),
        ({"claimed": 3_000_000}, "3,000,000"),
        ({"claimed": 1001, "zip64": True}, "1,001"),
    ],
)
def test_a_zip_is_refused_from_its_end_record_before_its_directory_is_read(
    tmp_path: Path, layout: dict[str, Any], count: str
) -> None:
    """The end record (or its ZIP64 twin) counts the entries: a count over the cap is
    refused before the directory is read. These directories hold one valid entry, which
    was scored before."""
    code, message = zip_refusal(tmp_path, [stored("s.csv", ROWS)], **layout)
    assert (code, message) == (
        "file_format",
        f"up.zip: the zip holds {count} entries; expected one .csv or .parquet file",
    )


def test_a_zip_whose_end_record_lies_is_still_bounded(tmp_path: Path) -> None:
    """An end record counting 1 entry before 1,001 of them: they are counted as parsed. One
    counting 1 entry before 4 MiB of directory: the directory's size is judged unread."""
    code, message = zip_refusal(tmp_path, [stored("s.csv", ROWS)], entries=1001, claimed=1)
    assert message == "up.zip: the zip holds 1,001 entries; expected one .csv or .parquet file"
    long = stored("n" * 60_000 + ".csv", ROWS)
    code, message = zip_refusal(tmp_path, [long], entries=70, claimed=1)
    assert (code, message) == (
        "file_format",
        f"up.zip: the zip's table of contents has {70 * (46 + len(long.name)):,} bytes; expected "
        "one .csv or .parquet file (at most 4,194,304 bytes of it are read)",
    )


def test_a_member_is_held_to_what_its_entry_records(tmp_path: Path) -> None:
    """The planner estimates a zip from its directory, so a member may not expand past the
    size its entry records, nor to other bytes than its checksum says."""
    short = replace(deflated("s.csv", ROWS), size=100)
    assert zip_refusal(tmp_path, [short]) == (
        "file_corrupt",
        "up.zip: the zip data is corrupt (it expands past the size its directory records)",
    )
    wrong = replace(deflated("s.csv", ROWS), crc=1)
    assert zip_refusal(tmp_path, [wrong]) == (
        "file_corrupt",
        "up.zip: the zip data is corrupt (its size or checksum is not what its directory records)",
    )


def test_names_inside_a_zip_are_data_in_every_report(tmp_path: Path) -> None:
    """A newline in a member's name forged a line of the report; ESC reached the terminal."""
    forged = "a.csv\n  [file_empty] 1 time\x1b[2J"
    path = tmp_path / "up.zip"
    write_zip(path, [stored(forged, ROWS), stored("b.csv", ROWS)])
    result = runner.invoke(app, ["validate", str(path), "--targets", TARGETS])
    assert result.exit_code == 1
    assert "\x1b" not in result.output
    assert not any(line.lstrip().startswith("[file_empty]") for line in result.output.splitlines())
    assert "the zip holds 2 files ('a.csv\\n  [file_empty] 1 time\\x1b[2J', 'b.csv')" in (
        result.output
    )
    write_zip(path, [replace(stored(forged, ROWS), method=12)])
    result = runner.invoke(app, ["validate", str(path), "--targets", TARGETS])
    assert "up.zip: 'a.csv\\n  [file_empty] 1 time\\x1b[2J' in the zip is compressed" in (
        result.output
    )
    assert "\x1b" not in result.output


def test_the_help_names_every_kind_of_file_read() -> None:
    for command in ("score", "validate"):
        result = runner.invoke(app, [command, "--help"])
        shown = " ".join(result.output.split())  # as the help wraps it
        assert "Submission file: .csv, .csv.gz, .parquet or .zip (holding one" in shown


@pytest.mark.parametrize("block", [1, 7, 64])
@pytest.mark.parametrize("piece", [1, 5, 4096])
def test_a_deflate_member_expands_whole_whatever_the_chunk_sizes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, block: int, piece: int
) -> None:
    """zlib may keep output back when a piece is full, and the stream may end inside a block
    of input: none of it is lost, and a member is copied out byte for byte."""
    monkeypatch.setattr(inflate_module, "BLOCK", block)
    monkeypatch.setattr(inflate_module, "PIECE", piece)
    path = tmp_path / "up.zip"
    write_zip(path, [deflated("s.csv", ROWS)])
    folder = tmp_path / "out"
    folder.mkdir()
    kind, copy = archive.extract(path, "up.zip", Limits(), folder)
    assert (kind, copy.read_bytes()) == ("csv", ROWS)
