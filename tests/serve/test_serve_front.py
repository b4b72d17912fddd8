"""The competition page as a front door (issue 33, items 6 and 10): the links to the targets,
the sample and the participants' download, the Format section, the organiser's description
rendered from Markdown with any HTML in it as text, the page after the end, the times as
people read them, and an HTML page for a browser's error. In-process for the page's words; a
real server on a loopback port for the download, which a fresh venv installs offline."""

from __future__ import annotations

import re
import time
import tomllib
import zipfile
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import polars as pl
import psycopg
import pytest
from support.kits import follow_offline, readme_commands
from support.postgres_cluster import new_database, new_role
from support.serve_app import ask, browse
from support.serve_live import BROKEN, SAMPLE, SOLUTION, Live
from typer.testing import CliRunner

import scorer
from scorer.cli import app as cli
from scorer.competition import LOST_ITEMS, Competition, IdKind, Ids, Rows
from scorer.errors import UsageError
from scorer.serve import pages, site, teams
from scorer.serve.front import human_bytes, shown_time
from scorer.serve.postgres import PostgresStore
from scorer.serve.server import Server

#: A description an organiser might write, and what a hostile one could hide in it.
DESCRIPTION = """# Find the lost editions

Rank **20 editions** a user, as in [the data](https://example.org/data) or
[mail us](mailto:org@example.org).

<script>alert(1)</script> <img src=x onerror=alert(2)>
[click](javascript:alert(3)) [data](data:text/html,<b>4</b>) ![pic](javascript:alert(5))
"""


@pytest.fixture(params=["sqlite", "postgres"])
def store(request: pytest.FixtureRequest) -> str | None:
    """The store a server is made with: None (SQLite in its folder) or a new database."""
    if request.param == "sqlite":
        return None
    return new_database(request.getfixturevalue("postgres"))


def made(folder: Path, db: str | None = None, **options: Any) -> Server:
    site.init(folder, SOLUTION, settings=site.Settings(title="Lost <b>items</b>", db=db), **options)
    return Server(folder, workers=0)


def test_the_page_links_the_targets_the_sample_and_the_download(tmp_path: Path) -> None:
    server = made(tmp_path / "srv")
    page = ask(server, "GET", "/").text
    for link in ("/api/v1/targets", "/api/v1/sample", "/download/participants.zip"):
        assert f'href="{link}"' in page
    targets = ask(server, "GET", "/api/v1/targets")
    sample = ask(server, "GET", "/api/v1/sample")
    assert sample.status_code == 200 and sample.headers["content-type"].startswith("text/csv")
    assert 'filename="sample_submission.csv"' in sample.headers["content-disposition"]
    (tmp_path / "sample.csv").write_bytes(sample.content)
    (tmp_path / "targets.csv").write_bytes(targets.content)
    checked = scorer.validate(tmp_path / "sample.csv", targets=tmp_path / "targets.csv")
    assert checked.users == len(targets.text.splitlines()) - 1


def test_the_placeholder_sample_says_nothing_of_the_solution(tmp_path: Path) -> None:
    """Every target user, sorted, each with the ids 1..k: the same for any solution."""
    server = made(tmp_path / "srv")
    sample = pl.read_csv(ask(server, "GET", "/api/v1/sample").content, infer_schema=False)
    targets = pl.read_csv(ask(server, "GET", "/api/v1/targets").content, infer_schema=False)
    assert sample.columns == ["user_id", "edition_ids"]
    assert sample["user_id"].to_list() == targets["user_id"].to_list()
    assert set(sample["edition_ids"]) == {" ".join(str(i) for i in range(1, 21))}


def test_init_keeps_the_organiser_s_sample_checked_as_an_upload(tmp_path: Path) -> None:
    runner = CliRunner()
    init = ["serve", "init", "--solution", str(SOLUTION), "--sample"]
    done = runner.invoke(cli, [*init, str(SAMPLE), str(tmp_path / "a")])
    assert done.exit_code == 0, done.output
    assert (tmp_path / "a" / site.SAMPLE).read_bytes() == SAMPLE.read_bytes()
    broken = runner.invoke(cli, [*init, str(BROKEN), str(tmp_path / "b")])
    assert broken.exit_code == 2
    assert "not a valid submission" in broken.output and "[bad_delimiter]" in broken.output
    assert not (tmp_path / "b").exists()  # nothing half made


