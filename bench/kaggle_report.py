"""bench/KAGGLE_SCALE.md from the figures of bench/kaggle_scale.py: the verdicts, the
throughput, the memory, the bytes kept, the page, and the deadline day on 16 cores."""

from __future__ import annotations

import math
import os
import platform
import statistics
from typing import Any

import deadline
import httpx
import numpy as np
import polars as pl
from leaderboard_bench import CORES
from serve_bench import ms, quantiles

#: The machine the question is about: its cores, one worker a core.
CORES_16 = 16


def seconds(figure: float) -> str:
    return f"{figure:.1f} s" if figure < 600 else f"{figure / 60:.0f} min"


def spread(values: list[float]) -> str:
    q = quantiles(values)
    return (
        f"{seconds(q['median'])} | {seconds(q['p95'])} | {seconds(q['max'])} "
        f"| {seconds(statistics.fmean(values))} | {q['n']}"
    )


def timings(batch: list[dict[str, Any]]) -> dict[str, list[float]]:
    """Each upload's phases, in seconds: the POST until its 202; from the 202 (accepted) to
    its claim, to its verdict; from its claim to its verdict (the worker's time)."""
    return {
        "upload": [row["accepted_by_client"] - row["posted"] for row in batch],
        "wait": [row["claimed"] - row["accepted"] for row in batch],
        "service": [row["verdict"] - row["claimed"] for row in batch],
        "response": [row["verdict"] - row["accepted"] for row in batch],
        "total": [row["verdict"] - row["posted"] for row in batch],
    }


def render(results: dict[str, Any]) -> str:
    run, data = results["replay"], results["data"]
    times = timings(run["batch"])
    lines = header(results) + verdicts(results, times) + throughput(run, times)
    lines += kept(run) + pages(run)
    lines += day(run, np.asarray(times["service"]), data)
    return "\n".join(lines) + "\n"


def header(results: dict[str, Any]) -> list[str]:
    data, run = results["data"], results["replay"]
    memory = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / (1 << 30)
    command = " ".join([".venv/bin/python bench/kaggle_scale.py", *results["argv"]])
    size = data["bytes"]["submission-0.csv"]
    loads = " and ".join(f"{x:.1f}" for x in results["loadavg"])
    return [
        "# A Kaggle-sized competition through `scorer serve`",
        "",
        f"Regenerate with `{command}` from the repository root (issue 35, item 3).",
        "",
        f"- date: {results['date']}; code: commit {results['commit']}",
        f"- machine: {CORES} cores ({platform.machine()}), {memory:.0f} GiB, shared with other "
        f"sessions; load average (1 min) {loads} at the start and the end",
        f"- python {platform.python_version()}, polars {pl.__version__}, httpx "
        f"{httpx.__version__} (the clients, on the same machine)",
        f"- competition: data/hm-kaggle's rules (MAP@12, empty customers left out, text ids) at "
        f"{data['users']:,} customers with 64-hex ids and 105,542 articles of 10 digits; "
        f"{data['empty_share']:.0%} of the customers bought nothing in the week scored "
        "(bench/kaggle_data.py says why); each submission lists 12 articles for every "
        f"customer: {size / 1e6:.0f} MB of CSV",
        f"- server: `scorer serve run --workers {results['workers']}` (SQLite, its folder on "
        f"this machine's disk), {results['teams']} teams; {run['uploads']} uploads, each a "
        f"distinct file: {results['workers']} at the start, then a batch of "
        f"{len(run['batch'])} posted one after the other",
        f"- total time of the run: {results['seconds']:.0f} s",
        "",
    ]


def verdicts(results: dict[str, Any], times: dict[str, list[float]]) -> list[str]:
    alone, run = results["alone"], results["replay"]
    seen = sum(row["claim_seen"] for row in run["batch"])
    return [
        "## The verdicts",
        "",
        "A worker's time is from the claim (the organiser's list first showing the upload "
        f"`scoring`, looked at every {run['pace']} s; {seen} of {len(run['batch'])} claims "
        "seen, the others taken at the last look that showed them queued) to the verdict "
        "(the audit log's `verdict` event, written in the transaction that finishes the job): "
        "the upload read, checked and scored in the judging process, and its per-user "
        "scores written. From the 202: the wait in the queue and the worker's time. The "
        "batch keeps every worker busy, so its waits are a burst's, not a day's (the "
        "deadline day below).",
        "",
        "| of the batch | median | p95 | max | mean | uploads |",
        "|:---|---:|---:|---:|---:|---:|",
        f"| **a worker's time, claim → verdict** | {spread(times['service'])} |",
        f"| the upload, POST → 202 (loopback) | {spread(times['upload'])} |",
        f"| wait in the queue, 202 → claim | {spread(times['wait'])} |",
        f"| upload → verdict, 202 → verdict | {spread(times['response'])} |",
        f"| POST → verdict | {spread(times['total'])} |",
        "",
        f"Each worker's first verdict after the start (202 → verdict: the solution loaded, the "
        f"judging process started): {', '.join(seconds(t) for t in run['first'])}. The same "
        f"file scored by `scorer score` alone, a process of its own: {alone['wall']:.1f} s, "
        f"{alone['cpu']:.1f} CPU-seconds, {alone['rss_mb']:,.0f} MB at its peak.",
        "",
    ]


