"""`scorer submit` never leaks a team's token (issue 32, item 6): it follows no redirect, sends
plain http:// to this machine only unless --insecure-http, and cleans a token pasted with
whitespace or refuses one with a control character, instead of crashing. The real client,
against a real server or a small trap on loopback ports; nothing else is ever contacted."""

from __future__ import annotations

import json
import socket
import threading
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from click.testing import Result
from support.serve_live import DATA, SAMPLE, SOLUTION, Live
from typer.testing import CliRunner

from scorer.api import score
from scorer.cli import app
from scorer.competition import LOST_ITEMS
from scorer.errors import UsageError
from scorer.serve.client import api_address, loopback

runner = CliRunner()
PUBLIC = score(SAMPLE, SOLUTION).public
#: A token of the right shape that no server knows (43 URL-safe characters).
TOKEN = "t" * 43
PROXIES = ("http_proxy", "https_proxy", "all_proxy", "no_proxy")


def submit(*args: str, env: dict[str, str] | None = None) -> Result:
    return runner.invoke(app, ["submit", str(SAMPLE), *args], env=env)


@pytest.fixture(autouse=True)
def _no_proxy(monkeypatch: pytest.MonkeyPatch) -> None:
    """A proxy of the environment would be contacted instead of the trap or the server."""
    for name in PROXIES:
        monkeypatch.delenv(name, raising=False)
        monkeypatch.delenv(name.upper(), raising=False)


@pytest.fixture
def offline(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, int]]:
    """No connection and no name looked up: each one tried is kept (host, port) and fails as
    an unknown name does."""
    tried: list[tuple[str, int]] = []

    def connect(address: tuple[str, int], *_: object, **__: object) -> socket.socket:
        tried.append(address)
        raise socket.gaierror(socket.EAI_NONAME, "no network in this test")

    def resolve(host: str, port: int, *_: object, **__: object) -> list[object]:
        tried.append((host, port))
        raise socket.gaierror(socket.EAI_NONAME, "no network in this test")

    monkeypatch.setattr(socket, "create_connection", connect)
    monkeypatch.setattr(socket, "getaddrinfo", resolve)
    return tried


Answer = Callable[[BaseHTTPRequestHandler], None]


@contextmanager
def listening(answer: Answer) -> Iterator[tuple[int, list[tuple[str, str, str | None]]]]:
    """An HTTP server on a free port of 127.0.0.1, in a thread, that answers each request
    with `answer`: its port, and each request it got (method, path, Authorization header)."""
    seen: list[tuple[str, str, str | None]] = []

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            seen.append((self.command, self.path, self.headers.get("Authorization")))
            # read the upload whole: a client still sending when the answer comes gets a reset
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            answer(self)

        do_POST = do_GET

        def log_message(self, *_: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)  # listening once made
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server.server_address[1], seen
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


def send(handler: BaseHTTPRequestHandler, status: int, body: bytes = b"", **headers: str) -> None:
    handler.send_response(status)
    for name, value in {**headers, "Content-Length": str(len(body))}.items():
        handler.send_header(name.replace("_", "-"), value)
    handler.end_headers()
    handler.wfile.write(body)


def ok(handler: BaseHTTPRequestHandler) -> None:
    send(handler, 200, b"{}", Content_Type="application/json")


def server_that_redirects(path: str, status: int, location: str) -> Answer:
    """A server like `scorer serve` (its rules and targets, the default competition's) whose
    `path` answers `status` to `location`."""

    def answer(handler: BaseHTTPRequestHandler) -> None:
        if handler.path == path:
            send(handler, status, Location=location)
        elif handler.path == "/api/v1/competition":
            send(handler, 200, json.dumps({"spec": LOST_ITEMS.to_dict()}).encode())
        elif handler.path == "/api/v1/targets":
            send(handler, 200, (DATA / "targets.csv").read_bytes())
        else:
            send(handler, 404)

    return answer


def test_the_trap_catches_a_client_that_follows_redirects() -> None:
    """urllib's own opener, as `scorer submit` used it, sends the token on to another host."""
    with listening(ok) as (port2, elsewhere):
        to = f"http://localhost:{port2}/api/v1/competition"
        with listening(server_that_redirects("/api/v1/competition", 302, to)) as (port1, _):
            opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
            asked = urllib.request.Request(
                f"http://127.0.0.1:{port1}/api/v1/competition",
                headers={"Authorization": "Bearer canary"},
            )
            with opener.open(asked, timeout=60) as answer:
                assert answer.read() == b"{}"
    assert elsewhere == [("GET", "/api/v1/competition", "Bearer canary")]


