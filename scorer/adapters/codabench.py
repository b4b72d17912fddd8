"""CodaBench / CodaLab scoring program: `scorer codabench INPUT_DIR OUTPUT_DIR`.

CodaBench runs the scoring program with an input folder holding `ref/` (the organiser's
reference data, here the solution) and `res/` (the participant's unzipped submission), and an
output folder where it reads `scores.json` (one number a leaderboard column key) and shows
`detailed_results.html` to the participant. A rejected submission exits 1 and a broken
solution 2, so neither is ever ranked.
"""

from __future__ import annotations

import html
import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from scorer.api import score as score_submission
from scorer.competition import LOST_ITEMS, Competition, Metric, Split
from scorer.errors import Code, HostError, ScorerError, SubmissionError, file_error, single
from scorer.read import inside, kind_of, walk
from scorer.scoring import ScoreResult
from scorer.write import write_text

#: The file CodaBench reads the leaderboard's numbers from.
SCORES = "scores.json"

#: The page CodaBench shows as the submission's detailed results (`enable_detailed_results`).
DETAILS = "detailed_results.html"

#: Folders and files that zip tools add beside a participant's file; never the submission.
IGNORED = ("__MACOSX",)


@dataclass(frozen=True)
class Outcome:
    """What one run wrote: the leaderboard numbers and the result they came from."""

    scores: Mapping[str, float]
    result: ScoreResult


def column_key(split: str, metric: str) -> str:
    """The leaderboard column key of a metric of a split: `public_ndcg`, `private_recall`…"""
    return f"{split}_{metric}"


def leaderboard_scores(result: ScoreResult) -> dict[str, float]:
    """Every metric of every split the solution has, keyed as the leaderboard columns are;
    the primary column first. A solution without a split gives the `overall_*` keys only."""
    splits = [s for s in (Split.PUBLIC, Split.PRIVATE) if result.splits[s] is not None] or [
        Split.OVERALL
    ]
    primary = result.competition.metric
    scores: dict[str, float] = {}
    for metric in (primary, *[m for m in Metric if m != primary]):
        for split in splits:
            values = result.splits[split]
            if values is not None:
                scores[column_key(split, metric)] = values.value(metric)
    return scores


def run(input_dir: Path, output_dir: Path, competition: Competition = LOST_ITEMS) -> Outcome:
    """Score `input_dir/res` against `input_dir/ref`, write `scores.json` and the detailed
    results; raise `SubmissionError` (after writing the participant's report) or `HostError`."""
    output_dir.mkdir(parents=True, exist_ok=True)
    (output_dir / SCORES).unlink(missing_ok=True)  # a rejected run must leave no numbers behind
    try:
        solution = _one_file(input_dir / "ref", "solution")
        submission = _one_file(input_dir / "res", "submission")
        result = score_submission(submission, solution, competition=competition)
    except SubmissionError as exc:
        report = html.escape(exc.report.render())
        write_text(_page("Submission rejected", f"<pre>{report}</pre>"), output_dir / DETAILS)
        raise
    except ScorerError:
        write_text(
            _page(
                "Scoring failed",
                "<p>The submission could not be scored because of a problem in the organisers' "
                "files, not in the submission. The organisers can see the details in the "
                "scoring logs.</p>",
            ),
            output_dir / DETAILS,
        )
        raise
    scores = leaderboard_scores(result)
    write_text(json.dumps(scores, indent=2) + "\n", output_dir / SCORES)
    write_text(_page("Submission scored", _public_table(result)), output_dir / DETAILS)
    return Outcome(scores=scores, result=result)


def _one_file(folder: Path, role: str) -> Path:
    """The one CSV, CSV.gz or Parquet file of a folder (searched through its subfolders, as a
    zip may hold one); zip tools' extras and hidden files are skipped. Links are not followed
    out of the folder (a participant's zip may hold a link to ref/): such a file is refused
    unread, as a folder, a pipe or a device named like a data file is by the reader."""
    if not folder.is_dir():
        raise HostError(
            role,
            single(
                folder.name,
                Code.FILE_NOT_FOUND,
                f"{folder}: no such folder; CodaBench puts the reference data in ref/ and the "
                "submission in res/",
            ),
        )
    found = [p for p in walk(folder, _skipped) if kind_of(p) is not None]
    if len(found) == 1:
        chosen = found[0]
        if inside(chosen, folder):
            return chosen
        name = str(chosen.relative_to(folder))
        raise file_error(
            role,
            single(
                name,
                Code.NOT_A_FILE,
                f"{name}: is a symbolic link that leads out of {folder.name}/; it is not followed",
            ),
        )
    names = ", ".join(str(p.relative_to(folder)) for p in found[:5])
    if found:
        message = (
            f"the {role} holds {len(found)} data files ({names}); expected exactly one "
            ".csv, .csv.gz or .parquet file"
        )
    else:
        message = f"the {role} holds no .csv, .csv.gz or .parquet file"
    raise file_error(
        role, single(role, Code.FILE_NOT_FOUND if not found else Code.FILE_FORMAT, message)
    )


def _skipped(name: str) -> bool:
    return name.startswith(".") or name in IGNORED


def _public_table(result: ScoreResult) -> str:
    """The participant-safe numbers: the public split (or the only split there is). Private
    scores stay in `scores.json`, whose columns the leaderboard hides until the end."""
    split = Split.PUBLIC if result.splits[Split.PUBLIC] is not None else Split.OVERALL
    values = result.splits[split]
    if values is None:  # pragma: no cover - a scored solution has at least one user
        return "<p>No users were scored.</p>"
    rows = "".join(
        f"<tr><td>{html.escape(name)}</td><td>{values.value(metric):.6f}</td></tr>"
        for metric, name in result.competition.labels.items()
    )
    note = (
        "<p>Private scores are computed too and stay hidden until the end of the competition.</p>"
        if split == "public"
        else ""
    )
    return (
        f"<p>{split.capitalize()} split, {values.users:,} users.</p>"
        f"<table><tr><th>metric</th><th>score</th></tr>{rows}</table>{note}"
    )


def _page(title: str, body: str) -> str:
    return (
        "<!DOCTYPE html>\n<html><head><meta charset='utf-8'>"
        f"<title>{html.escape(title)}</title></head>"
        f"<body><h2>{html.escape(title)}</h2>{body}</body></html>\n"
    )


def summary(outcome: Outcome) -> str:
    """One line for the scoring log, which participants may see: the public numbers only."""
    result = outcome.result
    split = Split.PUBLIC if result.splits[Split.PUBLIC] is not None else Split.OVERALL
    values = result.splits[split]
    users = values.users if values is not None else 0
    metric = result.competition.metric
    score = values.value(metric) if values is not None else 0.0
    return f"scored: {split} {result.competition.label(metric)} {score:.6f} ({users:,} users)"
