"""Fuzzing: raw bytes and mutated valid files always give a score or a clean rejection (exit 1
with a report), never exit 2 for a participant's file and never another exception. A short
run here; `scripts/fuzz.py` is the long one."""

from __future__ import annotations

import gzip
import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pandas as pd
import polars as pl
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from support.paths import CORPUS
from typer.testing import CliRunner

import scorer
from scorer.cli import app

SOLUTION = str(CORPUS / "solution.csv")
TARGETS = str(CORPUS / "targets.csv")
VALID = (CORPUS / "sub" / "valid.csv").read_bytes()
VALID_PARQUET = (CORPUS / "sub" / "valid.parquet").read_bytes()
HEADER = b"user_id,edition_id,rank\n"

#: Bytes that mean something to a CSV reader, a decoder or a sniffer.
INTERESTING = [
    b",", b"\n", b"\r", b"\r\n", b'"', b"\x00", b"\xff", b"\xef\xbb\xbf", b"-", b"+", b".",
    b" ", b"\t", b";", b"|", b"0", b"9", b"e", b"{", b"PK\x03\x04", b"\x1f\x8b", b"\xc3",
]  # fmt: skip

#: What a number in a valid file is replaced by.
NUMBERS = [
    b"0", b"1", b"20", b"21", b"-1", b"1.0", b"1e3", b"", b"abc", b" 7", b"+7", b"0x1F",
    b"NaN", b"9223372036854775807", b"9223372036854775808", b"18446744073709551616",
    b"1001", b"1004", b"700001", b"\xd9\xa3", b'"5"', b"5,5",
]  # fmt: skip

SETTINGS = settings(
    max_examples=200,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)

runner = CliRunner()


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("fuzz")


# --- Mutations ------------------------------------------------------------------------------

position = st.integers(0, 1 << 20)
mutation = st.one_of(
    st.tuples(st.just("flip"), position, st.integers(1, 255)),
    st.tuples(st.just("insert"), position, st.sampled_from(INTERESTING) | st.binary(max_size=6)),
    st.tuples(st.just("delete"), position, st.integers(1, 40)),
    st.tuples(st.just("swap_lines"), position, position),
    st.tuples(st.just("duplicate_line"), position, position),
    st.tuples(st.just("delete_line"), position, st.just(0)),
    st.tuples(st.just("number"), position, st.sampled_from(NUMBERS)),
)


def mutate(data: bytes, change: tuple[str, int, Any]) -> bytes:
    """One change to a file, with positions taken modulo its size."""
    kind, at, arg = change
    if not data:
        return data
    if kind == "flip":
        i = at % len(data)
        return data[:i] + bytes([data[i] ^ arg]) + data[i + 1 :]
    if kind == "insert":
        i = at % (len(data) + 1)
        return data[:i] + arg + data[i:]
    if kind == "delete":
        i = at % len(data)
        return data[:i] + data[i + arg :]
    if kind == "number":
        runs = list(re.finditer(rb"[0-9]+", data))
        if not runs:
            return data
        run = runs[at % len(runs)]
        return data[: run.start()] + arg + data[run.end() :]
    lines = data.split(b"\n")
    i = at % len(lines)
    if kind == "delete_line":
        del lines[i]
    elif kind == "duplicate_line":
        lines.insert(arg % (len(lines) + 1), lines[i])
    else:  # swap_lines
        j = arg % len(lines)
        lines[i], lines[j] = lines[j], lines[i]
    return b"\n".join(lines)


def apply(data: bytes, changes: list[tuple[str, int, Any]]) -> bytes:
    for change in changes:
        data = mutate(data, change)
    return data


# --- The oracle -----------------------------------------------------------------------------


def outcome(*args: str) -> tuple[int, list[str]]:
    """Run one command with --json: a score (exit 0) or a clean rejection (exit 1), and the
    codes of the rejection. Anything else fails the test."""
    result = runner.invoke(app, [*args, "--json"])
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(
        result.exception
    )
    assert "Traceback" not in result.output
    assert result.exit_code in (0, 1), f"exit {result.exit_code}: {result.output}"
    data = json.loads(result.stdout)
    if result.exit_code == 0:
        assert data["status"] == "ok"
        if data["command"] == "score":
            assert 0.0 <= data["overall"] <= 1.0
        return 0, []
    assert data["error"]["code"] == "submission_rejected", data
    report = data["error"]
    assert report["problems"], "a rejection names at least one problem"
    assert report["total"] == sum(p["count"] for p in report["problems"]) > 0
    for found in report["problems"]:
        assert 1 <= len(found["examples"]) <= found["count"]
        assert all(e["message"] for e in found["examples"])
    return 1, [p["code"] for p in report["problems"]]


def check(path: Path, data: bytes, *, both: bool = False) -> None:
    path.write_bytes(data)
    scored = outcome("score", str(path), "--solution", SOLUTION)
    if both:
        assert outcome("validate", str(path), "--targets", TARGETS) == scored


# --- The tests ------------------------------------------------------------------------------


@SETTINGS
@given(data=st.binary(max_size=3000))
def test_raw_bytes(workdir: Path, data: bytes) -> None:
    check(workdir / "raw.csv", data)


