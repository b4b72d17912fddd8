"""`scorer kit`, replayed as each platform calls it.

Kaggle (its metric utilities' `safe_call_score`): the metric module loaded, `score` called
once per `Usage` with that column dropped, errors routed by class name, a finite float
required. CodaBench (compute_worker.py): `input/ref`, `input/res` with the participant's files
and the prediction step's `metadata`, `output/`, the `command` of `metadata.yaml`, a non-zero
exit failing the run, `scores.json` read only after a clean exit. EvalAI (submission_worker.py):
the challenge package imported, `evaluate(annotation, submission, codename,
submission_metadata=…)` called with stdout and stderr sent to per-submission files, the upload
stored as `<uuid><last suffix>`. Each runs on the bundled data, a rejected file and a solution
broken on purpose, whose error names a hidden lost edition.
"""

from __future__ import annotations

import ast
import datetime as dt
import gzip
import importlib
import importlib.util
import io
import itertools
import json
import math
import os
import re
import shlex
import shutil
import stat
import subprocess
import sys
import uuid
import warnings
import zipfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import nbformat
import pandas as pd
import polars as pl
import pytest
import yaml
from support.kits import SOLUTION, hidden_pair, leaks, scorer_json
from support.paths import DATA, ROOT
from typer.testing import CliRunner

from scorer.api import score
from scorer.cli import app
from scorer.competition import LOST_ITEMS, Competition
from scorer.contract import read_solution
from scorer.errors import UsageError
from scorer.leaderboard.literal import code_span
from scorer.platforms import evalai_remote, kaggle
from scorer.platforms.common import Kit
from scorer.platforms.kit import build
from scorer.read import to_wide


