"""CodaBench / CodaLab: the scoring program `scorer codabench INPUT_DIR OUTPUT_DIR --phase P`,
and the kit (`scorer kit codabench`: `bundle.zip` to import, the scoring image's Dockerfile).

CodaBench runs the scoring program with an input folder holding `ref/` (the organiser's
reference data, here the solution) and `res/` (the participant's unzipped submission, beside
the `metadata` file of the prediction step), and an output folder where it reads
`scores.json` (one number a leaderboard column key) and shows `detailed_results.html`.

One leaderboard, its columns shared by the phases (codalab/codabench c7dbc756): the importer
binds every phase to the bundle's first leaderboard (unpackers/base_unpacker.py 324), each
phase's board lists that phase's submissions ranked by the column at `primary_index` and
shows every column not `hidden` (api/serializers/leaderboards.py 133-138, 156-186). So a
column is a metric of *the phase's split*: `scores.json` holds `ndcg`, `map`… of the public
split in the public phase and of the private split in the final phase. The public board is
ranked by public NDCG and has no private column, empty or hidden (hidden columns still reach
anyone through the API, codalab/codabench#2526, and no private number is ever computed
before the end); the final board, by the same primary column, is ranked by private NDCG.

Which submission counts: `Force_Best` keeps each participant's best submission of a phase on
the board (leaderboards/strategies.py 69-103), the competition's own public rule, and the
final phase receives exactly the submissions on the board when the public phase ends
(competitions/models.py 142-163): each participant's best public submission, re-run on the
private split. Once the competition is published, anyone may read any submission's detailed
results (api/views/submissions.py 484-499): they hold the phase's numbers, or the report of
the participant's own file, never more.

A rejected submission exits 1 and a host failure 2, so neither is ever ranked. A failed
run's output folder is never uploaded (compute_worker.py 242-253, 1295-1302); its stdout and
stderr are (1271-1278), and only they reach a participant whose run failed: CodaBench's UI
links the detailed results of finished submissions only (static/riot/competitions/detail/
submission_manager.tag 120) and hides the logs, and the detailed results tab, when the phase
sets `hide_output` (submission_modal.tag 4-5; api/serializers/submissions.py 254-257). So
the public phase shows its logs, which hold the participant's report and, for a host
failure, only `HOST_MESSAGE`: CodaBench has no place there that organisers alone read. The
final phase re-runs files the public phase accepted, so a failure there is the organisers';
it sets `hide_output` and its program prints a host failure's details on stderr, for the
organisers. Run locally with `--phase final`, the program prints them too.
"""

from __future__ import annotations

import datetime as dt
import html
import json
import sys
import traceback
import zipfile
from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path

from scorer.api import score as score_submission
from scorer.competition import LOST_ITEMS, Competition, Metric, Split
from scorer.errors import Code, HostError, ScorerError, SubmissionError, file_error, single
from scorer.leaderboard.literal import markdown
from scorer.platforms.common import HOST_MESSAGE, HostVisibleError, Kit, logo, template
from scorer.platforms.participants import wheel
from scorer.read import inside, kind_of, kind_of_file, walk
from scorer.scoring import ScoreResult
from scorer.version import __version__
from scorer.write import write_text

#: The file CodaBench reads the leaderboard's numbers from.
SCORES = "scores.json"

#: The page CodaBench shows as the submission's detailed results (`enable_detailed_results`).
DETAILS = "detailed_results.html"

#: What starts the details of a host failure on stderr, in the final phase (`hide_output`).
HOST_DETAILS = "details for the organisers (hidden from participants by hide_output):"

#: Folders and files that zip tools add beside a participant's file; never the submission.
IGNORED = ("__MACOSX",)

#: The file CodaBench's prediction step writes beside the participant's files in `res/`.
WORKER_FILES = ("metadata",)

#: CodaBench's own default image runs Python 3.7; scorer needs 3.11 or later.
BASE_IMAGE = "python:3.12-slim"

