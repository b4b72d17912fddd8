"""EvalAI: the evaluation script `evaluate(test_annotation_file, user_submission_file, phase)`
and the kit (`scorer kit evalai`: EvalAI-Starters' files; the worker is `evalai_remote`).

EvalAI's worker calls `evaluate` with the phase's annotation file (here the solution), the
participant's file and the phase codename, and fills one leaderboard per (phase, dataset split)
from the returned `result` list: one `{split_codename: {label: number}}` entry a split. Labels
are the metric names of the scorer's reports (`ndcg@20`, `recall@20`, …). A remote worker
calls `remote_evaluate(user_submission_file, phase_codename)` and sends `remote_result(…)`.

The worker sends the call's stdout and stderr to the participant's files, so nothing here
prints: the details of a host failure go to a log handler this module owns, on the process's
own stderr (the worker's console) and, when `SCORER_HOST_LOG` names a file, to that file.
"""

from __future__ import annotations

import datetime as dt
import html
import json
import logging
import os
import sys
import traceback
import zipfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any, TextIO

from scorer.api import score
from scorer.competition import Competition, Split
from scorer.errors import Code, ScorerError, SubmissionError, UsageError, single
from scorer.leaderboard.literal import markdown
from scorer.platforms.common import HostVisibleError, Kit, logo, template
from scorer.read import inside
from scorer.scoring import ScoreResult, SplitScore

#: The environment variables naming a file for the host's log, the solution a remote worker
#: scores against, and the competition file of a competition other than lost items.
HOST_LOG, SOLUTION, COMPETITION = "SCORER_HOST_LOG", "SCORER_SOLUTION", "SCORER_COMPETITION"


class _ConsoleHandler(logging.StreamHandler[TextIO]):
    """The process's own stderr, looked up at each record: never the `sys.stderr` of the
    moment, which EvalAI's worker points at the participant's stderr file."""

    def emit(self, record: logging.LogRecord) -> None:
        self.setStream(sys.__stderr__ or sys.stderr)
        super().emit(record)


def host_log() -> logging.Logger:
    """The organiser's log: its own handlers, never the root logger's (`propagate` off)."""
    logger = logging.getLogger(__name__)
    if not any(isinstance(h, _ConsoleHandler) for h in logger.handlers):
        handler = _ConsoleHandler()
        handler.setFormatter(logging.Formatter("%(asctime)s scorer %(levelname)s %(message)s"))
        logger.addHandler(handler)
        logger.propagate = False
        logger.setLevel(logging.INFO)
    path = os.environ.get(HOST_LOG)
    if path and not any(
        isinstance(h, logging.FileHandler) and h.baseFilename == os.path.abspath(path)
        for h in logger.handlers
    ):
        logger.addHandler(logging.FileHandler(path, encoding="utf-8"))
    return logger


#: Phase codename → {dataset split codename: the scorer's split it shows}. The development
#: phase shows the public split only; the test phase adds the private one, whose leaderboard
#: the host keeps hidden (`visibility: 1`) until the end. Pass `phases=` to use other names.
PHASES: Mapping[str, Mapping[str, str]] = {
    "dev": {"public_split": "public"},
    "test": {"public_split": "public", "private_split": "private"},
}


def evaluate(
    test_annotation_file: str | Path,
    user_submission_file: str | Path,
    phase_codename: str,
    *,
    phases: Mapping[str, Mapping[str, str]] | None = None,
    competition: Competition | None = None,
    **kwargs: Any,
) -> dict[str, Any]:
    """Score a submission for one phase and return EvalAI's structure:
    `{"result": [{split: {label: value}}, …], "submission_result": {split: {label: value}}}`.

    `submission_result` (shown to the participant in the result file) holds the public split
    (or `overall` for a solution without a split) and never the private one. A rejected file
    raises `SubmissionError`, whose message is the participant-safe report.
    """
    try:
        mapping = (PHASES if phases is None else phases).get(phase_codename)
        if mapping is None:
            known = ", ".join(sorted(PHASES if phases is None else phases))
            raise UsageError(f"phase {phase_codename!r} is not mapped to a split; known: {known}")
        result = score(
            _uploaded(Path(user_submission_file)),
            Path(test_annotation_file),
            competition=competition,
        )
        entries = [{name: _metrics(result, split)} for name, split in mapping.items()]
    except SubmissionError:
        raise
    except Exception as exc:  # the organisers' files, the system or a bug
        details = str(exc) if isinstance(exc, ScorerError) else traceback.format_exc()
        host_log().error("scoring failed for phase %r: %s", phase_codename, details)
        raise HostVisibleError(details) from None
    shown = [e for e, split in zip(entries, mapping.values(), strict=True) if split != "private"]
    return {"result": entries, "submission_result": shown[0] if shown else {}}


