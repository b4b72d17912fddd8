"""The server's ASGI app in-process (httpx's ASGI transport, no scoring loop): the one error
shape of every refusal, the multipart reader's edges, a bug answered as a bare 500, the names
an upload keeps. The real server on a port is `test_serve_live.py`'s."""

from __future__ import annotations

import asyncio
import json
from collections import Counter
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest
from support.serve_app import ask, browse
from support.serve_live import SAMPLE, SOLUTION

from scorer.serve import pages, settings, site, teams
from scorer.serve.app import HEADERS, build
from scorer.serve.server import Server
from scorer.serve.sqlcore import StoreUnavailable
from scorer.serve.uploads import stored_name, suffix_of


@pytest.fixture
def made(tmp_path: Path) -> tuple[Server, str]:
    folder = tmp_path / "srv"
    site.init(folder, SOLUTION, settings=site.Settings(title="t"))
    token = teams.add_team(folder, "alpha")
    return Server(folder, max_upload=SAMPLE.stat().st_size + 10), token


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def test_unknown_routes_and_methods_answer_in_the_one_error_shape(made: tuple[Server, str]) -> None:
    server, _ = made
    missing = ask(server, "GET", "/api/v1/nothing")
    wrong = ask(server, "DELETE", "/api/v1/competition")
    assert (missing.status_code, missing.json()["error"]["code"]) == (404, "not_found")
    assert (wrong.status_code, wrong.json()["error"]["code"]) == (405, "method_not_allowed")
    assert missing.json()["status"] == "error"
    for name, value in HEADERS.items():
        assert missing.headers[name] == value