@SETTINGS
@given(body=st.binary(max_size=2000))
@example(body=b'"')  # an open quote made polars' fast reader panic
def test_raw_bytes_under_a_valid_header(workdir: Path, body: bytes) -> None:
    check(workdir / "header.csv", HEADER + body)


@SETTINGS
@given(changes=st.lists(mutation, min_size=1, max_size=6))
def test_mutated_valid_file(workdir: Path, changes: list[tuple[str, int, Any]]) -> None:
    check(workdir / "mutated.csv", apply(VALID, changes))


@settings(SETTINGS, max_examples=60)
@given(changes=st.lists(mutation, min_size=1, max_size=6))
def test_validate_agrees_with_score(workdir: Path, changes: list[tuple[str, int, Any]]) -> None:
    check(workdir / "agree.csv", apply(VALID, changes), both=True)


@settings(SETTINGS, max_examples=60)
@given(
    changes=st.lists(mutation, max_size=3),
    damage=st.lists(st.tuples(st.sampled_from(["flip", "insert", "delete"]), position,
                              st.integers(1, 255)), max_size=2),
)  # fmt: skip
def test_mutated_gzip_file(
    workdir: Path, changes: list[tuple[str, int, Any]], damage: list[tuple[str, int, Any]]
) -> None:
    packed = gzip.compress(apply(VALID, changes), mtime=0)
    damage = [(k, at, bytes([arg]) if k == "insert" else arg) for k, at, arg in damage]
    check(workdir / "mutated.csv.gz", apply(packed, damage))


@settings(SETTINGS, max_examples=60)
@given(
    damage=st.lists(st.tuples(st.sampled_from(["flip", "insert", "delete"]), position,
                              st.integers(1, 255)), min_size=1, max_size=3),
)  # fmt: skip
def test_mutated_parquet_file(workdir: Path, damage: list[tuple[str, int, Any]]) -> None:
    damage = [(k, at, bytes([arg]) if k == "insert" else arg) for k, at, arg in damage]
    check(workdir / "mutated.parquet", apply(VALID_PARQUET, damage))


def test_the_mutations_keep_the_valid_file_valid_when_they_change_nothing(workdir: Path) -> None:
    """The oracle itself: the untouched file scores, and a known breakage is caught."""
    check(workdir / "same.csv", VALID)
    assert outcome("score", str(workdir / "same.csv"), "--solution", SOLUTION) == (0, [])
    broken = apply(VALID, [("delete_line", 5, 0)])
    (workdir / "short.csv").write_bytes(broken)
    assert outcome("score", str(workdir / "short.csv"), "--solution", SOLUTION) == (
        1,
        ["wrong_row_count"],
    )


COLUMNS = ("user_id", "edition_id", "rank")

HOSTILE_FRAMES = {
    "pandas mixed object column": lambda: pd.DataFrame(
        {"user_id": [1001, "x"], "edition_id": [1, 2], "rank": [1, 2]}
    ),
    "pandas unknown objects": lambda: pd.DataFrame(
        {"user_id": [object()], "edition_id": [1], "rank": [1]}
    ),
    "uint64 beyond int64": lambda: pl.DataFrame(
        {"user_id": [1001], "edition_id": pl.Series([2**64 - 1], dtype=pl.UInt64), "rank": [1]}
    ),
    "list column": lambda: pl.DataFrame({"user_id": [1001], "edition_id": [[1, 2]], "rank": [1]}),
    "struct column": lambda: pl.DataFrame({"user_id": [{"a": 1}], "edition_id": [1], "rank": [1]}),
    "all null": lambda: pl.DataFrame({"user_id": [None], "edition_id": [None], "rank": [None]}),
    "no rows": lambda: pl.DataFrame(
        schema=dict.fromkeys(["user_id", "edition_id", "rank"], pl.Int64)
    ),
    "float NaN": lambda: pl.DataFrame(
        {"user_id": [1001], "edition_id": [float("nan")], "rank": [1]}
    ),
}


@pytest.mark.parametrize("make", HOSTILE_FRAMES.values(), ids=HOSTILE_FRAMES.keys())
def test_hostile_frames_are_rejected_cleanly(make: Any) -> None:
    """The API takes frames too: whatever is in them, a `SubmissionError` with a report."""
    with pytest.raises(scorer.SubmissionError) as caught:
        scorer.validate(make(), targets=TARGETS)
    assert caught.value.report.problems


@pytest.mark.parametrize("body", [b'"', b'1,2,"3\n', b'"1","2","3"\n"'])
def test_an_open_quote_takes_the_careful_reader_without_a_panic(
    tmp_path: Path, body: bytes
) -> None:
    """polars' CSV reader panics on a quote left open; such a file must not reach it (a panic
    prints a Rust backtrace on stderr even when caught)."""
    path = tmp_path / "open.csv"
    path.write_bytes(b"user_id,edition_id,rank\n" + body)
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            "from scorer.cli import app; app()",
            "validate",
            str(path),
            "--targets",
            TARGETS,
            "--json",
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 1, done.stderr
    assert "panicked" not in done.stderr and "Traceback" not in done.stderr
    assert json.loads(done.stdout)["error"]["code"] == "submission_rejected"
