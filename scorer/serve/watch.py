"""Every connection of a served competition held to time and counted: a connection over the
caps refused at once, one whose request takes too long closed, each told in one line a reason
(`Tally`); `wire` starts uvicorn with `Watched` as its protocol."""

from __future__ import annotations

import asyncio
import ipaddress
import json
import sys
from collections import Counter
from dataclasses import dataclass
from enum import Enum
from typing import ClassVar

import h11
from uvicorn.config import Config
from uvicorn.protocols.http.h11_impl import H11Protocol
from uvicorn.server import ServerState

#: Seconds over which the connections refused or closed for one reason are told as one line.
EVERY = 10.0

#: The most client addresses a line's count keeps apart (the rest are counted, not named).
NAMED = 1000


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
