"""Every cap (file size, decompressed size, rows, line length) gives its own clear error before
memory runs out, huge hostile files stay cheap, and output files are written atomically."""

from __future__ import annotations

import gzip
import json
import struct
import subprocess
import sys
import tracemalloc
import zlib
from pathlib import Path
from typing import Any
from unittest.mock import patch

import polars as pl
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from support.paths import CORPUS
from typer.testing import CliRunner

import scorer
from scorer.cli import app
from scorer.competition import LOST_ITEMS, Columns, Competition, IdKind, Ids
from scorer.read import text as io
from scorer.read.cells import MAX_TEXT_ID
from scorer.read.inflate import inflate
from scorer.read.limits import Limits, longest_line
from scorer.read.text import _LineLengths, scan_text

SOLUTION = str(CORPUS / "solution.csv")
TARGETS = str(CORPUS / "targets.csv")
VALID = CORPUS / "sub" / "valid.csv"
HEADER = b"user_id,edition_id,rank\n"
MB = 1 << 20

runner = CliRunner()


def rejected(*args: str) -> dict[str, Any]:
    """The JSON report of a call that must exit 1."""
    result = runner.invoke(app, [*args, "--json"])
    assert result.exit_code == 1, result.output
    data: dict[str, Any] = json.loads(result.stdout)
    assert data["error"]["code"] == "submission_rejected"
    report: dict[str, Any] = data["error"]  # the envelope's error holds the report
    return report


def only(report: dict[str, Any]) -> dict[str, Any]:
    assert len(report["problems"]) == 1, report
    found: dict[str, Any] = report["problems"][0]
    return found


# --- File size ------------------------------------------------------------------------------


def test_a_file_beyond_the_default_size_cap_is_refused_without_reading_it(tmp_path: Path) -> None:
    huge = tmp_path / "huge.csv"
    with huge.open("wb") as handle:
        handle.truncate(Limits().max_file_bytes + 1)  # sparse: costs no disk and no reading
    found = only(rejected("validate", str(huge), "--targets", TARGETS))
    assert found["code"] == "file_too_large"
    assert f"at most {Limits().max_file_bytes:,} are accepted" in found["examples"][0]["message"]


# --- Decompressed size ----------------------------------------------------------------------


def bomb(path: Path, megabytes: int) -> None:
    """One valid gzip member expanding to the header and `megabytes` MiB of zeros, built in
    no time: after a full flush the compressor forgets its past, so 1 MiB of zeros packs to
    the same ~1 KB every time and the block can be repeated; the trailer is written by hand."""
    packer = zlib.compressobj(9, zlib.DEFLATED, 31)
    zeros = bytes(MB)
    start = packer.compress(HEADER) + packer.flush(zlib.Z_FULL_FLUSH)
    block = packer.compress(zeros) + packer.flush(zlib.Z_FULL_FLUSH)
    assert packer.compress(zeros) + packer.flush(zlib.Z_FULL_FLUSH) == block
    end = packer.flush()[:-8]  # the final empty block, without the trailer for one block
    crc = zlib.crc32(HEADER)
    for _ in range(megabytes):
        crc = zlib.crc32(zeros, crc)
    size = (len(HEADER) + megabytes * MB) & 0xFFFFFFFF
    with path.open("wb") as handle:
        handle.write(start)
        for _ in range(megabytes):
            handle.write(block)
        handle.write(end + struct.pack("<II", crc, size))


def test_a_gzip_bomb_stops_at_the_cap_in_bounded_memory(tmp_path: Path) -> None:
    path = tmp_path / "bomb.csv.gz"
    bomb(path, 256)
    assert path.stat().st_size < 1 * MB
    tracemalloc.start()
    try:
        with pytest.raises(Exception) as caught:
            inflate(path, path.name, Limits(max_decompressed_bytes=4 * MB), tmp_path / "out.csv")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert "expands to more than 4,194,304 bytes" in str(caught.value)
    assert peak < 64 * MB, f"peak {peak:,} bytes for a 256 MB bomb"
    found = only(
        rejected("score", str(path), "--solution", SOLUTION, "--max-decompressed", str(4 * MB))
    )
    assert found["code"] == "file_too_large"