@pytest.fixture(scope="module")
def kits(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("kits")
    for platform in ("kaggle", "codabench", "evalai"):
        build(platform, SOLUTION, root / platform)
    return root


@pytest.fixture(scope="module")
def wide_sample(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The bundled long sample submission, wide as a Kaggle participant uploads it."""
    path = tmp_path_factory.mktemp("wide") / "submission.csv"
    to_wide(pl.read_csv(DATA / "sample_submission.csv")).write_csv(path)
    return path


@pytest.fixture(scope="module")
def expected(wide_sample: Path) -> dict[str, Any]:
    return scorer_json(wide_sample, SOLUTION)


def break_ids(source: Path, target: Path) -> Path:
    """A copy whose third data line has a bad id at position 3 (wide) or line 4 (long)."""
    lines = source.read_text().splitlines(keepends=True)
    if "edition_ids" in lines[0]:
        user, ids = lines[3].rstrip("\n").split(",")
        words = ids.split(" ")
        lines[3] = f"{user},{' '.join([*words[:2], 'abc', *words[3:]])}\n"
    else:
        lines[3] = lines[3].replace(lines[3].split(",")[1], "abc", 1)
    target.write_text("".join(lines))
    return target


def private_users() -> list[str]:
    return [str(u) for u in pl.read_csv(SOLUTION).filter(pl.col("stage") == "private")["user_id"]]


# Kaggle ------------------------------------------------------------------------------------


@dataclass
class KaggleRun:
    scores: dict[str, float] = field(default_factory=dict)
    participant: str | None = None  # what the submission page shows
    host: str | None = None  # what only the host sees


def load_metric(path: Path) -> Any:
    spec = importlib.util.spec_from_file_location(f"kaggle_metric_{uuid.uuid4().hex}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    for name in ("score", "ParticipantVisibleError"):  # Kaggle looks these up at the top level
        assert hasattr(module, name), name
    return module


def kaggle_replay(kit: Path, submission: Path, solution: Path | None = None) -> KaggleRun:
    metric = load_metric(kit / "metric.py")
    truth = pd.read_csv(solution or kit / "solution.csv")
    frame = pd.read_csv(submission)
    sample = pd.read_csv(kit / "sample_submission.csv")
    if list(frame.columns) != list(sample.columns):  # Kaggle's own check, before the metric
        return KaggleRun(participant="the submission's columns are not the sample's")
    run = KaggleRun()
    for usage in ("Public", "Private"):
        rows = truth[truth["Usage"] == usage].drop(columns="Usage").reset_index(drop=True)
        part = frame[frame["user_id"].isin(rows["user_id"])].reset_index(drop=True)
        try:
            value = metric.score(rows, part, "user_id")
        except Exception as err:
            if type(err).__name__ == "ParticipantVisibleError":
                return KaggleRun(participant=str(err))
            return KaggleRun(participant="Submission Scoring Error", host=str(err))
        assert isinstance(value, float) and math.isfinite(value)
        run.scores[usage] = value
    return run


def test_kaggle_kit_files(kits: Path) -> None:
    kit = kits / "kaggle"
    assert sorted(p.name for p in kit.iterdir()) == [
        ".scorer-kit",
        "README.md",
        "metric.ipynb",
        "metric.py",
        "participants",
        "sample_submission.csv",
        "solution.csv",
        "targets.csv",
    ]
    solution = pd.read_csv(kit / "solution.csv")
    assert list(solution.columns) == ["user_id", "edition_ids", "Usage"]
    assert solution["Usage"].value_counts().to_dict() == {"Public": 500, "Private": 500}
    sample = pd.read_csv(kit / "sample_submission.csv")
    assert list(sample.columns) == ["user_id", "edition_ids"] and len(sample) == 1000
    cell = json.loads((kit / "metric.ipynb").read_text())["cells"][0]
    assert "".join(cell["source"]) == (kit / "metric.py").read_text()
    assert kaggle.spec(LOST_ITEMS) == load_metric(kit / "metric.py").SPEC
    steps = re.findall(r"^(\d+)\. ", (kit / "README.md").read_text(), re.M)
    assert steps == [str(i) for i in range(1, len(steps) + 1)] and len(steps) >= 8


def test_kaggle_notebook_is_valid_for_its_nbformat(kits: Path) -> None:
    """nbformat 4.5 requires an `id` on every cell: its schema refuses a cell without one,
    which nbformat's `validate` only repairs, with a warning that it will become an error."""
    raw = json.loads((kits / "kaggle" / "metric.ipynb").read_text(encoding="utf-8"))
    assert (raw["nbformat"], raw["nbformat_minor"]) == (4, 5)
    assert [cell.get("id") for cell in raw["cells"]] == ["metric"]
    schema = nbformat.validator.get_validator(version=4, version_minor=5)
    assert schema is not None
    schema.validate(raw)  # the JSON as written, not repaired
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # MissingIDFieldWarning and the like
        nbformat.validate(nbformat.reads(json.dumps(raw), as_version=nbformat.NO_CONVERT))


#: A Markdown code span: a run of backticks, anything but that run, the same run again.
CODE_SPAN = re.compile(r"(?<!`)(`+)(?!`)(.+?)(?<!`)\1(?!`)", re.S)


@pytest.mark.parametrize("folder", [None, "hm-kaggle"])
def test_the_kaggle_readme_escapes_nothing_inside_a_code_span(
    kits: Path, tmp_path: Path, folder: str | None
) -> None:
    """Inside a code span a backslash is text: `customer\\_id` would show the backslash.
    Lost items' columns and data/hm-kaggle's (customer_id, prediction) are shown as named."""
    if folder is None:
        readme = (kits / "kaggle" / "README.md").read_text(encoding="utf-8")
        names = ["user_id", "edition_ids"]
    else:
        data = DATA / folder
        build(
            "kaggle", data / "solution.csv", tmp_path / "kit", competition=data / "competition.toml"
        )
        readme = (tmp_path / "kit" / "README.md").read_text(encoding="utf-8")
        names = ["customer_id", "prediction"]
    spans = [body for _, body in CODE_SPAN.findall(readme)]
    assert not [span for span in spans if "\\_" in span]
    assert set(names) <= set(spans)


def test_a_code_span_shows_any_name_as_it_is() -> None:
    """A fence longer than the name's runs of backticks, a space inside it where the name
    starts or ends with one; a pipe escaped in a table cell, which GFM ends before a span."""
    assert code_span("customer_id") == "`customer_id`"
    assert code_span("a`b") == "``a`b``"
    assert code_span("`x") == "`` `x ``"
    assert code_span("a|b") == "`a|b`" and code_span("a|b", table=True) == "`a\\|b`"
    assert code_span("a\x1b[31m") == "`a\\x1b[31m`"  # a terminal's escape shown, not sent


def test_kaggle_solution_of_the_kit_reads_back(kits: Path, wide_sample: Path) -> None:
    kit = kits / "kaggle"
    assert (
        scorer_json(wide_sample, kit / "solution.csv")["metrics"]
        == (scorer_json(wide_sample, SOLUTION)["metrics"])
    )


def test_kaggle_replay_scores_the_sample_and_the_bundled_submission(
    kits: Path, wide_sample: Path, expected: dict[str, Any]
) -> None:
    kit = kits / "kaggle"
    run = kaggle_replay(kit, kit / "sample_submission.csv")
    assert run.participant is None and run.scores == {"Public": 0.0, "Private": 0.0}
    run = kaggle_replay(kit, wide_sample)
    assert run.scores == {"Public": expected["public"], "Private": expected["private"]}


def test_kaggle_replay_rejects_without_naming_a_user(kits: Path, wide_sample: Path) -> None:
    kit = kits / "kaggle"
    run = kaggle_replay(kit, break_ids(wide_sample, kit.parent / "broken.csv"))
    assert run.participant == kaggle.ROW_PROBLEMS and run.host is None
    assert not re.search(r"\d", run.participant)  # no user, row, count or split size


def test_kaggle_replay_broken_solution_tells_the_host_only(kits: Path, wide_sample: Path) -> None:
    kit = kits / "kaggle"
    user, edition = hidden_pair()
    solution = pd.read_csv(kit / "solution.csv", dtype={"edition_ids": str})
    row = solution.index[solution["user_id"] == int(user)][0]
    solution.loc[row, "edition_ids"] = f"{solution.loc[row, 'edition_ids']} {edition}"
    broken = kit.parent / "kaggle_broken_solution.csv"
    solution.to_csv(broken, index=False)
    run = kaggle_replay(kit, wide_sample, broken)
    assert run.participant == "Submission Scoring Error"
    assert run.host is not None and edition in run.host


# CodaBench ---------------------------------------------------------------------------------


@dataclass
class CodaRun:
    exit_code: int
    stdout: str
    stderr: str
    scores: dict[str, float] | None
    output: Path


def bundle(kits: Path) -> tuple[Path, dict[str, Any]]:
    folder = kits / "codabench" / "unzipped"
    if not folder.exists():
        with zipfile.ZipFile(kits / "codabench" / "bundle.zip") as archive:
            archive.extractall(folder)
    return folder, yaml.safe_load((folder / "competition.yaml").read_text())


def codabench_replay(
    kits: Path, phase: int, files: Mapping[str, bytes], root: Path, ref: Path | None = None
) -> CodaRun:
    folder, config = bundle(kits)
    task = next(t for t in config["tasks"] if t["index"] == config["phases"][phase]["tasks"][0])
    program = folder / task["scoring_program"]
    inputs, output = root / "input", root / "output"
    shutil.copytree(ref or folder / task["reference_data"], inputs / "ref")
    (inputs / "res").mkdir(parents=True)
    for name, data in files.items():
        (inputs / "res" / name).write_bytes(data)
    (inputs / "res" / "metadata").write_text("exitCode: 0\nelapsedTime: 1\n")  # prediction step
    output.mkdir()
    command = yaml.safe_load((program / "metadata.yaml").read_text())["command"]
    mounts = {"/app/input": str(inputs), "/app/output": str(output), "/app/program": str(program)}
    words = [re.sub(r"^/app/\w+", lambda m: mounts[m.group()], w) for w in shlex.split(command)]
    assert words[0] == "scorer"  # the image's console script
    done = subprocess.run(
        [sys.executable, "-m", "scorer", *words[1:]],
        cwd=program,  # the worker's working_dir, /app/program
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT), "PYTHONUNBUFFERED": "1"},
        check=False,
    )
    scores = None
    if done.returncode == 0:  # push_scores runs only after a clean exit
        scores = json.loads((output / "scores.json").read_text())
    return CodaRun(done.returncode, done.stdout, done.stderr, scores, output)