def throughput(run: dict[str, Any], times: dict[str, list[float]]) -> list[str]:
    batch = run["batch"]
    span = max(row["verdict"] for row in batch) - min(row["claimed"] for row in batch)
    hourly = len(batch) / span * 3600
    cpu = run["cpu"] / len(batch)
    busy = sum(times["service"]) / (span * len(run["first"]))
    children = sorted((mb for pid, mb in run["peaks"].items() if pid != "server"), reverse=True)
    judges = children[: len(run["first"])]
    return [
        "## Throughput and memory",
        "",
        "| measure | figure | how |",
        "|:---|---:|:---|",
        f"| verdicts an hour | {hourly:,.0f} | {len(batch)} verdicts in {span:.0f} s, from the "
        "batch's first claim to its last verdict |",
        f"| **verdicts an hour per core** | **{hourly / CORES:,.0f}** | over this machine's "
        f"{CORES} cores, which also ran the web process, the clients and other sessions |",
        f"| CPU-seconds a verdict, the server's processes | {cpu:.1f} s | the web process, "
        "its worker loop and the judging processes (/proc), over the batch's verdicts |",
        f"| verdicts an hour per CPU-hour of the server | {3600 / cpu:,.0f} | 3,600 / the "
        "line above: a core given to the server alone |",
        f"| workers busy | {busy:.0%} | the workers' times over {len(run['first'])} × the span |",
        f"| the machine's cores busy | {run['machine'] / run['window']:.2f} of {CORES} "
        "| /proc/stat over the batch: every process, other sessions' too |",
        f"| peak memory, the web process and worker loop | {run['peaks']['server']:,.0f} MB "
        "| VmHWM: it holds the solution once for its slots |",
        f"| peak memory, each judging process | "
        f"{', '.join(f'{mb:,.0f} MB' for mb in judges)} | VmHWM, one process a worker |",
        "",
    ]


def kept(run: dict[str, Any]) -> list[str]:
    before, after = run["disk"]["before"], run["disk"]["after"]
    uploads, csv = run["uploads"], run["csv_bytes"] / run["uploads"]
    each = (sum(after.values()) - sum(before.values())) / uploads
    lines = [
        "## Bytes kept per upload",
        "",
        "What the server's folder holds once it stopped, less what it held before the first "
        f"upload, over the {uploads} uploads: the file as kept, its verdict and per-user "
        "scores, the boards and the audit log, whatever form they take.",
        "",
        "| in the folder | before the uploads | after | per upload |",
        "|:---|---:|---:|---:|",
    ]
    for name in sorted(before.keys() | after.keys()):
        was, now = before.get(name, 0), after.get(name, 0)
        lines.append(f"| `{name}` | {was:,} | {now:,} | {(now - was) / uploads:,.0f} |")
    lines += [
        f"| **all** | {sum(before.values()):,} | {sum(after.values()):,} | **{each:,.0f}** |",
        "",
        f"An upload is {csv:,.0f} bytes of CSV; the server keeps {each:,.0f} bytes for each, "
        f"{each / csv:.0%} of it (issue 35's goal for item 2: at most 20 %).",
        "",
    ]
    return lines


def pages(run: dict[str, Any]) -> list[str]:
    lines = [
        "## The page while the workers run",
        "",
        "Each request timed to its last byte. Idle: one request after the other before the "
        "batch and after its last verdict. While the workers run: every "
        f"{run['pace']} s during the batch, those made while the organiser's list showed an "
        "upload `scoring`.",
        "",
        "| page | when | requests | median | p95 | max |",
        "|:---|:---|---:|---:|---:|---:|",
    ]
    labels = {"idle": "idle, before", "busy": "**while workers run**", "after": "idle, after"}
    for page in ("/", "/team"):
        for phase, label in labels.items():
            found = run["pages"][phase][page]
            if not found:
                lines.append(f"| `GET {page}` | {label} | 0 | – | – | – |")
                continue
            q = quantiles(found)
            lines.append(
                f"| `GET {page}` | {label} | {q['n']} | {ms(q['median'])} | {ms(q['p95'])} "
                f"| {ms(q['max'])} |"
            )
    return [*lines, ""]