def test_many_gzip_members_count_towards_one_cap(tmp_path: Path) -> None:
    path = tmp_path / "members.csv.gz"
    path.write_bytes(gzip.compress(HEADER) + gzip.compress(b"0" * 600_000) * 3)
    found = only(
        rejected("validate", str(path), "--targets", TARGETS, "--max-decompressed", "1000000")
    )
    assert found["code"] == "file_too_large"


# --- Rows -----------------------------------------------------------------------------------


def test_the_row_cap_is_checked_before_any_row_is_parsed(tmp_path: Path) -> None:
    path = tmp_path / "rows.csv"
    path.write_bytes(HEADER + b"1,1,1\n" * 200_000)
    found = only(rejected("validate", str(path), "--targets", TARGETS, "--max-rows", "1000"))
    assert found["code"] == "too_many_rows"
    assert "200,000 rows; at most 1,000" in found["examples"][0]["message"]


def test_blank_lines_count_towards_the_row_cap(tmp_path: Path) -> None:
    path = tmp_path / "blank.csv"
    path.write_bytes(HEADER + b"\n" * 5000)
    assert only(rejected("validate", str(path), "--targets", TARGETS, "--max-rows", "100"))[
        "code"
    ] == ("too_many_rows")


# --- Line length ----------------------------------------------------------------------------


def hundred_mb_line(path: Path) -> None:
    body = VALID.read_bytes().split(b"\n")
    with path.open("wb") as handle:
        handle.write(b"\n".join(body[:3]) + b"\n1001,")
        handle.write(b"7" * (100 * MB))
        handle.write(b",3\n" + b"\n".join(body[4:]))


def test_a_100_mb_line_is_one_clear_problem(tmp_path: Path) -> None:
    path = tmp_path / "long.csv"
    hundred_mb_line(path)
    report = rejected("validate", str(path), "--targets", TARGETS)
    codes = {p["code"]: p for p in report["problems"]}
    assert set(codes) == {"line_too_long", "wrong_row_count"}
    example = codes["line_too_long"]["examples"][0]
    assert example["line"] == 4
    assert f"the line has {100 * MB + 7:,} bytes; at most 4,096" in example["message"]
    assert len(json.dumps(report)) < 5000, "the value is never echoed in full"


