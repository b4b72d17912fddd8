"""Long-running fuzzer: hostile submissions against the scorer's API, within a time budget.

    .venv/bin/python scripts/fuzz.py --seconds 600 [--seed 1] [--out DIR]

Each example is a submission made by one generator (raw bytes, bytes under a valid header,
mutated valid CSV, random well-formed CSV rows, mutated gzip, mutated Parquet, random frames),
sometimes with small limits. It must either score or raise `SubmissionError` with a non-empty
report that renders, serialises and shows no hidden truth. For CSV and CSV.gz files an
independent strict reader (below) also says whether the file is valid, and a valid file's
scores are recomputed from the formula. Anything else is a failure: an exception of another
kind, a `HostError` for a participant's file, a hang, a leak, a valid file rejected, an invalid
file scored, or a wrong score. The first input of every distinct failure is saved in `--out`.
Example n of seed s is reproducible: `--seed s --only n`.
"""

from __future__ import annotations

import argparse
import gzip
import io
import json
import math
import multiprocessing
import os
import random
import re
import sys
import tempfile
import time
import traceback
import zlib
from collections import Counter
from dataclasses import dataclass, field
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

import polars as pl

from scorer import HostError, Limits, SubmissionError, read_solution, score
from scorer.competition import LOST_ITEMS
from scorer.errors import Report

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT / "tests" / "corpus"
SOLUTION_PATH = CORPUS / "solution.csv"
VALID = (CORPUS / "sub" / "valid.csv").read_bytes()
VALID_PARQUET = (CORPUS / "sub" / "valid.parquet").read_bytes()
HEADER = b"user_id,edition_id,rank"
COLUMNS = ("user_id", "edition_id", "rank")
K = 20
MAX_ID = 2**63 - 1
SPLIT_WORDS = re.compile(r"\b(public|private)\b", re.I)

INTERESTING = [
    b",", b"\n", b"\r", b"\r\n", b'"', b"\x00", b"\xff", b"\xef\xbb\xbf", b"-", b"+", b".",
    b" ", b"\t", b";", b"|", b"0", b"9", b"e", b"{", b"PK\x03\x04", b"\x1f\x8b", b"\xc3",
    b"\xe2\x80\xa8", b"\x0b", b"\x0c", b"\x85",
]  # fmt: skip
NUMBERS = [
    b"0", b"1", b"20", b"21", b"-1", b"1.0", b"1e3", b"", b"abc", b" 7", b"+7", b"0x1F",
    b"NaN", b"9223372036854775807", b"9223372036854775808", b"18446744073709551616",
    b"1001", b"1002", b"1003", b"1004", b"700001", b"700004", b"\xd9\xa3", b'"5"', b"5,5",
    b"007", b"\xef\xbc\x95",
]  # fmt: skip


# --- The truth the oracle knows -------------------------------------------------------------


@dataclass(frozen=True)
class Truth:
    stage: dict[int, str]
    lost: dict[int, set[int]]

    @classmethod
    def read(cls, path: Path) -> Truth:
        stage: dict[int, str] = {}
        lost: dict[int, set[int]] = {}
        for line in path.read_text(encoding="utf-8").splitlines()[1:]:
            user, edition, split = line.split(",")
            stage[int(user)] = split
            lost.setdefault(int(user), set())
            if edition:
                lost[int(user)].add(int(edition))
        return cls(stage, lost)

    @property
    def hidden(self) -> list[bytes]:
        return [str(e).encode() for editions in self.lost.values() for e in editions]

    def scores(self, ranked: dict[int, dict[int, int]]) -> dict[str, float]:
        per: dict[int, float] = {}
        for user, lost in self.lost.items():
            dcg = sum(1 / math.log2(r + 1) for r, e in ranked[user].items() if e in lost)
            idcg = sum(1 / math.log2(r + 1) for r in range(1, min(len(lost), K) + 1))
            per[user] = dcg / idcg if idcg else 0.0
        out = {"overall": sum(per.values()) / len(per)}
        for split in ("public", "private"):
            users = [per[u] for u, s in self.stage.items() if s == split]
            out[split] = sum(users) / len(users)
        return out