def test_codabench_bundle_is_what_codabench_imports(kits: Path) -> None:
    folder, config = bundle(kits)
    assert config["version"] == 2
    for key in ("title", "description", "image", "terms", "docker_image"):
        assert config[key], key
    for name in (config["image"], config["terms"], *[p["file"] for p in config["pages"]]):
        assert (folder / name).is_file() and (folder / name).stat().st_size > 0, name
    assert [p["title"] for p in config["pages"]] == ["Overview", "Evaluation", "Terms"]
    public, final = config["phases"]
    assert public["end"] < final["start"] and final["auto_migrate_to_this_phase"] is True
    assert public["hide_output"] is False and final["hide_output"] is True
    for phase in config["phases"]:
        assert phase["hide_score_output"] is True
        assert (folder / phase["starting_kit"] / "sample_submission.csv").is_file()
    for task in config["tasks"]:
        assert (folder / task["scoring_program"] / "metadata.yaml").is_file()
        assert (folder / task["reference_data"]).is_dir()
    (board,) = config["leaderboards"]
    keys = [c["key"] for c in sorted(board["columns"], key=lambda c: c["index"])]
    assert keys == ["ndcg", "recall", "precision", "hit_rate", "mrr", "map"]
    assert board["primary_index"] == 0 and board["submission_rule"] == "Force_Best"
    assert (kits / "codabench" / "docker" / "Dockerfile").read_text().startswith("#")
    assert "FROM python:3.12-slim" in (kits / "codabench" / "docker" / "Dockerfile").read_text()


