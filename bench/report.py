"""bench/run.py's report: the targets of issues 16, 22 and 35 from a record's figures, the
Markdown of bench/RESULTS.md, and the README's performance block."""

from __future__ import annotations

import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

MARKERS = ("<!-- performance:start -->", "<!-- performance:end -->")

#: Wall-time noise allowed on this shared 2-core machine before "not slower" fails.
NOISE = 0.05
#: The memory budget that a run in parts must stay under (`scorer score --max-memory`'s default).
BUDGET_MB = 4 << 10


@dataclass(frozen=True)
class Target:
    """One line of the targets table: a target, the figure measured, and whether it is met
    (None: reported without a target, or not measured)."""

    what: str
    figure: str
    met: bool | None


class Ratio(NamedTuple):
    """A target on a ratio of medians: `a`'s over `b`'s, of the size keyed `key`, at most
    `limit` (None: reported, no target)."""

    what: str
    key: str
    a: str
    b: str
    limit: float | None
    measure: str = "wall"


#: The sizes of issue 16 that have the careful twins, as RESULTS.json keys them (a run's data
#: folder) and as a target names them.
SIZES = {"100000": "100k users", "1000000": "1M users", "10000000": "10M users"}
SLOWER = f"now / before ≤ {1 + NOISE:.2f} ({NOISE:.0%} for noise)"
M = "1000000"
#: Issue 16's targets on ratios, but for the careful twins' (`careful`).
RATIOS = [
    Ratio("1M users, CSV, full validation: wall ≤ 2.0× the floor", M, "scorer_csv", "floor", 2.0),
    Ratio("1M users, CSV: peak RSS ≤ 1.8× the floor's", M, "scorer_csv", "floor", 1.8, "rss_mb"),
    Ratio(
        "1M users, Parquet: wall ≤ 2.5× the floor that reads both Parquet files",
        *(M, "scorer_parquet", "floor_parquet", 2.5),
    ),
    Ratio(
        "1M users, a prepared solution: wall ≤ 1.6× the floor that reads the submission alone",
        *(M, "scorer_prepared", "floor_submission", 1.6),
    ),
    Ratio(
        "1M users, Parquet: wall ≤ 2.0× the floor that reads both Parquet files (issue 22)",
        *(M, "scorer_parquet", "floor_parquet", 2.0),
    ),
    Ratio(
        "1M users, Parquet: peak RSS ≤ 2.0× the floor's (issue 22)",
        *(M, "scorer_parquet", "floor_parquet", 2.0, "rss_mb"),
    ),
    Ratio(
        "1M users, text ids (32-hex users, 10-digit editions): wall ≤ 1.5× the integer CSV run "
        "(issue 22)",
        *(M, "scorer_text", "scorer_csv", 1.5),
    ),
    Ratio(
        "1M users, text ids (32-hex users, 10-digit editions): wall ≤ 1.3× the integer CSV run "
        "(issue 35)",
        *(M, "scorer_text", "scorer_csv", 1.3),
    ),
    Ratio(
        f"1M users, CSV: not slower, {SLOWER} (issue 22)", M, "scorer_csv", "before_csv", 1 + NOISE
    ),
    Ratio(f"100k users: not slower, {SLOWER}", "100000", "scorer_csv", "before_csv", 1 + NOISE),
    Ratio(
        f"K = 100, 200k users: not slower, {SLOWER}",
        *("k100-200000", "scorer_csv", "before_csv", 1 + NOISE),
    ),
    Ratio(
        f"10M users in parts: not slower, {SLOWER}",
        "10000000",
        "scorer_csv",
        "before_csv",
        1 + NOISE,
    ),
]


def careful(key: str) -> list[Ratio]:
    """The careful twins' targets at one size."""
    size = SIZES[key]
    return [
        Ratio(
            f"{size}: one quoted cell ≤ 1.5× its clean twin",
            key,
            "scorer_quoted",
            "scorer_csv",
            1.5,
        ),
        Ratio(
            f"{size}: a space after one value (the careful reader), against its clean twin",
            *(key, "scorer_spaced", "scorer_csv", None),
        ),
        Ratio(
            f"{size}: the careful reader not slower, {SLOWER}",
            *(key, "scorer_spaced", "before_spaced", 1 + NOISE),
        ),
    ]


def key_of(run: dict[str, Any]) -> str:
    return str(run.get("key", run["users"]))  # records before issue 16 have no key


def versus(table: dict[str, Any], a: str, b: str, measure: str = "wall") -> tuple[str, float]:
    """`a`'s median over `b`'s, as a figure (`7.10 s / 3.60 s = 1.97x`) and a ratio; KeyError
    when either was not measured."""
    x, y = table[a][measure], table[b][measure]
    shown = f"{x:,.0f} MB / {y:,.0f} MB" if measure == "rss_mb" else f"{x:.2f} s / {y:.2f} s"
    return f"{shown} = {x / y:.2f}×", x / y


