"""Write a deterministic synthetic competition of N users as CSV and Parquet, for the benchmark.

    .venv/bin/python bench/generate.py --users 1000000          # -> bench/work/1000000/

Files: solution.csv, targets.csv, submission.csv, and the same three as .parquet, plus
manifest.json (arguments, row counts, sizes). A folder whose manifest matches the arguments is
kept as it is (`--force` rewrites it). Users are written a part at a time (whole blocks of
`scorer.synthetic.BLOCK` users), so memory stays flat however many users are asked for.

Also here: the careful twins of a submission (`twin`: the same bytes but for one cell of the
first data row), the text-id twin of a competition (`text_twin`) and a k = 100 competition
(`make_k100`), for bench/run.py and bench/k_bench.py.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import time
from pathlib import Path

import numpy as np
import polars as pl

from scorer.synthetic import BLOCK, make_competition

HERE = Path(__file__).resolve().parent
DEFAULT_WORK = HERE / "work"

#: Users generated and written at once: 10 blocks, about 0.5 GB of frames.
PART = 10 * BLOCK

#: The typed schemas every reader in the benchmark uses.
SCHEMAS: dict[str, dict[str, type[pl.DataType]]] = {
    "solution": {"user_id": pl.Int64, "edition_id": pl.Int64, "stage": pl.String},
    "targets": {"user_id": pl.Int64},
    "submission": {"user_id": pl.Int64, "edition_id": pl.Int64, "rank": pl.Int64},
}

#: Bump when the generator's output changes, so old folders are rewritten.
FORMAT = 2


def folder(users: int, seed: int = 0, work: Path = DEFAULT_WORK) -> Path:
    return work / (str(users) if seed == 0 else f"{users}-seed{seed}")


def generate(users: int, *, seed: int = 0, work: Path = DEFAULT_WORK, force: bool = False) -> Path:
    """Write (or keep) the competition's files; return their folder."""
    out = folder(users, seed, work)
    wanted = {"format": FORMAT, "users": users, "seed": seed}
    manifest = out / "manifest.json"
    if not force and manifest.is_file():
        found = json.loads(manifest.read_text())
        if {k: found.get(k) for k in wanted} == wanted:
            return out
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    started = time.perf_counter()
    rows = dict.fromkeys(SCHEMAS, 0)
    handles = {name: (out / f"{name}.csv").open("wb") for name in SCHEMAS}
    single = users <= PART
    try:
        for offset in range(0, users, PART):
            part = make_competition(min(PART, users - offset), seed=seed, offset=offset)
            for name in SCHEMAS:
                frame: pl.DataFrame = getattr(part, name)
                frame.write_csv(handles[name], include_header=offset == 0)
                rows[name] += frame.height
                if single:  # in memory anyway: no need to read the CSV back
                    frame.write_parquet(out / f"{name}.parquet")
    finally:
        for handle in handles.values():
            handle.close()
    csv_seconds = time.perf_counter() - started  # generating and writing the parts
    if not single:  # one streaming pass a file keeps memory flat
        for name, schema in SCHEMAS.items():
            pl.scan_csv(out / f"{name}.csv", schema=schema).sink_parquet(out / f"{name}.parquet")
    sizes = {p.name: p.stat().st_size for p in sorted(out.iterdir())}
    manifest.write_text(
        json.dumps(
            {
                **wanted,
                "rows": rows,
                "bytes": sizes,
                "seconds": {
                    "parts": round(csv_seconds, 2),
                    "total": round(time.perf_counter() - started, 2),
                },
            },
            indent=2,
        )
        + "\n"
    )
    return out


#: How each careful twin dresses the cells of the submission's first data row (user, item, rank).
#: "quoted": `"1"` for the rank, which polars' typed reader reads as 1 (so the fast path should
#: cost what the clean file costs); "spaced": a space after the item (`1004 ,`), which polars'
#: typed reader refuses, so the careful reader judges every line of the file as text.
TWINS = {
    "quoted": lambda user, item, rank: [user, item, b'"' + rank + b'"'],
    "spaced": lambda user, item, rank: [user, item + b" ", rank],
}


def twin(data: Path, kind: str) -> Path:
    """`data`'s submission.csv with the first data row dressed as TWINS[kind] says, every other
    byte the same (written once, beside it, as submission_KIND.csv)."""
    source, target = data / "submission.csv", data / f"submission_{kind}.csv"
    if target.is_file():  # written whole under another name, then renamed
        return target
    partial = target.with_suffix(".partial")
    with source.open("rb") as read, partial.open("wb") as write:
        write.write(read.readline())
        cells = read.readline().rstrip(b"\r\n").split(b",")
        write.write(b",".join(TWINS[kind](*cells)) + b"\n")
        shutil.copyfileobj(read, write, 64 << 20)
    partial.replace(target)
    return target


