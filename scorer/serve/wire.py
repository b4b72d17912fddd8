"""`scorer serve run` on the wire: the folder's lock, the listening socket, and every connection
held to time and counted, so that slow, idle or many clients cannot hold the server."""

from __future__ import annotations

import asyncio
import errno
import fcntl
import ipaddress
import json
import logging
import os
import resource
import socket
import sys
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from enum import Enum
from pathlib import Path
from typing import ClassVar

import h11
import uvicorn
from starlette.types import ASGIApp, Message, Receive, Scope, Send
from uvicorn.config import Config
from uvicorn.protocols.http.h11_impl import H11Protocol
from uvicorn.server import ServerState

from scorer.errors import UsageError

#: Open files kept for what is not a connection: about 30 the process's own (the databases,
#: the loop, the log, the workers' pipes), about 120 the database connections of the 40
#: threads that answer requests, twice `AT_ONCE` sockets accepted before the gate counts them,
#: and room for the uploads being written.
RESERVE = 256

#: The most connections the loop accepts in one turn, each an open file before `Watched`
#: refuses it (asyncio accepts as many as the listening backlog at once: 2,048 ran a limit of
#: 1,024 out of files).
AT_ONCE = 32

#: The fewest connections a server takes, whatever its open-file limit.
FEWEST = 16

#: The lock file of a folder being served.
LOCK = "serve.lock"

#: Seconds over which the connections refused or closed for one reason are told as one line.
EVERY = 10.0

#: The most client addresses a line's count keeps apart (the rest are counted, not named).
NAMED = 1000

#: Connections waiting in the system to be accepted: uvicorn's own default.
BACKLOG = 2048


@dataclass(frozen=True)
class Bounds:
    """What the server allows one connection and all of them: `idle` seconds for a request's
    headers to be complete, and at most between two pieces of its body; `upload` seconds for
    a whole request to arrive; `per_address` open connections from one client address,
    `connections` in all."""

    idle: float
    upload: float
    per_address: int
    connections: int