def remote_evaluate(
    user_submission_file: str | Path,
    phase_codename: str,
    test_annotation_file: str | Path | None = None,
    *,
    phases: Mapping[str, Mapping[str, str]] | None = None,
    **kwargs: Any,
) -> dict[str, Any]:
    """EvalAI-Starters' remote evaluation call, `evaluate(submission_file_path,
    phase_codename)`: the solution is `test_annotation_file`, or the file that
    `SCORER_SOLUTION` names; the competition is the file `SCORER_COMPETITION` names (lost
    items without it). Returns what `evaluate` returns."""
    annotation = test_annotation_file or os.environ.get(SOLUTION)
    rules = os.environ.get(COMPETITION, "").strip()
    try:
        if not annotation:
            raise UsageError(f"no solution file: pass test_annotation_file or set {SOLUTION}")
        competition = Competition.load(Path(rules)) if rules else None
    except UsageError as exc:
        host_log().error("%s", exc)
        raise HostVisibleError(str(exc)) from None
    return evaluate(
        annotation,
        user_submission_file,
        phase_codename,
        phases=phases,
        competition=competition,
        **kwargs,
    )


def remote_result(
    output: Mapping[str, Any],
    phase_codename: str,
    phases: Mapping[str, Mapping[str, str]] | None = None,
) -> list[dict[str, Any]]:
    """`evaluate`'s `result` in the form EvalAI's `update_submission` API takes from a remote
    worker: `{"split", "show_to_participant", "accuracies"}` an entry; the private split is
    never shown to the participant."""
    mapping = (PHASES if phases is None else phases)[phase_codename]
    entries = []
    for entry in output["result"]:
        ((split, accuracies),) = entry.items()
        private = mapping.get(split) == "private"
        entries.append(
            {"split": split, "show_to_participant": not private, "accuracies": accuracies}
        )
    return entries


def _uploaded(path: Path) -> Path:
    """The participant's file, unless it is a symbolic link leading out of its folder (an
    archive may hold one that points at the annotations): that one is refused unread."""
    if inside(path, path.parent):
        return path
    report = single(
        path.name,
        Code.NOT_A_FILE,
        f"{path.name}: is a symbolic link that leads out of its folder; it is not followed",
    )
    raise SubmissionError(report)


def _metrics(result: ScoreResult, split: str) -> dict[str, float]:
    if split not in tuple(Split):
        raise UsageError(f"split {split!r}; expected one of {', '.join(Split)}")
    values: SplitScore | None = result.splits[Split(split)]
    if values is None:
        raise UsageError(
            f"the solution has no {split} split (it needs a stage or Usage column); map the "
            "phase to 'overall' instead"
        )
    return {name: values.value(metric) for metric, name in result.competition.labels.items()}


# The kit ---------------------------------------------------------------------------------
#: What EvalAI lets participants upload: `.gz` for `x.csv.gz`, which EvalAI stores as
#: `<uuid>.gz` (its RandomFileName keeps the last suffix), Parquet and zip besides CSV.
ALLOWED = ".csv, .gz, .parquet, .zip"

#: The challenge's pages (EvalAI shows them as HTML); `{k}`, `{item}` and `{metric}` are the
#: competition's, escaped.
PAGES = {
    "templates/description.html": "<p>For each target user, rank {k} {item}s: the ones most "
    "relevant to the user.</p>",
    "templates/evaluation_details.html": "<p>The score is the mean {metric} over the users "
    "of a split. The dev phase shows the public split; the test phase adds the private split, "
    "which the host keeps hidden until the end.</p>",
    "templates/terms_and_conditions.html": "<p>The hidden solution is for scoring only: do not "
    "try to recover it from scores or messages.</p>",
    "templates/submission_guidelines.html": "<p>Upload one <code>.csv</code>, "
    "<code>.csv.gz</code>, <code>.parquet</code> or <code>.zip</code> file, long or wide. "
    "Install the validator from the participants' files and run <code>scorer validate "
    "submission.csv --targets targets.csv</code> first.</p>",
    "templates/challenge_phase_1_description.html": "<p>Scored on the public users.</p>",
    "templates/challenge_phase_2_description.html": "<p>Scored on the public users (shown) "
    "and the private users (hidden until the end). Select the one submission that counts."
    "</p>",
}

