"""A session on the pages: logging in with a team's token gives a cookie holding a random
session id, which the store keeps only as its SHA-256 (`sqlsessions`), and opens the team's
page; logging in with the admin token, by the same form, opens the organiser's page (`admin`)
the same way. Every form the pages post is checked to come from the server's own pages
(`same_origin`).

The cookie is HttpOnly (no script reads it), SameSite=Strict (no other site's page sends it)
and Path=/, and `Secure` when the request came over HTTPS. The server knows that from the
request's scheme: HTTPS itself, or, behind a reverse proxy, uvicorn's proxy headers
(`X-Forwarded-Proto`, believed from the addresses of `FORWARDED_ALLOW_IPS`, 127.0.0.1 by
default: a proxy on the same machine)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from urllib.parse import urlsplit

from starlette.requests import Request

from scorer.serve.server import ServeError, Server
from scorer.serve.store import Team
from scorer.serve.tokens import digest, matches, new_token

#: The cookie's name.
COOKIE = "scorer_session"

#: How long a session lasts: a working day; the team logs in again after it.
LIFETIME = timedelta(hours=12)

#: What a login with a token that is no team's is told (a mistyped token, or one the
#: organiser replaced with a new one).
NOT_A_TOKEN = (
    "This token is not a team's token. Check that it was copied whole; a token the "
    "organiser replaced no longer works: use the new one."
)

#: What a login with a revoked team's token is told.
REVOKED = "This team's token was revoked; ask the organiser."

#: What a login on the organiser's form with another token is told (a team's included).
NOT_ADMIN = (
    "This is not the admin token. Check that it was copied whole: it is the token "
    "`scorer serve init` printed, once; a team's token does not open the organiser's page."
)


@dataclass(frozen=True)
class Login:
    """A session opened: its id, to be sent as the cookie, and the page it opens."""

    ident: str
    page: str


def bearer(request: Request) -> str | None:
    """The token of the request's `Authorization: Bearer` header, if it has one."""
    scheme, _, token = request.headers.get("authorization", "").partition(" ")
    return token.strip() if scheme.lower() == "bearer" and token.strip() else None


def cookie(request: Request, value: str, max_age: int) -> str:
    """A `Set-Cookie` value for the session (`max_age` 0: it ends now)."""
    parts = [f"{COOKIE}={value}", "Path=/", "HttpOnly", "SameSite=Strict", f"Max-Age={max_age}"]
    if request.url.scheme == "https":  # HTTPS, or a proxy's X-Forwarded-Proto (uvicorn's)
        parts.append("Secure")
    return "; ".join(parts)


def own_origin(request: Request) -> str:
    return f"{request.url.scheme}://{request.url.netloc}".lower()


def same_origin(request: Request) -> bool:
    """Whether a form was posted from the server's own pages: its `Origin`, or without one
    its `Referer`'s scheme, host and port, are the server's own. A post with neither is
    refused: every browser sends `Origin` with a form's POST."""
    origin = request.headers.get("origin")
    if origin is None:
        referer = urlsplit(request.headers.get("referer", ""))
        if not referer.scheme or not referer.netloc:
            return False
        origin = f"{referer.scheme}://{referer.netloc}"
    return origin.lower() == own_origin(request)


def log_in(server: Server, token: str, *, organiser: bool = False) -> Login:
    """A new session of the token's: the organiser's with the admin token, else its team's
    (not on the organiser's form: `organiser`). A token that opens nothing, or a revoked
    team's, is a `ServeError` in plain words."""
    clean = token.strip()
    if clean and matches(clean, server.settings.admin_sha256):
        ident = new_token()
        if server.store.open_admin_session(digest(ident), digest(clean), LIFETIME):
            return Login(ident, "/admin")
    if organiser:
        raise ServeError(401, "unauthorized", NOT_ADMIN)
    sha = digest(clean)
    team = server.store.team_of(sha) if clean else None
    if team is None:
        if clean and server.store.revoked(sha):
            raise ServeError(403, "revoked", REVOKED)
        raise ServeError(401, "unauthorized", NOT_A_TOKEN)
    ident = new_token()
    if not server.store.open_session(team.id, digest(ident), sha, LIFETIME):
        raise ServeError(401, "unauthorized", NOT_A_TOKEN)  # replaced a moment ago
    return Login(ident, "/team")


def team_of(server: Server, request: Request) -> Team | None:
    """The team of the request's session, if it is live."""
    ident = request.cookies.get(COOKIE, "")
    return server.store.session_team(digest(ident)) if ident else None


def organiser(server: Server, request: Request) -> bool:
    """Whether the request is the organiser's: a live organiser's session, or the admin
    token as its bearer (a script's `curl`)."""
    token = bearer(request)
    if token is not None and matches(token, server.settings.admin_sha256):
        return True
    ident = request.cookies.get(COOKIE, "")
    return bool(ident) and server.store.admin_session(digest(ident))


def log_out(server: Server, request: Request) -> None:
    ident = request.cookies.get(COOKIE, "")
    if ident:
        server.store.close_session(digest(ident))
