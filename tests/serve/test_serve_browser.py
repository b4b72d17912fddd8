"""`scorer serve run` in a real browser (headless Chromium): a participant uploads a file
through the page's form and reads its verdict, scored with the library's public score or
rejected with the report's words; the page, with a board of three teams, fits a 1280-pixel
window and a 390-pixel phone, where only a board's table may pass the edge, inside its
scroller.

A real server on a loopback port, driven by Chromium over the DevTools protocol through a
WebSocket client of the standard library's sockets (no driver, no Python package)."""

from __future__ import annotations

import base64
import json
import os
import socket
import struct
import subprocess
import tempfile
import time
from collections.abc import Iterator
from itertools import count
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx
import pytest
from support.browser import FLAGS, find, measure
from support.serve_live import DATA, SOLUTION, Live

import scorer

BROWSER = find()
pytestmark = pytest.mark.skipif(
    BROWSER is None,
    reason="no Chromium here (.ci/run installs Debian's chromium as root; SCORER_CHROMIUM "
    "names another binary): the served page was not checked in a browser",
)

#: How long the browser may take to start, and a page to load, in seconds; an upload's page
#: waits up to 60 s for its verdict (`scorer.serve.pages.WAIT`).
START, LOAD = 60.0, 90.0

#: The teams of the board test: (name, the file it uploads). The long name has no space to
#: break at, and the other one is markup, which must stay text.
BOARD_TEAMS = [
    ("Fundbüro-Rheinland-Pfalz-Bibliotheksverbund-Empfehlungsgruppe-42", "sample"),
    ("<b>Mallory</b> & co", "popularity"),
    ("Team C", "sample"),
]


#: The organiser's description on the page: a long address with no space to break at, a
#: table, a long line of code, and HTML that must stay text.
DESCRIPTION = """# About this competition

Find the lost editions: the data is at
https://example.org/a-very-long-path/without-any-space/to-break-at/lost-editions-2027-final.csv
and [the rules](https://example.org/rules).

| split | users | shown |
| --- | --- | --- |
| public | 500 | now |
| private | 500 | at the reveal |

```
python -c "import polars as pl; pl.read_csv('submission.csv').write_parquet('submission.parquet')"
```

<b>not bold</b> [x](javascript:alert(1))
"""


def public_score(name: str) -> float:
    """A bundled submission's public score, from the library (not from the server)."""
    public = scorer.score(DATA / f"{name}_submission.csv", SOLUTION).public
    assert public is not None
    return public


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Live]:
    """A server folder with a team for the form and the board's teams, served on a free
    loopback port until the module's tests are done."""
    folder = tmp_path_factory.mktemp("serve") / "competition"
    about = folder.parent / "about.md"
    about.write_text(DESCRIPTION, encoding="utf-8")
    teams = ("Form team", *(name for name, _ in BOARD_TEAMS))
    live = Live(folder, "--daily-limit", "20", "--description", str(about), teams=teams)
    live.start()
    try:
        yield live
    finally:
        try:
            live.stop()  # SIGTERM, and its exit waited for
        finally:
            live.close()  # killed, if it did not stop