#: The kit's folders: what goes into the challenge's (private) repository, and what stays on
#: the machine that runs the remote worker (the hidden solution: never in a repository).
CHALLENGE, WORKER = "challenge", "worker"


def _script_zip(challenge: Path) -> Path:
    """`evaluation_script.zip`, as EvalAI-Starters' action makes it before each upload (the
    folder's files at the zip's root): the configuration names it, and EvalAI's validator
    refuses a configuration whose evaluation script is missing. Shipped ready, the folder
    can be checked or uploaded as it is."""
    folder = challenge / "evaluation_script"
    path = challenge / "evaluation_script.zip"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        for file in sorted(folder.rglob("*")):
            if file.is_file():
                archive.write(file, file.relative_to(folder).as_posix())
    return path


def write(kit: Kit) -> list[Path]:
    """Write the EvalAI kit into `kit.out`; the files written."""
    rules = kit.competition
    metric = rules.label(rules.metric)
    labels = ", ".join(json.dumps(name) for name in rules.labels.values())
    values = {
        "title": json.dumps(kit.title),  # YAML: a JSON string is one, whatever it holds
        "short": json.dumps(f"Rank {rules.k} {rules.words.item}s for each target user."),
        "labels": labels,
        "primary": metric,
        "start": f"{kit.start:%Y-%m-%d} 00:00:00",
        "end": f"{kit.end:%Y-%m-%d} 23:59:59",
        "dev_end": f"{kit.end - dt.timedelta(days=1):%Y-%m-%d} 23:59:59",
        "allowed": ALLOWED,
    }
    config = template("evalai_challenge_config.yaml.tmpl", **values)
    written = [kit.write(f"{CHALLENGE}/challenge_config.yaml", config)]
    words = {"k": str(rules.k), "item": html.escape(rules.words.item), "metric": metric}
    for name, text in PAGES.items():
        written.append(kit.write(f"{CHALLENGE}/{name}", text.format(**words) + "\n"))
    logo_path = kit.out / CHALLENGE / "logo.png"
    logo_path.write_bytes(logo())
    written.append(logo_path)
    for name, source in (
        ("evaluation_script/__init__.py", "evalai_init.py.tmpl"),
        ("evaluation_script/main.py", "evalai_main.py.tmpl"),
        ("remote_challenge_evaluation/evaluate.py", "evalai_remote_evaluate.py.tmpl"),
        ("remote_challenge_evaluation/main.py", "evalai_remote_main.py.tmpl"),
    ):
        written.append(kit.write(f"{CHALLENGE}/{name}", template(source)))
    written.append(_script_zip(kit.out / CHALLENGE))
    solution = kit.out / WORKER / "solution.csv"
    solution.parent.mkdir(parents=True, exist_ok=True)
    kit.long().write_csv(solution)
    written.append(kit.hidden(solution))
    competition = option = ""
    if kit.competition_path is not None:
        text = kit.competition_path.read_text(encoding="utf-8")
        written.append(kit.write(f"{WORKER}/competition.toml", text))
        competition = f" {COMPETITION}=$PWD/{WORKER}/competition.toml"
        option = f" --competition {WORKER}/competition.toml"
    sample = kit.out / "sample_submission.csv"
    kit.sample().write_csv(sample)
    targets = kit.out / "targets.csv"
    kit.target_users().write_csv(targets)
    written += [sample, targets]
    phases = ", ".join(f"`{name}` → {', '.join(m.values())}" for name, m in PHASES.items())
    written.append(
        kit.write(
            "README.md",
            template(
                "evalai_README.md.tmpl",
                **kit.readme,
                phases=phases,
                allowed=ALLOWED,
                competition=competition,
                competition_option=option,
                metric=markdown(metric),
            ),
        )
    )
    return written
