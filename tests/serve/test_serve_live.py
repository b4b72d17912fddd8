"""`scorer serve run` as it runs for real: a uvicorn subprocess on a loopback port, driven by
httpx. Each item of the contract (issue 24): the routes and their errors, limits that do not
race, freeze, end, revoke, nothing lost after kill -9, a clean stop on SIGINT and SIGTERM,
the export rescored to the bit, `scorer submit`, and no private figure anywhere before the
reveal."""

from __future__ import annotations

import csv
import json
import re
import signal
import socket
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx
import pytest
from support.postgres_cluster import new_database
from support.serve_live import BROKEN, DATA, POPULAR, SAMPLE, SOLUTION, Live, scorer, until

from scorer.api import score
from scorer.leaderboard.store import Store
from scorer.serve import site
from scorer.serve.client import Client, ServerRefused
from scorer.serve.tokens import digest, new_token

#: A file rejected with a problem of each kind, listed in a long report.
SEVERAL = DATA / "broken" / "several_problems.csv"

PUBLIC = {SAMPLE: score(SAMPLE, SOLUTION).public, POPULAR: score(POPULAR, SOLUTION).public}


@pytest.fixture
def live(tmp_path: Path) -> Iterator[Live]:
    server = Live(tmp_path / "srv").start()
    yield server
    server.close()


def later(seconds: float) -> datetime:
    """A moment far enough ahead for a server to be made and started before it."""
    return datetime.now(UTC) + timedelta(seconds=seconds)


def wait_until(moment: datetime) -> None:
    time.sleep(max(0.0, (moment - datetime.now(UTC)).total_seconds()) + 0.2)


def test_an_upload_is_scored_and_only_its_team_sees_it(live: Live) -> None:
    answer = live.upload("alpha", SAMPLE)
    assert answer.status_code == 202
    body = answer.json()
    assert body["status"] == "queued" and body["remaining_today"] == 4
    assert body["next_slot"].endswith("Z")
    done = live.verdict("alpha", body["id"])
    assert done["status"] == "scored"
    assert done["public_score"] == PUBLIC[SAMPLE]  # the scorer's own figure, to the bit
    assert done["remaining_today"] == 4
    with live.client("alpha") as alpha:
        mine = alpha.get("/submissions").json()
    assert [s["id"] for s in mine["submissions"]] == [body["id"]]
    with live.client("beta") as beta:
        theirs = beta.get(f"/submissions/{body['id']}")
        assert theirs.status_code == 404 and theirs.json()["error"]["code"] == "not_found"
        assert beta.get("/submissions").json()["submissions"] == []


def test_a_rejected_upload_carries_the_report_scorer_validate_gives(live: Live) -> None:
    done = live.scored("alpha", BROKEN)
    local = scorer("validate", BROKEN, "--targets", "data/targets.csv", "--json", check=False)
    assert local.returncode == 1
    assert done["status"] == "rejected"
    assert done["report"] == json.loads(local.stdout)["error"]
    assert "public_score" not in done
    # a rejection counts toward the rejected limit, not the day
    assert done["remaining_today"] == 5


def test_no_token_a_wrong_one_or_a_revoked_one_opens_nothing(live: Live) -> None:
    with live.client() as anonymous:
        refused = anonymous.post("/submissions", files={"file": ("a.csv", b"x")})
        assert refused.status_code == 401
        assert refused.headers["www-authenticate"] == "Bearer"
        assert refused.json()["error"]["code"] == "unauthorized"
        assert anonymous.get("/submissions").status_code == 401
    wrong = httpx.get(
        f"{live.url}/api/v1/submissions", headers={"Authorization": "Bearer " + "x" * 43}
    )
    assert wrong.status_code == 401
    with live.client("alpha") as alpha:
        assert alpha.get("/admin/submissions").status_code == 401  # a team is no organiser
    scorer("serve", "team", "revoke", live.folder, "alpha")
    assert live.upload("alpha", SAMPLE).status_code == 401
    assert live.upload("beta", SAMPLE).status_code == 202


def test_over_the_daily_limit_is_429_with_the_next_slot(tmp_path: Path) -> None:
    live = Live(tmp_path / "srv", "--daily-limit", "2").start()
    try:
        for _ in range(2):
            assert live.upload("alpha", SAMPLE).status_code == 202
        refused = live.upload("alpha", SAMPLE)
        assert refused.status_code == 429
        error = refused.json()["error"]
        tomorrow = (datetime.now(UTC) + timedelta(days=1)).date().isoformat()
        assert error["code"] == "limit_reached" and error["limit"] == "daily_limit"
        assert error["next_slot"] == f"{tomorrow}T00:00:00Z"
        assert live.upload("beta", SAMPLE).status_code == 202  # a limit is a team's
    finally:
        live.close()