def test_codabench_pages_are_task_md() -> None:
    task = (ROOT / "task.md").read_text()

    def section(heading: str) -> str:
        start = task.index(f"\n{heading}\n") + 1
        return task[start : task.index("\n## ", start + 1)].rstrip() + "\n"

    templates = ROOT / "scorer" / "platforms" / "templates"
    assert (templates / "overview.md").read_text() == (
        section("## The story") + "\n" + section("## The files")
    ), "copy task.md's sections into scorer/platforms/templates/overview.md"
    assert (templates / "evaluation.md").read_text() == section("## The metric: NDCG@20")


@pytest.mark.parametrize("phase", [0, 1])
def test_codabench_replay_scores_by_phase(
    kits: Path, wide_sample: Path, expected: dict[str, Any], tmp_path: Path, phase: int
) -> None:
    packed = io.BytesIO()
    with gzip.GzipFile(fileobj=packed, mode="wb") as handle:
        handle.write(wide_sample.read_bytes())
    run = codabench_replay(kits, phase, {"submission.csv.gz": packed.getvalue()}, tmp_path)
    assert run.exit_code == 0, run.stderr
    split = "public" if phase == 0 else "private"  # the same columns, the phase's split
    assert run.scores == {
        metric.split("@")[0]: expected["metrics"][split][metric]
        for metric in expected["metrics"]["public"]
        if metric != "users"
    }
    _, config = bundle(kits)
    assert set(run.scores) <= {c["key"] for c in config["leaderboards"][0]["columns"]}
    if phase == 0:
        shown = run.stdout + run.stderr + (run.output / "detailed_results.html").read_text()
        assert f"{expected['private']:.6f}" not in shown