def test_a_100_mb_line_is_never_held_whole(tmp_path: Path) -> None:
    """The reader skips a long line instead of loading it: the peak resident memory of a
    whole run stays far below what a 100 MB string and its split copies take (~900 MB).
    The peak is the child's own VmHWM: `ru_maxrss` would carry the forking parent's."""
    status = Path("/proc/self/status")
    if not status.exists():
        pytest.skip("needs Linux /proc for the peak memory of a process")
    path = tmp_path / "long.csv"
    hundred_mb_line(path)
    code = (
        "import re\n"
        "from pathlib import Path\n"
        "from scorer import validate, SubmissionError\n"
        "try:\n"
        f"    validate({str(path)!r}, targets={TARGETS!r})\n"
        "except SubmissionError as exc:\n"
        "    print('codes', *exc.report.codes)\n"
        "status = Path('/proc/self/status').read_text()\n"
        "print('peak', re.search(r'VmHWM:\\s+(\\d+) kB', status).group(1))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    said = dict(line.split(" ", 1) for line in done.stdout.splitlines() if " " in line)
    assert "line_too_long" in said.get("codes", ""), (done.stdout, done.stderr[-2000:])
    peak_mb = int(said["peak"]) / 1024
    assert peak_mb < 400, f"peak {peak_mb:.0f} MB"


def test_many_long_lines_are_counted_with_the_first_few_named(tmp_path: Path) -> None:
    rows = VALID.read_bytes().split(b"\n")
    for i in range(5, 70, 2):
        rows[i - 1] = b"1001,5" + b"0" * 5000 + b",1"
    path = tmp_path / "long.csv"
    path.write_bytes(b"\n".join(rows))
    report = rejected("validate", str(path), "--targets", TARGETS)
    found = {p["code"]: p for p in report["problems"]}
    assert found["line_too_long"]["count"] == len(range(5, 70, 2))
    assert [e["line"] for e in found["line_too_long"]["examples"]] == [5, 7, 9, 11, 13]


def test_a_long_header_is_refused_alone(tmp_path: Path) -> None:
    path = tmp_path / "header.csv"
    path.write_bytes(b"user_id,edition_id,rank," + b"x" * 5000 + b"\n1,2,3\n")
    found = only(rejected("validate", str(path), "--targets", TARGETS))
    assert found["code"] == "line_too_long"
    assert found["examples"][0]["line"] == 1


def test_the_line_cap_is_configurable(tmp_path: Path) -> None:
    path = tmp_path / "s.csv"
    rows = VALID.read_bytes().split(b"\n")
    rows[9] = b"1001,50000000000000000000009,9"  # 30 bytes: fine by default, not under 29
    path.write_bytes(b"\n".join(rows))
    report = rejected("validate", str(path), "--targets", TARGETS, "--max-line", "29")
    long = next(p for p in report["problems"] if p["code"] == "line_too_long")
    assert [e["line"] for e in long["examples"]] == [10]


#: A competition of long lists and long text ids: k = 100 ids of up to 256 bytes a line.
WIDE = Competition(
    name="wide",
    k=100,
    columns=Columns(user="user_id", item="item_id", list="items"),
    ids=Ids(user=IdKind.TEXT, item=IdKind.TEXT),
)


def wide_files(folder: Path, id_bytes: int, long_line: int | None = None) -> tuple[Path, Path]:
    """A solution (two users, public, one relevant item each) and a wide submission of WIDE,
    every id `id_bytes` long, the lists quoted and the line ends CRLF as Excel writes them;
    user u2's list is the first relevant item, then its own; `long_line`: the line of u1
    padded past any cap (2 MB of one id)."""
    items = [f"i{n:0{id_bytes - 1}d}" for n in range(200)]
    solution = folder / "solution.csv"
    solution.write_text(f"user_id,item_id,stage\nu1,{items[0]},public\nu2,{items[0]},public\n")
    lines = ["user_id,items", f'u1,"{" ".join(items[:100])}"', f'u2,"{" ".join(items[100:])}"']
    if long_line is not None:
        lines[long_line - 1] = "u1," + "7" * (2 * MB)
    submission = folder / "submission.csv"
    submission.write_bytes("\r\n".join(lines).encode() + b"\r\n")
    return solution, submission


@pytest.mark.parametrize("id_bytes", [41, MAX_TEXT_ID])
def test_the_default_line_cap_takes_a_wide_file_of_100_long_ids(
    tmp_path: Path, id_bytes: int
) -> None:
    solution, submission = wide_files(tmp_path, id_bytes)
    assert len(submission.read_bytes().split(b"\r\n")[1]) > 100 * id_bytes > 4096
    result = scorer.score(submission, solution, competition=WIDE)
    assert (result.public, result.private) == ((1.0 + 0.0) / 2, None)  # u1's item at rank 1


def test_the_default_line_cap_is_the_longest_line_a_valid_file_has() -> None:
    """Each id at its longest, quoted (a quote inside a text id doubled), one separator between
    cells and ids, CRLF; never below 4,096 bytes."""
    assert Limits().max_line_bytes is None  # set from the competition by every reader
    assert longest_line(LOST_ITEMS) == 4096
    text_id = 2 * MAX_TEXT_ID + 2
    wide_line = text_id + 1 + (100 * 2 * MAX_TEXT_ID + 99 + 2) + 1 + len('"private"') + len("\r")
    assert longest_line(WIDE) == wide_line
    assert Limits().for_competition(WIDE).max_line_bytes == wide_line
    given = Limits(max_line_bytes=100)
    assert given.for_competition(WIDE) is given  # a cap given stays


@pytest.mark.parametrize("parts", [None, 2])
def test_a_refused_line_is_not_also_a_missing_user(tmp_path: Path, parts: int | None) -> None:
    """u1's line is refused whole (too long): u1 is in the file, so it is not reported
    missing as well, read whole or in parts."""
    solution, submission = wide_files(tmp_path, 41, long_line=2)
    with pytest.raises(scorer.SubmissionError) as caught:
        scorer.validate(submission, solution=solution, competition=WIDE, parts=parts)
    assert caught.value.report.codes == ["line_too_long"]


@pytest.mark.parametrize("parts", [None, 2])
def test_a_line_of_too_many_fields_is_not_also_a_missing_user(
    tmp_path: Path, parts: int | None
) -> None:
    solution, submission = wide_files(tmp_path, 41)
    lines = submission.read_bytes().split(b"\r\n")
    lines[2] = lines[2].replace(b'"', b"").replace(b" ", b",")  # a list with unquoted commas
    submission.write_bytes(b"\r\n".join(lines))
    with pytest.raises(scorer.SubmissionError) as caught:
        scorer.validate(submission, solution=solution, competition=WIDE, parts=parts)
    assert caught.value.report.codes == ["field_count"]


def naive_spans(data: bytes, limit: int) -> list[tuple[int, int, int]]:
    """(line, start, end) of every line longer than `limit`: the obvious way."""
    spans, start = [], 0
    for number, line in enumerate(data.split(b"\n"), start=1):
        if len(line) > limit:
            spans.append((number, start, start + len(line)))
        start += len(line) + 1
    return spans


@settings(max_examples=150, deadline=None)
@given(
    lines=st.lists(st.integers(0, 40), max_size=40),
    limit=st.integers(1, 12),
    cuts=st.lists(st.integers(1, 30), min_size=1, max_size=8),
    final_newline=st.booleans(),
)
def test_long_lines_are_found_across_any_chunking(
    lines: list[int], limit: int, cuts: list[int], final_newline: bool
) -> None:
    data = b"\n".join(b"x" * n for n in lines) + (b"\n" if final_newline else b"")
    scanner = _LineLengths(limit)
    at, i = 0, 0
    while at < len(data):
        size = cuts[i % len(cuts)]
        scanner.feed(data[at : at + size])
        at, i = at + size, i + 1
    scanner.finish()
    assert scanner.spans == naive_spans(data, limit)


@settings(max_examples=300, deadline=None)
@given(
    limit=st.integers(1, 20),
    over=st.lists(st.integers(-20, 2), min_size=1, max_size=30),
    chunk=st.sampled_from([1, 2, 4, 8, 16, 64]),
)
@example(limit=4, over=[1], chunk=64)  # 'h\n77777\n': the long line covers one block only
def test_scan_text_finds_every_long_line_whatever_the_chunk_size(
    limit: int, over: list[int], chunk: int
) -> None:
    """The scan looks for long lines only where a block of the file holds no newline: it
    must still find each one, for any line cap and chunk size (lines are drawn around the
    cap, mostly short, so that one long line is often the only newline-free stretch)."""
    lines = [max(limit + n, 0) for n in over]
    data = b"h\n" + b"\n".join(b"7" * n for n in lines) + b"\n"
    with patch.object(io, "CHUNK", chunk):
        text = scan_text("s.csv", data, Limits(max_line_bytes=limit))
    spans = naive_spans(data, limit)
    assert text.long_count == len(spans)
    assert text.long_lines == tuple((n, end - start) for n, start, end in spans[:5])
    assert text.lines == len(lines) + 1


def test_scan_text_cuts_long_lines_only_when_asked(tmp_path: Path) -> None:
    """Cut to the cap's bytes (at most `HEAD`), a character the cut ends in two left out:
    its user cell is read, never the rest."""
    path = tmp_path / "s.csv"
    long = b"7," + "é".encode() * 50
    path.write_bytes(HEADER + b"1,2,3\n" + long + b"\n4,5,6\n")
    limits = Limits(max_line_bytes=51)  # 49 bytes of é: 24 and a half
    kept = scan_text("s.csv", path, limits)
    assert kept.source == path and kept.long_count == 1 and kept.long_lines == ((3, 102),)
    assert kept.cut == ()
    blanked = scan_text("s.csv", path, limits, blank_long=True)
    assert blanked.source == HEADER + b"1,2,3\n7," + "é".encode() * 24 + b"\n4,5,6\n"
    assert blanked.cut == (3,)
    assert io.cut_to(50) == 50 and io.cut_to(10**6) == io.HEAD


# --- Millions of users ----------------------------------------------------------------------


@pytest.mark.slow
def test_nine_hundred_thousand_unknown_users_give_a_short_report(tmp_path: Path) -> None:
    n = 900_000  # past a million rows, the row count alone refuses it (tests/scoring/test_parts.py)
    path = tmp_path / "users.csv"
    frame = pl.DataFrame(
        {
            "user_id": pl.int_range(10_000_000, 10_000_000 + n, eager=True),
            "edition_id": pl.int_range(0, n, eager=True) % 997,
            "rank": pl.int_range(0, n, eager=True) % 20 + 1,
        }
    )
    frame.write_csv(path)
    report = rejected("validate", str(path), "--targets", TARGETS)
    found = {p["code"]: p for p in report["problems"]}
    assert set(found) == {"missing_user", "unknown_user"}
    assert found["unknown_user"]["count"] == n
    assert [e["line"] for e in found["unknown_user"]["examples"]] == [2, 3, 4, 5, 6]
    assert found["missing_user"]["count"] == 4
    assert len(json.dumps(report)) < 5000


# --- Atomic outputs -------------------------------------------------------------------------


def leftovers(folder: Path, keep: set[str]) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name not in keep)