def test_fifty_concurrent_uploads_from_one_team_against_a_limit_of_five(live: Live) -> None:
    data = SAMPLE.read_bytes()

    def upload(n: int) -> int:
        with live.client("alpha") as client:
            answer = client.post("/submissions", files={"file": (f"{n}.csv", data)})
            return answer.status_code

    with ThreadPoolExecutor(max_workers=50) as pool:
        codes = list(pool.map(upload, range(50)))
    assert sorted(set(codes)) == [202, 429]
    assert codes.count(202) == 5
    live.settle()
    with live.client("admin") as admin:
        rows = admin.get("/admin/submissions").json()["submissions"]
        logged = admin.get("/admin/audit").json()
    assert [r["status"] for r in rows] == ["scored"] * 5
    assert sum(1 for a in logged["audit"] if a["event"] == "upload") == 5
    # the refusals are counted, a row a team, reason and minute, not an event each
    refused = [r for r in logged["refusals"] if r["reason"] == "daily_limit"]
    assert {r["team"] for r in refused} == {"alpha"} and sum(r["count"] for r in refused) == 45
    assert len(refused) <= 2  # the 50 may straddle a minute
    uploads = [p for p in (live.folder / "uploads").iterdir()]
    assert len(uploads) == 5  # the refused ones left no file


def test_too_large_is_413_before_the_body_is_read(tmp_path: Path) -> None:
    live = Live(tmp_path / "srv").start("--max-upload", "1000")
    try:
        # a Content-Length over the cap: answered from the headers, the body never sent
        with socket.create_connection(("127.0.0.1", live.port)) as raw:
            raw.sendall(
                b"POST /api/v1/submissions HTTP/1.1\r\nHost: x\r\n"
                + f"Authorization: Bearer {live.tokens['alpha']}\r\n".encode()
                + b"Content-Type: multipart/form-data; boundary=b\r\n"
                + b"Content-Length: 10000000000\r\n\r\n"
            )
            raw.settimeout(10)
            head = raw.recv(4096).decode()
        assert head.startswith("HTTP/1.1 413"), head
        # a body that grows past the cap (no length given): refused, nothing kept
        refused = live.upload("alpha", SAMPLE)
        assert refused.status_code == 413
        assert refused.json()["error"]["code"] == "too_large"
        assert list((live.folder / "uploads").iterdir()) == []
    finally:
        live.close()


def test_malformed_uploads_are_400_with_their_code(live: Live) -> None:
    with live.client("alpha") as alpha:
        not_multipart = alpha.post("/submissions", content=b"user_id,edition_id,rank\n")
        no_file = alpha.post("/submissions", files={"other": ("a.csv", b"x")})
        bad_picks = alpha.put("/picks", content=b"[1")
        not_ours = alpha.put("/picks", json={"ids": [999]})
    assert (not_multipart.status_code, not_multipart.json()["error"]["code"]) == (
        400,
        "not_multipart",
    )
    assert no_file.json()["error"]["code"] == "no_file"
    assert bad_picks.json()["error"]["code"] == "bad_picks"
    assert not_ours.json()["error"]["code"] == "not_yours"
    assert list((live.folder / "uploads").iterdir()) == []


def test_the_competition_its_targets_and_the_final_board_after_the_reveal(live: Live) -> None:
    with live.client() as anonymous:
        about = anonymous.get("/competition").json()
        targets = anonymous.get("/targets").text.splitlines()
        final = anonymous.get("/leaderboard", params={"phase": "final"})
    assert {k: about[k] for k in ("name", "metric", "k", "picks", "freeze", "end", "phase")} == {
        "name": "lost items",
        "metric": "ndcg@20",
        "k": 20,
        "picks": 2,
        "freeze": None,
        "end": None,
        "phase": "public",
    }
    assert about["limits"]["daily"] == 5 and about["limits"]["daily_reset"] == "00:00 UTC"
    users = targets[1:]
    assert targets[0] == "user_id" and users == sorted(users, key=int)
    assert final.status_code == 403 and final.json()["error"]["code"] == "not_revealed"
    live.scored("alpha", SAMPLE)
    with live.client("admin") as admin:
        assert admin.post("/reveal").status_code == 404  # admin routes live under /admin
        revealed = admin.post("/admin/reveal").json()["revealed_at"]
    live.settle()
    with live.client() as anonymous:
        board = anonymous.get("/leaderboard", params={"phase": "final"}).json()
        assert anonymous.get("/competition").json()["phase"] == "final"
    assert revealed and board["phase"] == "final"
    assert board["private"]["rows"][0]["score"] == score(SAMPLE, SOLUTION).private


