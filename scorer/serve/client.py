"""`scorer submit`: check a file against the server's own rules and targets, upload it, wait
for its verdict. The standard library's HTTP client only: a participant installs no server."""

from __future__ import annotations

import http.client
import ipaddress
import json
import secrets
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from http.client import HTTPMessage
from pathlib import Path
from typing import IO, Any

from scorer.api import validate
from scorer.competition import Competition
from scorer.errors import Failure, Report, ScorerError, SubmissionError, UsageError
from scorer.read import open_regular
from scorer.serve import notes

#: How often the verdict is asked for while the upload waits (seconds).
POLL = 1.0

#: How long a server that refuses connections is waited for (starting, restarting), seconds.
START = 30.0

#: Bytes of the file sent at a time.
BLOCK = 1 << 20


class ServerRefused(ScorerError):
    """The server refused the upload or the request: a token, a limit, the end (exit 2)."""

    exit_code = 2
    failure = Failure.SERVER_REFUSED

    def __init__(self, status: int, error: dict[str, Any]) -> None:
        code = str(error.get("code", "http_error"))
        super().__init__(f"the server answered {status} {code}: {error.get('message', '')}")
        self.status, self.error = status, error

    def to_dict(self) -> dict[str, Any]:
        return {**super().to_dict(), "http_status": self.status, "server": self.error}


def refusal(exc: urllib.error.HTTPError) -> ServerRefused:
    """A server's error answer as an error of the command, with the server's own words."""
    try:
        error = json.loads(exc.read()).get("error", {})
    except (ValueError, AttributeError):
        error = {"code": "http_error", "message": str(exc.reason)}
    return ServerRefused(exc.code, error)


def loopback(host: str) -> bool:
    """Whether `host` (as `urlsplit` gives it: lower case, no brackets) is this machine, written
    as `localhost`, an address of 127.0.0.0/8 or ::1. Read, never resolved: `localhost.evil.com`,
    or a name that resolves to 127.0.0.1 today, is another machine."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:  # a name, or an address in a short form (127.1): not taken as this machine
        return False


def api_address(url: str, insecure_http: bool) -> str:
    """The API's address of the server at `url` (its root, or its `/api/v1`), checked before
    anything is sent: plain http:// goes to this machine only unless `insecure_http`, since
    anyone on the way reads a token sent in clear."""
    usage = f"--server {url!r}: expected an address like https://host[:port][/path]"
    if not all("!" <= char <= "~" for char in url):
        raise UsageError(f"{usage}, in printable ASCII without spaces")
    parts = urllib.parse.urlsplit(url)
    try:
        port = parts.port  # raises for a port that is not a number, or past 65535
    except ValueError:
        raise UsageError(f"{usage}: its port is not a number 1..65535") from None
    if parts.scheme not in ("http", "https") or not parts.hostname or port == 0:
        raise UsageError(usage)
    if "@" in parts.netloc or parts.query or parts.fragment:
        # a user part hides the host from a reader (http://127.0.0.1@evil.com is evil.com)
        raise UsageError(f"{usage}, with no user, query or fragment (the token goes in --token)")
    if parts.scheme == "http" and not loopback(parts.hostname) and not insecure_http:
        raise UsageError(
            f"--server {url!r}: plain http:// would send your team's token unencrypted to "
            f"{parts.hostname}, readable by anyone on the way; use https://, or add "
            "--insecure-http if you accept that (without it, plain http:// goes to this "
            "machine only: localhost, 127.0.0.0/8, ::1)"
        )
    root = f"{parts.scheme}://{parts.netloc}{parts.path}".rstrip("/")
    return root if root.endswith("/api/v1") else f"{root}/api/v1"


def bearer(token: str) -> str:
    """The token as it is sent: without the whitespace around it (a token pasted with a space,
    or read from a CRLF tokens.csv with its CR). Any other character that is not printable
    ASCII is refused, by its code point only: the token is a secret, never shown."""
    clean = token.strip()
    if not clean:
        raise UsageError("the token (--token or SCORER_TOKEN) is empty")
    for at, char in enumerate(clean, 1):
        if not " " <= char <= "~":
            raise UsageError(
                f"the token (--token or SCORER_TOKEN) has U+{ord(char):04X} at character "
                f"{at}, which no token has: a token is printable ASCII, as `scorer serve team "
                "add` printed it; copy it again"
            )
    return clean


class NoRedirect(urllib.request.HTTPRedirectHandler):
    """Follows no redirect: urllib would send the token along to wherever the server points,
    another host included. The 3xx answer is an error instead (`redirected`)."""

    def redirect_request(
        self,
        req: urllib.request.Request,
        fp: IO[bytes],
        code: int,
        msg: str,
        headers: HTTPMessage,
        newurl: str,
    ) -> None:
        return None


def redirected(exc: urllib.error.HTTPError, asked: str) -> UsageError:
    """A server's redirect as an error of the command, naming where it pointed."""
    where = exc.headers.get("Location") if exc.headers is not None else None
    exc.close()
    if where is None:
        said = "without saying where to"
    else:  # the server's text: shown with its control characters escaped
        said = f"and redirects to {urllib.parse.urljoin(asked, where)!r}"
    return UsageError(
        f"the server answered {exc.code} {said}: scorer submit follows no redirect, so your "
        "token goes nowhere else; if that is the server, give its address as --server"
    )