@pytest.mark.parametrize(
    ("path", "status"),
    [("/api/v1/competition", status) for status in (301, 302, 303, 307, 308)]
    + [("/api/v1/submissions", status) for status in (302, 307)],
)
def test_a_redirect_is_not_followed_and_the_token_goes_nowhere_else(path: str, status: int) -> None:
    with listening(ok) as (port2, elsewhere):
        to = f"http://localhost:{port2}{path}"  # another origin: another host and port
        with listening(server_that_redirects(path, status, to)) as (port1, seen):
            done = submit("--server", f"http://127.0.0.1:{port1}", "--token", TOKEN)
    assert done.exit_code == 2, done.output
    assert done.stderr == (
        f"Error: the server answered {status} and redirects to {to!r}: scorer submit follows "
        "no redirect, so your token goes nowhere else; if that is the server, give its "
        "address as --server\n"
    )
    assert "Traceback" not in done.output
    assert elsewhere == []  # never a request, let alone its Authorization header
    assert (seen[-1][0], seen[-1][1], seen[-1][2]) == (
        "POST" if path.endswith("submissions") else "GET",
        path,
        f"Bearer {TOKEN}",
    )


def test_a_redirect_on_the_same_server_is_not_followed_either_and_is_named_whole() -> None:
    answer = server_that_redirects("/api/v1/competition", 301, "/v2/competition\x1b[31m")
    with listening(answer) as (port, seen):
        done = submit("--server", f"http://127.0.0.1:{port}/", "--token", TOKEN)
    assert done.exit_code == 2, done.output
    # the server's text is shown with its control characters escaped, urllib's quoting kept off
    where = f"http://127.0.0.1:{port}/v2/competition\x1b[31m"
    assert f"the server answered 301 and redirects to {where!r}:" in done.stderr
    assert "\x1b" not in done.output
    assert [path for _, path, _ in seen] == ["/api/v1/competition"]


@pytest.mark.parametrize(
    "server",
    [
        "http://scores.invalid",
        "http://scores.invalid:8000/api/v1",
        "HTTP://Scores.Invalid",
        "http://localhost.evil.invalid",
        "http://127.0.0.1.evil.invalid",
        "http://10.0.0.1:8000",
        "http://0.0.0.0:8000",
    ],
)
def test_plain_http_to_another_machine_is_refused_before_any_connection(
    offline: list[tuple[str, int]], server: str
) -> None:
    done = submit("--server", server, "--token", TOKEN)
    assert done.exit_code == 2, done.output
    host = server.split("//")[1].split(":")[0].split("/")[0].lower()
    assert done.stderr == (
        f"Error: --server {server!r}: plain http:// would send your team's token unencrypted to "
        f"{host}, readable by anyone on the way; use https://, or add --insecure-http if you "
        "accept that (without it, plain http:// goes to this machine only: localhost, "
        "127.0.0.0/8, ::1)\n"
    )
    assert offline == []


@pytest.mark.parametrize(
    "server",
    ["http://127.0.0.1@scores.invalid", "http://scores.invalid\\@127.0.0.1", "http://@localhost"],
)
@pytest.mark.parametrize("insecure", [[], ["--insecure-http"]])
def test_an_address_with_a_user_part_is_refused_whatever_the_options(
    offline: list[tuple[str, int]], server: str, insecure: list[str]
) -> None:
    done = submit("--server", server, "--token", TOKEN, *insecure)
    assert done.exit_code == 2, done.output
    assert done.stderr == (
        f"Error: --server {server!r}: expected an address like https://host[:port][/path], "
        "with no user, query or fragment (the token goes in --token)\n"
    )
    assert offline == []


def test_insecure_http_lets_the_token_go_to_another_machine(
    offline: list[tuple[str, int]],
) -> None:
    done = submit("--server", "http://scores.invalid:8000", "--token", TOKEN, "--insecure-http")
    assert done.exit_code == 2, done.output
    assert done.stderr.startswith(
        "Error: cannot reach the server at http://scores.invalid:8000/api/v1: "
    )
    assert offline == [("scores.invalid", 8000)]  # the refusal above was the option's only


