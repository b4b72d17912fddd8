"""The CodaBench kit against the rules CodaBench's importer, serializers and compute worker
apply to what the bundle holds. Each test restates one rule and cites it in codalab/codabench
at commit c7dbc756 (`src/apps/...` paths are under the repository's root); the rules are
written here, not CodaBench's code. Each runs on the kit of lost items and of two other
competitions (data/hm with numeric ids and the MAP metric, data/hm-kaggle with text ids)."""

from __future__ import annotations

import datetime as dt
import json
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path
from typing import Any

import pytest
import yaml
from support.paths import ROOT

from scorer.competition import LOST_ITEMS, Competition
from scorer.platforms.kit import build

DATA = ROOT / "data"
COMPETITIONS = {"lost items": None, "hm": "hm", "hm-kaggle": "hm-kaggle"}

#: The submission rules a leaderboard may have (src/apps/leaderboards/models.py 7-20).
SUBMISSION_RULES = {
    "Add",
    "Add_And_Delete",
    "Add_And_Delete_Multiple",
    "Force_Last",
    "Force_Latest_Multiple",
    "Force_Best",
}


@pytest.fixture(scope="module", params=list(COMPETITIONS))
def kit(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = COMPETITIONS[request.param]
    root = tmp_path_factory.mktemp("codabench")
    solution = DATA / folder / "solution.csv" if folder else DATA / "solution.csv"
    spec = DATA / folder / "competition.toml" if folder else None
    build("codabench", solution, root / "kit", competition=spec, image="me/scoring:1")
    with zipfile.ZipFile(root / "kit" / "bundle.zip") as archive:
        archive.extractall(root / "bundle")
    return root


def config(kit: Path) -> dict[str, Any]:
    data: dict[str, Any] = yaml.safe_load((kit / "bundle" / "competition.yaml").read_text())
    return data


def test_the_bundle_is_version_2_with_the_keys_the_importer_requires(kit: Path) -> None:
    """src/apps/competitions/unpackers/v2.py 69-72 ("No tasks listed"), 163-168 (terms),
    184-188 (phases), 244-247 (leaderboards); base_unpacker.py 201-204 (image); the
    competition's title is required, at most 256 characters (competitions/models.py 36)."""
    yaml_config = config(kit)
    assert yaml_config["version"] == 2
    for key in ("tasks", "terms", "phases", "leaderboards", "image"):
        assert yaml_config[key], key
    assert 0 < len(yaml_config["title"]) <= 256


def test_every_page_terms_and_logo_are_files_of_the_bundle_with_content(kit: Path) -> None:
    """v2.py 50-58: each page's `file` must exist ("Unable to find page") and not be empty;
    173-177: so must the terms; base_unpacker.py 63-71: the logo is read from the bundle
    ("Unable to find image")."""
    yaml_config = config(kit)
    bundle = kit / "bundle"
    for name in [yaml_config["terms"], *[page["file"] for page in yaml_config["pages"]]]:
        assert (bundle / name).read_text(encoding="utf-8").strip(), name
    assert (bundle / yaml_config["image"]).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_tasks_have_unique_indexes_and_a_scoring_program_in_the_bundle(kit: Path) -> None:
    """v2.py 75-83: every task has an `index`, no two the same; 104-107: every task has a
    `scoring_program`; 96-103 and base_unpacker.py 35-39: a file reference is a path of the
    bundle, or else taken for the key of data already on CodaBench (a missing folder fails
    the import). The scoring program's folder holds `metadata.yaml` with its `command`."""
    tasks = config(kit)["tasks"]
    indexes = [task["index"] for task in tasks]
    assert len(set(indexes)) == len(indexes) == 2
    for task in tasks:
        program = kit / "bundle" / task["scoring_program"]
        assert yaml.safe_load((program / "metadata.yaml").read_text())["command"]
        assert any((kit / "bundle" / task["reference_data"]).iterdir())
        assert "ingestion_program" not in task and "input_data" not in task


def test_no_solution_is_listed(kit: Path) -> None:
    """v2.py 113-115: `solutions` is optional; when present each needs an index, tasks and a
    path (117-146). The kit lists none: the reference data is the solution."""
    assert "solutions" not in config(kit)


def test_every_phase_names_tasks_that_exist_in_index_order(kit: Path) -> None:
    """v2.py 186: phases are sorted by `index`; 204-207: each must list `tasks`;
    base_unpacker.py 323: each task index must be one of the tasks (else the import fails
    on a missing key); 91: the last phase is the final phase."""
    yaml_config = config(kit)
    phases = yaml_config["phases"]
    assert [p["index"] for p in phases] == sorted(p["index"] for p in phases) == [0, 1]
    task_indexes = {task["index"] for task in yaml_config["tasks"]}
    for phase in phases:
        assert phase["tasks"] and set(phase["tasks"]) <= task_indexes
    assert phases[-1]["name"] == "Final phase" and phases[-1]["auto_migrate_to_this_phase"]


def test_phase_dates_are_days_in_order_and_the_final_phase_ends(kit: Path) -> None:
    """unpackers/utils.py 30-38 (`get_datetime`): a date becomes midnight of its day;
    base_unpacker.py 115-135: a phase followed by another has an end and the next starts
    strictly after it. The final phase ends (competitions/models.py 172-178: a phase
    without an end is current for ever, taking submissions)."""
    phases = config(kit)["phases"]
    for phase in phases:
        assert isinstance(phase["start"], dt.date) and isinstance(phase["end"], dt.date)
        assert not isinstance(phase["start"], dt.datetime)  # a time would be cut to midnight
        assert phase["end"] > phase["start"]
    assert phases[1]["start"] > phases[0]["end"]


def test_submission_limits_and_time_limit_are_positive_numbers(kit: Path) -> None:
    """v2.py 197-198, 209-211: `max_submissions_per_day`, `max_submissions` (per person) and
    `execution_time_limit` are positive integers (competitions/models.py 297, 305-306); a
    limit of 0 means no limit (models.py 339-344), so the final phase allows 1, which the
    migrated submission already uses (models.py 335: every submission not failed counts)."""
    public, final = config(kit)["phases"]
    for phase in (public, final):
        for key in ("max_submissions_per_day", "max_submissions", "execution_time_limit"):
            assert isinstance(phase[key], int) and phase[key] > 0, key
    assert final["max_submissions"] == final["max_submissions_per_day"] == 1
    assert public["max_submissions"] > 1


def test_one_leaderboard_bound_to_every_phase(kit: Path) -> None:
    """base_unpacker.py 324: every phase gets the bundle's FIRST leaderboard; a second one
    would be bound to no phase. Its title has at most 64 characters, its key 36
    (leaderboards/models.py 25-26), its `submission_rule` is one of 7-20."""
    (board,) = config(kit)["leaderboards"]
    assert 0 < len(board["title"]) <= 64 and 0 < len(board["key"]) <= 36
    assert board["submission_rule"] in SUBMISSION_RULES


def test_columns_have_unique_indexes_and_keys_and_valid_fields(kit: Path) -> None:
    """api/serializers/leaderboards.py 62-74: at least one column, unique indexes, unique
    keys; leaderboards/models.py 57-65: title and key at most 36 characters, `sorting` desc
    or asc, `index` a non-negative integer, `precision` an integer; serializer 31-44 and
    76-86: a computation needs `computation_indexes` naming other columns (the kit has
    none)."""
    (board,) = config(kit)["leaderboards"]
    columns = board["columns"]
    assert columns
    assert len({c["index"] for c in columns}) == len({c["key"] for c in columns}) == len(columns)
    for column in columns:
        assert 0 < len(column["title"]) <= 36 and 0 < len(column["key"]) <= 36
        assert column["sorting"] in ("desc", "asc")
        assert isinstance(column["index"], int) and column["index"] >= 0
        assert isinstance(column["precision"], int)
        assert "computation" not in column and "computation_indexes" not in column


def test_the_primary_column_is_the_competition_s_metric_and_no_column_is_hidden(
    kit: Path,
) -> None:
    """serializers/leaderboards.py 159: a phase's board is ranked by the column whose index
    is `primary_index` (it must exist: `columns.get`); 133-138 and 173-178: every column
    not `hidden` is shown. The kit hides none: a hidden column's scores still reach anyone
    through the API (codalab/codabench#2526), so none is private."""
    (board,) = config(kit)["leaderboards"]
    primary = next(c for c in board["columns"] if c["index"] == board["primary_index"])
    spec = kit / "bundle" / "scoring_program_final" / "competition.toml"
    rules = Competition.load(spec) if spec.exists() else LOST_ITEMS
    assert primary["key"] == rules.metric and primary["title"] == rules.label(rules.metric)
    assert not any(c.get("hidden") for c in board["columns"])
    assert not any("private" in c["key"] or "public" in c["key"] for c in board["columns"])


def test_force_best_ranks_the_best_and_migrates_it(kit: Path) -> None:
    """leaderboards/strategies.py 69-103: with `Force_Best` a participant's board entry is
    their finished submission best by the primary column (then the other columns, then the
    earlier); competitions/models.py 142-163: when the final phase starts, the submissions
    on the board (finished, `leaderboard` set) are copied to it and re-run. So each
    participant's best public submission is re-scored on the private split, as task.md's
    rule (the best public submission counts). Both phases' descriptions say so."""
    yaml_config = config(kit)
    assert yaml_config["leaderboards"][0]["submission_rule"] == "Force_Best"
    final = yaml_config["phases"][1]
    assert "best public submission" in final["description"]
    assert "no new submission" in final["description"]


def test_the_public_phase_shows_its_logs_and_the_final_phase_hides_them(kit: Path) -> None:
    """compute_worker/compute_worker.py 242-253 and 1295-1302: a run that exits non-zero
    never reaches `push_output`, so no file of its output folder is uploaded; 1271-1278:
    its stdout and stderr are. static/riot/competitions/detail/submission_manager.tag 120:
    the detailed results are linked for finished submissions only; submission_modal.tag
    4-5 and api/serializers/submissions.py 254-257: `hide_output` hides the logs (and the
    detailed results tab) from everyone but the organisers. So a participant reads a
    rejection in the public phase's logs, and the final phase, which re-runs accepted
    files, hides its logs, which hold a host failure's details. `enable_detailed_results`
    (competitions/tasks.py 158-159) gives the worker the detailed results' address."""
    yaml_config = config(kit)
    assert yaml_config["enable_detailed_results"] is True
    assert yaml_config["show_detailed_results_in_submission_panel"] is True
    assert yaml_config["show_detailed_results_in_leaderboard"] is False
    public, final = yaml_config["phases"]
    assert public["hide_output"] is False and public["hide_score_output"] is True
    assert final["hide_output"] is True


def test_docker_image_and_starting_kit(kit: Path) -> None:
    """v2.py 15: `docker_image` defaults to codalab/codalab-legacy:py37 (Python 3.7; scorer
    needs 3.11), so the kit names its own, at most 128 characters (competitions/models.py
    49); v2.py 227-235 and base_unpacker.py 330-332: a phase's `starting_kit` is a folder of
    the bundle, offered to participants."""
    yaml_config = config(kit)
    assert yaml_config["docker_image"] == "me/scoring:1"
    for phase in yaml_config["phases"]:
        folder = kit / "bundle" / phase["starting_kit"]
        assert {"sample_submission.csv", "targets.csv"} <= {p.name for p in folder.iterdir()}
        assert "public_data" not in phase or (kit / "bundle" / phase["public_data"]).is_dir()
    # the image is built from docker/ as it is: every file the Dockerfile copies is there
    dockerfile = (kit / "kit" / "docker" / "Dockerfile").read_text()
    copied = re.findall(r"^COPY (\S+) ", dockerfile, flags=re.MULTILINE)
    assert copied and all((kit / "kit" / "docker" / n).is_file() for n in copied), copied


@pytest.mark.parametrize("phase", [0, 1])
def test_scores_json_fills_every_column_and_nothing_else(kit: Path, phase: int) -> None:
    """api/views/submissions.py 578-587: a key of `scores.json` that names no column is
    dropped; a column without a key stays empty. Each phase's program fills every column,
    of its own split, the sample scoring zero."""
    yaml_config = config(kit)
    bundle = kit / "bundle"
    task = next(
        t for t in yaml_config["tasks"] if t["index"] == yaml_config["phases"][phase]["tasks"][0]
    )
    run = kit / f"run{phase}"
    shutil.copytree(bundle / task["reference_data"], run / "input" / "ref")
    (run / "input" / "res").mkdir()
    shutil.copy(bundle / "starting_kit" / "sample_submission.csv", run / "input" / "res")
    program = bundle / task["scoring_program"]
    command = yaml.safe_load((program / "metadata.yaml").read_text())["command"].split()
    words = [w.replace("/app/program", str(program)).replace("/app", str(run)) for w in command]
    (run / "output").mkdir()
    done = subprocess.run(
        [sys.executable, "-m", "scorer", *words[1:]],
        capture_output=True,
        text=True,
        check=False,
        cwd=program,
    )
    assert done.returncode == 0, done.stderr
    scores = json.loads((run / "output" / "scores.json").read_text())
    keys = [
        c["key"]
        for c in sorted(yaml_config["leaderboards"][0]["columns"], key=lambda c: c["index"])
    ]
    assert list(scores) == keys and set(scores.values()) == {0.0}


def test_the_program_s_own_fault_is_exit_2_never_a_rejection(tmp_path: Path) -> None:
    """compute_worker.py 1295-1302: any non-zero exit fails the run, so only the exit code
    tells a rejected submission (1) from the organisers' or the program's fault (2). A
    competition file the program cannot use is the organiser's fault: exit 2, no scores."""
    (tmp_path / "input" / "ref").mkdir(parents=True)
    (tmp_path / "input" / "res").mkdir()
    shutil.copy(DATA / "solution.csv", tmp_path / "input" / "ref")
    shutil.copy(DATA / "sample_submission.csv", tmp_path / "input" / "res")
    spec = tmp_path / "competition.toml"
    spec.write_text('name = "x"\nmetric = "nope"\n')
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "scorer",
            "codabench",
            str(tmp_path / "input"),
            str(tmp_path / "output"),
            "--phase",
            "final",
            "--competition",
            str(spec),
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 2
    assert "metric = 'nope'; expected one of 'ndcg'" in done.stderr
    assert not (tmp_path / "output" / "scores.json").exists()


def test_the_readme_says_what_was_run_where_files_go_and_what_counts(kit: Path) -> None:
    """The organiser's README: what was and was not run on CodaBench, which submission
    counts (the best public one, moved to the final phase), where participants' files go
    (a phase's Starting Kit, v2.py 227-235), where a failure's details are, and the steps
    in order."""
    readme = (kit / "kit" / "README.md").read_text(encoding="utf-8")
    text = " ".join(readme.split())
    assert "Nothing was run on codabench.org itself" in text
    assert "Each participant's **best** submission is ranked (`Force_Best`)" in text
    assert "moves the submission each participant has on the public leaderboard" in text
    assert "set it as each phase's **Starting Kit**" in text
    assert "its scoring stderr holds the details" in text
    assert "holds the Dockerfile and scorer's wheel" in text  # no wheel to build by hand
    steps = re.findall(r"^(\d+)\. ", readme, flags=re.MULTILINE)
    assert steps == [str(n) for n in range(1, 8)]