def test_a_bug_is_a_bare_500_and_the_organiser_s_stderr_has_it(
    made: tuple[Server, str], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    server, _ = made

    def broken() -> dict[str, Any]:
        raise RuntimeError("/srv/secret/path exploded")

    monkeypatch.setattr(server, "competition_dict", broken)
    answer = ask(server, "GET", "/api/v1/competition")
    assert answer.status_code == 500
    assert answer.json()["error"] == {
        "code": "internal_error",
        "message": "the server failed; the organiser has the details",
    }
    assert "secret" not in answer.text and "exploded" in capsys.readouterr().err


def test_a_database_away_is_a_503_to_try_again_and_names_no_address(
    made: tuple[Server, str], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    server, _ = made

    def away() -> dict[str, Any]:
        raise StoreUnavailable("the database cannot be reached: 10.0.0.5:5432 refused")

    monkeypatch.setattr(server, "competition_dict", away)
    answer = ask(server, "GET", "/api/v1/competition")
    assert (answer.status_code, answer.headers["retry-after"]) == (503, "5")
    assert answer.json()["error"] == {
        "code": "unavailable",
        "message": "the server's database is away; try again soon",
    }
    assert "10.0.0.5" not in answer.text and "10.0.0.5" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("body", "code"),
    [
        (
            b'--b\r\nContent-Disposition: form-data; name="file"; filename="a.csv"\r\n\r\nx'
            b'\r\n--b\r\nContent-Disposition: form-data; name="file"; filename="b.csv"\r\n\r\n'
            b"y\r\n--b--\r\n",
            "two_files",
        ),
        (
            b'--b\r\nContent-Disposition: form-data; name="token"\r\n\r\n'
            + b"t" * 2000
            + b"\r\n--b--\r\n",
            "field_too_long",
        ),
        (b'--b\r\nContent-Disposition: form-data; name="note"\r\n\r\nhi\r\n--b--\r\n', "no_file"),
    ],
)
def test_a_multipart_body_that_is_not_one_file_is_refused_and_nothing_kept(
    made: tuple[Server, str], body: bytes, code: str
) -> None:
    server, token = made
    headers = {**bearer(token), "Content-Type": "multipart/form-data; boundary=b"}
    answer = ask(server, "POST", "/api/v1/submissions", content=body, headers=headers)
    assert (answer.status_code, answer.json()["error"]["code"]) == (400, code)
    assert list((server.folder / "uploads").iterdir()) == []
    assert server.store.entries() == []


def test_a_body_over_the_cap_without_a_length_is_refused_while_it_streams(
    made: tuple[Server, str],
) -> None:
    server, token = made
    data = SAMPLE.read_bytes() + b"x" * 100

    async def chunks() -> Any:
        head = b'--b\r\nContent-Disposition: form-data; name="file"; filename="a.csv"\r\n\r\n'
        yield head
        for start in range(0, len(data), 65536):
            yield data[start : start + 65536]
        yield b"\r\n--b--\r\n"

    headers = {**bearer(token), "Content-Type": "multipart/form-data; boundary=b"}
    answer = ask(server, "POST", "/api/v1/submissions", content=chunks(), headers=headers)
    assert (answer.status_code, answer.json()["error"]["code"]) == (413, "too_large")
    assert list((server.folder / "uploads").iterdir()) == []
    refused = [(r["team"], r["reason"], r["count"]) for r in server.store.refusals()]
    assert refused == [("alpha", "too_large", 1)]


def test_an_accepted_upload_is_on_disk_under_its_own_name_with_its_hash(
    made: tuple[Server, str],
) -> None:
    server, token = made
    files = {"file": ("../../etc/my run.csv", SAMPLE.read_bytes())}
    answer = ask(server, "POST", "/api/v1/submissions", files=files, headers=bearer(token))
    assert answer.status_code == 202
    (entry,) = server.store.entries()
    stored = server.folder / entry.path
    assert stored.name == "submission.csv" and stored.parent.parent == server.folder / "uploads"
    assert stored.read_bytes() == SAMPLE.read_bytes()
    assert entry.size == SAMPLE.stat().st_size and entry.name == f"submissions/{entry.id}.csv"
    assert oct(stored.stat().st_mode & 0o777) == "0o600"


@pytest.mark.parametrize(
    ("sent", "kept", "suffix"),
    [
        ("run_3.csv", "run_3.csv", ".csv"),
        ("run.CSV.GZ", "run.CSV.GZ", ".csv.gz"),
        ("C:\\Users\\me\\sub.parquet", "sub.parquet", ".parquet"),
        (".hidden.csv", "submission.csv", ".csv"),
        ("<b>x</b>.zip", "submission.zip", ".zip"),
        ("no name", "submission", ""),
        ("", "submission", ""),
    ],
)
def test_an_upload_keeps_a_plain_name_and_a_known_suffix(sent: str, kept: str, suffix: str) -> None:
    assert (stored_name(sent), suffix_of(stored_name(sent))) == (kept, suffix)


def test_the_competition_route_gives_the_spec_scorer_submit_checks_with(
    made: tuple[Server, str],
) -> None:
    server, _ = made
    about = ask(server, "GET", "/api/v1/competition").json()
    assert about["spec"] == json.loads(json.dumps(server.competition.to_dict()))
    assert about["limits"]["max_upload_bytes"] == SAMPLE.stat().st_size + 10


def test_a_body_whole_only_after_the_end_is_refused_kept_nowhere_counted_nowhere(
    made: tuple[Server, str],
) -> None:
    """The end is judged when the body is whole, in the transaction that would accept it:
    a slow body begun before the end and finished after it is not a submission."""
    server, token = made
    end = datetime.now(UTC) + timedelta(hours=1)
    settings.change(server.store, server.base, {"end": end.isoformat()})  # `serve settings`
    server.store.clock = lambda: end  # the body's last byte arrives at the end
    files = {"file": ("a.csv", SAMPLE.read_bytes())}
    answer = ask(server, "POST", "/api/v1/submissions", files=files, headers=bearer(token))
    assert (answer.status_code, answer.json()["error"]["code"]) == (403, "competition_ended")
    assert list((server.folder / "uploads").iterdir()) == []
    assert server.store.entries() == []
    assert server.store.quota(1, end).remaining_today == server.settings.daily_limit
    assert [r["reason"] for r in server.store.refusals()] == ["competition_ended"]


@pytest.mark.parametrize("ident", ["²", "٣", str(1 << 63), "9" * 40, "-1", "1e3"])
def test_an_id_that_is_not_one_is_not_found(made: tuple[Server, str], ident: str) -> None:
    server, token = made
    answer = ask(server, "GET", f"/api/v1/submissions/{ident}", headers=bearer(token))
    assert (answer.status_code, answer.json()["error"]["code"]) == (404, "not_found")


def test_a_file_without_a_name_is_refused_and_counted_toward_no_limit(
    made: tuple[Server, str],
) -> None:
    server, token = made
    body = b'--b\r\nContent-Disposition: form-data; name="file"\r\n\r\nx\r\n--b--\r\n'
    headers = {**bearer(token), "Content-Type": "multipart/form-data; boundary=b"}
    answer = ask(server, "POST", "/api/v1/submissions", content=body, headers=headers)
    assert (answer.status_code, answer.json()["error"]["code"]) == (400, "no_file_name")
    assert server.store.entries() == [] and list((server.folder / "uploads").iterdir()) == []
    assert server.store.quota(1, datetime.now(UTC)).remaining_today == 5


def test_a_length_given_twice_is_refused(made: tuple[Server, str]) -> None:
    server, _ = made
    headers = {"Content-Length": "5", "Transfer-Encoding": "chunked"}
    app = build(server.folder, server, start=False)
    sent: list[dict[str, Any]] = []

    async def go() -> None:
        scope = {
            "type": "http",
            "method": "POST",
            "path": "/api/v1/submissions",
            "headers": [(k.lower().encode(), v.encode()) for k, v in headers.items()],
            "query_string": b"",
        }

        async def receive() -> dict[str, Any]:
            return {"type": "http.request", "body": b"", "more_body": False}

        async def send(message: dict[str, Any]) -> None:
            sent.append(message)

        await app(scope, receive, send)

    asyncio.run(go())
    assert sent[0]["status"] == 400
    assert json.loads(sent[1]["body"])["error"]["code"] == "bad_request"


def test_a_pasted_token_is_trimmed_and_logs_in_with_a_strict_cookie(
    made: tuple[Server, str],
) -> None:
    server, token = made

    async def steps(page: httpx.AsyncClient) -> tuple[httpx.Response, httpx.Response]:
        return await page.post("/login", data={"token": f"  {token}\r\n"}), await page.get("/team")

    login, team = browse(server, steps)
    assert (login.status_code, login.headers["location"]) == (303, "/team")
    cookie = login.headers["set-cookie"]
    assert {"HttpOnly", "SameSite=Strict", "Path=/", "Max-Age=43200"} <= set(cookie.split("; "))
    assert "Secure" not in cookie  # plain http://: a browser would not send it back
    assert team.status_code == 200 and "Team <bdi>alpha</bdi>" in team.text
    secure, _ = browse(server, steps, "https://test")  # HTTPS, or a proxy's X-Forwarded-Proto
    assert "Secure" in secure.headers["set-cookie"].split("; ")


def test_a_wrong_revoked_or_replaced_token_is_told_so_in_plain_words(
    made: tuple[Server, str],
) -> None:
    server, token = made
    other = teams.add_team(server.folder, "beta")

    async def log_in(page: httpx.AsyncClient, given: str) -> httpx.Response:
        return await page.post("/login", data={"token": given})

    async def steps(page: httpx.AsyncClient) -> list[httpx.Response]:
        wrong = await log_in(page, "x" * 43)
        assert (await log_in(page, token)).status_code == 303
        before = await page.get("/team")
        with server.store._write() as db:  # the token replaced (`serve team token`)
            server.store._run(db, "UPDATE teams SET token_sha256 = 'new' WHERE name = 'alpha'")
        after = await page.get("/team")
        replaced = await log_in(page, token)
        assert (await log_in(page, other)).status_code == 303
        server.store.revoke_team("beta", datetime.now(UTC))
        ended = await page.get("/team")
        revoked = await log_in(page, other)
        return [wrong, before, after, replaced, ended, revoked]

    wrong, before, after, replaced, ended, revoked = browse(server, steps)
    assert wrong.status_code == replaced.status_code == 401
    assert (
        "This token is not a team&#x27;s token." in wrong.text and 'action="/login"' in wrong.text
    )
    assert "This token is not a team&#x27;s token." in replaced.text
    assert before.status_code == 200 and "alpha" in before.text
    assert (after.status_code, after.headers["location"]) == (303, "/login")  # ended at once
    assert (ended.status_code, ended.headers["location"]) == (303, "/login")
    assert revoked.status_code == 403
    assert "This team&#x27;s token was revoked; ask the organiser." in revoked.text


@pytest.mark.parametrize(
    "headers",
    [
        {"Origin": "http://evil.example"},
        {"Origin": "null"},
        {"Origin": "https://test"},  # another scheme is another origin
        {"Origin": "", "Referer": "http://evil.example/page"},
    ],
    ids=["another-site", "null", "https", "referer-of-another-site"],
)
def test_a_form_posted_from_another_origin_is_refused(
    made: tuple[Server, str], headers: dict[str, str]
) -> None:
    server, token = made
    sample = {"file": ("a.csv", SAMPLE.read_bytes())}

    async def steps(page: httpx.AsyncClient) -> list[httpx.Response]:
        assert (await page.post("/login", data={"token": token})).status_code == 303
        forged = {k: v for k, v in headers.items() if v}
        if "Origin" not in forged:
            page.headers.pop("Origin")
        return [
            await page.post("/login", data={"token": token}, headers=forged),
            await page.post("/upload", files=sample, headers=forged),
            await page.post("/team/picks", data={"ids": "1"}, headers=forged),
            await page.post("/logout", headers=forged),
            await page.get("/team"),  # still logged in: the logout was refused
        ]

    *refused, team = browse(server, steps)
    for answer in refused:
        assert answer.status_code == 403
        assert "not sent from this server&#x27;s own page" in answer.text
    assert team.status_code == 200 and server.store.entries() == []


def test_a_referer_of_the_server_s_own_stands_for_a_missing_origin(
    made: tuple[Server, str],
) -> None:
    server, token = made

    async def steps(page: httpx.AsyncClient) -> list[httpx.Response]:
        page.headers.pop("Origin")
        bare = await page.post("/login", data={"token": token})
        own = {"Referer": "http://test/login"}
        return [bare, await page.post("/login", data={"token": token}, headers=own)]

    bare, own = browse(server, steps)
    assert bare.status_code == 403 and own.status_code == 303


def test_the_page_posts_answer_with_a_303_to_a_get_page(made: tuple[Server, str]) -> None:
    server, token = made
    files = {"file": ("my run.csv", SAMPLE.read_bytes())}

    async def steps(page: httpx.AsyncClient) -> list[httpx.Response]:
        anonymous = [await page.get("/team"), await page.post("/upload", files=files)]
        await page.post("/login", data={"token": token})
        sent = await page.post("/upload", files=files, data={"description": "<i>first</i>"})
        picked = await page.post("/team/picks", data={})
        out = await page.post("/logout")
        after = await page.get("/team")
        return [*anonymous, sent, picked, out, after]

    server_wait = pages.WAIT
    pages.WAIT = 0.0  # no worker here: the submission's page shows it queued at once
    try:
        team, upload, sent, picked, out, after = browse(server, steps)
    finally:
        pages.WAIT = server_wait
    assert (team.status_code, team.headers["location"]) == (303, "/login")
    assert upload.status_code == 401 and server.store.entries()[0].filename == "my run.csv"
    assert (sent.status_code, sent.headers["location"]) == (303, "/team/submissions/1")
    assert (picked.status_code, picked.headers["location"]) == (303, "/team")
    assert (out.status_code, out.headers["location"]) == (303, "/login")
    assert "Max-Age=0" in out.headers["set-cookie"]
    assert (after.status_code, after.headers["location"]) == (303, "/login")
    (entry,) = server.store.entries()
    assert (entry.filename, entry.description) == ("my run.csv", "<i>first</i>")


def test_the_fields_of_a_body_are_capped_in_all_on_every_route(made: tuple[Server, str]) -> None:
    """No number of fields or headers, however small each, grows the server's memory: past
    64 KB in all the body is refused, whoever sends it."""
    server, token = made
    part = b'--b\r\nContent-Disposition: form-data; name="f%d"\r\n\r\n' + b"v" * 1000 + b"\r\n"
    body = b"".join(part % n for n in range(100)) + b"--b--\r\n"
    form = {"Content-Type": "multipart/form-data; boundary=b"}

    async def steps(page: httpx.AsyncClient) -> list[httpx.Response]:
        urlencoded = {"Content-Type": "application/x-www-form-urlencoded"}
        big = await page.post("/login", content=b"token=" + b"t" * (1 << 20), headers=urlencoded)
        await page.post("/login", data={"token": token})
        return [big, await page.post("/upload", content=body, headers=form)]

    big, upload = browse(server, steps)
    assert big.status_code == 413
    assert upload.status_code == 413 and "fields are over 65,536 bytes" in upload.text
    answer = ask(server, "POST", "/api/v1/submissions", content=body, headers=form | bearer(token))
    assert (answer.status_code, answer.json()["error"]["code"]) == (413, "fields_too_large")
    picks = ask(server, "PUT", "/api/v1/picks", content=b"[" * (1 << 20), headers=bearer(token))
    assert (picks.status_code, picks.json()["error"]["code"]) == (413, "too_large")
    assert list((server.folder / "uploads").iterdir()) == []


def test_a_body_too_large_through_the_page_is_refused_and_counted_as_through_the_api(
    made: tuple[Server, str],
) -> None:
    """The page's team is its session's: a body past the cap is refused before it is read,
    and counted among that team's refusals, as the API's is."""
    server, token = made
    body = (
        b'--b\r\nContent-Disposition: form-data; name="file"; filename="a.csv"\r\n\r\n'
        + b"x" * 100
        + b"\r\n--b--\r\n"
    )
    forged = {"Content-Type": "multipart/form-data; boundary=b", "Content-Length": str(1 << 40)}

    async def steps(page: httpx.AsyncClient) -> httpx.Response:
        await page.post("/login", data={"token": token})
        return await page.post("/upload", content=body, headers=forged)

    page = browse(server, steps)
    assert page.status_code == 413 and "the server&#x27;s cap" in page.text
    api = ask(server, "POST", "/api/v1/submissions", content=body, headers=forged | bearer(token))
    assert (api.status_code, api.json()["error"]["code"]) == (413, "too_large")
    refused = Counter[tuple[str, str]]()
    for row in server.store.refusals():  # one row a minute: the two may fall on two minutes
        refused[row["team"], row["reason"]] += row["count"]
    assert refused == {("alpha", "too_large"): 2}
    assert list((server.folder / "uploads").iterdir()) == []


@pytest.mark.parametrize(
    ("words", "code"),
    [
        ("x" * 201, "description_too_long"),
        ("é" * 201, "description_too_long"),  # characters, not bytes
        ("red\x1b[31m", "bad_description"),
        ("two\nlines", "bad_description"),
        ("abc\u202etxt.exe", "bad_description"),
    ],
    ids=["long", "long-accents", "escape", "newline", "bidi-override"],
)
def test_a_description_too_long_or_with_control_characters_is_refused_and_counted_nowhere(
    made: tuple[Server, str], words: str, code: str
) -> None:
    server, token = made
    files = {"file": ("a.csv", SAMPLE.read_bytes())}
    data = {"description": words}
    answer = ask(
        server, "POST", "/api/v1/submissions", files=files, data=data, headers=bearer(token)
    )
    assert (answer.status_code, answer.json()["error"]["code"]) == (400, code)
    assert server.store.entries() == [] and server.store.refusals() == []
    assert list((server.folder / "uploads").iterdir()) == []


def test_a_description_and_the_name_sent_are_kept_and_given_back_as_data(
    made: tuple[Server, str],
) -> None:
    server, token = made
    files = {"file": ("<b>run<i>\u202e.csv", SAMPLE.read_bytes())}
    words = "  " + "é" * 199 + "&  "  # 200 characters once trimmed
    data = {"description": words}
    sent = ask(server, "POST", "/api/v1/submissions", files=files, data=data, headers=bearer(token))
    assert sent.status_code == 202, sent.text
    listed = ask(server, "GET", "/api/v1/submissions", headers=bearer(token)).json()
    one = ask(server, "GET", "/api/v1/submissions/1", headers=bearer(token)).json()
    for shown in (listed["submissions"][0], one):
        assert (shown["filename"], shown["description"]) == (
            "<b>run<i>\\u202e.csv",  # an invisible character written as its escape
            words.strip(),
        )

    async def steps(page: httpx.AsyncClient) -> httpx.Response:
        await page.post("/login", data={"token": token})
        return await page.get("/team")

    team = browse(server, steps)
    assert "&lt;b&gt;run&lt;i&gt;\\u202e.csv" in team.text and "<b>run" not in team.text
    assert "é" * 199 + "&amp;" in team.text
