"""A prepared solution: the same scores to the bit as its source, and refused, with its message
and exit code, once its source, its rules or its own bytes are not what it recorded."""

from __future__ import annotations

import hashlib
import io
import json
import os
import shutil
import tempfile
import zipfile
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from jsonschema import Draft202012Validator
from polars.testing import assert_frame_equal
from support.paths import ROOT
from support.strategies import SolutionRows, solutions
from typer.testing import CliRunner

import scorer
from scorer import api
from scorer.cli import app
from scorer.competition import LOST_ITEMS, Competition, EmptyUsers
from scorer.contract import Solution, read_solution
from scorer.errors import Code, HostError
from scorer.prepared import FORMAT_VERSION, is_prepared, load, prepare
from scorer.schemas import schema
from scorer.synthetic import make_competition

DATA = ROOT / "data"
runner = CliRunner()

#: The headline of every refusal: a prepared solution is the organiser's file.
BROKEN = "Error: the solution file is broken (an organiser's problem, not the participant's): "


def competition_files(folder: Path, *, split: bool, graded: bool, seed: int = 3) -> Path:
    """A synthetic competition's solution.csv and submission.csv in `folder` (300 users, some
    with no lost pairs); with `graded`, grades 0..3; without `split`, no stage column."""
    made = make_competition(300, seed=seed, empty_share=0.1)
    solution = made.solution
    if graded:
        grades = pl.Series(np.random.default_rng(seed).integers(0, 4, solution.height))
        solution = solution.with_columns(
            grade=pl.when(pl.col("edition_id").is_not_null()).then(grades)
        )
    if not split:
        solution = solution.drop("stage")
    folder.mkdir(parents=True, exist_ok=True)
    solution.write_csv(folder / "solution.csv")
    made.submission.write_csv(folder / "submission.csv")
    return folder


def cli(*args: object) -> Any:
    return runner.invoke(app, [str(arg) for arg in args])


def prepared(solution: Path, *more: object) -> Path:
    out = solution.with_name(solution.stem + ".prepared")
    done = cli("prepare", solution, "--out", out, *more)
    assert done.exit_code == 0, done.output
    return out


def scored(
    submission: Path, solution: Path, folder: Path, *more: object
) -> tuple[str, pl.DataFrame]:
    """`scorer score --json` with its per-user table, for one solution file."""
    table = folder / f"per_user_{solution.name}.parquet"
    done = cli("score", submission, "--solution", solution, "--per-user", table, "--json", *more)
    assert done.exit_code == 0, done.output
    return done.stdout, pl.read_parquet(table)


def same_solution(got: Solution, want: Solution) -> None:
    assert_frame_equal(got.users, want.users, check_exact=True)
    assert_frame_equal(got.pairs, want.pairs, check_exact=True)
    assert (got.has_split, got.graded, got.competition) == (
        want.has_split,
        want.graded,
        want.competition,
    )
    for name in ("users", "pairs"):
        for column in getattr(want, name).columns:
            flags = getattr(got, name).get_column(column).flags
            assert flags == getattr(want, name).get_column(column).flags, (name, column)


# The same scores to the bit.


@pytest.mark.parametrize("graded", [False, True], ids=["binary", "graded"])
@pytest.mark.parametrize("split", [True, False], ids=["split", "no-split"])
def test_scores_from_a_prepared_solution_are_those_of_its_source(
    tmp_path: Path, split: bool, graded: bool
) -> None:
    folder = competition_files(tmp_path, split=split, graded=graded)
    source = folder / "solution.csv"
    fresh, fresh_users = scored(folder / "submission.csv", source, tmp_path)
    ready, ready_users = scored(folder / "submission.csv", prepared(source), tmp_path)
    assert ready == fresh  # the whole JSON output: every metric of every split, every count
    assert_frame_equal(ready_users, fresh_users, check_exact=True)
    same_solution(load(folder / "solution.prepared"), read_solution(source))
    data = json.loads(fresh)
    assert (data["public"] is not None) == split


