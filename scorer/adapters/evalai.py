"""EvalAI's evaluation script: `evaluate(test_annotation_file, user_submission_file, phase)`.

EvalAI's worker calls `evaluate` with the phase's annotation file (here the solution), the
participant's file and the phase codename, and fills one leaderboard per (phase, dataset split)
from the returned `result` list: one `{split_codename: {label: number}}` entry a split. Labels
are the metric names of the scorer's reports (`ndcg@20`, `recall@20`, …).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from scorer.api import score
from scorer.competition import Split
from scorer.errors import Code, ScorerError, SubmissionError, UsageError, single
from scorer.read import inside
from scorer.scoring import ScoreResult, SplitScore

log = logging.getLogger(__name__)

#: Phase codename → {dataset split codename: the scorer's split it shows}. The development
#: phase shows the public split only; the test phase adds the private one, whose leaderboard
#: the host keeps hidden (`visibility: 1`) until the end. Pass `phases=` to use other names.
PHASES: Mapping[str, Mapping[str, str]] = {
    "dev": {"public_split": "public"},
    "test": {"public_split": "public", "private_split": "private"},
}

#: What a participant sees when the organiser's files are broken; the details go to the log.
HOST_MESSAGE = (
    "the submission could not be scored because of a problem in the organisers' files, not in "
    "the submission; the organisers have the details"
)


class HostFailure(RuntimeError):
    """Raised for a broken solution or phase mapping: the message is safe for participants,
    the details are logged (EvalAI shows worker logs to hosts only)."""


def evaluate(
    test_annotation_file: str | Path,
    user_submission_file: str | Path,
    phase_codename: str,
    *,
    phases: Mapping[str, Mapping[str, str]] | None = None,
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
        result = score(_uploaded(Path(user_submission_file)), Path(test_annotation_file))
        entries = [{name: _metrics(result, split)} for name, split in mapping.items()]
    except SubmissionError:
        raise
    except ScorerError as exc:
        log.error("scoring failed for phase %r: %s", phase_codename, exc)
        raise HostFailure(HOST_MESSAGE) from None
    shown = [e for e, split in zip(entries, mapping.values(), strict=True) if split != "private"]
    return {"result": entries, "submission_result": shown[0] if shown else {}}


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