def test_codabench_replay_rejects_a_broken_file(
    kits: Path, wide_sample: Path, tmp_path: Path
) -> None:
    broken = break_ids(wide_sample, tmp_path / "mine.csv").read_bytes()
    run = codabench_replay(kits, 0, {"mine.csv": broken}, tmp_path / "run")
    assert run.exit_code == 1 and run.scores is None
    assert "line 4, position 3: edition_id 'abc'" in run.stderr
    assert not (run.output / "scores.json").exists()


def test_codabench_replay_broken_solution_keeps_the_details_to_the_host(
    kits: Path, tmp_path: Path
) -> None:
    user, edition = hidden_pair()
    ref = tmp_path / "ref"
    ref.mkdir()
    text = SOLUTION.read_text()
    (ref / "solution.csv").write_text(text + f"{user},{edition},public\n")  # a repeated pair
    sample = (
        kits / "codabench" / "unzipped" / "starting_kit" / "sample_submission.csv"
    ).read_bytes()
    run = codabench_replay(kits, 1, {"s.csv": sample}, tmp_path / "run", ref=ref)
    assert run.exit_code == 2 and run.scores is None
    # The participant reads the detailed results only: the phase hides the logs (hide_output)
    _, config = bundle(kits)
    assert config["phases"][1]["hide_output"] is True
    participant = (run.output / "detailed_results.html").read_text()
    assert "organisers" in participant and leaks(participant, edition) == []
    assert edition in run.stderr  # uploaded for a failed run, shown to organisers only


@pytest.mark.parametrize("folder", ["hm", "hm-kaggle"])
def test_codabench_kit_of_another_competition_speaks_its_columns(
    tmp_path: Path, folder: str
) -> None:
    """data/hm names its columns customer_id, article_id, prediction: the kit's sample and
    targets use them, and the bundle's own scoring program accepts the sample; with text
    ids (data/hm-kaggle) too, and scores the bundled sample as `scorer score` does."""
    hm = DATA / folder
    out = tmp_path / "codabench"
    result = CliRunner().invoke(
        app,
        [
            "kit",
            "codabench",
            "--wheels",
            "none",
            "--solution",
            str(hm / "solution.csv"),
            "--competition",
            str(hm / "competition.toml"),
            "--out",
            str(out),
        ],
    )
    assert result.exit_code == 0, result.output
    with zipfile.ZipFile(out / "bundle.zip") as archive:
        sample = pl.read_csv(archive.read("starting_kit/sample_submission.csv"))
        targets = pl.read_csv(archive.read("starting_kit/targets.csv"))
    users = sorted(pl.read_csv(hm / "targets.csv")["customer_id"])
    assert targets.columns == ["customer_id"] and sorted(targets["customer_id"]) == users
    assert sample.columns == ["customer_id", "prediction"]
    assert sorted(sample["customer_id"]) == users
    assert set(sample["prediction"]) == {" ".join(str(i) for i in range(1, 13))}  # k = 12
    run = codabench_replay(tmp_path, 1, {"s.csv": sample.write_csv().encode()}, tmp_path / "run")
    assert run.exit_code == 0, run.stderr
    assert run.scores is not None and run.scores["map"] == 0 and next(iter(run.scores)) == "map"
    real = (hm / "sample_submission.csv").read_bytes()
    run = codabench_replay(tmp_path, 0, {"s.csv": real}, tmp_path / "real")
    assert run.exit_code == 0, run.stderr
    expected = score(
        hm / "sample_submission.csv",
        hm / "solution.csv",
        competition=Competition.load(hm / "competition.toml"),
    )
    assert run.scores is not None and run.scores["map"] == pytest.approx(expected.public)