class DevTools:
    """One page of a headless Chromium, driven over the DevTools protocol: JSON messages in
    WebSocket text frames (RFC 6455), the client's masked, over a plain socket."""

    def __init__(self, url: str) -> None:
        where = urlsplit(url)
        self.sock = socket.create_connection((where.hostname, where.port), timeout=LOAD)
        self.stream = self.sock.makefile("rb")
        key = base64.b64encode(os.urandom(16)).decode()
        self.sock.sendall(
            f"GET {where.path} HTTP/1.1\r\nHost: {where.netloc}\r\nUpgrade: websocket\r\n"
            f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\n"
            "Sec-WebSocket-Version: 13\r\n\r\n".encode()
        )
        status = self.stream.readline()
        if b" 101 " not in status:
            raise RuntimeError(f"the browser refused the WebSocket: {status!r}")
        while self.stream.readline() not in (b"\r\n", b""):
            pass  # the rest of the handshake's headers
        self.ids = count(1)

    def close(self) -> None:
        self.stream.close()
        self.sock.close()

    def _send(self, text: str) -> None:
        data = text.encode()
        size = len(data)
        if size < 126:
            head = struct.pack("!BB", 0x81, 0x80 | size)
        elif size < 1 << 16:
            head = struct.pack("!BBH", 0x81, 0x80 | 126, size)
        else:
            head = struct.pack("!BBQ", 0x81, 0x80 | 127, size)
        mask = os.urandom(4)
        self.sock.sendall(head + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(data)))

    def _receive(self) -> dict[str, Any]:
        """The next message, its fragments joined; a ping is answered, a close is an error."""
        message = b""
        while True:
            first, second = self.stream.read(2)
            size = second & 0x7F
            if size == 126:
                (size,) = struct.unpack("!H", self.stream.read(2))
            elif size == 127:
                (size,) = struct.unpack("!Q", self.stream.read(8))
            payload = self.stream.read(size)  # a server's frames are not masked
            opcode = first & 0x0F
            if opcode == 0x8:
                raise RuntimeError("the browser closed the connection")
            if opcode == 0x9:  # ping: the pong carries its payload back
                mask = os.urandom(4)
                pong = bytes(b ^ mask[i % 4] for i, b in enumerate(payload))
                self.sock.sendall(struct.pack("!BB", 0x8A, 0x80 | size) + mask + pong)
                continue
            message += payload
            if first & 0x80:  # FIN: the message's last fragment
                found: dict[str, Any] = json.loads(message)
                return found

    def call(self, method: str, **params: Any) -> dict[str, Any]:
        """Send one command and return its result (events met meanwhile are dropped)."""
        ident = next(self.ids)
        self._send(json.dumps({"id": ident, "method": method, "params": params}))
        while True:
            message = self._receive()
            if message.get("id") != ident:
                continue
            if "error" in message:
                raise RuntimeError(f"{method}: {message['error']}")
            result: dict[str, Any] = message["result"]
            return result

    def evaluate(self, script: str) -> Any:
        """The value of a JavaScript expression in the page."""
        found = self.call("Runtime.evaluate", expression=script, returnByValue=True)
        if "exceptionDetails" in found:
            raise RuntimeError(f"{script}: {found['exceptionDetails']}")
        return found["result"].get("value")

    def wait_for(self, script: str) -> Any:
        """The value of `script` once it is truthy, evaluated again while the page loads
        (an evaluation that meets the old page's end is tried again)."""
        deadline = time.monotonic() + LOAD
        while time.monotonic() < deadline:
            try:
                value = self.evaluate(script)
            except RuntimeError:
                value = None
            if value:
                return value
            time.sleep(0.2)
        raise TimeoutError(f"{script}: still false after {LOAD:.0f} s")


#: How the tests start Chromium: as tests/support/browser.py does, with the DevTools protocol on a
#: port of Chromium's choosing (written to the profile's DevToolsActivePort file).
DEVTOOLS = [*FLAGS, "--remote-debugging-port=0", "--window-size=1280,800"]


@pytest.fixture(scope="module")
def page(served: Live) -> Iterator[DevTools]:
    """A browser's tab on the server's page."""
    assert BROWSER is not None
    # a child of Chromium may still write to its profile as it ends: not an error of the page
    with tempfile.TemporaryDirectory(prefix="chromium-", ignore_cleanup_errors=True) as profile:
        log = Path(profile) / "chromium.log"
        with log.open("wb") as sink:
            browser = subprocess.Popen(
                [BROWSER, *DEVTOOLS, f"--user-data-dir={profile}", f"{served.url}/"],
                stdout=sink,
                stderr=subprocess.STDOUT,
            )
        tab = None
        try:
            active = Path(profile) / "DevToolsActivePort"
            deadline = time.monotonic() + START
            while not (active.is_file() and active.read_text().count("\n") >= 1):
                if browser.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"Chromium did not start: {log.read_text()[-2000:]}")
                time.sleep(0.1)
            port = int(active.read_text().split()[0])
            targets = httpx.get(f"http://127.0.0.1:{port}/json/list", timeout=START).json()
            target = next(t for t in targets if t["type"] == "page")
            tab = DevTools(target["webSocketDebuggerUrl"])
            yield tab
        finally:
            if tab is not None:
                tab.close()
            browser.terminate()
            try:
                browser.wait(timeout=30)
            except subprocess.TimeoutExpired:
                browser.kill()
                browser.wait()


