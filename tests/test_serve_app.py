"""The server's ASGI app in-process (httpx's ASGI transport, no scoring loop): the one error
shape of every refusal, the multipart reader's edges, a bug answered as a bare 500, the names
an upload keeps. The real server on a port is `test_serve_live.py`'s."""

from __future__ import annotations

import asyncio
import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import pytest
from serve_live import SAMPLE, SOLUTION

from scorer.serve import site
from scorer.serve.app import HEADERS, build
from scorer.serve.server import Server
from scorer.serve.sql import StoreUnavailable
from scorer.serve.uploads import stored_name, suffix_of


@pytest.fixture
def made(tmp_path: Path) -> tuple[Server, str]:
    folder = tmp_path / "srv"
    site.init(folder, SOLUTION, settings=site.Settings(title="t"))
    token = site.add_team(folder, "alpha", datetime.now(UTC))
    return Server(folder, max_upload=SAMPLE.stat().st_size + 10), token


def ask(server: Server, method: str, url: str, **options: Any) -> httpx.Response:
    app = build(server.folder, server, start=False)

    async def go() -> httpx.Response:
        transport = httpx.ASGITransport(app=app, raise_app_exceptions=False)
        async with httpx.AsyncClient(transport=transport, base_url="http://test") as client:
            return await client.request(method, url, **options)

    return asyncio.run(go())


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
    audit = server.store.audit()
    assert [a["why"] for a in audit if a["event"] == "upload_refused"] == ["too_large"]


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