@pytest.mark.parametrize("folder", ["hm", "hm-kaggle"])
def test_kit_solution_files_speak_the_competitions_columns(tmp_path: Path, folder: str) -> None:
    """The long solution a kit writes (EvalAI's annotations) and Kaggle's wide one name their
    columns as the competition does, and read back as the same solution (text ids as
    written)."""
    rules = Competition.load(DATA / folder / "competition.toml")
    truth = read_solution(DATA / folder / "solution.csv", competition=rules)
    kit = Kit(
        solution_path=DATA / folder / "solution.csv",
        solution=truth,
        targets=truth.written_targets,
        competition=rules,
        competition_path=DATA / folder / "competition.toml",
        out=tmp_path,
        image="image",
        start=dt.date(2026, 1, 1),
        end=dt.date(2026, 3, 1),
    )
    assert kit.target_users().columns == ["customer_id"]
    long = kit.long()
    assert long.columns == ["customer_id", "article_id", "stage"]
    wide = kaggle.kaggle_solution(long, rules)
    assert wide.columns == ["customer_id", "prediction", "Usage"]
    for written in (long, wide):
        again = read_solution(written, competition=rules)
        assert again.users.equals(truth.users) and again.pairs.equals(truth.pairs)


def test_kit_refuses_a_broken_solution_with_every_detail(tmp_path: Path) -> None:
    user, edition = hidden_pair()
    broken = tmp_path / "solution.csv"
    broken.write_text(SOLUTION.read_text() + f"{user},{edition},public\n")
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "scorer",
            "kit",
            "codabench",
            "--wheels",
            "none",
            "--solution",
            str(broken),
            "--out",
            str(tmp_path / "kit"),
        ],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        check=False,
    )
    assert done.returncode == 2 and edition in done.stderr
    assert not (tmp_path / "kit").exists()
    assert private_users()  # the bundled solution has a private split


# What the kits give away, found by a hostile-input probe (issue 23, "Also") ---------------


@pytest.mark.parametrize("platform", ["kaggle", "codabench", "evalai"])
def test_a_kit_lists_the_users_in_an_order_that_tells_nothing_of_the_split(
    tmp_path: Path, platform: str
) -> None:
    """A solution that lists its public users first: the targets file and the sample still
    list the users sorted by id, so their first half is not the public half."""
    solution = pl.read_csv(DATA / "solution.csv")
    ordered = solution.sort("stage", "user_id", descending=[True, True])  # public first
    path = tmp_path / "solution.csv"
    ordered.write_csv(path)
    written = build(platform, path, tmp_path / "kit")
    tables = {}
    for file in written:
        if file.name in ("targets.csv", "sample_submission.csv"):
            tables[file.name] = pl.read_csv(file)
        if file.name == "bundle.zip":
            with zipfile.ZipFile(file) as archive:
                for name in ("targets.csv", "sample_submission.csv"):
                    tables[name] = pl.read_csv(archive.read(f"starting_kit/{name}"))
    assert set(tables) == {"targets.csv", "sample_submission.csv"}
    for table in tables.values():
        users = table.get_column("user_id")
        assert users.is_sorted() and users.n_unique() == solution["user_id"].n_unique()


@pytest.mark.parametrize(
    ("platform", "copy"),
    [("kaggle", "solution.csv"), ("codabench", "bundle.zip"), ("evalai", "solution.csv")],
)
def test_a_kit_s_copy_of_the_solution_is_no_more_readable_than_the_solution(
    tmp_path: Path, platform: str, copy: str
) -> None:
    path = tmp_path / "solution.csv"
    shutil.copyfile(DATA / "solution.csv", path)
    path.chmod(0o600)
    written = build(platform, path, tmp_path / "kit")
    hidden = [file for file in written if file.name == copy]
    assert len(hidden) == 1
    assert stat.S_IMODE(hidden[0].stat().st_mode) == 0o600


def test_the_remote_worker_says_what_its_environment_lacks(tmp_path: Path) -> None:
    """Started without its settings, it names every missing one (it died of KeyError)."""
    with pytest.raises(UsageError) as exc:
        evalai_remote.settings({"API_SERVER": "https://eval.ai", "QUEUE_NAME": " "})
    assert "set AUTH_TOKEN, QUEUE_NAME, CHALLENGE_PK, SCORER_SOLUTION" in str(exc.value)
    given = dict.fromkeys(evalai_remote.SETTINGS, "x") | {"SCORER_SOLUTION": str(tmp_path / "no")}
    with pytest.raises(UsageError, match="no such file; expected the solution file"):
        evalai_remote.settings(given)
    solution = tmp_path / "solution.csv"
    solution.write_text("user_id,edition_id\n")
    ready = dict.fromkeys(evalai_remote.SETTINGS, "x") | {"SCORER_SOLUTION": str(solution)}
    assert evalai_remote.settings(ready) == ["x", "x", "x", "x", str(solution)]


