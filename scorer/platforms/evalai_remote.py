"""A remote-evaluation worker for EvalAI: polls the challenge's queue and scores on this host.

EvalAI's hosted workers run Python 3.7 to 3.9 and scorer needs 3.11 or later, so the challenge
evaluates remotely: this worker takes a submission message from the challenge's queue,
downloads the file, calls `remote_evaluate(file, phase_codename)` and sends the result (or
the participant-safe reason it failed) back through EvalAI's `update_submission` API.
"""

from __future__ import annotations

import json
import os
import sys
import time
import urllib.parse
import urllib.request
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Protocol

from scorer.errors import SubmissionError, UsageError
from scorer.platforms.common import HostVisibleError
from scorer.platforms.evalai import (
    COMPETITION,
    SOLUTION,
    host_log,
    remote_evaluate,
    remote_result,
)

#: The API paths a remote worker uses (EvalAI's apps/jobs/urls.py and apps/challenges/urls.py).
PATHS = {
    "message": "/api/jobs/challenge/queues/{queue}/",
    "delete": "/api/jobs/queues/{queue}/",
    "submission": "/api/jobs/submission/{pk}",
    "phase": "/api/challenges/challenge/phase/{pk}/",
    "update": "/api/jobs/challenge/{challenge}/update_submission/",
}

#: Statuses after which a message only needs to leave the queue.
DONE = ("finished", "failed", "cancelled")


class Api(Protocol):
    """What the worker asks of EvalAI; `HttpApi` is the real one, tests bring their own."""

    def message(self) -> Mapping[str, Any]: ...
    def delete(self, receipt_handle: str) -> None: ...
    def submission(self, pk: int) -> Mapping[str, Any]: ...
    def phase(self, pk: int) -> Mapping[str, Any]: ...
    def download(self, url: str, path: Path) -> None: ...
    def update(self, data: Mapping[str, Any], method: str) -> None: ...


class HttpApi:
    """EvalAI's API over HTTPS with the host's token (`Authorization: Bearer …`)."""

    def __init__(self, server: str, token: str, queue: str, challenge: str) -> None:
        self.server, self.token, self.queue, self.challenge = (
            server.rstrip("/"),
            token,
            queue,
            challenge,
        )

    def _call(self, path: str, method: str = "GET", data: Mapping[str, Any] | None = None) -> Any:
        body = urllib.parse.urlencode(data).encode() if data is not None else None
        request = urllib.request.Request(
            self.server + path,
            data=body,
            method=method,
            headers={"Authorization": f"Bearer {self.token}"},
        )
        with urllib.request.urlopen(request, timeout=120) as response:
            text = response.read().decode("utf-8")
        return json.loads(text) if text else {}

    def message(self) -> Mapping[str, Any]:
        found: Mapping[str, Any] = self._call(PATHS["message"].format(queue=self.queue))
        return found

    def delete(self, receipt_handle: str) -> None:
        path = PATHS["delete"].format(queue=self.queue)
        self._call(path, "POST", {"receipt_handle": receipt_handle})

    def submission(self, pk: int) -> Mapping[str, Any]:
        found: Mapping[str, Any] = self._call(PATHS["submission"].format(pk=pk))
        return found

    def phase(self, pk: int) -> Mapping[str, Any]:
        found: Mapping[str, Any] = self._call(PATHS["phase"].format(pk=pk))
        return found

    def download(self, url: str, path: Path) -> None:
        with urllib.request.urlopen(url, timeout=600) as response, path.open("wb") as out:
            while chunk := response.read(1 << 20):
                out.write(chunk)

    def update(self, data: Mapping[str, Any], method: str) -> None:
        self._call(PATHS["update"].format(challenge=self.challenge), method, data)


def handle(
    message: Mapping[str, Any],
    api: Api,
    folder: Path,
    phases: Mapping[str, Mapping[str, str]] | None = None,
) -> str | None:
    """Evaluate the submission of one queue message; the status sent, or None for none."""
    body = message.get("body")
    if not body:
        return None
    submission_pk, phase_pk = int(body["submission_pk"]), int(body["phase_pk"])
    submission = api.submission(submission_pk)
    if submission.get("status") in DONE:
        api.delete(str(message.get("receipt_handle", "")))
        return None
    if submission.get("status") == "running":
        return None  # another worker has it
    api.update({"submission": submission_pk, "submission_status": "RUNNING"}, "PATCH")
    url = str(submission["input_file"])
    path = folder / f"submission_{submission_pk}" / Path(urllib.parse.urlparse(url).path).name
    path.parent.mkdir(parents=True, exist_ok=True)
    api.download(url, path)
    codename = str(api.phase(phase_pk)["codename"])
    data: dict[str, Any] = {
        "challenge_phase": phase_pk,
        "submission": submission_pk,
        "metadata": "",
    }
    try:
        output = remote_evaluate(path, codename, phases=phases)
        data |= {
            "submission_status": "FINISHED",
            "stdout": "scored\n",
            "stderr": "",
            "result": json.dumps(remote_result(output, codename, phases)),
        }
    except (SubmissionError, HostVisibleError) as exc:  # both messages are safe for participants
        data |= {"submission_status": "FAILED", "stdout": "", "stderr": f"{exc}\n"}
    api.update(data, "PUT")
    api.delete(str(message.get("receipt_handle", "")))
    return str(data["submission_status"])


#: What the worker needs from its environment (README, step 7), in the order `HttpApi` takes
#: the first four; `SCORER_SOLUTION` is the solution file it scores against.
SETTINGS = ("API_SERVER", "AUTH_TOKEN", "QUEUE_NAME", "CHALLENGE_PK", SOLUTION)


def settings(environ: Mapping[str, str]) -> list[str]:
    """The worker's settings from `environ`, checked before it polls: a `UsageError` naming
    every one that is missing or empty, and a solution file that is not there."""
    missing = [name for name in SETTINGS if not environ.get(name, "").strip()]
    if missing:
        raise UsageError(
            "the worker is not configured: set "
            + ", ".join(missing)
            + " (README, step 7: API_SERVER is https://eval.ai, AUTH_TOKEN your host token, "
            "QUEUE_NAME and CHALLENGE_PK from the challenge's Manage tab, SCORER_SOLUTION the "
            "solution file)"
        )
    values = [environ[name].strip() for name in SETTINGS]
    if not Path(values[-1]).is_file():
        raise UsageError(f"{SOLUTION}={values[-1]}: no such file; expected the solution file")
    rules = environ.get(COMPETITION, "").strip()
    if rules and not Path(rules).is_file():
        raise UsageError(f"{COMPETITION}={rules}: no such file; expected the competition file")
    return values


def main(poll_seconds: float = 60.0, once: bool = False) -> None:
    """Poll the queue forever (or once), as the environment configures (`SETTINGS`, and
    `SAVE_DIR`); a worker started without its settings says which are missing and exits 2."""
    try:
        server, token, queue, challenge, _ = settings(os.environ)
    except UsageError as exc:  # the organiser's setup: exit 2, as the CLI's usage errors
        print(f"Error: {exc}", file=sys.stderr)
        raise SystemExit(2) from None
    api = HttpApi(server, token, queue, challenge)
    folder = Path(os.environ.get("SAVE_DIR", "submissions"))
    log = host_log()
    while True:
        try:
            status = handle(api.message(), api, folder)
            if status is not None:
                log.info("submission %s", status.lower())
        except Exception:
            log.exception("the worker failed on a message; it goes on")
        if once:
            return
        time.sleep(poll_seconds)