def strict_read(data: bytes, gzipped: bool, limits: Limits) -> dict[int, dict[int, int]] | None:
    """The contract, read the obvious way: user -> {rank: edition} for a valid file, or None.
    Row order is free; a BOM, CRLF, quoted cells, blank lines and a missing final newline are
    allowed; every cell is digits only; every target user has ranks 1..20 once and 20
    distinct editions; no other user."""
    if len(data) > limits.max_file_bytes:
        return None
    if gzipped:
        try:
            data = gzip.decompress(data)
        except (OSError, EOFError, ValueError, zlib.error):
            return None
        if len(data) > limits.max_decompressed_bytes:
            return None
    lines = data.split(b"\n")
    if any(len(line) > limits.for_competition(LOST_ITEMS).line_cap for line in lines):
        return None
    if lines and lines[-1] == b"":
        lines.pop()
    if len(lines) - 1 > limits.max_rows:
        return None
    try:
        text = [line.decode("utf-8") for line in lines]
    except UnicodeDecodeError:
        return None
    if not text:
        return None
    header = [
        unquote(n.strip()) for n in text[0].removeprefix("\ufeff").removesuffix("\r").split(",")
    ]
    if sorted(header) != sorted(COLUMNS):
        return None
    ranked: dict[int, dict[int, int]] = {}
    editions: dict[int, set[int]] = {}
    for line in text[1:]:
        line = line.removesuffix("\r")
        if not line.strip():
            continue
        cells = line.split(",")
        if len(cells) != len(COLUMNS):
            return None
        values = {}
        for name, cell in zip(header, cells, strict=True):
            cell = unquote(cell)
            if not re.fullmatch(r"[0-9]+", cell, re.ASCII) or int(cell) > MAX_ID:
                return None
            values[name] = int(cell)
        user, edition, rank = values["user_id"], values["edition_id"], values["rank"]
        if not 1 <= rank <= K or rank in ranked.setdefault(user, {}):
            return None
        if edition in editions.setdefault(user, set()):
            return None
        ranked[user][rank] = edition
        editions[user].add(edition)
    if not ranked:
        return None
    if set(ranked) != set(TRUTH.stage) or any(len(r) != K for r in ranked.values()):
        return None
    return ranked


def unquote(cell: str) -> str:
    if len(cell) >= 2 and cell[0] == cell[-1] == '"':
        return cell[1:-1].replace('""', '"')
    return cell


TRUTH = Truth.read(SOLUTION_PATH)


# --- Generators -----------------------------------------------------------------------------


def mutate(rng: random.Random, data: bytes) -> bytes:
    if not data:
        return bytes([rng.randrange(256)])
    kind = rng.choice(["flip", "insert", "delete", "swap", "dup", "drop", "number", "number"])
    i = rng.randrange(len(data))
    if kind == "flip":
        return data[:i] + bytes([data[i] ^ rng.randrange(1, 256)]) + data[i + 1 :]
    if kind == "insert":
        piece = rng.choice(INTERESTING) if rng.random() < 0.7 else rng.randbytes(rng.randrange(8))
        return data[:i] + piece + data[i:]
    if kind == "delete":
        return data[:i] + data[i + rng.randrange(1, 40) :]
    if kind == "number":
        runs = list(re.finditer(rb"[0-9]+", data))
        if not runs:
            return data
        run = rng.choice(runs)
        return data[: run.start()] + rng.choice(NUMBERS) + data[run.end() :]
    lines = data.split(b"\n")
    a, b = rng.randrange(len(lines)), rng.randrange(len(lines))
    if kind == "swap":
        lines[a], lines[b] = lines[b], lines[a]
    elif kind == "dup":
        lines.insert(b, lines[a])
    else:
        del lines[a]
    return b"\n".join(lines)


def mutated(rng: random.Random, data: bytes, most: int) -> bytes:
    for _ in range(rng.randrange(1, most + 1)):
        data = mutate(rng, data)
    return data