HM = ["--competition", DATA / "hm" / "competition.toml"]


@pytest.mark.parametrize(
    ("submission", "solution", "rules", "more"),
    [
        ("sample_submission.csv", "solution.csv", [], []),
        ("examples/split_submission.csv", "examples/split_solution.csv", [], []),
        (
            "examples/no_lost_submission.csv",
            "examples/no_lost_solution.csv",
            [],
            ["--no-lost", "exclude"],
        ),
        ("hm/sample_submission.csv", "hm/solution.csv", HM, []),
    ],
)
def test_the_bundled_data_scores_the_same_prepared(
    tmp_path: Path, submission: str, solution: str, rules: list[object], more: list[object]
) -> None:
    source = tmp_path / "solution.csv"
    shutil.copy(DATA / solution, source)
    ready = prepared(source, *rules)
    fresh = scored(DATA / submission, source, tmp_path, *rules, *more)
    again = scored(DATA / submission, ready, tmp_path, *rules, *more)
    assert again[0] == fresh[0]
    assert_frame_equal(again[1], fresh[1], check_exact=True)


def test_validate_and_the_api_take_a_prepared_solution(tmp_path: Path) -> None:
    source = tmp_path / "solution.csv"
    shutil.copy(DATA / "solution.csv", source)
    ready = prepared(source)
    done = cli("validate", DATA / "sample_submission.csv", "--solution", ready)
    assert (done.exit_code, done.stdout) == (0, "sample_submission.csv: valid (20,000 rows)\n")
    fresh = api.score(DATA / "sample_submission.csv", source)
    again = api.score(DATA / "sample_submission.csv", ready, parts=4)
    assert again.splits == fresh.splits
    assert again.parts == 1  # a prepared solution is read whole: never split
    checked = api.validate(DATA / "sample_submission.csv", solution=ready)
    assert checked == scorer.Validation(rows=20_000, users=1_000, competition=LOST_ITEMS)


def test_a_prepared_file_names_the_user_and_item_as_the_competitions_files_do(
    tmp_path: Path,
) -> None:
    hm_folder = ROOT / "data" / "hm"
    hm = Competition.load(hm_folder / "competition.toml")
    info = prepare(hm_folder / "solution.csv", tmp_path / "hm.prepared", competition=hm)
    with zipfile.ZipFile(info.path) as archive:
        record = json.loads(archive.read("prepared.json"))
        users = pl.read_parquet(io.BytesIO(archive.read("users.parquet")))
        pairs = pl.read_parquet(io.BytesIO(archive.read("pairs.parquet")))
    names = {
        name: [c["name"] for c in frame["columns"]] for name, frame in record["frames"].items()
    }
    assert names == {
        "users": ["customer_id", "stage", "n_relevant"],
        "pairs": ["customer_id", "article_id", "grade"],
    }
    assert (users.columns, pairs.columns) == (names["users"], names["pairs"])
    same_solution(load(info.path, hm), read_solution(hm_folder / "solution.csv", competition=hm))


def test_a_prepared_file_is_known_by_its_name_or_by_its_members(tmp_path: Path) -> None:
    source = tmp_path / "solution.csv"
    shutil.copy(DATA / "solution.csv", source)
    ready = prepared(source)
    for name in ("solution.zip", "solution", "solution.bin"):
        renamed = tmp_path / name
        shutil.copy(ready, renamed)
        assert is_prepared(renamed), name
        done = cli("score", DATA / "sample_submission.csv", "--solution", renamed)
        assert done.exit_code == 0, done.output
    other = tmp_path / "other.zip"
    with zipfile.ZipFile(other, "w") as archive:
        archive.write(source, "solution.csv")
    assert not is_prepared(other)
    assert not is_prepared(source)
    assert not is_prepared(tmp_path / "missing.csv")