#: Where CodaBench mounts the scoring program, its input and its output (compute_worker.py).
PROGRAM, INPUT, OUTPUT = "/app/program", "/app/input", "/app/output"


class CodabenchPhase(StrEnum):
    """Which scores a run writes: the public split's (public phase) or both (final phase)."""

    PUBLIC = "public"
    FINAL = "final"


@dataclass(frozen=True)
class ProgramOutput:
    """What one run of the scoring program wrote: the leaderboard numbers and the result they
    came from."""

    scores: Mapping[str, float]
    result: ScoreResult


def phase_split(result: ScoreResult, phase: CodabenchPhase) -> Split | None:
    """The split whose numbers fill the phase's columns: public in the public phase, private
    in the final phase; `overall` for a solution without a split; None when the phase's split
    scored no user (its columns stay empty: never the other split's, nor both mixed)."""
    wanted = Split.PUBLIC if phase == CodabenchPhase.PUBLIC else Split.PRIVATE
    if result.splits[wanted] is not None:
        return wanted
    unsplit = result.splits[Split.PUBLIC] is None and result.splits[Split.PRIVATE] is None
    return Split.OVERALL if unsplit else None


def leaderboard_scores(
    result: ScoreResult, phase: CodabenchPhase = CodabenchPhase.FINAL
) -> dict[str, float]:
    """Every metric of the phase's split, keyed by the metric as the leaderboard columns are;
    the primary metric first."""
    split = phase_split(result, phase)
    values = None if split is None else result.splits[split]
    if values is None:
        return {}
    primary = result.competition.metric
    return {
        str(metric): values.value(metric)
        for metric in (primary, *[m for m in Metric if m != primary])
    }


def run(
    input_dir: Path,
    output_dir: Path,
    competition: Competition = LOST_ITEMS,
    phase: CodabenchPhase | str = CodabenchPhase.PUBLIC,
) -> ProgramOutput:
    """Score `input_dir/res` against `input_dir/ref`, write `scores.json` (the phase's split)
    and the detailed results; raise `SubmissionError` (after writing the participant's
    report) or `HostVisibleError` (after printing the details on stderr, in the final
    phase only)."""
    phase = CodabenchPhase(phase)
    output_dir.mkdir(parents=True, exist_ok=True)
    (output_dir / SCORES).unlink(missing_ok=True)  # a failed run must leave no numbers behind
    try:
        solution = _one_file(input_dir / "ref", "solution")
        submission = _one_file(input_dir / "res", "submission")
        result = score_submission(submission, solution, competition=competition)
    except SubmissionError as exc:
        report = html.escape(exc.report.render())
        write_text(_page("Submission rejected", f"<pre>{report}</pre>"), output_dir / DETAILS)
        raise
    except Exception as exc:  # the organisers' files, the system or a bug: details to them
        details = str(exc) if isinstance(exc, ScorerError) else traceback.format_exc()
        # A failed run uploads its logs only (never the output folder); the final phase's
        # logs are the organisers' (hide_output), the public phase's the participant's.
        if phase == CodabenchPhase.FINAL:
            print(f"{HOST_DETAILS}\n{type(exc).__name__}: {details}", file=sys.stderr, flush=True)
        write_text(
            _page(
                "Scoring failed",
                f"<p>{html.escape(HOST_MESSAGE[0].upper() + HOST_MESSAGE[1:])}.</p>",
            ),
            output_dir / DETAILS,
        )
        raise HostVisibleError(details) from None
    scores = leaderboard_scores(result, phase)
    write_text(json.dumps(scores, indent=2) + "\n", output_dir / SCORES)
    write_text(_page("Submission scored", _tables(result, phase)), output_dir / DETAILS)
    return ProgramOutput(scores=scores, result=result)


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
    found = [
        p
        for p in walk(folder, _skipped)
        if p.relative_to(folder).as_posix() not in WORKER_FILES and _data(p, folder)
    ]
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
            ".csv, .csv.gz, .parquet or .zip file"
        )
    else:
        message = f"the {role} holds no .csv, .csv.gz, .parquet or .zip file"
    raise file_error(
        role, single(role, Code.FILE_NOT_FOUND if not found else Code.FILE_FORMAT, message)
    )