def well_formed(rng: random.Random) -> bytes:
    """Rows from a small grammar: mostly the right users, ranks and editions, with slips."""
    users = list(TRUTH.stage)
    rows = []
    for user in users:
        if rng.random() < 0.05:
            continue
        ranks = list(range(1, K + 1))
        rng.shuffle(ranks)
        editions = (
            rng.sample(range(1, 60), K) if rng.random() < 0.9 else rng.choices(range(60), k=K)
        )
        hits = list(TRUTH.lost[user])
        for rank, edition in zip(ranks, editions, strict=True):
            if hits and rng.random() < 0.2:
                edition = hits.pop()
            rows.append([str(user), str(edition), str(rank)])
    for _ in range(rng.choice([0, 0, 0, 1, 3])):
        rows.append([str(rng.randrange(2000)), str(rng.randrange(99)), str(rng.randrange(22))])
    rng.shuffle(rows)
    order = list(range(3))
    if rng.random() < 0.3:
        rng.shuffle(order)
    newline = b"\r\n" if rng.random() < 0.2 else b"\n"
    quote = rng.random() < 0.1
    out = [b",".join(COLUMNS[i].encode() for i in order)]
    for row in rows:
        cells = [row[i] for i in order]
        out.append(",".join(f'"{c}"' if quote else c for c in cells).encode())
    data = newline.join(out) + (newline if rng.random() < 0.9 else b"")
    if rng.random() < 0.1:
        data = b"\xef\xbb\xbf" + data
    return mutated(rng, data, 2) if rng.random() < 0.3 else data


def parquet_mutated(rng: random.Random) -> bytes:
    data = VALID_PARQUET
    for _ in range(rng.randrange(1, 4)):
        i = rng.randrange(len(data))
        data = data[:i] + bytes([data[i] ^ rng.randrange(1, 256)]) + data[i + 1 :]
    return data


def random_frame(rng: random.Random) -> pl.DataFrame:
    rows = rng.randrange(0, 100)
    names = list(COLUMNS)
    if rng.random() < 0.2:
        names[rng.randrange(3)] = rng.choice(["score", "Rank", "user_id", ""])
    columns: dict[str, Any] = {}
    for name in names:
        kind = rng.choice(["int", "int", "uint", "float", "str", "null", "bool", "list"])
        values: Any
        if kind in ("int", "uint"):
            picks = [rng.choice([0, 1, 20, 1001, 1004, -1, 2**40]) for _ in range(rows)]
            values = pl.Series(picks, dtype=pl.Int64)
            if kind == "uint":
                values = values.abs().cast(pl.UInt64) + rng.choice([0, 2**63])
        elif kind == "float":
            values = [rng.choice([1.0, 1.5, float("nan"), float("inf")]) for _ in range(rows)]
        elif kind == "str":
            values = [rng.choice(["1", "1001", "", "abc", " 1", "1.0", None]) for _ in range(rows)]
        elif kind == "null":
            values = pl.Series([None] * rows)
        elif kind == "bool":
            values = [rng.random() < 0.5 for _ in range(rows)]
        else:
            values = [[1, 2]] * rows
        columns[name] = values
    try:
        return pl.DataFrame(columns)
    except Exception:
        return pl.DataFrame({"user_id": [1]})


@dataclass(frozen=True)
class Example:
    kind: str
    suffix: str
    data: bytes | None
    frame: pl.DataFrame | None
    limits: Limits


def make(rng: random.Random) -> Example:
    limits = Limits()
    if rng.random() < 0.1:
        limits = Limits(
            max_file_bytes=rng.choice([100, 2000, 10**9]),
            max_decompressed_bytes=rng.choice([500, 5000, 10**9]),
            max_rows=rng.choice([10, 79, 80, 10**6]),
            max_line_bytes=rng.choice([16, 20, 64, 4096]),
        )
    kind = rng.choices(
        ["raw", "header", "mutated", "well_formed", "gzip", "parquet", "frame"],
        weights=[1, 2, 5, 4, 1, 1, 1],
    )[0]
    if kind == "raw":
        return Example(kind, ".csv", rng.randbytes(rng.randrange(3000)), None, limits)
    if kind == "header":
        body = rng.randbytes(rng.randrange(2000))
        return Example(kind, ".csv", HEADER + b"\n" + body, None, limits)
    if kind == "mutated":
        return Example(kind, ".csv", mutated(rng, VALID, 8), None, limits)
    if kind == "well_formed":
        return Example(kind, ".csv", well_formed(rng), None, limits)
    if kind == "gzip":
        packed = gzip.compress(mutated(rng, VALID, 3), mtime=0)
        if rng.random() < 0.5:
            packed = mutated(rng, packed, 2)
        return Example(kind, ".csv.gz", packed, None, limits)
    if kind == "parquet":
        return Example(kind, ".parquet", parquet_mutated(rng), None, limits)
    return Example(kind, "", None, random_frame(rng), limits)