def test_a_competition_s_name_is_data_in_every_file_a_kit_writes(tmp_path: Path) -> None:
    """A name holding a placeholder, Markdown and HTML: the kit builds (it used to fail
    with an internal error), the YAML reads the name back whole, and no page renders it."""
    name = "Mine @@K@@ *bold* [link](https://x.io) <b>"
    spec = tmp_path / "competition.toml"
    toml = (DATA / "hm" / "competition.toml").read_text(encoding="utf-8")
    spec.write_text(toml.replace('name = "H&M-style"', f"name = {json.dumps(name)}"))
    out = tmp_path / "kit"
    written = build("codabench", DATA / "hm" / "solution.csv", out, competition=spec)
    with zipfile.ZipFile(out / "bundle.zip") as archive:
        pages = {n: archive.read(n).decode() for n in ("terms.md", "overview.md")}
        config = yaml.safe_load(archive.read("competition.yaml"))
    assert config["title"].startswith(name)
    readme = next(f for f in written if f.name == "README.md").read_text(encoding="utf-8")
    for text in [*pages.values(), readme]:
        assert "<b>" not in text and "[link](" not in text and "*bold*" not in text
        assert r"Mine \@\@K\@\@ \*bold\* \[link\]\(https\://x.io\) &lt;b&gt;" in text


def test_a_competition_file_nested_too_deeply_is_a_usage_error(tmp_path: Path) -> None:
    spec = tmp_path / "deep.toml"
    spec.write_text("name = " + "[" * 100_000 + "]" * 100_000 + "\n")
    with pytest.raises(UsageError, match="nested too deeply"):
        Competition.load(spec)


def codabench_time(field: object) -> dt.datetime | None:
    """A phase time as CodaBench keeps it: codalab/codabench c7dbc756,
    src/apps/competitions/unpackers/utils.py, lines 30-38 (`get_datetime`): a date, or a
    datetime (a `datetime.date` too), becomes midnight of its day; text is parsed first."""
    if not field:
        return None
    if isinstance(field, dt.date):
        return dt.datetime.combine(field, dt.time())
    return dt.datetime.combine(dt.datetime.fromisoformat(str(field)), dt.time())


@pytest.mark.parametrize("competition", [None, DATA / "hm" / "competition.toml"])
def test_codabench_accepts_the_kit_s_phases_as_it_normalises_them(
    tmp_path: Path, competition: Path | None
) -> None:
    """src/apps/competitions/unpackers/v2.py, lines 195-196, reads each phase's start and
    end through `get_datetime`; base_unpacker.py, lines 115-135 (`_validate_phase_ordering`):
    a phase followed by another must have an end, and the next must start strictly after it
    ("Phases must be sequential", "Phases dates conflict"). The kit's final phase ends too:
    one without an end takes submissions, and shows private scores, for ever."""
    hm = competition is not None
    solution = DATA / ("hm" if hm else "") / "solution.csv"
    build("codabench", solution, tmp_path / "kit", competition=competition)
    with zipfile.ZipFile(tmp_path / "kit" / "bundle.zip") as archive:
        phases = yaml.safe_load(archive.read("competition.yaml"))["phases"]
    times = [(codabench_time(p.get("start")), codabench_time(p.get("end"))) for p in phases]
    assert len(times) == 2 and all(start is not None for start, _ in times)
    for (_, end), (start, _) in itertools.pairwise(times):
        assert end is not None and start is not None and start > end
    final_start, final_end = times[-1]
    assert final_start is not None and final_end is not None and final_end > final_start


