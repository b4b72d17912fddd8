"""The EvalAI kit (issue 23), held to EvalAI's own rules: its challenge validator's, restated
from Cloud-CV/EvalAI 0f0403929 `apps/challenges/challenge_config_utils.py` (cited below as
`config_utils`), and its job views', restated by a loopback HTTP server that answers the
remote worker as `apps/jobs/views.py` (cited as `jobs/views`) would. The worker is driven
through its real HTTP client.
"""

from __future__ import annotations

import gzip
import json
import os
import re
import subprocess
import sys
import threading
import time
import urllib.parse
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
import yaml
from support.kits import SOLUTION, hidden_pair, leaks, scorer_json
from support.paths import DATA, ROOT

from scorer.competition import Competition
from scorer.platforms import evalai, evalai_remote
from scorer.platforms.common import HOST_MESSAGE
from scorer.platforms.kit import build

TOKEN, QUEUE, CHALLENGE = "host-token-1f3a", "lost-items-queue-8c2e", 41

#: The kits the rules are checked on: lost items, and H&M with its own columns, metric and ids.
COMPETITIONS = {"lost-items": None, "hm": "hm", "hm-kaggle": "hm-kaggle"}


def make(folder: str | None, out: Path) -> Path:
    if folder is None:
        build("evalai", SOLUTION, out)
    else:
        data = DATA / folder
        build("evalai", data / "solution.csv", out, competition=data / "competition.toml")
    return out