def test_the_format_section_gives_columns_k_rows_files_and_the_cap(tmp_path: Path) -> None:
    server = made(tmp_path / "srv")
    server.max_upload = 3 << 29
    page = ask(server, "GET", "/").text
    section = page[page.index('<section id="format">') :]
    section = section[: section.index("</section>")]
    for words in (
        "<code>user_id,edition_id,rank</code>",
        "<code>user_id,edition_ids</code>",
        "exactly 20 rows for every target user",
        "an integer 1..20",
        "<code>.csv.gz</code>",
        "<code>.parquet</code>",
        "at most 1.5 GiB an upload",
        "scorer validate FILE --targets targets.csv --competition competition.toml",
    ):
        assert words in section


def test_the_format_follows_the_competition_s_rules() -> None:
    from scorer.serve.front import format_items

    rules = Competition(k=12, rows=Rows.AT_MOST, ids=Ids(user=IdKind.TEXT))
    text = " ".join(format_items(rules, 1000))
    assert "at most 12 rows" in text and "user ids are text" in text and "1000 bytes" in text


@pytest.mark.parametrize(
    ("size", "said"),
    [(1 << 30, "1 GiB"), (1536, "1.5 KiB"), (1, "1 byte"), (1023, "1023 bytes")],
)
def test_sizes_read_in_binary_units(size: int, said: str) -> None:
    assert human_bytes(size) == said


def test_times_read_as_people_write_them() -> None:
    assert shown_time("2027-01-31T23:59:59+00:00") == "31 Jan 2027, 23:59 UTC"
    assert shown_time(datetime(2027, 2, 1, 1, 2, 3, 456789, tzinfo=UTC)) == "1 Feb 2027, 01:02 UTC"
    assert shown_time("2027-02-01T00:30:00+01:00") == "31 Jan 2027, 23:30 UTC"


def test_the_description_is_markdown_with_its_html_and_scripts_as_text(
    tmp_path: Path, store: str | None
) -> None:
    about = tmp_path / "about.md"
    about.write_text(DESCRIPTION, encoding="utf-8")
    server = made(tmp_path / "srv", store, description=about)
    assert server.store.description() == DESCRIPTION
    page = ask(server, "GET", "/").text
    section = page[page.index('<section id="about">') :]
    section = section[: section.index("</section>")]
    assert (
        "<h1>Find the lost editions</h1>" in section and "<strong>20 editions</strong>" in section
    )
    assert '<a href="https://example.org/data">' in section
    assert '<a href="mailto:org@example.org">' in section
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in section
    assert "<script" not in page and "<img" not in section  # the raw HTML is text
    hrefs = re.findall(r'(?:href|src)="([^"]*)"', page)
    assert not [h for h in hrefs if not h.startswith(("/", "https:", "mailto:", "#"))]
    server.store.put_description("Now *shorter*.")  # a later change, seen at the next request
    assert "<em>shorter</em>" in ask(server, "GET", "/").text
    assert [e["event"] for e in server.store.audit()].count("description") == 2


def test_a_page_without_a_description_has_no_about_section(tmp_path: Path) -> None:
    server = made(tmp_path / "srv")
    assert server.store.description() == ""
    assert 'id="about"' not in ask(server, "GET", "/").text


@pytest.mark.parametrize(
    ("data", "said"),
    [
        (b"x" * (site.MAX_DESCRIPTION + 1), "at most 65,536 bytes"),
        (b"caf\xe9", "not UTF-8 text"),
        (b"a\x00b", "NUL"),
    ],
)
def test_a_description_file_is_checked(tmp_path: Path, data: bytes, said: str) -> None:
    path = tmp_path / "about.md"
    path.write_bytes(data)
    with pytest.raises(UsageError, match=said):
        site.read_description(path)
    with pytest.raises(UsageError, match=said):
        made(tmp_path / "srv", description=path)
    assert not (tmp_path / "srv").exists()


def test_a_web_role_reads_the_description_and_cannot_write_it(
    tmp_path: Path, postgres: str
) -> None:
    url = new_database(postgres)
    role, web = new_role(postgres, url)
    about = tmp_path / "about.md"
    about.write_text("Hello", encoding="utf-8")
    site.init(
        tmp_path / "srv",
        SOLUTION,
        settings=site.Settings(title="t", db=url),
        web_role=role,
        description=about,
    )
    assert PostgresStore(web, site.Settings(title="t").limits).description() == "Hello"
    with psycopg.connect(web) as db, pytest.raises(psycopg.errors.InsufficientPrivilege):
        db.execute("UPDATE state SET value = 'x' WHERE key = 'description'")
    with psycopg.connect(web) as db, pytest.raises(psycopg.errors.InsufficientPrivilege):
        db.execute("INSERT INTO state VALUES ('description', 'x')")
    kept = site.from_database(web, tmp_path / "web")  # a web machine has the sample too
    assert kept.title == "t" and (tmp_path / "web" / site.SAMPLE).is_file()