def targets(runs: list[dict[str, Any]]) -> list[Target]:
    """The targets of issues 16, 22 and 35, each met or not, from one record's runs' figures."""
    by_key = {key_of(r): {t["name"]: t for t in r["table"]} for r in runs}
    twins = [k for k in SIZES if "scorer_quoted" in by_key.get(k, {})] or [M]
    found = []
    for r in RATIOS + [r for key in twins for r in careful(key)]:
        try:
            figure, value = versus(by_key.get(r.key, {}), r.a, r.b, r.measure)
        except KeyError:
            found.append(Target(r.what, "not measured", None))
            continue
        found.append(Target(r.what, figure, None if r.limit is None else value <= r.limit))
    parts = by_key.get("10000000", {}).get("scorer_csv")
    found.insert(
        len(RATIOS),
        Target(
            f"10M users in parts: peak RSS ≤ {BUDGET_MB >> 10} GiB",
            f"{parts['rss_mb']:,.0f} MB" if parts else "not measured",
            parts["rss_mb"] <= BUDGET_MB if parts else None,
        ),
    )
    found.insert(len(RATIOS) + 1, per_user_target(by_key))
    prepare = by_key.get(M, {}).get("prepare")
    if prepare:
        once = "1M users: `scorer prepare` the solution (once, before the timed runs; reported)"
        figure = f"{prepare['wall']:.2f} s, {prepare['rss_mb']:,.0f} MB"
        found.insert(4, Target(once, figure, None))
    return found


def per_user_target(by_key: dict[str, dict[str, Any]]) -> Target:
    """Issue 35's: 10M users in parts no slower per user than 1M users read whole (each run's
    wall over its users, start-up included in both)."""
    what = "10M users in parts: wall per user ≤ 1M users' (issue 35)"
    big, one = by_key.get("10000000", {}).get("scorer_csv"), by_key.get(M, {}).get("scorer_csv")
    if not (big and one):
        return Target(what, "not measured", None)
    ratio = (big["wall"] / 10_000_000) / (one["wall"] / 1_000_000)
    figure = f"{big['wall']:.2f} s / 10M ÷ {one['wall']:.2f} s / 1M = {ratio:.2f}×"
    return Target(what, figure, ratio <= 1 + NOISE)


def targets_table(runs: list[dict[str, Any]]) -> list[str]:
    verdict = {True: "met", False: "**not met**", None: "–"}
    lines = ["| target | figure | met |", "|---|---|---|"]
    return lines + [f"| {t.what} | {t.figure} | {verdict[t.met]} |" for t in targets(runs)]


#: The ratio of each command's row: to its floor, or a twin to its clean file (default: floor).
BASES: dict[str, str | None] = {
    "floor": None,
    "prepare": None,
    "scorer_parquet": "floor_parquet",
    "scorer_prepared": "floor_submission",
    "scorer_quoted": "scorer_csv",
    "scorer_spaced": "scorer_csv",
    "before_quoted": "before_csv",
    "before_spaced": "before_csv",
}


def size_table(table: list[dict[str, Any]]) -> list[str]:
    """One size's commands: medians, ratios to their base, today ÷ before, each repeat's wall."""
    named = {r["name"]: r for r in table}
    out = [
        "| command | wall (median) | cpu | peak RSS | ratio to | wall × | cpu × | RSS × "
        "| ÷ before (wall) | walls |",
        "|---|---:|---:|---:|---|---:|---:|---:|---:|---|",
    ]
    keys = ("wall", "cpu", "rss_mb")
    for r in table:
        base = named.get(BASES.get(r["name"], "floor") or "")
        ratios = [f"{r[k] / base[k]:.2f}" if base else "–" for k in keys]
        old = named.get("before_" + r["name"].removeprefix("scorer_"))
        then = f"{r['wall'] / old['wall']:.2f}" if old and r["name"].startswith("scorer_") else "–"
        out.append(
            f"| {r['label']} | {r['wall']:.2f} s | {r['cpu']:.2f} s | {r['rss_mb']:,.0f} MB | "
            f"{base['name'] if base else '–'} | {' | '.join(ratios)} | {then} | "
            f"{', '.join(f'{w:.2f}' for w in r['walls'])} |"
        )
    return out


def regenerate(argv: list[str]) -> str:
    """The commands that made a record (`--add` runs are saved as one argv joined by '&&')."""
    runs_of: list[list[str]] = [[]]
    for arg in argv:
        if arg == "&&":
            runs_of.append([])
        else:
            runs_of[-1].append(arg)
    return " && ".join(shlex.join([".venv/bin/python", "bench/run.py", *one]) for one in runs_of)