# --- Running one example --------------------------------------------------------------------


@dataclass
class Tally:
    tried: int = 0
    outcomes: Counter[str] = field(default_factory=Counter)
    kinds: Counter[str] = field(default_factory=Counter)
    failures: Counter[str] = field(default_factory=Counter)
    first: dict[str, str] = field(default_factory=dict)


def submitted(example: Example) -> str:
    """What the participant wrote, as text: a hidden id or split word in it may be echoed."""
    data = example.data
    if data is None:
        return "" if example.frame is None else str(example.frame.to_dicts())
    out = [data.decode("latin-1")]
    try:
        if example.suffix == ".csv.gz":
            out.append(zlib.decompressobj(31).decompress(data, 1 << 24).decode("latin-1"))
        elif example.suffix == ".parquet":
            import pyarrow.parquet as pq

            out.append(str(pq.read_table(io.BytesIO(data)).to_pylist()))
    except Exception:  # what cannot be read cannot be echoed either
        pass
    return "\n".join(out)


def check_report(report: Report, example: Example) -> str | None:
    """A rejection's report must be complete and participant-safe."""
    if not report.problems or report.total <= 0:
        return "empty report"
    text = report.render() + json.dumps(report.to_dict())
    typed = submitted(example)
    for edition in TRUTH.hidden:
        if edition.decode() not in typed and edition.decode() in text:
            return f"leak: hidden edition {edition.decode()}"
    if SPLIT_WORDS.search(text) and not SPLIT_WORDS.search(typed):
        return "leak: a split word in a rejection"
    return None


def run_one(example: Example, path: Path, solution: Any) -> tuple[str, str | None]:
    """('scored' | 'rejected', None) or ('failure', key)."""
    source: Any = example.frame
    if example.data is not None:
        path = path.with_name("example" + example.suffix)
        path.write_bytes(example.data)
        source = path
    try:
        result = score(source, solution, limits=example.limits)
    except SubmissionError as exc:
        problem = check_report(exc.report, example)
        if problem:
            return "failure", problem
        outcome = "rejected"
    except HostError as exc:
        return "failure", f"HostError for a submission: {exc.report.codes}"
    except (KeyboardInterrupt, SystemExit):
        raise
    except BaseException as exc:  # a crash: anything else, Rust panics included
        tb = traceback.extract_tb(exc.__traceback__)
        ours = [f for f in tb if "/scorer/" in f.filename] or tb[-1:]
        where = f"{Path(ours[-1].filename).name}:{ours[-1].lineno}" if ours else "?"
        return "failure", f"{type(exc).__name__} at {where}: {str(exc)[:80]}"
    else:
        outcome = "scored"
        if result.overall is not None and not 0.0 <= result.overall <= 1.0:
            return "failure", f"score out of range: {result.overall}"
    if example.data is None or example.suffix == ".parquet":
        return outcome, None
    truth = strict_read(example.data, example.suffix == ".csv.gz", example.limits)
    if outcome == "scored" and truth is None:
        return "failure", "scored a file the strict reader rejects"
    if outcome == "rejected" and truth is not None:
        return "failure", "rejected a file the strict reader accepts"
    if outcome == "scored" and truth is not None:
        expected = TRUTH.scores(truth)
        got = {"overall": result.overall, "public": result.public, "private": result.private}
        for split, value in expected.items():
            if abs((got[split] or 0.0) - value) > 1e-9:
                return "failure", f"wrong {split} score"
    return outcome, None


def example_of(seed: int, n: int) -> Example:
    return make(random.Random(seed * 1_000_003 + n))


def worker(conn: Connection, seed: int) -> None:
    """Runs examples in a child process, so a crash that kills the process (a Rust abort,
    an out-of-memory kill) is one failure, not the end of the run."""
    quiet = os.open(os.devnull, os.O_WRONLY)
    os.dup2(quiet, 2)  # Rust panics print backtraces; they are caught and counted anyway
    solution = read_solution(SOLUTION_PATH)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "example"
        while (n := conn.recv()) is not None:
            example = example_of(seed, n)
            conn.send((example.kind, *run_one(example, path, solution)))