def test_after_the_end_the_page_says_uploads_are_closed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    end = "2027-01-31T23:59:59+00:00"
    folder = tmp_path / "srv"
    site.init(folder, SOLUTION, settings=site.Settings(title="t", end=end))
    server = Server(folder, workers=0)
    before = ask(server, "GET", "/").text
    assert 'href="/team"' in before and "Uploads end at 31 Jan 2027, 23:59 UTC." in before
    after = datetime.fromisoformat(end) + timedelta(seconds=1)
    monkeypatch.setattr(pages, "utc", lambda: after)
    page = ask(server, "GET", "/").text
    assert 'href="/team"' not in page and 'type="file"' not in page
    assert "Uploads are closed" in page and "ended at 31 Jan 2027, 23:59 UTC" in page


def test_after_the_reveal_the_page_shows_no_upload_form(tmp_path: Path) -> None:
    server = made(tmp_path / "srv")
    server.store.reveal()
    page = ask(server, "GET", "/").text
    assert 'action="/upload"' not in page and "Uploads are closed" in page


#: A time as people read it on a page: `31 Jan 2027, 23:59 UTC`.
PEOPLE_TIME = r"\d{1,2} [A-Z][a-z]{2} \d{4}, \d\d:\d\d UTC"

#: A time as the API writes it (ISO 8601), which no page shows.
ISO_TIME = r"\d{4}-\d\d-\d\dT\d\d:\d\d|\d\d:\d\d:\d\d"


def test_no_page_time_has_microseconds_or_iso_form(tmp_path: Path) -> None:
    server = made(tmp_path / "srv")
    page = ask(server, "GET", "/").text
    assert re.search(rf"Page generated at {PEOPLE_TIME}", page)
    assert not re.search(ISO_TIME, page)


def test_the_team_page_and_a_submission_s_page_read_times_as_people_write_them(
    tmp_path: Path,
) -> None:
    folder = tmp_path / "srv"
    site.init(folder, SOLUTION, settings=site.Settings(title="t", daily_limit=1))
    token = teams.add_team(folder, "alpha")
    server = Server(folder, workers=0)
    files = {"file": ("run.csv", SAMPLE.read_bytes())}

    async def steps(page: httpx.AsyncClient) -> list[str]:
        await page.post("/login", data={"token": token})
        sent = await page.post("/upload", files=files)
        one = await page.get(sent.headers["location"])
        return [(await page.get("/team")).text, one.text]

    waited = pages.WAIT
    pages.WAIT = 0.0  # no worker here: the submission's page shows it queued at once
    try:
        team, one = browse(server, steps)
    finally:
        pages.WAIT = waited
    (entry,) = server.store.entries()
    submitted = shown_time(entry.submitted_at)
    assert f"<td>{submitted}</td>" in team and f"submitted {submitted}" in one
    assert re.search(rf"today 0 left; next slot {PEOPLE_TIME}\.", team)  # the limit: 1
    for page in (team, one):
        assert not re.search(ISO_TIME, page), page


@pytest.mark.parametrize(
    ("when", "said"),
    [
        ({"end": "2020-01-31T23:59:59+00:00"}, "the competition ended at 31 Jan 2020, 23:59 UTC"),
        ({"start": "2099-02-01T09:30:00+00:00"}, "uploads open at 1 Feb 2099, 09:30 UTC"),
    ],
)
def test_a_refusal_after_the_end_or_before_the_start_reads_its_time_as_people_do(
    tmp_path: Path, when: dict[str, str], said: str
) -> None:
    folder = tmp_path / "srv"
    site.init(folder, SOLUTION, settings=site.Settings(title="t", **when))
    token = teams.add_team(folder, "alpha")
    server = Server(folder, workers=0)

    async def steps(page: httpx.AsyncClient) -> httpx.Response:
        await page.post("/login", data={"token": token})
        return await page.post("/upload", files={"file": ("run.csv", SAMPLE.read_bytes())})

    refused = browse(server, steps)
    assert refused.status_code == 403 and said in refused.text
    assert not re.search(ISO_TIME, refused.text)
    bearer = {"Authorization": f"Bearer {token}"}
    api = ask(server, "POST", "/api/v1/submissions", headers=bearer)
    assert said in api.json()["error"]["message"]  # the API says it in the same words


