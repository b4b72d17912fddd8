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
    """The deadline day on one 16-core machine, from the batch's verdict times: as measured,
    and scaled to the CPU-seconds a verdict took (a core of its own for each worker)."""
    size = data["bytes"]["submission-0.csv"]
    before, after = run["disk"]["before"], run["disk"]["after"]
    each = (sum(after.values()) - sum(before.values())) / run["uploads"]
    children = [mb for pid, mb in run["peaks"].items() if pid != "server"]
    judge, server = max(children, default=0.0), run["peaks"]["server"]
    memory = (CORES_16 * judge + server) / 1024
    ram = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / (1 << 20)  # MB
    fits = int((ram - server) // judge) if judge else 0
    cpu = run["cpu"] / len(run["batch"])
    models = {"as measured": service, "a core each": service * (cpu / service.mean())}
    lines = [
        f"## A deadline day on one {CORES_16}-core machine",
        "",
        f"The question: does one {CORES_16}-core machine hold {deadline.UPLOADS:,} uploads in "
        f"the deadline's 24 hours with the p95 of upload → verdict at most "
        f"{deadline.GOAL:.0f} s (from the upload accepted, its 202, to the verdict: the "
        "transfer before it is the participant's network's)? Kaggle allows 5 uploads a team "
        "a day; H&M had 2,952 teams. "
        f"The model (bench/deadline.py): {CORES_16} workers, one a core, as this run had "
        f"{len(run['first'])} on {CORES}; uploads first come first served; each verdict's "
        f"time drawn from the {service.size} of the batch. Two sets of times: **as "
        f"measured** (median {np.median(service):.1f} s, mean {service.mean():.1f} s, max "
        f"{service.max():.1f} s, while the server's processes used {cpu / service.mean():.2f} "
        "CPU-seconds a second of a worker's time: the clients and other sessions had the "
        "rest of the cores), and **a core each**, the same times scaled to a mean of "
        f"{cpu:.1f} s, the CPU-seconds a verdict took of the server's processes (the web "
        "process's share included). Capacity: 16 × 3,600 / the mean, verdicts an hour. "
        "Arrivals: each hour's count Poisson around its share of the day, uniform within "
        "the hour (`PROFILES`). The stated assumption is `rush`: half the uploads in the "
        "last four hours (10 %, 10 %, 12 %, 18 %), as teams keep their last uploads for "
        "their last models; `flat` is the floor, `steep` puts 30 % in the final hour. The "
        "goal is judged on the day's p95 and on its busiest hour's; then the fewest "
        "workers that meet it (past 16, on one PostgreSQL store, machines of 16 cores each "
        "running `scorer serve worker`), and the headroom: the factor by which every "
        "verdict's time may grow with 16 workers still meeting it (below 1: how much "
        "faster a verdict must be).",
        "",
        "| verdict times | profile | uploads, busiest hour | × capacity | p95, the day "
        "| p95, busiest hour | most queued | holds | fewest workers | 16-core machines "
        "| headroom |",
        "|:---|:---|---:|---:|---:|---:|---:|:---|---:|---:|---:|",
    ]
    holds: dict[tuple[str, str], bool] = {}
    for model, times in models.items():
        capacity = CORES_16 * 3600 / times.mean()
        for name, shares in deadline.PROFILES.items():
            found, hour = deadline.day(name, times, CORES_16), deadline.peak_hour(name)
            peak = shares[hour] * deadline.UPLOADS
            holds[model, name] = deadline.meets(found, name)
            fewest = deadline.fewest_workers(name, times)
            room = deadline.headroom(name, times, CORES_16)
            lines.append(
                f"| {model} | `{name}` | {peak:,.0f} | {peak / capacity:.2f} "
                f"| {seconds(found.p95())} | {seconds(found.p95(hour))} "
                f"| {found.most_queued:,} | {'yes' if holds[model, name] else '**no**'} "
                f"| {fewest or 'over 4,096'} | {math.ceil((fewest or 4096) / CORES_16)} "
                f"| {room:.2f}× |"
            )
    peak_bytes = max(deadline.PROFILES["rush"]) * deadline.UPLOADS * size / 3600
    lines += [
        "",
        f"{verdict_words(holds, models)} Memory: {CORES_16} judging processes "
        f"of up to {judge:,.0f} MB and the server's {server:,.0f} MB need about "
        f"{memory:.0f} GiB (this machine's {ram / 1024:.0f} GiB have room for {fits} "
        f"workers at that size), so a {CORES_16}-core machine wants "
        f"{2 ** math.ceil(math.log2(max(memory, 1))):.0f} GiB. The uploads themselves: "
        f"the busiest hour of `rush` brings {peak_bytes / 1e6:,.0f} MB/s "
        f"({peak_bytes * 8 / 1e9:.1f} Gbit/s) of CSV, and the day "
        f"{deadline.UPLOADS * size / 1e12:.1f} TB received, of which the server keeps "
        f"{deadline.UPLOADS * each / 1e12:.2f} TB ({each / 1e6:.0f} MB an upload, as "
        "measured above).",
        "",
    ]
    return lines


def verdict_words(holds: dict[tuple[str, str], bool], models: dict[str, np.ndarray]) -> str:
    """The answer under `rush`, and its reasons in words: with a core each (a machine of
    the server's own), and with the times as measured (a machine shared as this one)."""
    own, shared = models["a core each"], models["as measured"]
    room = deadline.headroom("rush", own, CORES_16)
    slower = shared.mean() / own.mean()
    if holds["a core each", "rush"]:
        answer = (
            f"**Yes**, when the {CORES_16} cores are the server's own: under `rush`, "
            f"{CORES_16} workers at a core each keep the p95 of upload → verdict within "
            f"{deadline.GOAL:.0f} s ({deadline.fewest_workers('rush', own)} would do), and "
            f"would until every verdict took {room:.2f}× as long."
        )
    else:
        fewest = deadline.fewest_workers("rush", own) or 4096
        answer = (
            f"**No**: under `rush`, {CORES_16} workers at a core each fall behind; it takes "
            f"{fewest} workers, {math.ceil(fewest / CORES_16)} machines of {CORES_16} cores "
            "on one PostgreSQL store (`scorer serve worker --db` on each, README's \"Beyond "
            f'one machine"), or verdicts {1 / room:.2f}× faster.'
        )
    if holds["as measured", "rush"]:
        return answer + (
            f" With the times as measured here ({slower:.1f}× as long: a worker with a "
            "fraction of a core), it holds too."
        )
    fewest = deadline.fewest_workers("rush", shared) or 4096
    return answer + (
        f" With the times as measured here ({slower:.1f}× as long: each worker with a "
        f"fraction of a shared core) it does not: that takes {fewest} workers, "
        f"{math.ceil(fewest / CORES_16)} machines of {CORES_16} cores on one PostgreSQL "
        "store, or verdicts "
        f"{1 / deadline.headroom('rush', shared, CORES_16):.2f}× faster."
    )