def render(record: dict[str, Any]) -> str:
    """The Markdown report of one record (as saved in RESULTS.json)."""
    info, runs = dict(record["info"]), record["runs"]
    when = info.pop("date")
    out = [
        "# Benchmark: `scorer score` against the floor, its careful twins and the code before",
        "",
        f"Regenerate with `{regenerate(record['argv'])}` from the repository root (`--peers` "
        "needs `python3 -m venv bench/.venv-peers && bench/.venv-peers/bin/pip install -r "
        "bench/requirements-peers.txt`).",
        "",
        f"- date: {when}",
        *[f"- {k}: {v}" for k, v in info.items()],
        "- repeats: "
        + ", ".join(
            f"{r.get('repeats', record['repeats'])} at {r.get('title', r['users'])}" for r in runs
        )
        + ", interleaved (the order rotates each repeat) after a run that checks the scores; "
        "medians shown",
        "- wall: the child's wall time from spawn to exit (start-up and imports included); "
        "cpu: its user + sys time; peak RSS: its `ru_maxrss` (`os.wait4`, bench/measure.py)",
        "- data: `bench/generate.py` (`scorer.synthetic.make_competition`, seed "
        f"{record['seed']}): 1–30 lost pairs a user, 20 ranked editions each, 50/50 "
        "public/private; k = 100: `generate.make_k100` (100 ranked editions, 0–30 lost); the "
        'careful twins: the submission with its first data row\'s rank quoted (`"1"`) or a '
        "space after its edition (`1004 ,`), every other byte the same",
        "- ratio to: each row's wall, cpu and peak RSS over those of the row named (its floor; a "
        "twin's clean file); ÷ before: today's wall over the same command's at `--before`",
        "",
        "The machine is shared: other sessions run tests and benchmarks on the same 2 cores, so "
        "wall times carry their load (the 1-minute load average is shown for each size). CPU "
        "time is less sensitive to it and is shown beside. Where the time goes inside "
        "`scorer score`: `bench/PROFILE.md`.",
    ]
    for run in runs:
        rows, sizes = run["rows"], run["bytes"]
        loads = ", ".join(f"{x:.1f}" for x in run["load"])

        def mb(name: str, sizes: dict[str, int] = sizes) -> str:
            csv, pq = sizes.get(f"{name}.csv", 0), sizes.get(f"{name}.parquet")
            return f"{csv / 1e6:,.0f} MB CSV" + (f", {pq / 1e6:,.0f} MB Parquet" if pq else "")

        out += [
            "",
            f"## {run.get('title') or format(run['users'], ',') + ' users'}",
            "",
            f"submission {rows['submission']:,} rows ({mb('submission')}); solution "
            f"{rows['solution']:,} rows ({mb('solution')}). Load average during the run: "
            f"{loads}.",
            "",
            *size_table(run["table"]),
            "",
            "Scores checked before timing:",
            "",
            *[f"- {note}" for note in run["notes"]],
            "",
            "<details><summary>commands</summary>",
            "",
            "```",
            *[f"{r['name']}: {r['command']}" for r in run["table"]],
            "```",
            "",
            "</details>",
        ]
    out += ["", "## Targets (issues 16, 22 and 35)", "", *targets_table(runs)]
    return "\n".join(out) + "\n"


def readme_block(record: dict[str, Any]) -> str:
    """The README's performance table: the targets of issues 16, 22 and 35, from a record."""
    info = record["info"]
    commit = info["code"].split(",")[0]  # "commit abc1234", without the sources' digest
    before = info.get("before", "not run").split(" = ")[0]  # "92c2901", not its full hash
    return "\n".join(
        [
            "The targets of issues 16, 22 and 35, from [`bench/RESULTS.md`](bench/RESULTS.md) "
            f"({info['date']}, "
            f"{commit}; {info['cpu']}; medians, each command a fresh process; before: {before}):",
            "",
            *targets_table(record["runs"]),
        ]
    )


def with_block(text: str, block: str) -> str:
    """`text` with `block` between its performance markers."""
    start, end = (text.find(m) for m in MARKERS)
    if start < 0 or end < start:
        raise SystemExit(f"no {MARKERS[0]} … {MARKERS[1]} in the README")
    return text[: start + len(MARKERS[0])] + "\n" + block + "\n" + text[end:]


def put_section(path: Path, lines: list[str]) -> None:
    """Write a section, `lines` between its own start and end markers (its first and last
    line), into the file at `path`: in place of the section those markers hold, else at the
    end. Each benchmark of bench/SERVE.md keeps its own."""
    start, end, section = lines[0], lines[-1], "\n".join(lines)
    text = path.read_text(encoding="utf-8")
    if start in text:
        text = text[: text.index(start)] + section + text[text.index(end) + len(end) :]
    else:
        text = text.rstrip("\n") + "\n\n" + section + "\n"
    path.write_text(text, encoding="utf-8")
