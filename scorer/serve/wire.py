"""`scorer serve run` on the wire: the folder's lock, the listening socket, and every connection
held to time and counted, so that slow, idle or many clients cannot hold the server."""

from __future__ import annotations

import errno
import fcntl
import logging
import os
import resource
import socket
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path

import uvicorn
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from scorer.errors import UsageError
from scorer.serve.watch import Bounds, Gate, Reason, Tally, protocol

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

#: Connections waiting in the system to be accepted: uvicorn's own default.
BACKLOG = 2048


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