@pytest.mark.parametrize("name", ["per_user.csv", "per_user.parquet", "per_user.csv.gz"])
def test_a_rejected_submission_leaves_an_existing_output_intact(tmp_path: Path, name: str) -> None:
    out = tmp_path / name
    out.write_bytes(b"precious")
    broken = str(CORPUS / "sub/duplicated_row.csv")
    result = runner.invoke(app, ["score", broken, "--solution", SOLUTION, "--per-user", str(out)])
    assert result.exit_code == 1
    assert out.read_bytes() == b"precious"
    assert leftovers(tmp_path, {name}) == []


def test_a_write_that_fails_midway_leaves_an_existing_output_intact(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "per_user.csv"
    out.write_bytes(b"precious")

    def half_then_fail(self: pl.DataFrame, file: Any, *args: Any, **kwargs: Any) -> None:
        Path(file).write_bytes(b"user_id,stage,nd")
        raise OSError("disk full")

    monkeypatch.setattr(pl.DataFrame, "write_csv", half_then_fail)
    result = runner.invoke(
        app, ["score", str(VALID), "--solution", SOLUTION, "--per-user", str(out)]
    )
    assert result.exit_code == 2
    assert "Traceback" not in result.output
    assert out.read_bytes() == b"precious"
    assert leftovers(tmp_path, {"per_user.csv"}) == []


def test_a_successful_score_replaces_the_output_whole(tmp_path: Path) -> None:
    out = tmp_path / "per_user.csv"
    out.write_bytes(b"old")
    result = runner.invoke(
        app, ["score", str(VALID), "--solution", SOLUTION, "--per-user", str(out)]
    )
    assert result.exit_code == 0, result.output
    table = pl.read_csv(out)
    assert table.height == 4 and "ndcg" in table.columns
    assert leftovers(tmp_path, {"per_user.csv"}) == []


def test_inputs_are_never_modified(tmp_path: Path) -> None:
    source = tmp_path / "sub.csv"
    data = VALID.read_bytes()
    source.write_bytes(data)
    source.chmod(0o444)
    for args in (
        ["score", str(source), "--solution", SOLUTION, "--per-user", str(tmp_path / "u.csv")],
        ["validate", str(source), "--targets", TARGETS],
    ):
        assert runner.invoke(app, args).exit_code == 0
    assert source.read_bytes() == data
