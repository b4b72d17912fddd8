"""The EvalAI kit: EvalAI-Starters' files (`challenge_config.yaml`, `evaluation_script/`,
templates) and the remote worker that scores on the organiser's machine."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import polars as pl

from scorer import version
from scorer.adapters.evalai import PHASES
from scorer.kits import Kit, logo, template

#: What EvalAI lets participants upload: `.gz` for `x.csv.gz`, which EvalAI stores as
#: `<uuid>.gz` (its RandomFileName keeps the last suffix), Parquet and zip besides CSV.
ALLOWED = ".csv, .gz, .parquet, .zip"

PAGES = {
    "templates/description.html": "<p>For each target user, rank @@K@@ editions: the ones "
    "most likely to be the user's lost items.</p>",
    "templates/evaluation_details.html": "<p>The score is the mean @@METRIC@@ over the users "
    "of a split. The dev phase shows the public split; the test phase adds the private split, "
    "which the host keeps hidden until the end.</p>",
    "templates/terms_and_conditions.html": "<p>The hidden solution is for scoring only: do not "
    "try to recover it from scores or messages.</p>",
    "templates/submission_guidelines.html": "<p>Upload one <code>.csv</code>, "
    "<code>.csv.gz</code>, <code>.parquet</code> or <code>.zip</code> file, long or wide. Run "
    "<code>scorer validate submission.csv --targets targets.csv</code> first.</p>",
    "templates/challenge_phase_1_description.html": "<p>Scored on the public users.</p>",
    "templates/challenge_phase_2_description.html": "<p>Scored on the public users (shown) "
    "and the private users (hidden until the end).</p>",
}


def write(kit: Kit) -> list[Path]:
    rules = kit.competition
    labels = ", ".join(f'"{name}"' for name in rules.labels.values())
    values = {
        "title": kit.title,
        "labels": labels,
        "primary": rules.label(rules.metric),
        "start": f"{kit.start:%Y-%m-%d} 00:00:00",
        "end": f"{kit.end:%Y-%m-%d} 23:59:59",
        "dev_end": f"{kit.end - dt.timedelta(days=1):%Y-%m-%d} 23:59:59",
        "allowed": ALLOWED,
        "version": version.__version__,
    }
    written = [
        kit.write("challenge_config.yaml", template("evalai_challenge_config.yaml.tmpl", **values))
    ]
    for name, text in PAGES.items():
        page = text.replace("@@K@@", str(rules.k)).replace("@@METRIC@@", rules.label(rules.metric))
        written.append(kit.write(name, page + "\n"))
    logo_path = kit.out / "logo.png"
    logo_path.write_bytes(logo())
    written.append(logo_path)
    annotation = kit.out / "annotations" / "solution.csv"
    annotation.parent.mkdir(parents=True, exist_ok=True)
    kit.long().write_csv(annotation)
    written.append(annotation)
    written.append(kit.write("evaluation_script/__init__.py", template("evalai_init.py.tmpl")))
    written.append(kit.write("evaluation_script/main.py", template("evalai_main.py.tmpl")))
    written.append(
        kit.write(
            "remote_challenge_evaluation/evaluate.py", template("evalai_remote_evaluate.py.tmpl")
        )
    )
    written.append(
        kit.write("remote_challenge_evaluation/main.py", template("evalai_remote_main.py.tmpl"))
    )
    sample = kit.out / "sample_submission.csv"
    kit.sample().write_csv(sample)
    targets = kit.out / "targets.csv"
    pl.DataFrame({"user_id": kit.targets}).write_csv(targets)
    written += [sample, targets]
    split = kit.split_users
    phases = ", ".join(f"`{name}` → {', '.join(m.values())}" for name, m in PHASES.items())
    written.append(
        kit.write(
            "README.md",
            template(
                "evalai_README.md.tmpl",
                title=kit.title,
                public=f"{split['public']:,}",
                private=f"{split['private']:,}",
                phases=phases,
                allowed=ALLOWED,
                version=version.__version__,
            ),
        )
    )
    return written