def day(run: dict[str, Any], service: np.ndarray, data: dict[str, Any]) -> list[str]:
    """The deadline day on one 16-core machine, from the batch's verdict times."""
    size = data["bytes"]["submission-0.csv"]
    before, after = run["disk"]["before"], run["disk"]["after"]
    each = (sum(after.values()) - sum(before.values())) / run["uploads"]
    children = [mb for pid, mb in run["peaks"].items() if pid != "server"]
    judge, server = max(children, default=0.0), run["peaks"]["server"]
    memory = (CORES_16 * judge + server) / 1024
    ram = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / (1 << 20)  # MB
    room = int((ram - server) // judge) if judge else 0
    mean = float(service.mean())
    capacity = CORES_16 * 3600 / mean
    lines = [
        f"## A deadline day on one {CORES_16}-core machine",
        "",
        f"The question: does one {CORES_16}-core machine hold {deadline.UPLOADS:,} uploads in "
        f"the deadline's 24 hours with the p95 of upload → verdict at most "
        f"{deadline.GOAL:.0f} s? Kaggle allows 5 uploads a team a day; H&M had 2,952 teams. "
        f"The model (bench/deadline.py): {CORES_16} workers, one a core, as this run had "
        f"{len(run['first'])} on {CORES}; uploads first come first served; each verdict's time "
        f"drawn from the {service.size} measured above (a worker's time: median "
        f"{np.median(service):.1f} s, mean {mean:.1f} s, max {service.max():.1f} s), so "
        f"{CORES_16} workers give at most {CORES_16} × 3,600 / {mean:.1f} = "
        f"**{capacity:,.0f} verdicts an hour**. Arrivals: each hour's count Poisson around "
        "its share of the day, uniform within the hour (`PROFILES`). The stated assumption is "
        "`rush`: half the uploads in the last four hours (10 %, 10 %, 12 %, 18 %), as teams "
        "keep their last uploads for their last models; `flat` is the floor, `steep` puts "
        "30 % in the final hour. The goal is judged on the day's p95 and on its busiest "
        "hour's.",
        "",
        "| profile | busiest hour | uploads in it | × the capacity | p95, the day "
        "| p95, the busiest hour | most queued | holds |",
        "|:---|---:|---:|---:|---:|---:|---:|:---|",
    ]
    outcome: dict[str, bool] = {}
    for name, shares in deadline.PROFILES.items():
        found = deadline.day(name, service, CORES_16)
        hour = deadline.peak_hour(name)
        peak = shares[hour] * deadline.UPLOADS
        outcome[name] = deadline.meets(found, name)
        lines.append(
            f"| `{name}` | {hour}:00 | {peak:,.0f} | {peak / capacity:.2f} "
            f"| {seconds(found.p95())} | {seconds(found.p95(hour))} | {found.most_queued:,} "
            f"| {'yes' if outcome[name] else '**no**'} |"
        )
    rows = []
    for name in deadline.PROFILES:
        fewest = deadline.fewest_workers(name, service)
        faster = deadline.speedup_needed(name, service, CORES_16)
        machines = "–" if fewest is None else str(math.ceil(fewest / CORES_16))
        rows.append(
            f"| `{name}` | {fewest if fewest is not None else 'more than 4,096'} | {machines} "
            f"| {'none' if faster == 1.0 else f'{faster:.2f}×'} |"
        )
    peak_bytes = max(deadline.PROFILES["rush"]) * deadline.UPLOADS * size / 3600
    answer = "**Yes**" if outcome["rush"] else "**No**"
    lines += [
        "",
        "| profile | fewest workers for the goal | 16-core machines | verdicts faster by, "
        "for 16 workers |",
        "|:---|---:|---:|---:|",
        *rows,
        "",
        f"{answer}, under `rush`: {verdict_words(outcome, service)} Memory: {CORES_16} "
        f"judging processes of up to {judge:,.0f} MB and the server's {server:,.0f} MB need "
        f"about {memory:.0f} GiB (this machine's {ram / 1024:.0f} GiB have room for "
        f"{room} workers at that size), so a {CORES_16}-core machine wants "
        f"{2 ** math.ceil(math.log2(max(memory, 1))):.0f} GiB. The uploads themselves: "
        f"the busiest hour of `rush` brings {peak_bytes / 1e6:,.0f} MB/s "
        f"({peak_bytes * 8 / 1e9:.1f} Gbit/s) of CSV, and the day "
        f"{deadline.UPLOADS * size / 1e12:.1f} TB received, of which the server keeps "
        f"{deadline.UPLOADS * each / 1e12:.2f} TB ({each / 1e6:.0f} MB an upload as measured "
        "above).",
        "",
    ]
    return lines


def verdict_words(outcome: dict[str, bool], service: np.ndarray) -> str:
    """The answer's reasons, in words, from the profiles' outcomes."""
    fewest = deadline.fewest_workers("rush", service)
    faster = deadline.speedup_needed("rush", service, CORES_16)
    if outcome["rush"]:
        spare = (
            ""
            if outcome["steep"]
            else (
                f" `steep` does not hold: it needs "
                f"{deadline.fewest_workers('steep', service)} workers, or verdicts "
                f"{deadline.speedup_needed('steep', service, CORES_16):.2f}× faster."
            )
        )
        return (
            f"{CORES_16} workers keep the p95 within {deadline.GOAL:.0f} s; {fewest} would "
            f"do.{spare}"
        )
    machines = math.ceil((fewest or 0) / CORES_16)
    return (
        f"{CORES_16} workers fall behind in the busiest hours. It takes {fewest} workers: "
        f"{machines} machines of {CORES_16} cores on one PostgreSQL store (`scorer serve "
        'worker --db` on each, README\'s "Beyond one machine"), or verdicts '
        f"{faster:.2f}× faster on one."
    )