def _skipped(name: str) -> bool:
    return name.startswith(".") or name in IGNORED


def _data(path: Path, folder: Path) -> bool:
    """Whether a path of the upload is its data file: by its name, or (a regular file within
    the folder, renamed by the platform) by its first bytes."""
    if kind_of(path) is not None:
        return True
    return inside(path, folder) and path.is_file() and kind_of_file(path) is not None


def _tables(result: ScoreResult, phase: CodabenchPhase) -> str:
    """The numbers the phase shows: the public split (or the only split there is), and in the
    final phase the private split too."""
    shown = (Split.PUBLIC,) if phase == CodabenchPhase.PUBLIC else (Split.PUBLIC, Split.PRIVATE)
    splits = [s for s in shown if result.splits[s] is not None] or [Split.OVERALL]
    tables = []
    for split in splits:
        values = result.splits[split]
        if values is None:  # every user ignored or excluded: no mean, and no 0 in its place
            return "<p>No user scored: a mean over no users has no value.</p>"
        rows = "".join(
            f"<tr><td>{html.escape(name)}</td><td>{values.value(metric):.6f}</td></tr>"
            for metric, name in result.competition.labels.items()
        )
        tables.append(
            f"<p>{split.capitalize()} split, {values.users:,} users.</p>"
            f"<table><tr><th>metric</th><th>score</th></tr>{rows}</table>"
        )
    if splits == [Split.PUBLIC]:
        tables.append("<p>Private scores are computed in the final phase only.</p>")
    return "".join(tables)


def _page(title: str, body: str) -> str:
    return (
        "<!DOCTYPE html>\n<html><head><meta charset='utf-8'>"
        f"<title>{html.escape(title)}</title></head>"
        f"<body><h2>{html.escape(title)}</h2>{body}</body></html>\n"
    )


def summary(outcome: ProgramOutput) -> str:
    """One line for the scoring log, which participants may see: the public numbers only."""
    result = outcome.result
    split = Split.PUBLIC if result.splits[Split.PUBLIC] is not None else Split.OVERALL
    values = result.splits[split]
    label = result.competition.label(result.competition.metric)
    if values is None:  # a mean over no users has no value: no number, as scores.json has none
        return f"scored: no user (every user ignored or excluded), so no {label}"
    score = values.value(result.competition.metric)
    return f"scored: {split} {label} {score:.6f} ({values.users:,} users)"


# The kit ---------------------------------------------------------------------------------


def command(kit: Kit, phase: CodabenchPhase) -> str:
    """The scoring program's command, as its `metadata.yaml` gives it."""
    rules = f" --competition {PROGRAM}/competition.toml" if kit.competition_path else ""
    return f"scorer codabench {INPUT} {OUTPUT} --phase {phase}{rules}"


def phase_days(kit: Kit) -> dict[str, dt.date]:
    """The phases' days, as CodaBench keeps them: it cuts every phase time to midnight of its
    day (unpackers/utils.py, `get_datetime`), and refuses a phase that starts when the one
    before it ends (base_unpacker.py, `_validate_phase_ordering`). So the public phase ends
    at the start of `kit.end`, the final phase runs the day after, and it ends: a final
    phase without an end would take submissions, and show private scores, for ever."""
    final = kit.end + dt.timedelta(days=1)
    return {
        "start": kit.start,
        "end": kit.end,
        "final_start": final,
        "final_end": final + dt.timedelta(days=1),
    }


#: CodaBench's longest column title and key (leaderboards/models.py 59-60, `max_length=36`).
COLUMN_TEXT = 36