class _HearsTheAnswer:
    """A connection that stops sending a body the server has stopped reading (it answered
    early, a 401 for a wrong token, and closed: the next block sent meets a broken pipe or
    a reset), so that the answer it already sent is read and reported, not the pipe."""

    _cut = False

    def send(self, data: Any) -> None:
        if self._cut:
            return
        try:
            super().send(data)  # type: ignore[misc]  # http.client's, after this in the MRO
        except (BrokenPipeError, ConnectionResetError):
            # the server's answer, if any, waits to be read: `getresponse` reads it, or
            # finds none and raises (`RemoteDisconnected`, an `OSError`)
            self._cut = True


class _HTTPConnection(_HearsTheAnswer, http.client.HTTPConnection):
    pass


class _HTTPSConnection(_HearsTheAnswer, http.client.HTTPSConnection):
    pass


class HearsTheAnswer(urllib.request.HTTPHandler):
    """urllib's handler of http://, over `_HearsTheAnswer` connections."""

    def http_open(self, req: urllib.request.Request) -> http.client.HTTPResponse:
        return self.do_open(_HTTPConnection, req)


class HearsTheAnswerTLS(urllib.request.HTTPSHandler):
    """urllib's handler of https://, over `_HearsTheAnswer` connections (its TLS settings
    unchanged: `do_open` is given the same arguments, with the connection class swapped)."""

    def do_open(
        self, http_class: Any, req: urllib.request.Request, **http_conn_args: Any
    ) -> http.client.HTTPResponse:
        return super().do_open(_HTTPSConnection, req, **http_conn_args)


@dataclass(frozen=True)
class Verdict:
    """The server's last word on an upload: its submission and the team's quota."""

    submission: dict[str, Any]

    @property
    def status(self) -> str:
        return str(self.submission["status"])