@pytest.mark.parametrize(
    "host",
    ["localhost", "127.0.0.1", "127.8.9.10", "127.255.255.255", "::1"],
)
def test_this_machine_is_read_from_the_address_as_written(host: str) -> None:
    assert loopback(host)


@pytest.mark.parametrize(
    "host",
    [
        "localhost.evil.invalid",
        "localhost.",  # a name a resolver may send on
        "127.0.0.1.nip.io",
        "127.1",  # short forms: another library may read them otherwise
        "2130706433",
        "0x7f.0.0.1",
        "0.0.0.0",
        "::ffff:127.0.0.1",
        "128.0.0.1",
        "scores.invalid",
    ],
)
def test_nothing_else_is_this_machine(host: str) -> None:
    assert not loopback(host)


def test_the_address_sent_to_is_the_one_checked() -> None:
    assert api_address("HTTP://LOCALHOST:8000/", False) == "http://LOCALHOST:8000/api/v1"
    assert api_address("http://[::1]:8000/api/v1/", False) == "http://[::1]:8000/api/v1"
    assert api_address("https://scores.invalid/comp", False) == "https://scores.invalid/comp/api/v1"
    # a tab or a newline that a parser drops cannot join a name to a loopback address
    with pytest.raises(UsageError, match="printable ASCII without spaces"):
        api_address("http://127.0.0.1\t.evil.invalid", False)


@pytest.mark.parametrize(
    ("token", "code", "at"),
    [
        (TOKEN[:10] + "\x07" + TOKEN[10:], "U+0007", 11),
        (TOKEN[:10] + "\r" + TOKEN[10:], "U+000D", 11),
        ("\t" + TOKEN[:5] + "\x1b" + TOKEN[5:] + "\r\n", "U+001B", 6),
        (TOKEN + "é", "U+00E9", 44),
        (TOKEN[:3] + "\u200b" + TOKEN[3:], "U+200B", 4),
    ],
)
@pytest.mark.parametrize("given", ["option", "environment"])
def test_a_token_with_a_control_character_is_a_usage_error_not_a_crash(
    offline: list[tuple[str, int]], token: str, code: str, at: int, given: str
) -> None:
    server = ["--server", "http://127.0.0.1:9"]
    if given == "option":
        done = submit(*server, "--token", token)
    else:
        done = submit(*server, env={"SCORER_TOKEN": token})
    assert done.exit_code == 2, done.output
    assert done.stderr == (
        f"Error: the token (--token or SCORER_TOKEN) has {code} at character {at}, which no "
        "token has: a token is printable ASCII, as `scorer serve team add` printed it; copy it "
        "again\n"
    )
    assert TOKEN[:10] not in done.output  # a secret, never shown
    assert offline == []


@pytest.mark.parametrize("token", ["", "   ", "\r\n"])
def test_an_empty_token_is_a_usage_error(offline: list[tuple[str, int]], token: str) -> None:
    done = submit("--server", "http://127.0.0.1:9", "--token", token)
    assert (done.exit_code, done.stderr) == (
        2,
        "Error: the token (--token or SCORER_TOKEN) is empty\n",
    )
    assert offline == []


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Live]:
    server = Live(tmp_path_factory.mktemp("submit") / "srv", "--daily-limit", "20").start()
    yield server
    server.close()


@pytest.mark.parametrize(
    ("token", "env"),
    [
        ("{token}\r", False),  # the last cell of a CRLF tokens.csv
        ("  {token}\r\n", False),
        ("\t{token} ", False),
        ("{token}\r", True),
    ],
)
def test_a_token_with_whitespace_around_it_uploads(live: Live, token: str, env: bool) -> None:
    pasted = token.format(token=live.tokens["alpha"])
    server = ["--server", live.url, "--wait", "120"]
    if env:
        done = submit(*server, env={"SCORER_TOKEN": pasted})
    else:
        done = submit(*server, "--token", pasted)
    assert done.exit_code == 0, done.output
    assert f"sample_submission.csv: scored, public score {PUBLIC:.6f}" in done.stdout


@pytest.mark.parametrize("spelling", ["http://LOCALHOST:{port}/", "http://127.0.0.1:{port}/api/v1"])
def test_plain_http_to_this_machine_needs_no_option(live: Live, spelling: str) -> None:
    server = spelling.format(port=live.port)
    done = submit("--server", server, "--token", live.tokens["beta"], "--wait", "120")
    assert done.exit_code == 0, done.output
    assert f"scored, public score {PUBLIC:.6f}" in done.stdout