def test_uploads_after_the_end_are_403(tmp_path: Path) -> None:
    end = later(15)
    live = Live(tmp_path / "srv", "--end", end.isoformat()).start()
    try:
        assert live.upload("alpha", SAMPLE).status_code == 202
        wait_until(end)
        ended = live.upload("alpha", SAMPLE)
        assert ended.status_code == 403
        assert ended.json()["error"]["code"] == "competition_ended"
    finally:
        live.close()


def test_after_the_freeze_the_public_board_stops_but_a_team_sees_its_own(tmp_path: Path) -> None:
    freeze = later(15)
    live = Live(tmp_path / "srv", "--freeze", freeze.isoformat()).start()
    try:
        live.scored("alpha", POPULAR)
        live.settle()
        wait_until(freeze)
        after = live.scored("alpha", SAMPLE)  # a better score, after the freeze
        live.settle()
        assert after["public_score"] == PUBLIC[SAMPLE]
        with live.client() as anonymous:
            rows = anonymous.get("/leaderboard").json()["public"]["rows"]
            page = httpx.get(live.url).text
        assert [r["score"] for r in rows] == [PUBLIC[POPULAR]]
        assert "frozen" in page
    finally:
        live.close()


def test_kill_9_while_scoring_loses_nothing_and_counts_nothing_twice(live: Live) -> None:
    ids = [live.upload("alpha", SAMPLE).json()["id"], live.upload("beta", POPULAR).json()["id"]]
    with live.client("alpha") as alpha:
        deadline = time.monotonic() + 30
        while (status := alpha.get(f"/submissions/{ids[0]}").json()["status"]) == "queued":
            assert time.monotonic() < deadline
            time.sleep(0.01)
    live.stop(signal.SIGKILL)
    assert status == "scoring"  # killed while its worker judged it (a worker starts in ~1 s)
    live.start()
    assert live.verdict("alpha", ids[0])["status"] == "scored"
    assert live.verdict("beta", ids[1])["status"] == "scored"
    live.settle()
    with live.client("admin") as admin:
        audit = admin.get("/admin/audit").json()["audit"]
    verdicts = [a["id"] for a in audit if a["event"] == "verdict"]
    assert sorted(verdicts) == sorted(ids)  # each written exactly once
    with live.client("alpha") as alpha:
        assert alpha.get("/submissions").json()["remaining_today"] == 4


def test_kill_9_mid_upload_keeps_no_half_file_and_no_submission(live: Live) -> None:
    token = live.tokens["alpha"]
    with socket.create_connection(("127.0.0.1", live.port)) as raw:
        raw.sendall(
            b"POST /api/v1/submissions HTTP/1.1\r\nHost: x\r\n"
            + f"Authorization: Bearer {token}\r\n".encode()
            + b"Content-Type: multipart/form-data; boundary=b\r\nContent-Length: 100000\r\n\r\n"
            + b'--b\r\nContent-Disposition: form-data; name="file"; filename="a.csv"\r\n\r\n'
            + b"user_id,edition_id,rank\n" * 100
        )
        deadline = time.monotonic() + 10
        while not any((live.folder / "uploads").iterdir()):
            assert time.monotonic() < deadline
            time.sleep(0.01)
        live.stop(signal.SIGKILL)
    live.start()
    assert list((live.folder / "uploads").iterdir()) == []
    with live.client("alpha") as alpha:
        assert alpha.get("/submissions").json()["submissions"] == []
    assert live.scored("alpha", SAMPLE)["status"] == "scored"


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_sigint_and_sigterm_stop_the_server_cleanly(live: Live, sig: int) -> None:
    live.scored("alpha", SAMPLE)
    assert live.stop(sig) == 0
    log = live.log.read_text()
    assert "Traceback" not in log and "Finished server process" in log
    assert "Error" not in log