def test_a_leaderboard_scores_from_a_prepared_solution(tmp_path: Path) -> None:
    root = tmp_path / "demo"
    assert cli("leaderboard", "demo", root).exit_code == 0
    ready = prepared(root / "solution.csv")
    shown = []
    for solution, db in ((root / "solution.csv", "csv.db"), (ready, "prepared.db")):
        done = cli(
            "leaderboard", "score", root / "manifest.csv", "--solution", solution, "--db", root / db
        )
        assert done.exit_code == 0, done.output
        board = cli("leaderboard", "show", "--db", root / db, "--phase", "final", "--json")
        assert board.exit_code == 0, board.output
        data = json.loads(board.stdout)
        shown.append({key: data[key] for key in ("public", "private")})
    assert shown[0] == shown[1]


# What `prepare` writes, and its output.


def test_prepare_says_what_it_wrote(tmp_path: Path) -> None:
    source = tmp_path / "solution.csv"
    shutil.copy(DATA / "solution.csv", source)
    out = tmp_path / "s.prepared"
    done = cli("prepare", source, "--out", out)
    assert done.exit_code == 0, done.output
    sha = scorer.read.digest(source, source.name, scorer.read.DEFAULT_LIMITS)
    first, second = done.stdout.splitlines()
    assert first == (
        f"prepared {source} (sha256 {sha}): 1,000 users, 14,650 pairs, a public/private split, "
        "binary relevance"
    )
    assert second.startswith(f"wrote {out} in ") and second.endswith(" s")
    data = json.loads(cli("prepare", source, "--out", out, "--json").stdout)  # overwrites
    Draft202012Validator(schema("prepare")).validate(data)
    assert (data["status"], data["sha256"], data["users"], data["pairs"]) == (
        "ok",
        sha,
        1000,
        14650,
    )
    assert (data["source"], data["bytes"]) == (str(source.resolve()), out.stat().st_size)
    with zipfile.ZipFile(out) as archive:
        assert archive.namelist() == ["prepared.json", "users.parquet", "pairs.parquet"]
        assert {i.compress_type for i in archive.infolist()} == {zipfile.ZIP_STORED}
        record = json.loads(archive.read("prepared.json"))
    assert record["format_version"] == FORMAT_VERSION
    # The competition's key under this scorer's version, hashed as files before it were.
    rules = {"competition": LOST_ITEMS.to_dict(), "scorer_version": scorer.__version__}
    text = json.dumps(rules, sort_keys=True, separators=(",", ":"))
    assert record["fingerprint"] == hashlib.sha256(text.encode()).hexdigest()
    assert record["source"]["sha256"] == sha
    assert [p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp")] == []
    source.chmod(0o640)
    assert cli("prepare", source, "--out", out).exit_code == 0
    assert out.stat().st_mode & 0o777 == 0o640  # as readable as the solution it holds


def test_prepare_refuses_a_broken_solution_and_writes_nothing(tmp_path: Path) -> None:
    source = tmp_path / "solution.csv"
    source.write_text("user_id,edition_id\n1,2\n1,2\n")
    done = cli("prepare", source, "--out", tmp_path / "s.prepared")
    assert done.exit_code == 2
    assert done.stderr.startswith(BROKEN + "solution.csv: 1 problem found\n  [duplicate_pair]")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["solution.csv"]
    data = json.loads(cli("prepare", source, "--out", tmp_path / "s.prepared", "--json").stdout)
    Draft202012Validator(schema("prepare")).validate(data)
    assert (data["status"], data["error"]["code"], data["error"]["role"]) == (
        "error",
        "organiser_file_broken",
        "solution",
    )
    missing = cli("prepare", tmp_path / "nothing.csv", "--out", tmp_path / "s.prepared")
    assert (missing.exit_code, missing.stderr) == (
        2,
        f"{BROKEN}nothing.csv: 1 problem found\n  [file_not_found] 1 time\n"
        "    nothing.csv: no such file\n",
    )
    itself = cli("prepare", source, "--out", source)
    assert (itself.exit_code, itself.stderr) == (
        2,
        f"Error: {source}: --out is the solution itself; name another file\n",
    )


# When a prepared file is trusted, and when it is refused.


@pytest.fixture()
def ready(tmp_path: Path) -> Path:
    source = tmp_path / "solution.csv"
    shutil.copy(DATA / "solution.csv", source)
    return prepared(source)


def score_with(solution: Path, *more: object) -> Any:
    return cli("score", DATA / "sample_submission.csv", "--solution", solution, *more)


def refusal(file: str, code: Code, message: str, hint: str | None = None) -> str:
    """The whole of stderr for a refused solution file with one problem."""
    lines = [f"{BROKEN}{file}: 1 problem found", f"  [{code}] 1 time", f"    {message}"]
    if hint is not None:
        lines.append(f"    hint: {hint}")
    return "\n".join(lines) + "\n"


AGAIN = "run `scorer prepare` again from the solution"


def test_a_changed_source_is_refused(ready: Path) -> None:
    source = ready.with_name("solution.csv")
    sha = scorer.read.digest(source, source.name, scorer.read.DEFAULT_LIMITS)
    with source.open("a") as handle:
        handle.write("99999,1,public\n")
    done = score_with(ready)
    assert done.exit_code == 2
    assert done.stderr == refusal(
        "solution.prepared",
        Code.STALE_PREPARED,
        f"solution.prepared: prepared from {source.resolve()} (sha256 {sha[:12]}…), which has "
        "changed since; run `scorer prepare` again",
    )
    data = json.loads(score_with(ready, "--json").stdout)
    Draft202012Validator(schema("score")).validate(data)
    assert (data["error"]["code"], data["error"]["role"]) == ("organiser_file_broken", "solution")
    assert data["error"]["problems"][0]["code"] == "stale_prepared"
    validated = cli("validate", DATA / "sample_submission.csv", "--solution", ready)
    assert (validated.exit_code, validated.stderr) == (2, done.stderr)


def test_a_touched_source_is_hashed_again_and_accepted(ready: Path) -> None:
    source = ready.with_name("solution.csv")
    stat = source.stat()
    os.utime(source, ns=(stat.st_atime_ns, stat.st_mtime_ns + 10**9))
    assert score_with(ready).exit_code == 0


def test_a_source_of_the_same_size_and_time_but_other_bytes_is_refused(ready: Path) -> None:
    """Issue 24: the same size and modification time are no proof; the source is hashed."""
    source = ready.with_name("solution.csv")
    stat = source.stat()
    text = source.read_bytes()
    source.write_bytes(text.replace(b"public", b"privat", 1))  # same size, other bytes
    os.utime(source, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    done = score_with(ready)
    assert done.exit_code == 2 and "which has changed since" in done.stderr


def test_a_prepared_file_whose_source_is_elsewhere_is_accepted(ready: Path) -> None:
    ready.with_name("solution.csv").unlink()
    assert score_with(ready).exit_code == 0


def test_other_rules_are_refused(ready: Path, tmp_path: Path) -> None:
    rules = tmp_path / "k10.toml"
    rules.write_text("k = 10\n")
    done = score_with(ready, "--competition", rules)
    assert done.exit_code == 2
    assert done.stderr == refusal(
        "solution.prepared",
        Code.STALE_PREPARED,
        f"solution.prepared: prepared under other rules (competition 'lost items', scorer "
        f"{scorer.__version__}) than these (competition 'lost items', scorer "
        f"{scorer.__version__}); run `scorer prepare` again",
    )
    with pytest.raises(HostError, match="stale_prepared"):
        load(ready, Competition(k=10))


def test_a_prepared_file_holds_under_either_empty_user_rule(tmp_path: Path) -> None:
    """The rule weighs the scores, not what the solution holds: a file prepared under lost
    items is taken by a spec that differs in `empty_users` alone, and scores by that rule."""
    source = tmp_path / "solution.csv"
    shutil.copy(DATA / "examples" / "no_lost_solution.csv", source)
    ready = prepared(source)
    submission = DATA / "examples" / "no_lost_submission.csv"
    excluding = replace(LOST_ITEMS, empty_users=EmptyUsers.EXCLUDE)
    assert load(ready, excluding).competition == excluding
    from_file = scorer.score(submission, ready, competition=excluding)
    from_csv = scorer.score(submission, source, no_lost="exclude")
    assert from_file.no_lost is EmptyUsers.EXCLUDE
    assert from_file.splits == from_csv.splits
    assert from_file.overall != scorer.score(submission, ready).overall  # the rule counted


def test_another_scorer_version_is_refused(ready: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    made = scorer.__version__
    monkeypatch.setattr(scorer.version, "__version__", "9.9.9")
    done = score_with(ready)
    assert done.exit_code == 2
    assert f"prepared under other rules (competition 'lost items', scorer {made}) than these " in (
        done.stderr
    )
    assert "(competition 'lost items', scorer 9.9.9); run `scorer prepare` again" in done.stderr


def rebuilt(ready: Path, change: Callable[[str, bytes], bytes | None]) -> None:
    """Write the prepared file again with each member as `change` makes it (None: left out);
    a `rehashed` change also records its frames' new sha256, as a tamperer who knows the
    format would, so that the checks past the hash are reached."""
    with zipfile.ZipFile(ready) as archive:
        members = {name: change(name, archive.read(name)) for name in archive.namelist()}
    if getattr(change, "rehash", False):
        record = json.loads(members["prepared.json"] or b"{}")
        for name, data in members.items():
            if name.endswith(".parquet") and data is not None:
                record["frames"][name.removesuffix(".parquet")]["sha256"] = hashlib.sha256(
                    data
                ).hexdigest()
        members["prepared.json"] = json.dumps(record).encode()
    with zipfile.ZipFile(ready, "w") as archive:
        for name, kept in members.items():
            if kept is not None:
                archive.writestr(name, kept)


def rehashed(change: Callable[[str, bytes], bytes | None]) -> Callable[[str, bytes], bytes | None]:
    def changed(name: str, data: bytes) -> bytes | None:
        return change(name, data)

    changed.rehash = True  # type: ignore[attr-defined]
    return changed


def manifest(edit: Callable[[dict[str, Any]], None]) -> Callable[[str, bytes], bytes | None]:
    def change(name: str, data: bytes) -> bytes | None:
        if name != "prepared.json":
            return data
        record = json.loads(data)
        edit(record)
        return json.dumps(record).encode()

    return change


def garbage(name: str, data: bytes) -> bytes | None:
    return b"\0" * len(data) if name == "pairs.parquet" else data


def truncated_rows(name: str, data: bytes) -> bytes | None:
    if name != "pairs.parquet":
        return data
    buffer = io.BytesIO()
    pl.read_parquet(data).head(10).write_parquet(buffer)
    return buffer.getvalue()


def swapped_stages(name: str, data: bytes) -> bytes | None:
    """Public and private users swapped: the same rows and types, other scores (issue 24)."""
    if name != "users.parquet":
        return data
    buffer = io.BytesIO()
    stage = pl.col("stage")
    swap = pl.when(stage == "public").then(pl.lit("private")).otherwise(pl.lit("public"))
    frame = pl.read_parquet(data)
    frame.with_columns(swap.cast(frame.schema["stage"]).alias("stage")).write_parquet(buffer)
    return buffer.getvalue()


CORRUPT = [
    (
        "wrong format version",
        manifest(lambda r: r.update(format_version=99)),
        Code.FILE_FORMAT,
        f"prepared file format version 99; this scorer reads version {FORMAT_VERSION}",
    ),
    (
        "another format",
        manifest(lambda r: r.update(format="something")),
        Code.FILE_FORMAT,
        "not a prepared solution (prepared.json does not say format 'scorer-prepared-solution')",
    ),
    (
        "no manifest",
        lambda name, data: None if name == "prepared.json" else data,
        Code.FILE_FORMAT,
        "not a prepared solution (no prepared.json)",
    ),
    (
        "a member missing",
        lambda name, data: None if name == "users.parquet" else data,
        Code.FILE_CORRUPT,
        "users.parquet is missing or compressed (a prepared file stores its frames as written)",
    ),
    (
        "a manifest that is not JSON",
        lambda name, data: b"{" if name == "prepared.json" else data,
        Code.FILE_CORRUPT,
        "prepared.json is not valid JSON",
    ),
    (
        "a manifest without its source",
        manifest(lambda r: r.pop("source")),
        Code.FILE_CORRUPT,
        "prepared.json has no valid 'source.path'",
    ),
    (
        "a frame changed",
        garbage,
        Code.FILE_CORRUPT,
        "pairs.parquet is not as prepared",
    ),
    (
        "stages swapped",
        swapped_stages,
        Code.FILE_CORRUPT,
        "users.parquet is not as prepared",
    ),
    (
        "a corrupt Parquet member",
        rehashed(garbage),
        Code.FILE_CORRUPT,
        "pairs.parquet cannot be read (ComputeError)",
    ),
    (
        "rows lost",
        rehashed(truncated_rows),
        Code.FILE_CORRUPT,
        "pairs.parquet holds 10 rows of user_id: Int64, edition_id: Int64, grade: Int8; "
        "prepared.json says 14,650 rows of user_id: Int64, edition_id: Int64, grade: Int8",
    ),
]


@pytest.mark.parametrize(
    ("change", "code", "message"),
    [case[1:] for case in CORRUPT],
    ids=[case[0] for case in CORRUPT],
)
def test_a_broken_prepared_file_is_refused(
    ready: Path, change: Callable[[str, bytes], bytes | None], code: Code, message: str
) -> None:
    rebuilt(ready, change)
    broken(score_with(ready), code, message)


def broken(done: Any, code: Code, message: str) -> None:
    """`done` is exit 2 with the refusal of a broken `solution.prepared`, and its hint."""
    assert done.exit_code == 2, done.output
    assert done.stderr == refusal("solution.prepared", code, f"solution.prepared: {message}", AGAIN)


def test_damaged_bytes_are_refused(ready: Path) -> None:
    data = bytearray(ready.read_bytes())
    with zipfile.ZipFile(ready) as archive:
        info = archive.getinfo("pairs.parquet")
    data[info.header_offset + 100] ^= 0xFF  # within the member: its CRC-32 no longer holds
    ready.write_bytes(bytes(data))
    crc = "not a readable ZIP archive (Bad CRC-32 for file 'pairs.parquet')"
    broken(score_with(ready), Code.FILE_CORRUPT, crc)
    ready.write_bytes(bytes(data[: len(data) // 2]))  # cut short
    cut = score_with(ready)
    assert cut.exit_code == 2
    assert "solution.prepared: not a readable ZIP archive (File is not a zip file)" in cut.stderr


def test_a_file_that_is_not_a_prepared_file_is_refused(tmp_path: Path) -> None:
    text = tmp_path / "solution.prepared"
    shutil.copy(DATA / "solution.csv", text)
    not_zip = "not a readable ZIP archive (File is not a zip file)"
    broken(score_with(text), Code.FILE_CORRUPT, not_zip)
    data = json.loads(score_with(text, "--json").stdout)
    assert (data["status"], data["error"]["code"]) == ("error", "organiser_file_broken")
    folder = tmp_path / "folder.prepared"
    folder.mkdir()
    assert score_with(folder).stderr == refusal(
        "folder.prepared", Code.NOT_A_FILE, "folder.prepared: is a directory; expected a file"
    )


# load(prepare(x)) is read_solution(x), frame for frame.


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(drawn=solutions())
def test_a_prepared_solution_loads_as_its_source_reads(drawn: SolutionRows) -> None:
    text, competition = drawn.csv(), LOST_ITEMS
    with tempfile.TemporaryDirectory() as folder:
        source = Path(folder) / "solution.csv"
        source.write_text(text)
        info = prepare(source, Path(folder) / "s.prepared", competition=competition)
        want = read_solution(source, competition=competition)
        got = load(info.path, competition)
        same_solution(got, want)
        assert (info.users, info.pairs) == (want.users.height, want.pairs.height)
