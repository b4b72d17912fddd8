"""The CodaBench kit: `bundle.zip` to import, and the Dockerfile of the scoring image."""

from __future__ import annotations

import datetime as dt
import json
import zipfile
from pathlib import Path

import polars as pl

from scorer import version
from scorer.adapters.codabench import Phase, column_key
from scorer.competition import LOST_ITEMS, Split
from scorer.kits import Kit, logo, template

#: CodaBench's own default image runs Python 3.7; scorer needs 3.11 or later.
BASE_IMAGE = "python:3.12-slim"

#: Where CodaBench mounts the scoring program, its input and its output (compute_worker.py).
PROGRAM, INPUT, OUTPUT = "/app/program", "/app/input", "/app/output"


def command(kit: Kit, phase: Phase) -> str:
    """The scoring program's command, as its `metadata.yaml` gives it."""
    rules = f" --competition {PROGRAM}/competition.toml" if kit.competition_path else ""
    return f"scorer codabench {INPUT} {OUTPUT} --phase {phase}{rules}"


def competition_yaml(kit: Kit) -> str:
    """The bundle's `competition.yaml` (version 2), written as text."""
    rules = kit.competition
    final = dt.datetime.combine(kit.end, dt.time())
    columns = []
    for index, (split, metric) in enumerate(
        (split, metric)
        for metric in (rules.metric, *[m for m in rules.labels if m != rules.metric])
        for split in (Split.PUBLIC, Split.PRIVATE)
    ):
        title = f"{rules.label(metric)} ({split})"
        columns.append(
            f"      - {{title: {json.dumps(title)}, key: {column_key(split, metric)}, "
            f"index: {index}, sorting: desc, precision: 6}}"
        )
    return template(
        "codabench_competition.yaml.tmpl",
        title=json.dumps(f"{kit.title}: {rules.label(rules.metric)}"),
        description=json.dumps(
            f"Rank {rules.k} items for each target user; scored by {rules.label(rules.metric)} "
            "on public users during the competition and on private users at the end."
        ),
        image=kit.image,
        start=f"{kit.start:%Y-%m-%d} 00:00:00",
        end=f"{final:%Y-%m-%d %H:%M:%S}",
        final_start=f"{final + dt.timedelta(minutes=1):%Y-%m-%d %H:%M:%S}",
        columns="\n".join(columns),
    )


def write(kit: Kit) -> list[Path]:
    files: dict[str, bytes] = {
        "competition.yaml": competition_yaml(kit).encode(),
        "logo.png": logo(),
        "terms.md": template("terms.md.tmpl", title=kit.title).encode(),
        "overview.md": _page(kit, "overview.md").encode(),
        "evaluation.md": _page(kit, "evaluation.md").encode(),
        "reference_data/solution" + _suffix(kit.solution_path): kit.solution_path.read_bytes(),
        "starting_kit/README.md": template(
            "codabench_starting_kit.md.tmpl", k=str(kit.competition.k)
        ).encode(),
    }
    for phase in Phase:
        folder = f"scoring_program_{phase}"
        files[f"{folder}/metadata.yaml"] = f"command: {command(kit, phase)}\n".encode()
        if kit.competition_path is not None:
            files[f"{folder}/competition.toml"] = kit.competition_path.read_bytes()
    sample = kit.sample()
    files["starting_kit/sample_submission.csv"] = sample.write_csv().encode()
    files["starting_kit/targets.csv"] = pl.DataFrame({"user_id": kit.targets}).write_csv().encode()
    bundle = kit.out / "bundle.zip"
    with zipfile.ZipFile(bundle, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in files.items():
            archive.writestr(name, data)
    written = [bundle]
    written.append(
        kit.write(
            "docker/Dockerfile",
            template("codabench_Dockerfile.tmpl", base=BASE_IMAGE, version=version.__version__),
        )
    )
    split = kit.split_users
    written.append(
        kit.write(
            "README.md",
            template(
                "codabench_README.md.tmpl",
                title=kit.title,
                image=kit.image,
                version=version.__version__,
                base=BASE_IMAGE,
                public=f"{split['public']:,}",
                private=f"{split['private']:,}",
                start=f"{kit.start:%Y-%m-%d}",
                end=f"{kit.end:%Y-%m-%d}",
                public_command=command(kit, Phase.PUBLIC),
                final_command=command(kit, Phase.FINAL),
            ),
        )
    )
    return written


def _suffix(path: Path) -> str:
    name = path.name.lower()
    return ".csv.gz" if name.endswith(".csv.gz") else path.suffix.lower() or ".csv"


def _page(kit: Kit, name: str) -> str:
    """A page of the competition: task.md's section for lost items, a short one otherwise."""
    if kit.competition == LOST_ITEMS:
        return template(name)
    rules = kit.competition
    if name == "overview.md":
        return (
            f"# {kit.title}\n\nFor each target user, rank {rules.k} items. Submit one CSV, "
            "CSV.gz, Parquet or zip file; run `scorer validate` with the targets file first.\n"
        )
    return (
        f"# Evaluation\n\nThe score is the mean {rules.label(rules.metric)} over the users of a "
        "split: the public split during the competition, the private split at the end.\n"
    )