@pytest.fixture(scope="module", params=list(COMPETITIONS))
def kit(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make(COMPETITIONS[request.param], tmp_path_factory.mktemp("evalai") / "kit")


@pytest.fixture(scope="module")
def lost_kit(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The lost-items kit alone: what its bundled files and solution can show."""
    return make(None, tmp_path_factory.mktemp("evalai") / "kit")


def config_of(kit: Path) -> dict[str, Any]:
    loaded: dict[str, Any] = yaml.safe_load(
        (kit / "challenge" / "challenge_config.yaml").read_text()
    )
    return loaded


# The challenge validator's rules -------------------------------------------------------------


def test_the_pages_are_html_files_of_the_challenge(kit: Path) -> None:
    """config_utils 115-148 (`is_challenge_config_yaml_html_field_valid`) and 565-662: the
    title, description, evaluation details, terms and submission guidelines are required;
    each page named is a file under the challenge's folder ending in `.html`."""
    config = config_of(kit)
    assert isinstance(config["title"], str) and config["title"]
    for key in (
        "description",
        "evaluation_details",
        "terms_and_conditions",
        "submission_guidelines",
    ):
        page = kit / "challenge" / config[key]
        assert page.is_file() and page.suffix == ".html" and page.read_text().strip(), key
    for phase in config["challenge_phases"]:  # 151-173, `description` of each phase
        page = kit / "challenge" / phase["description"]
        assert page.is_file() and page.suffix == ".html"


def test_the_logo_is_a_png_under_the_challenge(kit: Path) -> None:
    """config_utils 539-563: a logo ending in .jpg, .jpeg or .png, found under the folder."""
    image = config_of(kit)["image"]
    assert image.endswith(".png") and (kit / "challenge" / image).read_bytes()[:4] == b"\x89PNG"


def test_the_evaluation_script_is_the_zip_evalai_starters_makes(kit: Path) -> None:
    """config_utils 664-704: `evaluation_script` must be named, end in `.zip` and be a file
    under the configuration's folder."""
    config = config_of(kit)
    assert config["evaluation_script"] == "evaluation_script.zip"
    assert (kit / "challenge" / "evaluation_script" / "main.py").is_file()
    # EvalAI-Starters 0398bf7, github/utils.py `create_challenge_zip_file`: the folder's files
    # at the zip's root; the kit ships the zip made so, so the folder validates as it is.
    with zipfile.ZipFile(kit / "challenge" / "evaluation_script.zip") as archive:
        assert sorted(archive.namelist()) == ["__init__.py", "main.py"]
    assert config["remote_evaluation"] is True  # hosted workers: Python 3.7-3.9


def test_dates_are_in_order(kit: Path) -> None:
    """config_utils 706-718 and 904-917: start and end dates given, start not after end, for
    the challenge and each phase (compared as EvalAI's YAML loader reads them)."""
    config = config_of(kit)
    assert config["start_date"] <= config["end_date"]
    for phase in config["challenge_phases"]:
        assert phase["start_date"] and phase["end_date"]
        assert phase["start_date"] <= phase["end_date"]
        assert (
            config["start_date"] <= phase["start_date"] and phase["end_date"] <= config["end_date"]
        )


def test_the_leaderboard_orders_by_one_of_its_labels(kit: Path) -> None:
    """config_utils 741-816: each leaderboard has an id and a schema with `labels` and a
    `default_order_by` that is one of them; here, the competition's metric."""
    (board,) = config_of(kit)["leaderboard"]
    labels = board["schema"]["labels"]
    assert board["id"] == 1 and labels and board["schema"]["default_order_by"] in labels
    spec = (
        Competition.load(kit / "worker" / "competition.toml")
        if (kit / "worker" / "competition.toml").exists()
        else Competition()
    )
    assert labels == list(spec.labels.values())
    assert board["schema"]["default_order_by"] == spec.label(spec.metric)


def test_phases_have_unique_codenames_and_no_annotation_file(kit: Path) -> None:
    """config_utils 832-841: a codename for every phase, none twice. 842-876: a
    `test_annotation_file` is optional (none: no file read, no error); the kit names none,
    so the solution goes into no repository."""
    phases = config_of(kit)["challenge_phases"]
    assert [p["codename"] for p in phases] == ["dev", "test"]
    assert all("test_annotation_file" not in p for p in phases)
    assert not list((kit / "challenge").rglob("*solution*"))


def test_no_phase_selecting_one_submission_makes_submissions_public(kit: Path) -> None:
    """config_utils 896-902: `is_submission_public` and `is_restricted_to_select_one_submission`
    may not both be true (message `is_submission_public_restricted`, line 329)."""
    for phase in config_of(kit)["challenge_phases"]:
        assert not (
            phase["is_submission_public"] and phase["is_restricted_to_select_one_submission"]
        )
    test = config_of(kit)["challenge_phases"][1]
    assert test["is_restricted_to_select_one_submission"] is True


def test_dataset_splits_have_names_and_unique_codenames(kit: Path) -> None:
    """config_utils 1162-1219: each dataset split has a name and a codename, none twice."""
    splits = config_of(kit)["dataset_splits"]
    assert all(s["name"] for s in splits)
    assert [s["codename"] for s in splits] == list(evalai.PHASES["test"])


def test_phase_splits_have_every_key_and_map_known_ids_once(kit: Path) -> None:
    """config_utils 1043-1050 (the six keys every challenge phase split has), 1001-1020 (no
    triple twice), 206-250 (`is_challenge_phase_split_mapping_valid`: leaderboard, phase and
    dataset split ids that exist); `visibility` is 1 (host), 2 (owner and host) or 3 (public),
    `apps/challenges/models.py` 1128-1130."""
    config = config_of(kit)
    keys = {
        "is_leaderboard_order_descending",
        "leaderboard_decimal_precision",
        "visibility",
        "dataset_split_id",
        "leaderboard_id",
        "challenge_phase_id",
    }
    triples = []
    for split in config["challenge_phase_splits"]:
        assert keys <= set(split)
        assert split["leaderboard_id"] in {b["id"] for b in config["leaderboard"]}
        assert split["challenge_phase_id"] in {p["id"] for p in config["challenge_phases"]}
        assert split["dataset_split_id"] in {d["id"] for d in config["dataset_splits"]}
        assert split["visibility"] in (1, 2, 3)
        triples.append(
            (split["leaderboard_id"], split["challenge_phase_id"], split["dataset_split_id"])
        )
    assert len(triples) == len(set(triples))
    private = [s for s in config["challenge_phase_splits"] if s["dataset_split_id"] == 2]
    assert [s["visibility"] for s in private] == [1]  # hidden from participants until the end


def test_the_phases_map_to_the_worker_s_splits(kit: Path) -> None:
    """What the worker sends must be accepted by `update_submission` (jobs/views 1362-1366):
    every split it reports for a phase is a dataset split linked to that phase."""
    config = config_of(kit)
    codenames = {d["id"]: d["codename"] for d in config["dataset_splits"]}
    for phase in config["challenge_phases"]:
        linked = {
            codenames[s["dataset_split_id"]]
            for s in config["challenge_phase_splits"]
            if s["challenge_phase_id"] == phase["id"]
        }
        assert linked == set(evalai.PHASES[phase["codename"]])


# The remote worker against EvalAI's job views, over HTTP ------------------------------------


@dataclass
class EvalAIServer:
    """A loopback server answering the remote worker's requests as EvalAI's views do, for one
    challenge made from the kit's configuration, with one submission in its queue."""

    config: dict[str, Any]
    upload: bytes
    phase: int  # the phase the submission was made to (its id in the configuration)
    name: str  # the stored file's name: a uuid and the upload's last suffix
    requests: list[tuple[str, str, dict[str, str]]] = field(default_factory=list)
    updates: list[tuple[str, dict[str, str]]] = field(default_factory=list)
    queue: list[dict[str, Any]] = field(default_factory=list)
    status: str = "submitted"
    url: str = ""

    def answer(self, method: str, path: str, form: dict[str, str], auth: str) -> tuple[int, Any]:
        self.requests.append((method, path, form))
        if path.startswith("/media/"):  # the submission's file, as storage serves it
            return 200, self.upload
        if auth != f"Bearer {TOKEN}":  # JWTAuthentication, IsAuthenticated (jobs/views 1058-1061)
            return 401, {"detail": "Authentication credentials were not provided."}
        if found := re.fullmatch(r"/api/jobs/challenge/queues/([\w.-]+)/", path):
            if found[1] != QUEUE:  # jobs/views 2473-2481
                return 400, {"error": f"Challenge with queue name {found[1]} does not exist"}
            message = self.queue[0] if self.queue else None
            return 200, {
                "body": message and message["body"],  # jobs/views 2494-2507
                "receipt_handle": message and message["receipt_handle"],
            }
        if found := re.fullmatch(r"/api/jobs/queues/([\w.-]+)/", path):
            if method != "POST" or found[1] != QUEUE:
                return 400, {"error": "bad request"}
            if not form.get("receipt_handle"):  # jobs/views 2588-2593
                return 400, {"error": "Please add message receipt handle in the body"}
            self.queue = [m for m in self.queue if m["receipt_handle"] != form["receipt_handle"]]
            return 200, {"success": f"Message deleted successfully from the queue: {QUEUE}"}
        if found := re.fullmatch(r"/api/jobs/submission/(\d+)", path):  # jobs/urls.py 44
            if int(found[1]) != 7:
                return 404, {"error": f"Submission {found[1]} does not exist"}
            return 200, {
                "id": 7,
                "status": self.status,
                "input_file": f"{self.url}/media/submission_files/{self.name}",
            }
        if found := re.fullmatch(r"/api/challenges/challenge/phase/(\d+)/", path):
            phase = next(p for p in self.config["challenge_phases"] if p["id"] == int(found[1]))
            return 200, {"id": phase["id"], "codename": phase["codename"]}  # challenges/views 3592
        if path == f"/api/jobs/challenge/{CHALLENGE}/update_submission/":
            return self.update(method, form)
        return 404, {"detail": "Not found."}

    def update(self, method: str, form: dict[str, str]) -> tuple[int, Any]:
        """`update_submission` (jobs/views 1268-1560)."""
        status = form.get("submission_status", "").lower()
        if method == "PATCH":
            if status not in ("queued", "running"):  # 1557
                return 400, {"error": "Sorry, submission status is invalid"}
            self.status = status
            self.updates.append((method, form))
            return 200, {}
        if status not in ("failed", "cancelled", "finished"):  # 1335-1343
            return 400, {"error": "Sorry, submission status is invalid"}
        if status == "finished":
            try:
                results = json.loads(form["result"])  # 1344-1353
            except (KeyError, ValueError):
                return 400, {"error": "`result` key contains invalid data"}
            codenames = {d["id"]: d["codename"] for d in self.config["dataset_splits"]}
            linked = {
                codenames[s["dataset_split_id"]]
                for s in self.config["challenge_phase_splits"]
                if s["challenge_phase_id"] == int(form["challenge_phase"])
            }
            labels = self.config["leaderboard"][0]["schema"]["labels"]
            for entry in results:
                if entry.get("split") not in linked:  # 1362-1374
                    return 400, {"error": "Challenge Phase Split does not exist"}
                for metric, value in entry["accuracies"].items():
                    if metric not in labels:  # 1382-1383
                        return 400, {"error": "Following metrics are missing"}
                    if not isinstance(value, float | int):  # 1385-1388
                        return 400, {"error": "Values for following metrics are not of float/int"}
        self.status = status
        self.updates.append((method, form))
        return 200, {"success": "Submission result has been successfully updated"}


@pytest.fixture
def serve() -> Iterator[Any]:
    """Start a loopback EvalAI for a kit's challenge, with a submission (bytes, stored under
    `name`) made to a phase (its codename)."""
    servers: list[ThreadingHTTPServer] = []

    def start(kit: Path, upload: bytes, codename: str, name: str = "3f0c1d.gz") -> EvalAIServer:
        config = config_of(kit)
        phase = next(p for p in config["challenge_phases"] if p["codename"] == codename)
        state = EvalAIServer(config, upload, phase["id"], name)
        state.queue.append(
            {
                "receipt_handle": "rh-1",
                "body": {"challenge_pk": CHALLENGE, "phase_pk": phase["id"], "submission_pk": 7},
            }
        )

        class Handler(BaseHTTPRequestHandler):
            def _serve(self) -> None:
                size = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(size).decode()
                form = dict(urllib.parse.parse_qsl(raw, keep_blank_values=True))
                code, body = state.answer(
                    self.command, self.path, form, self.headers.get("Authorization", "")
                )
                data = body if isinstance(body, bytes) else json.dumps(body).encode()
                self.send_response(code)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            do_GET = do_POST = do_PUT = do_PATCH = _serve

            def log_message(self, *args: Any) -> None:
                pass

        server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        servers.append(server)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        state.url = f"http://127.0.0.1:{server.server_address[1]}"
        return state

    yield start
    for server in servers:
        server.shutdown()
        server.server_close()


def environment(kit: Path, server: EvalAIServer, tmp_path: Path, **extra: str) -> dict[str, str]:
    values = {
        "API_SERVER": server.url,
        "AUTH_TOKEN": TOKEN,
        "QUEUE_NAME": QUEUE,
        "CHALLENGE_PK": str(CHALLENGE),
        "SCORER_SOLUTION": str(kit / "worker" / "solution.csv"),
        "SCORER_HOST_LOG": str(tmp_path / "host.log"),
        "SAVE_DIR": str(tmp_path / "save"),
    }
    if (kit / "worker" / "competition.toml").exists():
        values["SCORER_COMPETITION"] = str(kit / "worker" / "competition.toml")
    return values | extra


def run_once(monkeypatch: pytest.MonkeyPatch, values: dict[str, str]) -> None:
    """One poll of the worker (`evalai_remote.main`), its real HTTP client included."""
    for name, value in values.items():
        monkeypatch.setenv(name, value)
    evalai_remote.main(poll_seconds=0, once=True)


def sample_of(kit: Path) -> bytes:
    return gzip.compress((kit / "sample_submission.csv").read_bytes())


@pytest.mark.parametrize("codename", ["dev", "test"])
def test_the_worker_sends_what_update_submission_accepts(
    kit: Path, serve: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, codename: str
) -> None:
    server = serve(kit, sample_of(kit), codename)
    run_once(monkeypatch, environment(kit, server, tmp_path))
    (patch, running), (put, done) = server.updates
    assert (patch, running["submission_status"], put, done["submission_status"]) == (
        "PATCH",
        "RUNNING",
        "PUT",
        "FINISHED",
    )
    sent = json.loads(done["result"])
    shown = [(e["split"], e["show_to_participant"]) for e in sent]
    expected = [("public_split", True)] + ([("private_split", False)] if codename == "test" else [])
    assert shown == expected
    assert all(value == 0.0 for e in sent for value in e["accuracies"].values())  # the sample
    assert server.queue == [] and server.status == "finished"  # the message left the queue
    assert done["stdout"] == "scored\n" and done["stderr"] == ""


def test_the_worker_scores_as_scorer(
    serve: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, lost_kit: Path
) -> None:
    kit = lost_kit
    upload = DATA / "sample_submission.csv"
    server = serve(kit, gzip.compress(upload.read_bytes()), "test")
    run_once(monkeypatch, environment(kit, server, tmp_path))
    sent = json.loads(server.updates[-1][1]["result"])
    expected = scorer_json(upload, SOLUTION)
    assert sent[0]["accuracies"]["ndcg@20"] == expected["public"]
    assert sent[1]["accuracies"]["ndcg@20"] == expected["private"]


def test_a_rejected_file_fails_with_the_report_in_stderr(
    kit: Path, serve: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    lines = (kit / "sample_submission.csv").read_text().splitlines(keepends=True)
    twice = "".join([*lines, lines[1]]).encode()  # a user on two lines
    server = serve(kit, twice, "dev", "9b2e4a.csv")
    run_once(monkeypatch, environment(kit, server, tmp_path))
    done = server.updates[-1][1]
    assert done["submission_status"] == "FAILED" and "result" not in done
    assert f"(lines 2–{len(lines) + 1}" in done["stderr"], done["stderr"]
    assert server.queue == []


def test_a_broken_solution_tells_the_participant_nothing(
    lost_kit: Path, serve: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    kit = lost_kit
    user, edition = hidden_pair()
    solution = tmp_path / "solution.csv"
    solution.write_text(SOLUTION.read_text() + f"{user},{edition},private\n")
    server = serve(kit, sample_of(kit), "test")
    run_once(monkeypatch, environment(kit, server, tmp_path, SCORER_SOLUTION=str(solution)))
    done = server.updates[-1][1]
    assert done["submission_status"] == "FAILED" and done["stderr"] == HOST_MESSAGE + "\n"
    assert leaks(done["stdout"] + done["stderr"], edition) == []
    assert edition in (tmp_path / "host.log").read_text()


def test_a_wrong_token_is_refused_and_the_worker_goes_on(
    kit: Path, serve: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    server = serve(kit, sample_of(kit), "dev")
    run_once(monkeypatch, environment(kit, server, tmp_path, AUTH_TOKEN="wrong"))
    assert server.updates == [] and len(server.queue) == 1
    assert "401" in (tmp_path / "host.log").read_text()


def test_the_kit_s_worker_runs_as_the_readme_starts_it(
    kit: Path, serve: Any, tmp_path: Path
) -> None:
    """README step 7: `python challenge/remote_challenge_evaluation/main.py` from the kit's
    folder with the settings exported; it polls until stopped."""
    server = serve(kit, sample_of(kit), "dev")
    values = environment(kit, server, tmp_path)
    worker = subprocess.Popen(
        [sys.executable, "challenge/remote_challenge_evaluation/main.py"],
        cwd=kit,
        env={**os.environ, **values, "PYTHONPATH": str(ROOT)},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        deadline = time.monotonic() + 120
        while server.status != "finished" and time.monotonic() < deadline and worker.poll() is None:
            time.sleep(0.2)
    finally:
        worker.terminate()
        _, err = worker.communicate(timeout=30)
    assert server.status == "finished", err.decode()
    readme = (kit / "README.md").read_text()
    assert "$ python challenge/remote_challenge_evaluation/main.py" in readme
    unset = subprocess.run(
        [sys.executable, "challenge/remote_challenge_evaluation/main.py"],
        cwd=kit,
        env={"PATH": os.environ["PATH"], "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        check=False,
    )
    assert unset.returncode == 2 and "API_SERVER, AUTH_TOKEN, QUEUE_NAME" in unset.stderr


# The README ---------------------------------------------------------------------------------


def test_the_readme_makes_a_private_repository_and_ships_no_solution(kit: Path) -> None:
    readme = (kit / "README.md").read_text()
    assert "Use this template" in readme and "**Private**" in readme and "Do not fork" in readme
    assert "Manage" in readme and "queue name" in readme
    assert "participants/" in readme and "What was run" in readme
    steps = re.findall(r"^(\d+)\. ", readme, re.M)
    assert steps == [str(i) for i in range(1, len(steps) + 1)] and len(steps) >= 8
    assert (kit / "worker" / "solution.csv").is_file()