class Client:
    """A server at `url` (its root, or its `/api/v1`), as the team of `token`; plain http://
    to another machine than this one only with `insecure_http`."""

    def __init__(self, url: str, token: str, insecure_http: bool = False) -> None:
        self.api = api_address(url, insecure_http)
        self.token = bearer(token)
        handlers: list[urllib.request.BaseHandler] = [
            NoRedirect(),
            HearsTheAnswer(),
            HearsTheAnswerTLS(),
        ]
        if loopback(urllib.parse.urlsplit(self.api).hostname or ""):
            # a proxy of the environment (http_proxy) would get the token in clear, and could
            # not reach this machine's server anyway
            handlers.append(urllib.request.ProxyHandler({}))
        self.opener = urllib.request.build_opener(*handlers)

    def _ask(
        self,
        method: str,
        path: str,
        body: Iterator[bytes] | bytes | None = None,
        headers: dict[str, str] | None = None,
    ) -> bytes:
        request = urllib.request.Request(
            f"{self.api}{path}",
            data=body,  # urllib sends an iterable as it comes
            method=method,
            headers={"Authorization": f"Bearer {self.token}", **(headers or {})},
        )
        deadline = time.monotonic() + START
        while True:
            try:
                with self.opener.open(request, timeout=60) as answer:
                    return bytes(answer.read())
            except urllib.error.HTTPError as exc:
                if 300 <= exc.code < 400:
                    raise redirected(exc, request.full_url) from None
                raise refusal(exc) from None
            except urllib.error.URLError as exc:
                # a server starting or restarting refuses connections: waited for (a body
                # streamed from a file is sent once)
                starting = isinstance(exc.reason, ConnectionRefusedError) and body is None
                if not starting or time.monotonic() > deadline:
                    raise UsageError(
                        f"cannot reach the server at {self.api}: {exc.reason}"
                    ) from None
                time.sleep(POLL / 4)
            except OSError as exc:  # a timeout, a connection cut
                raise UsageError(f"cannot reach the server at {self.api}: {exc}") from None

    def json(self, method: str, path: str) -> dict[str, Any]:
        data: dict[str, Any] = json.loads(self._ask(method, path))
        return data

    def competition(self) -> Competition:
        return Competition.of(self.json("GET", "/competition")["spec"], where="the server")

    def check(self, file: Path) -> int:
        """Validate `file` against the server's rules and targets (a `SubmissionError`,
        as `scorer validate` reports it); its rows."""
        rules = self.competition()
        with tempfile.TemporaryDirectory(prefix="scorer-submit-") as folder:
            targets = Path(folder) / "targets.csv"
            targets.write_bytes(self._ask("GET", "/targets"))
            return validate(file, targets=targets, competition=rules).rows

    def upload(self, file: Path, description: str = "") -> int:
        """Send the file, streamed, with its `description` (`notes.description`, checked:
        a part of its own before the file's); its submission id."""
        boundary = secrets.token_hex(16)
        described = (
            f'--{boundary}\r\nContent-Disposition: form-data; name="description"\r\n'
            "Content-Type: text/plain; charset=utf-8\r\n\r\n"
            f"{description}\r\n"
            if description
            else ""
        )
        head = (
            f'{described}--{boundary}\r\nContent-Disposition: form-data; name="file"; '
            f'filename="{file.name.replace(chr(34), "_")}"\r\n'
            "Content-Type: application/octet-stream\r\n\r\n"
        ).encode()
        tail = f"\r\n--{boundary}--\r\n".encode()
        with open_regular(file, file.name) as handle:
            length = len(head) + file.stat().st_size + len(tail)

            def body() -> Iterator[bytes]:
                yield head
                while block := handle.read(BLOCK):
                    yield block
                yield tail

            answer = self._ask(
                "POST",
                "/submissions",
                body(),
                {
                    "Content-Type": f"multipart/form-data; boundary={boundary}",
                    "Content-Length": str(length),
                },
            )
        return int(json.loads(answer)["id"])

    def verdict(self, ident: int, wait: float) -> Verdict:
        """The submission once it has its verdict, or as it stands after `wait` seconds."""
        deadline = time.monotonic() + wait
        while True:
            found = Verdict(self.json("GET", f"/submissions/{ident}"))
            if found.status in ("scored", "rejected", "failed") or time.monotonic() > deadline:
                return found
            time.sleep(POLL)


def submit(
    file: Path,
    url: str,
    token: str,
    wait: float,
    insecure_http: bool = False,
    message: str = "",
) -> Verdict:
    """Check, upload with its description (`message`), wait: the verdict. A rejection is
    raised as `scorer validate` raises it (`SubmissionError`), whether found here or by the
    server; a description the server would refuse is refused before anything is sent."""
    try:
        description = notes.description(message)
    except notes.BadDescription as exc:
        raise UsageError(f"--message: {exc}") from None
    client = Client(url, token, insecure_http)
    client.check(file)
    verdict = client.verdict(client.upload(file, description), wait)
    report = verdict.submission.get("report") or {}
    if verdict.status == "rejected" and "problems" in report:
        raise SubmissionError(Report.from_dict(report))
    return verdict