def log_in(tab: DevTools, url: str, token: str) -> None:
    """Log in through the login page, as a participant would: the token typed, the button
    pressed, the team's page shown after the 303."""
    tab.call("Page.navigate", url=f"{url}/login")
    tab.wait_for("location.pathname === '/login' && document.readyState === 'complete'")
    form = 'form[action="/login"]'
    tab.evaluate(f"document.querySelector('{form} input[name=token]').value = {json.dumps(token)}")
    tab.evaluate(f"document.querySelector('{form} button[type=submit]').click()")
    tab.wait_for("location.pathname === '/team' && document.readyState === 'complete'")


def upload_through_the_form(tab: DevTools, url: str, token: str, file: Path) -> str:
    """Log in, fill the team page's upload form (the file chosen, a description typed) and
    press Upload; the HTML of the submission's page the 303 leads to."""
    log_in(tab, url, token)
    form = 'form[action="/upload"]'
    root = tab.call("DOM.getDocument")["root"]["nodeId"]
    node = tab.call("DOM.querySelector", nodeId=root, selector=f"{form} input[type=file]")
    tab.call("DOM.setFileInputFiles", files=[str(file)], nodeId=node["nodeId"])
    chosen = tab.evaluate(f"document.querySelector('{form} input[type=file]').files[0].name")
    assert chosen == file.name
    said = json.dumps(f"<i>{file.name}</i> from the browser")
    tab.evaluate(f"document.querySelector('{form} input[name=description]').value = {said}")
    tab.evaluate(f"document.querySelector('{form} button[type=submit]').click()")
    tab.wait_for(
        "location.pathname.indexOf('/team/submissions/') === 0 && "
        "document.readyState === 'complete' && document.querySelector('.verdict') !== null"
    )
    html: str = tab.evaluate("document.documentElement.outerHTML")
    return html


#: (file, the verdict's class, what its text must say): the sample scored with the library's
#: public score to 6 places; the semicolons rejected with the report's code and line.
UPLOADS = [
    ("sample_submission.csv", "scored", ["Submission", "scored", "(public score {sample})"]),
    (
        "broken/semicolons.csv",
        "rejected",
        [
            "rejected",
            "[bad_delimiter] 1 time",
            "semicolons.csv: line 1: the columns are separated by ';'; expected ','",
        ],
    ),
]


@pytest.mark.parametrize(("name", "status", "words"), UPLOADS, ids=["scored", "rejected"])
def test_a_file_uploaded_through_the_form_gets_its_verdict_on_the_page(
    served: Live, page: DevTools, name: str, status: str, words: list[str]
) -> None:
    assert BROWSER is not None
    html = upload_through_the_form(page, served.url, served.tokens["Form team"], DATA / name)
    verdict = page.evaluate(
        "(function () { var v = document.querySelector('.verdict');"
        " return [v.className, v.getAttribute('role'), v.innerText]; })()"
    )
    assert verdict[:2] == [f"verdict {status}", "status"]
    for expected in words:
        assert expected.format(sample=f"{public_score('sample'):.6f}") in verdict[2]
    text = page.evaluate("document.body.innerText")
    assert "Form team" in text and "&#x27;" not in text and "&amp;" not in text
    assert f"<i>{name.rsplit('/', 1)[-1]}</i> from the browser" in text  # as text, not markup
    found = measure(BROWSER, html, 500, 844, layout=390)  # the verdict's page on a phone
    assert found["width"] == 390 and found["outside"] == []


def count_uploads(served: Live, team: str) -> int:
    with served.client(team) as client:
        return len(client.get("/submissions").json()["submissions"])