def open_files() -> int:
    """How many files this process may open: its soft limit, first raised to the hard one
    (each open connection is a file, and the soft limit is often 1,024 where the hard one is
    far higher)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != hard:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
            soft = hard
        except (ValueError, OSError):  # macOS: an "unlimited" hard limit is not one to set
            pass
    return 1 << 20 if soft == resource.RLIM_INFINITY else soft


def bounds(idle: float, upload: float, per_address: int, connections: int | None) -> Bounds:
    """The `Bounds` of `serve run`'s options: `connections` by default as many as the
    open-file limit leaves beside `RESERVE`, so that `accept()` never runs out of files."""
    files = open_files()
    room = max(FEWEST, files - RESERVE)
    if connections is None:
        connections = room
    elif connections > room:
        raise UsageError(
            f"--max-connections {connections:,}: at most {room:,} under this process's limit "
            f"of {files:,} open files ({RESERVE} kept for the store, the uploads and the workers)"
        )
    return Bounds(idle, upload, per_address, connections)


@contextmanager
def locked(folder: Path) -> Iterator[None]:
    """Hold the folder's lock while the block runs; a second server on the folder is a usage
    error (its start would sweep away the first's uploads under way). The lock ends with the
    process, `kill -9` included; the file stays, empty."""
    fd = os.open(folder / LOCK, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise UsageError(
                f"{folder}: another `scorer serve run` is serving this folder; stop it first"
            ) from None
        yield
    finally:
        os.close(fd)


def listen(host: str, port: int) -> socket.socket:
    """The server's socket, bound and listening before anything starts: a port in use is a
    usage error that names it."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET  # uvicorn's rule
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        # a restart at once after a stop takes the port back from the old connections'
        # TIME_WAIT; a port another socket listens on is still refused
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
        sock.listen(BACKLOG)
    except OSError as exc:
        sock.close()
        if exc.errno == errno.EADDRINUSE:
            raise UsageError(
                f"port {port} on {host} is in use: another server listens there; stop it, "
                "or choose another --port"
            ) from None
        raise UsageError(f"cannot listen on {host} port {port}: {exc.strerror}") from None
    return sock


class Reason(Enum):
    """Why a connection was refused or closed: what its log line does and says."""

    PER_ADDRESS = "refused", "over the cap of {per_address:,} open connections per address"
    TOTAL = "refused", "over the cap of {connections:,} open connections in all"
    HEADERS = "closed", "whose request headers were not complete within {idle:g} s"
    STALLED = "closed", "whose request body made no progress for {idle:g} s"
    UPLOAD_TIME = "closed", "whose request took over {upload:g} s (--upload-time)"
    GONE = "lost", "closed by the client mid-request"
    INVALID = "answered 400 to", "that sent no valid HTTP request"
    ACCEPT = "could not accept", "(the process is out of open files, or the system of memory)"


class Tally:
    """Connections refused or closed, told on stderr as one line a reason at most every
    `every` seconds: the first of a quiet spell at once, the others as one count when the
    spell's window ends. A flood is a line, not a line a connection; only addresses are
    named, nothing the client wrote."""

    def __init__(self, bounds: Bounds, every: float = EVERY) -> None:
        self.bounds, self.every = bounds, every
        #: The reasons in a window, with the addresses counted in it and their total.
        self._seen: dict[Reason, Counter[str]] = {}
        self._total: dict[Reason, int] = {}

    def add(self, reason: Reason, address: str = "") -> None:
        if reason in self._seen:
            self._total[reason] += 1
            seen = self._seen[reason]
            if address in seen or len(seen) < NAMED:  # a spread flood costs no memory
                seen[address] += 1
            return
        self._write(reason, Counter({address: 1}), 1, window=False)
        self._open(reason)

    def flush(self) -> None:
        """Tell what the windows still open counted (at the server's stop)."""
        for reason in list(self._seen):
            if self._total[reason]:
                self._write(reason, self._seen[reason], self._total[reason], window=True)
        self._seen.clear()
        self._total.clear()

    def _open(self, reason: Reason) -> None:
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # outside the server's loop: each is told on its own
            return
        self._seen[reason], self._total[reason] = Counter(), 0
        loop.call_later(self.every, self._close, reason)

    def _close(self, reason: Reason) -> None:
        seen, total = self._seen.pop(reason, Counter()), self._total.pop(reason, 0)
        if total:  # still coming: told, and counted on in a new window
            self._write(reason, seen, total, window=True)
            self._open(reason)

    def _write(self, reason: Reason, seen: Counter[str], total: int, *, window: bool) -> None:
        verb, why = reason.value
        named = [(address, count) for address, count in seen.most_common() if address]
        source = ""
        if len(named) == 1:
            source = f" from {named[0][0]}"
        elif named:
            top, most = named[0]
            source = f" from {len(named):,} addresses (most from {top}: {most:,})"
        when = f" in the last {self.every:g} s" if window else ""
        what = why.format(**vars(self.bounds))
        plural = "" if total == 1 else "s"
        line = f"scorer serve: {verb} {total:,} connection{plural}{source} {what}{when}"
        print(line, file=sys.stderr, flush=True)


class Gate:
    """The open connections, by client address and in all, against the server's `Bounds`,
    with the `Tally` of those refused or closed."""

    def __init__(self, bounds: Bounds, tally: Tally) -> None:
        self.bounds, self.tally = bounds, tally
        self.total = 0
        self.by_address: Counter[str] = Counter()

    def admit(self, address: str) -> Reason | None:
        """Count a new connection in, or the reason it is refused."""
        if self.by_address[address] >= self.bounds.per_address:
            return Reason.PER_ADDRESS
        if self.total >= self.bounds.connections:
            return Reason.TOTAL
        self.total += 1
        self.by_address[address] += 1
        return None

    def release(self, address: str) -> None:
        self.total -= 1
        self.by_address[address] -= 1
        if self.by_address[address] <= 0:
            del self.by_address[address]  # a client gone leaves no entry behind


def address_of(client: tuple[str, int] | None) -> str:
    """The address a client's connections are counted under: its IPv4 address, or its IPv6
    /64 (a single host is commonly given a whole /64, so a finer count caps nobody)."""
    if client is None:
        return ""
    try:
        ip = ipaddress.ip_address(client[0].split("%", 1)[0])
    except ValueError:
        return client[0]
    if isinstance(ip, ipaddress.IPv6Address):
        if ip.ipv4_mapped is not None:
            return str(ip.ipv4_mapped)
        return str(ipaddress.IPv6Network((ip, 64), strict=False))
    return str(ip)


def _answer(status: str, code: str, message: str, *headers: str) -> bytes:
    """A whole response written raw, in the API's error shape, before closing."""
    body = json.dumps({"status": "error", "error": {"code": code, "message": message}})
    lines = [
        f"HTTP/1.1 {status}",
        "content-type: application/json",
        f"content-length: {len(body)}",
        "connection: close",
        "cache-control: no-store",
        "x-content-type-options: nosniff",
        *headers,
    ]
    return ("\r\n".join(lines) + "\r\n\r\n" + body).encode()


REFUSED = _answer(
    "503 Service Unavailable",
    "too_many_connections",
    "too many open connections, from your address or in all; try again soon",
    "retry-after: 10",
)
TIMED_OUT = _answer(
    "408 Request Timeout",
    "request_timeout",
    "the request stood still, or took longer than the server allows; the upload is not kept",
)


class Phase(Enum):
    """Where a connection's request stands, as far as the client's time goes."""

    HEAD = "head"  # waiting for a request's headers
    BODY = "body"  # reading its body


class Watched(H11Protocol):
    """uvicorn's HTTP/1.1 protocol, each connection counted by the `gate` and held to its
    bounds: refused at once over a cap; closed when its request's headers are not complete
    within `idle` seconds of the connection's start (or of the end of the request before it),
    when its body makes no progress for `idle` seconds, or when the whole request takes over
    `upload` seconds. The app, if it is reading, hears `http.disconnect`."""

    gate: ClassVar[Gate]

    def __init__(
        self,
        config: Config,
        server_state: ServerState,
        app_state: dict[str, object],
        _loop: asyncio.AbstractEventLoop | None = None,
    ) -> None:
        super().__init__(config, server_state, app_state, _loop)
        self.address = ""
        self.admitted = False
        self.phase: Phase | None = Phase.HEAD
        #: When the request began (its headers' phase), and when bytes last came in.
        self.since = self.progress = self.loop.time()
        self.timer: asyncio.TimerHandle | None = None
        self.client_closed = False

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self.address = address_of(self.client)
        refused = self.gate.admit(self.address)
        if refused is not None:
            self.gate.tally.add(refused, self.address)
            transport.write(REFUSED)
            transport.close()
            return
        self.admitted = True
        self.since = self.progress = self.loop.time()
        self._arm()

    def data_received(self, data: bytes) -> None:
        self.progress = self.loop.time()
        super().data_received(data)
        self._watch()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        self._watch()

    def eof_received(self) -> None:
        self.client_closed = True
        super().eof_received()

    def connection_lost(self, exc: Exception | None) -> None:
        if self.timer is not None:
            self.timer.cancel()
            self.timer = None
        if self.admitted:
            self.admitted = False
            self.gate.release(self.address)
            cycle = self.cycle  # a request under way that the server did not cut
            under_way = cycle is not None and not (cycle.response_complete or cycle.disconnected)
            if under_way and (self.client_closed or exc is not None):
                self.gate.tally.add(Reason.GONE, self.address)
        super().connection_lost(exc)

    def _watch(self) -> None:
        """Follow the client's side of the request as h11 sees it; a new phase, a new
        deadline (within one, the timer set checks again when it fires)."""
        state = self.conn.their_state
        phase = {h11.IDLE: Phase.HEAD, h11.SEND_BODY: Phase.BODY}.get(state)
        if phase is self.phase:
            return
        if phase is Phase.HEAD:  # a request begins (after the last one's answer)
            self.since = self.loop.time()
        self.phase = phase
        self._arm()

    def _due(self) -> tuple[float, Reason] | None:
        """When the connection is due to be closed, and why; None while the app answers."""
        idle, upload = self.gate.bounds.idle, self.gate.bounds.upload
        if self.phase is Phase.HEAD:
            return self.since + idle, Reason.HEADERS
        if self.phase is Phase.BODY:
            stalled = self.progress + idle, Reason.STALLED
            whole = self.since + upload, Reason.UPLOAD_TIME
            return min(stalled, whole, key=lambda due: due[0])
        return None

    def _arm(self) -> None:
        if self.timer is not None:
            self.timer.cancel()
            self.timer = None
        due = self._due()
        if due is not None and not self.transport.is_closing():
            self.timer = self.loop.call_at(due[0], self._expire)

    def _expire(self) -> None:
        self.timer = None
        if self.transport.is_closing():
            return
        now = self.loop.time()
        if self.phase is Phase.BODY and self._waiting_on_us():
            self.progress = now  # the client is owed no progress while the server holds it
        due = self._due()
        if due is None:
            return
        if now < due[0]:
            self.timer = self.loop.call_at(due[0], self._expire)
            return
        self._cut(due[1])

    def _waiting_on_us(self) -> bool:
        """Whether a body stands still for the server's sake: reading paused until the app
        takes what it has, or the client waiting for its `100 Continue`."""
        cycle = self.cycle
        return self.flow.read_paused or (cycle is not None and cycle.waiting_for_100_continue)

    def _cut(self, reason: Reason) -> None:
        """Close the connection for `reason`: a 408 first if a request has no answer yet."""
        self.gate.tally.add(reason, self.address)
        cycle = self.cycle
        if cycle is not None and not cycle.response_complete:
            if not cycle.response_started:
                self.transport.write(TIMED_OUT)
            # the app hears of it now, not after the close: what it sends is dropped, what it
            # reads is `http.disconnect` (uvicorn's own handling of a connection lost)
            cycle.disconnected = True
            cycle.message_event.set()
        if self.transport.get_write_buffer_size():
            self.transport.abort()  # a client that does not read holds no connection open
        else:
            self.transport.close()


def protocol(gate: Gate) -> type[Watched]:
    """`Watched` for one server: its connections share `gate`."""

    class Served(Watched):
        pass

    Served.gate = gate
    return Served


class Disconnected(BaseException):
    """The client went away before its request's body ended. Not an `Exception`: the app
    reports those as bugs, with a traceback, and a client gone is none; code that cleans up
    on any exit (`uploads.receive` removes the partial file) still sees it."""


class Quiet:
    """The app, told a client gone mid-body as `Disconnected`, which ends the request without
    a word here: the protocol counted it (`Reason.GONE`, or the timeout that cut it)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        ended = False

        async def receiving() -> Message:
            nonlocal ended
            message = await receive()
            if message["type"] == "http.request":
                ended = not message.get("more_body", False)
            elif message["type"] == "http.disconnect" and not ended:
                raise Disconnected
            return message

        with suppress(Disconnected):
            await self.app(scope, receiving, send)


#: The log records that would come once a connection, told by the `Tally` instead: asyncio's
#: `accept()` out of files (with a traceback each), uvicorn's invalid request.
TOLD = {
    "asyncio": ("socket.accept() out of system resource", Reason.ACCEPT),
    "uvicorn.error": ("Invalid HTTP request received.", Reason.INVALID),
}


class Told(logging.Filter):
    """Drops a logger's record that the `Tally` counts instead (`TOLD`)."""

    def __init__(self, logger: str, tally: Tally) -> None:
        super().__init__()
        self.start, self.reason = TOLD[logger]
        self.tally = tally

    def filter(self, record: logging.LogRecord) -> bool:
        if isinstance(record.msg, str) and record.msg.startswith(self.start):
            self.tally.add(self.reason)
            return False
        return True


@contextmanager
def told(tally: Tally) -> Iterator[None]:
    """`TOLD`'s records counted by `tally` while the block runs."""
    filters = [(logging.getLogger(name), Told(name, tally)) for name in TOLD]
    for logger, kept in filters:
        logger.addFilter(kept)
    try:
        yield
    finally:
        for logger, kept in filters:
            logger.removeFilter(kept)
        tally.flush()


class _Server(uvicorn.Server):
    """uvicorn's server, which says where it listens (it does not when given the socket), and
    lets the system hold `BACKLOG` connections while the loop takes `AT_ONCE` a turn."""

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        await super().startup(sockets)
        for sock in sockets or []:
            sock.listen(BACKLOG)  # asyncio set it to its batch, `Config.backlog`
        if self.started and sockets:
            host, port = sockets[0].getsockname()[:2]
            where = f"[{host}]" if ":" in host else host
            logging.getLogger("uvicorn.error").info(
                "Listening on http://%s:%d (Ctrl-C to stop)", where, port
            )


def serve(app: ASGIApp, sock: socket.socket, limits: Bounds) -> None:
    """Serve `app` on the listening `sock` under uvicorn, every connection held to `limits`,
    until a signal stops it."""
    tally = Tally(limits)
    config = uvicorn.Config(
        Quiet(app),
        http=protocol(Gate(limits, tally)),
        ws="none",  # no route takes a WebSocket, and an upgraded connection leaves the gate
        loop="asyncio",  # the loop whose `accept()` failures `TOLD` knows
        backlog=AT_ONCE,
        server_header=False,
        date_header=True,
        log_level="info",
    )
    with told(tally):  # after Config, which sets the logging up
        _Server(config).run(sockets=[sock])