HTML = {"Accept": "text/html,application/xhtml+xml,*/*;q=0.8"}


def test_a_browser_gets_an_html_page_for_an_error_on_a_page_route(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    server = made(tmp_path / "srv")
    missing = ask(server, "GET", "/no/such/page", headers=HTML)
    wrong = ask(server, "DELETE", "/", headers=HTML)
    for answer, status in ((missing, 404), (wrong, 405)):
        assert answer.status_code == status
        assert answer.headers["content-type"].startswith("text/html")
        assert "<!DOCTYPE html>" in answer.text and 'href="/"' in answer.text
    from scorer.serve.sqlcore import StoreUnavailable

    def away(*_: object) -> str:
        raise StoreUnavailable("the database cannot be reached: 10.0.0.5:5432 refused")

    monkeypatch.setattr(pages, "competition_page", away)
    unavailable = ask(server, "GET", "/", headers=HTML)
    assert (unavailable.status_code, unavailable.headers["retry-after"]) == (503, "5")
    assert unavailable.headers["content-type"].startswith("text/html")
    assert "try again soon" in unavailable.text and "10.0.0.5" not in unavailable.text
    api = ask(server, "GET", "/api/v1/nothing", headers=HTML)  # the API answers JSON always
    assert api.status_code == 404 and api.json()["error"]["code"] == "not_found"
    plain = ask(server, "GET", "/no/such/page")  # a client that asks for no HTML: JSON
    assert plain.json()["error"]["code"] == "not_found"


def test_the_competition_file_loads_back_to_the_server_s_rules() -> None:
    other = Competition(name='a "quoted" name\\ é', k=12, rows=Rows.AT_MOST)
    for rules in (LOST_ITEMS, other):
        assert Competition.of(tomllib.loads(rules.to_toml())) == rules


# the participants' download, from a real server


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Live]:
    folder = tmp_path_factory.mktemp("front") / "srv"
    server = Live(folder, teams=("<script>alert(1)</script>",)).start()
    try:
        yield server
    finally:
        try:
            server.stop()
        finally:
            server.close()


def downloaded(live: Live, timeout: float = 600) -> httpx.Response:
    """The participants' zip, asked for until it is built (503 `building` meanwhile)."""
    deadline = time.monotonic() + timeout
    while True:
        answer = httpx.get(f"{live.url}/download/participants.zip", timeout=120)
        if answer.status_code != 503 or time.monotonic() > deadline:
            return answer
        assert answer.json()["error"]["code"] == "building"
        time.sleep(0.5)


def test_a_participant_s_name_is_text_on_the_page(live: Live) -> None:
    verdict = live.scored("<script>alert(1)</script>", SAMPLE)
    assert verdict["status"] == "scored"
    live.settle()
    page = httpx.get(f"{live.url}/", timeout=120).text
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page and "<script" not in page


@pytest.mark.slow
def test_a_participant_installs_the_download_offline_and_validates_the_sample(
    live: Live, tmp_path: Path
) -> None:
    """The zip from the running server, unpacked; its README's two commands, run as printed
    in a fresh venv with no index: the first installs scorer from `wheels/`, the second
    validates the sample against the targets with the server's rules."""
    answer = downloaded(live)
    assert answer.status_code == 200, answer.text
    assert answer.headers["content-type"] == "application/zip"
    archive = tmp_path / "participants.zip"
    archive.write_bytes(answer.content)
    with zipfile.ZipFile(archive) as zipped:
        zipped.extractall(tmp_path)
    folder = tmp_path / "participants"
    sample = httpx.get(f"{live.url}/api/v1/sample", timeout=120).content
    assert (folder / "sample_submission.csv").read_bytes() == sample
    rules = Competition.load(folder / "competition.toml")
    assert rules == LOST_ITEMS  # the server's rules
    install, check = readme_commands(folder)
    assert "--no-index --find-links wheels" in install
    assert check == (
        "scorer validate sample_submission.csv --targets targets.csv --competition competition.toml"
    )
    printed = follow_offline(folder, tmp_path, (install, check))
    assert printed.startswith("sample_submission.csv: valid")
    again = downloaded(live)  # built once: the same bytes, from the folder
    assert again.content == answer.content
    assert (live.folder / "participants.zip").read_bytes() == answer.content
