"""Uploads that platforms rename or wrap: gzip, Parquet and zip known by their first bytes,
and a zip holding one CSV or Parquet file, bounded before anything is inflated."""

from __future__ import annotations

import gzip
import shutil
import zipfile
from pathlib import Path

import polars as pl
import pytest

import scorer
from scorer.errors import SubmissionError
from scorer.read import DEFAULT_LIMITS, Limits, kind_of, kind_of_file, to_wide
from scorer.synthetic import CompetitionFiles, make_competition


@pytest.fixture(scope="module")
def comp() -> CompetitionFiles:
    return make_competition(200, seed=3)


@pytest.fixture(scope="module")
def files(comp: CompetitionFiles, tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("uploads")
    comp.solution.write_csv(root / "solution.csv")
    to_wide(comp.submission).write_csv(root / "wide.csv")
    to_wide(comp.submission).write_parquet(root / "wide.parquet")
    return root


def gzipped(source: Path, target: Path) -> Path:
    with source.open("rb") as plain, gzip.open(target, "wb") as packed:
        shutil.copyfileobj(plain, packed)
    return target


def zipped(target: Path, members: dict[str, bytes]) -> Path:
    with zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    return target


def test_kind_of_is_the_name_and_kind_of_file_the_bytes(files: Path, tmp_path: Path) -> None:
    evalai_name = gzipped(files / "wide.csv", tmp_path / "0b9e4c1e-uuid.gz")  # EvalAI's naming
    bare = tmp_path / "upload"
    shutil.copy(files / "wide.parquet", bare)
    assert kind_of(evalai_name) is None and kind_of_file(evalai_name) == "csv.gz"
    assert kind_of(bare) is None and kind_of_file(bare) == "parquet"
    assert kind_of(tmp_path / "a.zip") == "zip"
    (tmp_path / "metadata").write_text("exitCode: 0\n")  # CodaBench's file beside a result
    assert kind_of_file(tmp_path / "metadata") is None


@pytest.mark.parametrize("form", ["uuid.gz", "no suffix parquet", "zip csv", "zip parquet"])
def test_renamed_and_wrapped_uploads_score_as_the_plain_file(
    files: Path, tmp_path: Path, form: str
) -> None:
    csv, parquet = (files / "wide.csv").read_bytes(), (files / "wide.parquet").read_bytes()
    if form == "uuid.gz":
        path = gzipped(files / "wide.csv", tmp_path / "5f1d.gz")
    elif form == "no suffix parquet":
        path = tmp_path / "5f1d"
        path.write_bytes(parquet)
    elif form == "zip csv":
        path = zipped(
            tmp_path / "up",  # no suffix either: the bytes say zip
            {
                "folder/": b"",
                "folder/wide.csv": csv,
                "__MACOSX/._wide.csv": b"\0",
                ".DS_Store": b"",
            },
        )
    else:
        path = zipped(tmp_path / "up.zip", {"wide.parquet": parquet})
    solution = files / "solution.csv"
    assert scorer.score(path, solution).splits == scorer.score(files / "wide.csv", solution).splits


def codes(path: Path, solution: Path, limits: Limits = DEFAULT_LIMITS) -> list[str]:
    with pytest.raises(SubmissionError) as info:
        scorer.validate(path, solution=solution, limits=limits)
    return info.value.report.codes


def test_a_zip_is_bounded_from_its_central_directory(files: Path, tmp_path: Path) -> None:
    csv = (files / "wide.csv").read_bytes()
    solution = files / "solution.csv"
    two = zipped(tmp_path / "two.zip", {"a.csv": csv, "b.csv": csv})
    assert codes(two, solution) == ["file_format"]
    assert codes(zipped(tmp_path / "none.zip", {"notes/": b""}), solution) == ["file_format"]
    big = zipped(tmp_path / "big.zip", {"a.csv": csv})
    assert codes(big, solution, Limits(max_decompressed_bytes=len(csv) - 1)) == ["file_too_large"]
    padded = zipped(tmp_path / "padded.zip", {"a.csv": csv + b"\n" * 400_000})
    cap = 300_000  # over the solution's and the zip's own size, under the member's
    assert solution.stat().st_size < cap and padded.stat().st_size < cap
    assert codes(padded, solution, Limits(max_file_bytes=cap)) == ["file_too_large"]
    nested = zipped(tmp_path / "nested.zip", {"a.csv.gz": gzip.compress(csv)})
    assert codes(nested, solution) == ["file_format"]
    broken = tmp_path / "broken.zip"
    broken.write_bytes(b"PK\x03\x04" + b"\0" * 40)
    assert codes(broken, solution) == ["file_corrupt"]


def test_a_zip_bomb_is_refused_before_it_is_inflated(files: Path, tmp_path: Path) -> None:
    bomb = zipped(tmp_path / "bomb.zip", {"a.csv": b"user_id,edition_ids\n" + b"1" * 50_000_000})
    assert bomb.stat().st_size < 100_000
    assert codes(bomb, files / "solution.csv", Limits(max_decompressed_bytes=1 << 20)) == [
        "file_too_large"
    ]


def test_an_unknown_name_with_text_is_still_refused(files: Path, tmp_path: Path) -> None:
    path = tmp_path / "submission.txt"
    shutil.copy(files / "wide.csv", path)
    assert codes(path, files / "solution.csv") == ["file_format"]
    assert pl.read_csv(files / "wide.csv").height == 200