class Runner:
    """The parent's side: one worker at a time, restarted after it dies or hangs."""

    def __init__(self, seed: int) -> None:
        self.seed = seed
        self.context = multiprocessing.get_context("spawn")
        self.process: Any = None
        self.conn: Connection | None = None

    def start(self) -> Connection:
        here, there = self.context.Pipe()
        self.process = self.context.Process(target=worker, args=(there, self.seed), daemon=True)
        self.process.start()
        self.conn = here
        return here

    def stop(self) -> None:
        if self.process is not None:
            self.process.kill()
            self.process.join()
        self.process, self.conn = None, None

    def run(self, n: int, timeout: float) -> tuple[str, str, str | None]:
        conn = self.conn or self.start()
        conn.send(n)
        if not conn.poll(timeout):
            self.stop()
            return example_of(self.seed, n).kind, "failure", "hang"
        try:
            kind, outcome, key = conn.recv()
            return kind, outcome, key
        except EOFError:
            code = self.process.exitcode if self.process is not None else None
            self.stop()
            return example_of(self.seed, n).kind, "failure", f"process died (exit {code})"


def save(out: Path, key: str, example: Example, seed: int, n: int) -> None:
    out.mkdir(parents=True, exist_ok=True)
    name = re.sub(r"[^A-Za-z0-9]+", "_", key)[:60]
    target = out / f"{name}-s{seed}-n{n}{example.suffix or '.parquet'}"
    if example.data is not None:
        target.write_bytes(example.data)
    elif example.frame is not None:
        example.frame.write_parquet(target)
    (out / f"{target.name}.txt").write_text(
        f"{key}\nseed {seed}, example {n}, kind {example.kind}, limits {example.limits}\n",
        encoding="utf-8",
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--seconds", type=float, default=600)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument(
        "--out", type=Path, default=Path(tempfile.gettempdir()) / "scorer-fuzz-failures"
    )
    parser.add_argument("--only", type=int, help="run only example N (to reproduce it)")
    parser.add_argument("--timeout", type=float, default=60, help="seconds before a hang")
    args = parser.parse_args(argv)

    tally = Tally()
    runner = Runner(args.seed)
    start = time.monotonic()
    progress = start
    todo = iter([args.only] if args.only is not None else range(10**12))
    try:
        for n in todo:
            if args.only is None and time.monotonic() - start > args.seconds:
                break
            kind, outcome, key = runner.run(n, args.timeout)
            tally.tried += 1
            tally.kinds[kind] += 1
            tally.outcomes[outcome] += 1
            if key is not None:
                tally.failures[key] += 1
                if key not in tally.first:
                    tally.first[key] = f"--seed {args.seed} --only {n} ({kind})"
                    save(args.out, key, example_of(args.seed, n), args.seed, n)
                    print(f"new failure: {key} [{tally.first[key]}]", flush=True)
            if time.monotonic() - progress > 60:
                progress = time.monotonic()
                failures = sum(tally.failures.values())
                print(f"{tally.tried:,} tried, {failures} failures", flush=True)
    finally:
        runner.stop()
    print(summary(tally, time.monotonic() - start, args.seed))
    return 1 if tally.failures else 0


def summary(tally: Tally, elapsed: float, seed: int) -> str:
    failures = sum(tally.failures.values())
    lines = [
        f"fuzz summary (seed {seed}, {elapsed:.0f} s)",
        f"  examples tried:    {tally.tried:,} ({tally.tried / max(elapsed, 1e-9):.0f}/s)",
        "  by generator:      " + ", ".join(f"{k} {v:,}" for k, v in sorted(tally.kinds.items())),
        "  outcomes:          "
        + ", ".join(f"{k} {v:,}" for k, v in sorted(tally.outcomes.items())),
        f"  failures found:    {failures:,}",
        f"  distinct failures: {len(tally.failures)}",
    ]
    for key, count in tally.failures.most_common():
        lines.append(f"    {count:>6,} x {key}   first: {tally.first[key]}")
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