def test_reloading_a_submission_s_page_uploads_nothing(served: Live, page: DevTools) -> None:
    """The upload's answer is a 303 to its submission's page: a reload asks for that page
    again, and the server gets no second upload."""
    upload_through_the_form(
        page, served.url, served.tokens["Form team"], DATA / "sample_submission.csv"
    )
    before = count_uploads(served, "Form team")
    where = page.evaluate("location.pathname")
    page.call("Page.reload")
    page.wait_for(
        f"location.pathname === {json.dumps(where)} && document.readyState === 'complete' && "
        "document.querySelector('.verdict') !== null"
    )
    assert count_uploads(served, "Form team") == before


@pytest.mark.parametrize(("width", "layout"), [(1280, None), (500, 390)], ids=["1280", "390"])
def test_the_team_page_fits_a_window_and_a_phone(
    served: Live, page: DevTools, width: int, layout: int | None
) -> None:
    """The team's page, with its submissions (names, descriptions, a rejection's report),
    forms and table: nothing passes the window's edge but the table, in its scroller."""
    assert BROWSER is not None
    for name in ("sample_submission.csv", "broken/semicolons.csv"):
        if count_uploads(served, "Form team") < 2:
            upload_through_the_form(page, served.url, served.tokens["Form team"], DATA / name)
    log_in(page, served.url, served.tokens["Form team"])
    html: str = page.evaluate("document.documentElement.outerHTML")
    assert "semicolons.csv" in html and "[bad_delimiter]" in html
    found = measure(BROWSER, html, width, 800 if layout is None else 844, layout=layout)
    edge = layout or width
    assert found["width"] == edge
    assert found["outside"] == []  # the forms, the header and the notes
    assert all(right <= edge + 0.5 and overflow == "auto" for right, overflow in found["scrolls"])
    if layout is None:
        assert found["scrollWidth"] <= found["innerWidth"] and found["beyond"] == []


@pytest.fixture(scope="module")
def board_page(served: Live) -> tuple[str, list[str]]:
    """The page with the board teams' submissions scored, and the teams its JSON twin
    ranks, in order."""
    for team, name in BOARD_TEAMS:  # through the API, each scored before the next
        verdict = served.scored(team, DATA / f"{name}_submission.csv")
        assert (verdict["status"], verdict["public_score"]) == ("scored", public_score(name))
    served.settle()  # every verdict given, and the board shows them all
    board = httpx.get(f"{served.url}/api/v1/leaderboard", timeout=LOAD).json()
    teams = [row["team"] for row in board["public"]["rows"]]
    return httpx.get(f"{served.url}/", timeout=LOAD).text, teams


def test_the_board_ranks_the_teams_by_their_library_scores(
    board_page: tuple[str, list[str]],
) -> None:
    _, teams = board_page
    mine = [team for team in teams if team in dict(BOARD_TEAMS)]
    ranked = sorted(BOARD_TEAMS, key=lambda team: -public_score(team[1]))  # stable: ties by
    assert mine == [team for team, _ in ranked]  # upload order, the earlier one first


def test_the_page_fits_a_1280_pixel_window(board_page: tuple[str, list[str]]) -> None:
    assert BROWSER is not None
    page, teams = board_page
    found = measure(BROWSER, page, 1280, 800)
    assert found["innerWidth"] == 1280
    assert found["scrollWidth"] <= found["innerWidth"]  # no horizontal scroll
    assert found["beyond"] == []  # no form, table, chart or cell past the window's edge
    assert found["teams"] == teams  # every name as text, in the JSON board's order
    assert all(right <= 1280 and width > 0 for _, right, width in found["charts"])


def test_the_page_fits_a_phone(board_page: tuple[str, list[str]]) -> None:
    """A 390-pixel phone: nothing of the page passes its edge but a board's table, which
    scrolls inside its own container, so the page never scrolls sideways."""
    assert BROWSER is not None
    page, teams = board_page
    found = measure(BROWSER, page, 500, 844, layout=390)
    assert found["width"] == 390
    assert found["outside"] == []  # the forms and rules included
    assert found["scrolls"] and all(
        right <= 390.5 and overflow == "auto" for right, overflow in found["scrolls"]
    )
    assert found["teams"] == teams


