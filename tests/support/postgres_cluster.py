"""A throwaway PostgreSQL cluster for the tests: Debian's server binaries (`.ci/run` installs
the `postgresql` package as root), a cluster made by `initdb` in a new temporary folder and
run by an unprivileged user (`postgres` when the tests run as root), listening on a free
loopback port, stopped and removed at the end. Where it cannot be started the tests that
need it are skipped, and pytest's summary says why."""

from __future__ import annotations

import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any


def binaries() -> Path | None:
    """The folder of `initdb` and `pg_ctl`: on the PATH, else Debian's newest."""
    found = shutil.which("initdb")
    if found is not None:
        return Path(found).parent
    versions = sorted(Path("/usr/lib/postgresql").glob("*/bin/initdb"), key=lambda p: p.parts)
    return versions[-1].parent if versions else None


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class Unavailable(Exception):
    """Why no cluster could be started here."""


@contextmanager
def cluster() -> Iterator[str]:
    """A running cluster; the URL of its `postgres` database (trust on loopback only)."""
    folder = binaries()
    if folder is None:
        raise Unavailable("no PostgreSQL server here (initdb not found)")
    as_user: dict[str, Any] = {}
    home = Path(tempfile.mkdtemp(prefix="scorer-pg-"))
    if os.geteuid() == 0:  # PostgreSQL refuses to run as root
        try:
            user = pwd.getpwnam("postgres")
        except KeyError:
            shutil.rmtree(home)
            raise Unavailable("running as root, and no unprivileged 'postgres' user") from None
        os.chown(home, user.pw_uid, user.pw_gid)
        as_user = {"user": user.pw_uid, "group": user.pw_gid}
    data, port = home / "data", free_port()
    pg_ctl = [str(folder / "pg_ctl"), "-D", str(data)]
    started = False
    try:
        run(
            [
                str(folder / "initdb"),
                "-D",
                str(data),
                "-A",
                "trust",
                "-U",
                "scorer",
                "-E",
                "UTF8",
                "--no-sync",
            ],
            as_user,
        )
        options = f"-p {port} -k {home} -c listen_addresses=127.0.0.1 -c fsync=off"
        run([*pg_ctl, "-l", str(home / "log"), "-o", options, "-w", "start"], as_user)
        started = True
        yield f"postgresql://scorer@127.0.0.1:{port}/postgres"
    finally:
        if started:
            subprocess.run([*pg_ctl, "-m", "immediate", "stop"], capture_output=True, **as_user)
        shutil.rmtree(home, ignore_errors=True)


def run(command: list[str], as_user: dict[str, Any]) -> None:
    done = subprocess.run(command, capture_output=True, text=True, timeout=120, **as_user)
    if done.returncode != 0:
        raise Unavailable(f"{Path(command[0]).name} failed: {done.stderr.strip()[-300:]}")


def new_database(url: str) -> str:
    """A new, empty database of the cluster at `url`; its URL."""
    import psycopg

    name = f"t_{uuid.uuid4().hex}"
    with psycopg.connect(url, autocommit=True) as db:
        db.execute(f'CREATE DATABASE "{name}"')
    return url.rsplit("/", 1)[0] + f"/{name}"


def new_role(url: str, database: str, name: str | None = None) -> tuple[str, str]:
    """A role of the cluster at `url` that may log in and has no other right (`name`, else a
    new one; made once): its name, and the URL of `database` as that role."""
    import psycopg
    from psycopg.sql import SQL, Identifier

    name = name or f"r_{uuid.uuid4().hex}"
    with psycopg.connect(url, autocommit=True) as db:
        known = db.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", (name,)).fetchone()
        if known is None:
            db.execute(SQL("CREATE ROLE {} LOGIN").format(Identifier(name)))
    return name, database.replace("//scorer@", f"//{name}@", 1)