def test_kaggle_s_metric_annotates_every_argument_of_score(kits: Path) -> None:
    """Kaggle's metric template (the docstring of the notebook Kaggle opens for a new
    metric): "You must have a function named score", "you cannot change the first three
    (solution, submission, and row_id_column_name)", "All arguments for score must have
    type annotations", "score must return a single, finite, non-null float"."""
    tree = ast.parse((kits / "kaggle" / "metric.py").read_text(encoding="utf-8"))
    score = next(
        node for node in tree.body if isinstance(node, ast.FunctionDef) and node.name == "score"
    )
    arguments = score.args.args
    assert [a.arg for a in arguments[:3]] == ["solution", "submission", "row_id_column_name"]
    assert all(a.annotation is not None for a in arguments), [ast.unparse(a) for a in arguments]
    assert score.returns is not None and ast.unparse(score.returns) == "float"


def test_a_codabench_kit_without_an_image_says_its_image_is_a_placeholder(tmp_path: Path) -> None:
    """CodaBench pulls `docker_image` to score: a kit naming the placeholder says so, and
    how to name the real one: the same command with `--image` and `--force`, which makes
    the kit again in its folder; given `--image`, it says nothing."""
    runner = CliRunner()
    args = ["kit", "codabench", "--wheels", "none", "--solution", str(SOLUTION)]
    placeholder = runner.invoke(app, [*args, "--out", str(tmp_path / "a")])
    assert placeholder.exit_code == 0, placeholder.output
    assert "warning: docker_image is a placeholder (YOUR_REGISTRY_USER/" in placeholder.stderr
    assert "make the kit again with --image NAME --force" in placeholder.stderr
    again = runner.invoke(app, [*args, "--out", str(tmp_path / "a"), "--image", "me/s:1"])
    assert again.exit_code == 2 and "--force" in again.stderr
    named = runner.invoke(
        app, [*args, "--out", str(tmp_path / "a"), "--image", "me/s:1", "--force"]
    )
    assert named.exit_code == 0 and "warning" not in named.stderr, named.output
    with zipfile.ZipFile(tmp_path / "a" / "bundle.zip") as archive:
        assert yaml.safe_load(archive.read("competition.yaml"))["docker_image"] == "me/s:1"


def test_force_makes_again_only_a_kit(tmp_path: Path) -> None:
    """`--force` empties a folder only if a kit was made there (its `.scorer-kit` marker):
    an organiser's other files are never deleted."""
    mine = tmp_path / "notes"
    mine.mkdir()
    (mine / "plan.txt").write_text("mine")
    with pytest.raises(UsageError, match="no kit is there"):
        build("kaggle", SOLUTION, mine, force=True)
    assert (mine / "plan.txt").read_text() == "mine"
    build("kaggle", SOLUTION, tmp_path / "kit")
    (tmp_path / "kit" / "stale.txt").write_text("from before")
    build("evalai", SOLUTION, tmp_path / "kit", force=True)
    assert not (tmp_path / "kit" / "stale.txt").exists()
    assert (tmp_path / "kit" / ".scorer-kit").read_text().startswith("scorer kit evalai")


def test_a_sample_the_rules_refuse_is_the_kit_s_fault(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The kit's own sample must pass its rules; if it did not, that is the kit's fault
    (exit 2), never reported as a participant's rejection (exit 1)."""
    broken = pl.DataFrame({"user_id": [1], "edition_ids": ["x"]})
    monkeypatch.setattr(Kit, "sample", lambda self: broken)
    result = CliRunner().invoke(
        app,
        [
            "kit",
            "kaggle",
            "--wheels",
            "none",
            "--solution",
            str(SOLUTION),
            "--out",
            str(tmp_path / "kit"),
        ],
    )
    assert result.exit_code == 2, result.output
    assert "internal error: the kit's own sample breaks the rules" in result.stderr
    assert not (tmp_path / "kit").exists()