#: The spec of the text-id twin: lost items with text ids (task.md, "Text ids").
TEXT_SPEC = """\
k = 20
[ids]
user = "text"
item = "text"
[columns]
user = "user_id"
item = "edition_id"
rank = "rank"
list = "edition_ids"
[words]
item = "edition"
pairs = "pairs"
"""


def text_twin(data: Path) -> Path:
    """`data`'s solution and submission with text ids (issue 22's case): each user 32
    hexadecimal characters (of a digest of its id), each edition its id in
    10 digits with leading zeros, every other byte's meaning the same; written once, in
    `data`/text/ with its competition.toml. The scores are those of the integer files, to
    the bit."""
    out = data / "text"
    toml = out / "competition.toml"
    if toml.is_file():  # written last
        return out
    out.mkdir(exist_ok=True)
    for name in ("solution", "submission"):
        frame = pl.scan_csv(data / f"{name}.csv", infer_schema=False).with_columns(
            # a digest's digits in hex: ids that differ from their first characters, as
            # Kaggle's customer ids do (the scores' bit-for-bit check catches a collision)
            pl.col("user_id").hash(7).cast(pl.String).str.zfill(20).str.encode("hex").str.head(32),
            pl.col("edition_id").str.zfill(10),
        )
        frame.sink_csv(out / f"{name}.csv")
    toml.write_text(TEXT_SPEC, encoding="utf-8")
    return out


#: The k = 100 competition: K editions listed a user, up to MISSES lost ones not listed.
K100, MISSES = 100, 30
#: A prime larger than K100 + MISSES: `(a + j*b) % P` for j = 0..K100+MISSES-1 are distinct.
P = 100_003


def make_k100(out: Path, users: int = 200_000) -> Path:
    """Write (or keep) a k = 100 competition of `users` users (as many rows as 1M users at
    k = 20 for 200,000); numpy seed 0, so the same bits every time."""
    toml = out / "competition.toml"
    if toml.is_file():  # written last
        return out
    out.mkdir(parents=True, exist_ok=True)
    k = K100
    rng = np.random.default_rng(0)
    ids = 100_000 + np.arange(users, dtype=np.int64)
    a, b = rng.integers(0, P, users), rng.integers(1, P, users)
    j = np.arange(k + MISSES + 1)  # k listed, MISSES not listed, one empty edition_id
    editions = 1_000_000 + (a[:, None] + j[None, :] * b[:, None]) % P
    editions[:, -1] = -1  # the row of a user with no lost editions
    ranks = rng.random((users, k)).argsort(axis=1) + 1  # a shuffled 1..k a user
    lost = rng.integers(0, MISSES + 1, users)  # 0..30 lost editions a user
    hits = rng.binomial(lost, 0.5)  # about half of them listed
    stage = np.where(rng.random(users) < 0.5, "public", "private")
    pl.DataFrame(
        {"user_id": ids.repeat(k), "edition_id": editions[:, :k].ravel(), "rank": ranks.ravel()}
    ).write_csv(out / "submission.csv")
    chosen = np.where(j < k, j < hits[:, None], j - k < (lost - hits)[:, None])
    chosen[:, -1] = lost == 0
    row = np.nonzero(chosen)[0]  # row-major: sorted by user
    edition = pl.col("edition_id")
    pl.DataFrame(
        {"user_id": ids[row], "edition_id": editions[chosen], "stage": stage[row]}
    ).with_columns(pl.when(edition >= 0).then(edition)).write_csv(out / "solution.csv")
    toml.write_text(f'name = "lost items at k = {k}"\nk = {k}\n\n[words]\nitem = "edition"\n')
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--users", type=int, default=1_000_000, help="number of target users")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--work", type=Path, default=DEFAULT_WORK, help="parent folder")
    parser.add_argument("--force", action="store_true", help="rewrite even if up to date")
    args = parser.parse_args(argv)
    if args.users < 1:
        parser.error("--users must be at least 1")
    out = generate(args.users, seed=args.seed, work=args.work, force=args.force)
    info = json.loads((out / "manifest.json").read_text())
    print(f"{out}: {info['rows']} rows, {info['seconds']}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