def test_the_export_rescored_gives_the_server_s_boards_to_the_bit(
    live: Live, tmp_path: Path
) -> None:
    said = {SAMPLE: 'the sample, "as is"', POPULAR: "=popular+1"}  # a comma, quotes, a formula
    for team, path in [("alpha", SAMPLE), ("alpha", POPULAR), ("beta", POPULAR), ("beta", BROKEN)]:
        live.scored(team, path, said.get(path, "") if team == "alpha" else "")
    with live.client("alpha") as alpha:
        mine = alpha.get("/submissions").json()["submissions"]
        popular = next(s["id"] for s in mine if s["public_score"] == PUBLIC[POPULAR])
        assert alpha.put("/picks", json={"ids": [popular]}).json()["ids"] == [popular]
    with live.client("admin") as admin:
        admin.post("/admin/reveal")
    live.settle()  # the final boards, published after the reveal and the picks
    board = httpx.get(f"{live.url}/api/v1/leaderboard", params={"phase": "final"}).json()
    alpha_row = next(r for r in board["private"]["rows"] if r["team"] == "alpha")
    assert alpha_row["pick"] == "selected" and board["stale"] is None
    out, db = tmp_path / "export", tmp_path / "rescored.sqlite"
    scorer("serve", "export", live.folder, "--out", out)
    scored = scorer(
        "leaderboard",
        "score",
        out / "manifest.csv",
        "--solution",
        SOLUTION,
        "--db",
        db,
        check=False,
    )
    assert scored.returncode == 0, scored.stderr  # the broken file is a rejection, not a failure
    with (out / "manifest.csv").open(newline="", encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    assert [r["description"] for r in rows if r["team"] == "alpha"] == [
        'the sample, "as is"',
        "'=popular+1",  # shown by a spreadsheet as text
    ]
    assert [r["description"] for r in rows if r["team"] == "beta"] == ["", ""]
    shown = scorer("leaderboard", "show", "--db", db, "--phase", "final", "--format", "json")
    rescored = json.loads(shown.stdout)
    for key in ("public", "private", "unranked", "confidence", "metric", "competition"):
        assert rescored[key] == board[key], key


def test_a_rejected_upload_kept_small_gives_its_report_again_in_the_export_s_rescore(
    live: Live, tmp_path: Path
) -> None:
    """Once judged, an upload is kept small (`sqlkept`); the export writes its bytes as sent,
    and `leaderboard score` on it gives the server's report, byte for byte but for the file's
    name: the server judged it under the name it was sent as, the export names it by its id."""
    done = live.scored("alpha", SEVERAL)
    assert done["status"] == "rejected"
    store = site.store_of(live.folder)
    until(lambda: store.kept(done["id"]) is not None)
    entry = store.entry(done["id"])
    assert entry is not None and not (live.folder / entry.path).exists()
    out, db = tmp_path / "export", tmp_path / "rescored.sqlite"
    scorer("serve", "export", live.folder, "--out", out)
    assert (out / entry.name).read_bytes() == SEVERAL.read_bytes()
    log = out / "manifest.csv"  # one file, whose users are missing: --force scores it all the same
    scorer("leaderboard", "score", log, "--solution", SOLUTION, "--db", db, "--force")
    with Store(db, create=False) as rescored:
        (record,) = rescored.records()
    server = json.dumps(done["report"], sort_keys=True, ensure_ascii=False)
    again = json.dumps(record.error, sort_keys=True, ensure_ascii=False)
    named = Path(entry.name).name  # "1.csv"
    assert f'"{named}' in again and SEVERAL.name not in again
    assert (
        again.replace(f'"{named}', f'"{SEVERAL.name}').replace(f" {named}:", f" {SEVERAL.name}:")
        == server
    )


def test_scorer_submit_checks_first_then_prints_the_verdict(live: Live) -> None:
    token = live.tokens["alpha"]
    scored = scorer("submit", SAMPLE, "--server", live.url, "--token", token)
    assert f"scored, public score {PUBLIC[SAMPLE]:.6f}" in scored.stdout
    local = scorer("validate", BROKEN, "--targets", "data/targets.csv", check=False)
    rejected = scorer("submit", BROKEN, "--server", live.url, "--token", token, check=False)
    assert (rejected.returncode, rejected.stderr) == (1, local.stderr)
    as_json = scorer("submit", POPULAR, "--server", live.url, "--token", token, "--json")
    assert json.loads(as_json.stdout)["submission"]["public_score"] == PUBLIC[POPULAR]
    wrong = scorer("submit", SAMPLE, "--server", live.url, "--token", "x" * 43, check=False)
    assert wrong.returncode == 2 and "401 unauthorized" in wrong.stderr
    with live.client("alpha") as alpha:  # the rejected file was never uploaded
        assert len(alpha.get("/submissions").json()["submissions"]) == 2


def test_scorer_submit_keeps_its_message_and_refuses_a_bad_one_before_sending(
    live: Live,
) -> None:
    token = live.tokens["beta"]
    sent = ["submit", SAMPLE, "--server", live.url, "--token", token]
    long = scorer(*sent, "--message", "x" * 201, check=False)
    escape = scorer(*sent, "--message", "red \x1b[31m", check=False)
    assert long.returncode == escape.returncode == 2
    assert "--message: the description has 201 characters; at most 200" in long.stderr
    assert "\x1b" not in escape.stderr and "--message: the description holds" in escape.stderr
    done = scorer(*sent, "--message", "  first try: the sample  ", "--json")
    assert json.loads(done.stdout)["submission"]["description"] == "first try: the sample"
    with live.client("beta") as beta:
        (only,) = beta.get("/submissions").json()["submissions"]
    assert (only["filename"], only["description"]) == (SAMPLE.name, "first try: the sample")


def test_scorer_submit_reports_the_answer_of_a_server_that_stops_reading_the_body(
    tmp_path: Path,
) -> None:
    """A server that answers 401 on the headers and closes, the body unread: the client's
    next block meets a broken pipe or a reset, and the answer already sent is reported."""
    body = json.dumps({"error": {"code": "unauthorized", "message": "no such token"}}).encode()
    answer = (
        b"HTTP/1.1 401 Unauthorized\r\nContent-Type: application/json\r\n"
        b"Content-Length: %d\r\nConnection: close\r\n\r\n%s" % (len(body), body)
    )
    big = tmp_path / "big.csv"
    big.write_bytes(b"0" * (64 << 20))  # far more than the sockets' buffers hold
    with socket.create_server(("127.0.0.1", 0)) as server:

        def answer_early() -> None:
            peer, _ = server.accept()
            with peer:
                head = b""
                while b"\r\n\r\n" not in head:
                    head += peer.recv(1 << 16)
                peer.sendall(answer)  # then closed with the body unread: a reset follows

        early = threading.Thread(target=answer_early)
        early.start()
        client = Client(f"http://127.0.0.1:{server.getsockname()[1]}", "x" * 43)
        with pytest.raises(ServerRefused) as refused:
            client.upload(big)
        early.join()
    assert (refused.value.status, refused.value.error["code"]) == (401, "unauthorized")


def test_the_admin_adds_teams_and_reads_every_submission_and_the_audit(live: Live) -> None:
    with live.client("admin") as admin:
        added = admin.post("/admin/teams", json={"name": "gamma"})
        taken = admin.post("/admin/teams", json={"name": "gamma"})
    assert added.status_code == 201 and taken.status_code == 409
    assert taken.json()["error"]["code"] == "team_taken"
    live.tokens["gamma"] = added.json()["token"]
    done = live.scored("gamma", SAMPLE)
    with live.client("admin") as admin:
        rows = admin.get("/admin/submissions").json()["submissions"]
        audit = admin.get("/admin/audit").json()["audit"]
    assert [(r["team"], r["status"]) for r in rows] == [("gamma", "scored")]
    upload = next(a for a in audit if a["event"] == "upload")
    assert (upload["team"], upload["sha256"], upload["size"]) == (
        "gamma",
        done["sha256"],
        SAMPLE.stat().st_size,
    )
    assert {"team_added", "upload", "verdict"} <= {a["event"] for a in audit}


def test_the_team_page_uploads_and_shows_the_verdict(live: Live) -> None:
    token = live.tokens["alpha"]
    own = {"Origin": live.url}  # as the server's own pages post
    with httpx.Client(base_url=live.url, timeout=120, headers=own) as page:
        home = page.get("/")
        login = page.post("/login", data={"token": token})
        sample = {"file": ("sample.csv", SAMPLE.read_bytes())}
        sent = page.post("/upload", files=sample, data={"description": "the sample"})
        verdict = page.get(sent.headers["location"])
        again = page.get(sent.headers["location"])  # a reload: nothing is uploaded
        semi = {"file": ("semi.csv", BROKEN.read_bytes())}
        broken = page.get(page.post("/upload", files=semi).headers["location"])
        team = page.get("/team")
    assert 'href="/team"' in home.text
    assert home.headers["content-security-policy"].startswith("default-src 'none'")
    assert home.headers["x-frame-options"] == "DENY"
    assert (login.status_code, sent.status_code) == (303, 303)
    assert sent.headers["location"] == "/team/submissions/1"
    for shown in (verdict, again):
        assert "Submission 1: scored" in shown.text and f"{PUBLIC[SAMPLE]:.6f}" in shown.text
    assert "Submission 2: rejected" in broken.text
    assert "semi.csv: line 1: the columns are separated by &#x27;;&#x27;" in broken.text
    # the team page: names, descriptions, statuses, scores and the saved report
    assert "resets at 00:00 UTC" not in team.text and 'action="/upload"' in team.text
    for words in ("sample.csv", "the sample", "semi.csv", "scored", "rejected", "[bad_delimiter]"):
        assert words in team.text
    with live.client("alpha") as alpha:
        assert len(alpha.get("/submissions").json()["submissions"]) == 2


def test_the_team_page_needs_a_session_and_keeps_no_byte_without_one(live: Live) -> None:
    own = {"Origin": live.url}
    with httpx.Client(base_url=live.url, timeout=120, headers=own) as page:
        wrong = page.post("/login", data={"token": "x" * 43})
        upload = page.post("/upload", files={"file": ("a.csv", SAMPLE.read_bytes())})
        team = page.get("/team")
    assert wrong.status_code == upload.status_code == 401
    assert "This token is not a team&#x27;s token." in wrong.text
    assert (team.status_code, team.headers["location"]) == (303, "/login")
    assert list((live.folder / "uploads").iterdir()) == []


def test_a_server_whose_store_is_postgresql_keeps_the_limits_and_its_queue(
    tmp_path: Path, postgres: str
) -> None:
    live = Live(tmp_path / "srv", "--db", new_database(postgres)).start()
    try:
        data = SAMPLE.read_bytes()

        def upload(n: int) -> int:
            with live.client("alpha") as client:
                return client.post("/submissions", files={"file": (f"{n}.csv", data)}).status_code

        with ThreadPoolExecutor(max_workers=20) as pool:
            codes = list(pool.map(upload, range(20)))
        assert codes.count(202) == 5 and codes.count(429) == 15
        live.stop(signal.SIGKILL)  # whatever was being scored: queued again at the start
        live.start()
        live.settle()
        with live.client("alpha") as alpha:
            mine = alpha.get("/submissions").json()
        assert [s["status"] for s in mine["submissions"]] == ["scored"] * 5
        assert {s["public_score"] for s in mine["submissions"]} == {PUBLIC[SAMPLE]}
        assert not (live.folder / "store.sqlite").exists()  # the store is the database
    finally:
        live.close()


#: A line of the server's log of submissions: its time, the team, the id, what happened.
LOGGED = re.compile(
    r'^scorer serve: (\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ) team "(.*)" submission (\d+): (.*)$',
    re.MULTILINE,
)


def log_lines(live: Live, count: int, timeout: float = 120) -> list[tuple[str, str, str, str]]:
    """The server's log lines of submissions, once there are `count` of them (a verdict's
    line follows the verdict the API shows)."""
    deadline = time.monotonic() + timeout
    while len(found := LOGGED.findall(live.log.read_text())) < count:
        assert time.monotonic() < deadline, live.log.read_text()
        time.sleep(0.1)
    return found


def test_the_log_has_one_line_per_upload_and_per_verdict_a_name_escaped(tmp_path: Path) -> None:
    live = Live(tmp_path / "srv")
    red = "\x1b[31mred"  # a store of a scorer that did not check names: a terminal's escape
    token = new_token()
    site.store_of(live.folder).add_team(red, digest(token))
    live.tokens[red] = token
    live.start()
    try:
        started = datetime.now(UTC).replace(microsecond=0)
        scored = live.scored(red, SAMPLE)
        rejected = live.scored("alpha", BROKEN)
        lines = log_lines(live, 4)
        assert live.stop() == 0
    finally:
        live.close()
    sizes = {path: f"{path.stat().st_size:,}" for path in (SAMPLE, BROKEN)}
    assert sorted(tuple(said) for _, *said in lines) == sorted(
        [
            ("\\x1b[31mred", str(scored["id"]), f"uploaded, {sizes[SAMPLE]} bytes"),
            ("\\x1b[31mred", str(scored["id"]), "scored"),
            ("alpha", str(rejected["id"]), f"uploaded, {sizes[BROKEN]} bytes"),
            ("alpha", str(rejected["id"]), "rejected"),
        ]
    )
    assert all(datetime.fromisoformat(when) >= started for when, *_ in lines)
    log = live.log.read_text()
    assert "\x1b" not in log and len(LOGGED.findall(log)) == 4  # none twice, after the stop too