def competition_yaml(kit: Kit) -> str:
    """The bundle's `competition.yaml` (version 2), written as text. One column a metric,
    the primary metric at index 0 (`primary_index`), filled by the phase's split."""
    rules = kit.competition
    columns = []
    for index, metric in enumerate((rules.metric, *[m for m in rules.labels if m != rules.metric])):
        title = rules.label(metric)[:COLUMN_TEXT]
        columns.append(
            f"      - {{title: {json.dumps(title)}, key: {metric}, index: {index}, "
            "sorting: desc, precision: 6}"
        )
    return template(
        "codabench_competition.yaml.tmpl",
        title=json.dumps(f"{kit.title}: {rules.label(rules.metric)}"),
        description=json.dumps(
            f"Rank {rules.k} items for each target user; scored by {rules.label(rules.metric)} "
            "on public users during the competition and on private users at the end."
        ),
        image=kit.image,
        **{name: f"{day:%Y-%m-%d}" for name, day in phase_days(kit).items()},
        columns="\n".join(columns),
    )


def write(kit: Kit) -> list[Path]:
    """Write the CodaBench kit into `kit.out`; the files written."""
    files: dict[str, bytes] = {
        "competition.yaml": competition_yaml(kit).encode(),
        "logo.png": logo(),
        "terms.md": template("terms.md.tmpl", title=markdown(kit.title)).encode(),
        "overview.md": _competition_page(kit, "overview.md").encode(),
        "evaluation.md": _competition_page(kit, "evaluation.md").encode(),
        "reference_data/solution" + _suffix(kit.solution_path): kit.solution_path.read_bytes(),
        "starting_kit/README.md": template(
            "codabench_starting_kit.md.tmpl", k=str(kit.competition.k)
        ).encode(),
    }
    for phase in CodabenchPhase:
        folder = f"scoring_program_{phase}"
        files[f"{folder}/metadata.yaml"] = f"command: {command(kit, phase)}\n".encode()
        if kit.competition_path is not None:
            files[f"{folder}/competition.toml"] = kit.competition_path.read_bytes()
    sample = kit.sample()
    files["starting_kit/sample_submission.csv"] = sample.write_csv().encode()
    files["starting_kit/targets.csv"] = kit.target_users().write_csv().encode()
    bundle = kit.out / "bundle.zip"
    with zipfile.ZipFile(bundle, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in files.items():
            archive.writestr(name, data)
    written = [kit.hidden(bundle)]  # it holds the solution (reference_data)
    written.append(
        kit.write(
            "docker/Dockerfile",
            template("codabench_Dockerfile.tmpl", base=BASE_IMAGE, version=__version__),
        )
    )
    written.append(wheel(kit.out / "docker"))  # what the Dockerfile installs
    written.append(
        kit.write(
            "README.md",
            template(
                "codabench_README.md.tmpl",
                **kit.readme,
                image=kit.image,
                version=__version__,
                base=BASE_IMAGE,
                **{name: f"{day:%Y-%m-%d}" for name, day in phase_days(kit).items()},
                public_command=command(kit, CodabenchPhase.PUBLIC),
                final_command=command(kit, CodabenchPhase.FINAL),
            ),
        )
    )
    return written


def _suffix(path: Path) -> str:
    name = path.name.lower()
    return ".csv.gz" if name.endswith(".csv.gz") else path.suffix.lower() or ".csv"


def _competition_page(kit: Kit, name: str) -> str:
    """A page of the competition: task.md's section for lost items, a short one otherwise."""
    if kit.competition == LOST_ITEMS:
        return template(name)
    rules = kit.competition
    if name == "overview.md":
        return (
            f"# {markdown(kit.title)}\n\nFor each target user, rank {rules.k} items. Submit one "
            "CSV, CSV.gz, Parquet or zip file; run `scorer validate` with the targets file "
            "first.\n"
        )
    return (
        f"# Evaluation\n\nThe score is the mean {rules.label(rules.metric)} over the users of a "
        "split: the public split during the competition, the private split at the end.\n"
    )