def test_the_live_page_never_scrolls_sideways_on_a_phone(
    served: Live, page: DevTools, board_page: tuple[str, list[str]]
) -> None:
    """The served page in a window truly 390 pixels wide (the protocol's device metrics,
    which no command-line window allows): the document is no wider than the window, so no
    text, even one that overflows its own box, passes the edge outside a board's scroller."""
    page.call(
        "Emulation.setDeviceMetricsOverride",
        width=390,
        height=844,
        deviceScaleFactor=1,
        mobile=False,
    )
    try:
        page.call("Page.navigate", url=f"{served.url}/")
        page.wait_for("location.pathname === '/' && document.readyState === 'complete'")
        width, scroll, boards = page.evaluate(
            "[window.innerWidth, document.documentElement.scrollWidth,"
            " document.querySelectorAll('.board table').length]"
        )
    finally:
        page.call("Emulation.clearDeviceMetricsOverride")
    assert width == 390 and boards >= 1
    assert scroll <= width  # the page itself never scrolls sideways


@pytest.mark.parametrize(("width", "layout"), [(1280, None), (500, 390)], ids=["1280", "390"])
def test_the_description_and_format_fit_without_sideways_scroll(
    board_page: tuple[str, list[str]], width: int, layout: int | None
) -> None:
    """The page with the organiser's description (a long address, a table, a long line of
    code) and the Format section: nothing passes the window's edge but a board's table."""
    assert BROWSER is not None
    page, _ = board_page
    assert '<section id="about">' in page and '<section id="format">' in page
    assert "&lt;b&gt;not bold&lt;/b&gt;" in page and 'href="javascript:' not in page
    found = measure(BROWSER, page, width, 844, layout=layout)
    assert found["width"] == (layout or width)
    assert found["outside"] == []
    assert found["scrollWidth"] <= found["innerWidth"]


def log_in_as_organiser(tab: DevTools, url: str, token: str) -> None:
    """Log in on the organiser's form with the admin token: `/admin` after the 303."""
    tab.call("Page.navigate", url=f"{url}/admin/login")
    tab.wait_for("location.pathname === '/admin/login' && document.readyState === 'complete'")
    form = 'form[action="/login"]'
    tab.evaluate(f"document.querySelector('{form} input[name=token]').value = {json.dumps(token)}")
    tab.evaluate(f"document.querySelector('{form} button[type=submit]').click()")
    tab.wait_for(
        "location.pathname === '/admin' && document.readyState === 'complete' && "
        "document.getElementById('audit') !== null"
    )


@pytest.mark.parametrize(("width", "layout"), [(1280, None), (500, 390)], ids=["1280", "390"])
def test_the_organiser_s_page_fits_a_window_and_a_phone(
    served: Live, page: DevTools, width: int, layout: int | None
) -> None:
    """`/admin` after the admin token's login, with the teams (a long name with no space to
    break at, and one made of markup), the days, the failures and the audit log: nothing
    passes the window's edge but a table, in its scroller, and no name became markup."""
    assert BROWSER is not None
    if count_uploads(served, "Form team") < 1:
        served.scored("Form team", DATA / "sample_submission.csv")
    log_in_as_organiser(page, served.url, served.admin)
    html: str = page.evaluate("document.documentElement.outerHTML")
    assert "<script" not in html and "&lt;b&gt;Mallory&lt;/b&gt; &amp; co" in html
    for section in ("phase", "teams", "days", "queue", "failures", "audit"):
        assert f'id="{section}"' in html
    found = measure(BROWSER, html, width, 800 if layout is None else 844, layout=layout)
    edge = layout or width
    assert found["width"] == edge
    assert found["outside"] == []  # the header, the phase, the words of each section
    assert "b" not in found["tags"]  # the team made of markup stayed text
    assert found["scrolls"] and all(
        right <= edge + 0.5 and overflow == "auto" for right, overflow in found["scrolls"]
    )
    if layout is None:
        assert found["scrollWidth"] <= found["innerWidth"] and found["beyond"] == []
