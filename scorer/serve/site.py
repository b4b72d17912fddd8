"""A competition server's folder: its settings, the organiser's files, the store, the uploads.

`scorer serve init DIR` makes one; every other `scorer serve` command opens it. The folder
holds the hidden solution, so it and everything in it are the organiser's alone (0700).
"""

from __future__ import annotations

import datetime as dt
import json
import os
import shutil
import stat
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field, replace
from itertools import pairwise
from pathlib import Path
from typing import TYPE_CHECKING, Any

from scorer.api import validate
from scorer.commitment import commit, counts_of, file_sha256, new_salt
from scorer.competition import LOST_ITEMS, Competition
from scorer.contract import read_solution, read_targets
from scorer.errors import SubmissionError, UsageError
from scorer.platforms.common import placeholder_sample
from scorer.serve.sql import SqlStore
from scorer.serve.sqlcommit import REVEALED
from scorer.serve.sqlcore import NotAllowed, StoreUnavailable
from scorer.serve.sqlite import SqliteStore
from scorer.serve.store import TARGETS as TARGETS  # the folder's too
from scorer.serve.store import Limits
from scorer.serve.tokens import digest, new_token
from scorer.version import __version__

if TYPE_CHECKING:
    from scorer.serve.postgres import PostgresStore

#: The folder's files.
SETTINGS, STORE, UPLOADS = "settings.json", "store.sqlite", "uploads"
COMPETITION = "competition.toml"
SOLUTION, SALT = REVEALED  # the hidden files, which the reveal publishes
SAMPLE = "sample_submission.csv"

#: The organiser's files a PostgreSQL store holds, for machines without the folder: those any
#: of its machines reads, and those only workers read (`hidden`, which a web role may not:
#: the solution and the salt of its commitment, `scorer.commitment`).
SHARED, HIDDEN = (TARGETS, COMPETITION, SAMPLE), (SOLUTION, SALT)

#: The largest description an organiser gives (UTF-8 bytes): a page of text, not a file store.
MAX_DESCRIPTION = 64 * 1024


@dataclass(frozen=True)
class Settings:
    """What `init` was told: the competition's title, limits, picks and times (UTC)."""

    title: str
    daily_limit: int | None = 5
    rejected_limit: int | None = 20
    total_limit: int | None = None
    picks: int = 2
    freeze: str | None = None
    end: str | None = None
    #: When uploads open (None: at once) and when the final board is revealed on its own.
    start: str | None = None
    reveal_at: str | None = None
    #: Teams' own limits over the competition's, by team name: {"daily": 10, …}.
    team_limits: dict[str, dict[str, int]] = field(default_factory=dict)
    admin_sha256: str = ""
    #: The PostgreSQL database of the store (`postgresql://…`); None: SQLite in the folder.
    db: str | None = None

    def check_order(self) -> None:
        """Refuse times out of order: the start, the freeze, the end and the reveal come in
        that order (uploads open before they close)."""
        given = [
            (key, dt.datetime.fromisoformat(value))
            for key in ("start", "freeze", "end", "reveal_at")
            if (value := getattr(self, key)) is not None
        ]
        for (first, a), (then, b) in pairwise(given):
            if a > b or (first == "start" and a == b):
                raise UsageError(
                    f"--{first.replace('_', '-')} {a.isoformat()} is after "
                    f"--{then.replace('_', '-')} {b.isoformat()}"
                )

    @property
    def limits(self) -> Limits:
        """The limits these settings make, teams' own apart (`settings.limits_of`)."""
        start, end, reveal_at = (
            None if when is None else dt.datetime.fromisoformat(when)
            for when in (self.start, self.end, self.reveal_at)
        )
        return Limits(
            self.daily_limit,
            self.rejected_limit,
            self.total_limit,
            self.picks,
            end,
            start=start,
            reveal_at=reveal_at,
        )


def init(
    folder: Path,
    solution: Path,
    *,
    targets: Path | None = None,
    competition: Path | None = None,
    settings: Settings,
    web_role: str | None = None,
    sample: Path | None = None,
    description: Path | None = None,
) -> str:
    """Make a server's folder, the organiser's files checked and copied in; the admin token,
    which is stored only as its hash and shown this once. `web_role`: the PostgreSQL role
    of the web processes, given what they need and never the solution. `sample`: the
    sample submission participants download (default: one of placeholders); `description`:
    a Markdown file the page shows (`read_description`)."""
    if folder.exists() and (not folder.is_dir() or any(folder.iterdir())):
        raise UsageError(f"{folder}: not a new or empty folder")
    if web_role is not None and settings.db is None:
        raise UsageError("--web-role needs a PostgreSQL store (--db URL)")
    rules = LOST_ITEMS if competition is None else Competition.load(competition)
    truth = read_solution(solution, competition=rules)  # a broken solution: refused here
    users = truth.written_targets
    if targets is not None:
        listed = read_targets(targets, competition=rules)
        if set(listed.to_list()) != set(users.to_list()):
            raise UsageError(f"{targets}: its users are not the solution's target users")
    about = None if description is None else read_description(description)
    settings = replace(settings, title=settings.title or rules.name)
    settings.check_order()
    token = new_token()
    folder.mkdir(parents=True, exist_ok=True)
    os.chmod(folder, 0o700)  # the hidden solution lives here
    try:
        shutil.copyfile(solution, folder / SOLUTION)
        os.chmod(folder / SOLUTION, 0o600)
        write_salt(folder / SALT, new_salt())  # kept as hidden as the solution
        if competition is not None:
            shutil.copyfile(competition, folder / COMPETITION)
        column = rules.columns.user
        sorted_users = users.sort().to_list()  # an order that tells nothing of the split
        text = "\n".join([column, *map(str, sorted_users)]) + "\n"
        (folder / TARGETS).write_text(text, encoding="utf-8")
        write_sample(folder, rules, sample)  # checked as an upload is, before anything is kept
        (folder / UPLOADS).mkdir()
        stored = {**asdict(settings), "admin_sha256": digest(token)}
        (folder / SETTINGS).write_text(json.dumps(stored, indent=2) + "\n", encoding="utf-8")
        store = open_store(folder, settings)  # its tables made, in the folder or the database
        if settings.db is not None:  # every machine of the server reads the competition there
            files = {name: folder / name for name in SHARED if (folder / name).is_file()}
            hidden = {name: folder / name for name in HIDDEN}
            try:
                shared = postgres(store).share(
                    {**stored, "db": None}, files, hidden, web_role=web_role
                )
            except ValueError as exc:  # a role unknown, or one that could read it all
                raise UsageError(f"--web-role: {exc}") from None
            if not shared:
                raise UsageError("the database holds a competition already; give a new one")
        else:  # the settings every process reads, and may change (`serve settings`)
            store.put_settings({**stored, "db": None})
        if about is not None:  # in the store: every web process reads it, and it may change
            store.put_description(about)
        salt, at = (folder / SALT).read_text(encoding="ascii"), store.clock().isoformat()
        sealed = commit(
            file_sha256(folder / SOLUTION), counts_of(truth.users), salt, __version__, at
        )
        store.add_commitment(sealed, folder / SALT)  # published from now on, the salt hidden
    except BaseException:
        shutil.rmtree(folder, ignore_errors=True)
        raise
    return token


def write_salt(path: Path, salt: str) -> None:
    """A commitment's salt, readable by the organiser only, as the solution is."""
    handle = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with open(handle, "w", encoding="ascii") as out:
        out.write(salt)


def read_description(path: Path) -> str:
    """An organiser's description file (Markdown, UTF-8, at most `MAX_DESCRIPTION` bytes),
    checked, for `init --description` and any later change of it; a file that breaks these
    is a usage error naming it."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise UsageError(f"--description {path}: cannot read it ({exc.strerror})") from None
    if len(data) > MAX_DESCRIPTION:
        raise UsageError(
            f"--description {path}: {len(data):,} bytes; a description has at most "
            f"{MAX_DESCRIPTION:,} bytes (64 KiB)"
        )
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise UsageError(f"--description {path}: not UTF-8 text (byte {exc.start})") from None
    if "\x00" in text:
        raise UsageError(f"--description {path}: holds a NUL byte; expected Markdown text")
    return text


def write_sample(
    folder: Path, rules: Competition, given: Path | None, out: Path | None = None
) -> Path:
    """The sample submission the server offers, as `folder`'s `SAMPLE` (or `out`): the
    organiser's (`given`, a CSV file) or one of placeholders (every target user with the ids
    1..k, which say nothing of the solution), checked against the folder's targets by the
    competition's rules as an upload is; its path."""
    path, targets = out or folder / SAMPLE, folder / TARGETS
    if given is None:
        users = read_targets(targets, competition=rules).sort()  # an order that tells nothing
        placeholder_sample(users, rules).write_csv(path)
        what = "the placeholder sample"
    else:
        if not given.name.lower().endswith(".csv"):
            raise UsageError(f"--sample {given}: expected a .csv file, the sample people read")
        try:
            shutil.copyfile(given, path)
        except OSError as exc:
            raise UsageError(f"--sample {given}: cannot read it ({exc.strerror})") from None
        what = f"--sample {given}"
    try:
        validate(path, targets=targets, competition=rules)
    except SubmissionError as exc:
        path.unlink()
        raise UsageError(f"{what}: not a valid submission: {exc.report.render()}") from None
    return path


def sample_file(folder: Path, rules: Competition) -> Path:
    """The folder's sample; a folder made before samples were kept gets the placeholder one."""
    path = folder / SAMPLE
    if not path.is_file():
        with tempfile.TemporaryDirectory(dir=folder) as scratch:
            made = write_sample(folder, rules, None, Path(scratch) / SAMPLE)
            os.replace(made, path)
    return path


def settings_of(folder: Path) -> Settings:
    """A server folder's settings; a folder `init` did not make is a usage error."""
    path = folder / SETTINGS
    try:
        data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
        return Settings(**data)
    except (OSError, ValueError, TypeError):
        raise UsageError(f"{folder}: not a server folder (run `scorer serve init` first)") from None


def from_database(
    url: str, folder: Path, *, solution: bool = False, organiser: bool = False
) -> Settings:
    """Write into a new private folder the competition a database holds, for a machine that
    has no other copy of it: its settings (naming the database), the targets and the rules,
    and the hidden solution only when asked (`solution`: a worker, never a web process).
    `organiser`: for an organiser's command, which a web process's role may not run."""
    store = postgres(open_store(folder, Settings(title="", db=url)))  # limits unused here
    found = store.settings()
    if found is None:
        raise UsageError("the database holds no competition: run `scorer serve init DIR --db URL`")
    if organiser and not store.organiser():
        raise UsageError(
            "--db: this database role is a web process's, which may not read the solution: "
            "the organiser's commands need the organiser's role, the one `serve init --db` "
            "made the competition with"
        )
    settings = Settings(**{**found, "db": url})
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    wanted = [(name, False) for name in SHARED] + [(name, True) for name in HIDDEN if solution]
    for name, hidden in wanted:
        try:
            kept = store.fetch(name, folder / name, hidden=hidden)
        except NotAllowed:
            raise UsageError(
                "this database role may not read the solution: a web process of it runs "
                "with --no-workers, and workers with the organiser's role"
            ) from None
        if not kept:
            (folder / name).unlink()
    (folder / UPLOADS).mkdir(exist_ok=True)
    text = json.dumps(asdict(settings), indent=2) + "\n"
    (folder / SETTINGS).write_text(text, encoding="utf-8")
    return settings


#: The start of the name of a private folder `scratch` makes; its process id follows.
SCRATCH = "scorer-serve-"


@contextmanager
def scratch() -> Iterator[Path]:
    """A new private folder (0700) of this process, named by its id, removed when done: the
    competition of a machine given only the database, and every temporary file the process
    makes (`tmp`, where `TMPDIR` points meanwhile). Those of this user's processes that
    died before removing theirs (`kill -9`, a crash), each with the competition and perhaps
    the solution in it, are removed first."""
    for old in Path(tempfile.gettempdir()).glob(f"{SCRATCH}*-*"):
        pid = old.name.removeprefix(SCRATCH).split("-", 1)[0]
        if pid.isdigit() and _mine(old) and not _alive(int(pid)):
            shutil.rmtree(old, ignore_errors=True)
    home = Path(tempfile.mkdtemp(prefix=f"{SCRATCH}{os.getpid()}-"))
    temporary = home / "tmp"
    temporary.mkdir(mode=0o700)
    # Every temporary file of this process and of those it starts (the solution's private
    # copy, each judging process's folder, polars' spills) is made in it, and goes with it.
    before = tempfile.tempdir, os.environ.get("TMPDIR")
    tempfile.tempdir = os.environ["TMPDIR"] = str(temporary)
    try:
        yield home
    finally:
        tempfile.tempdir = before[0]
        if before[1] is None:
            os.environ.pop("TMPDIR", None)
        else:
            os.environ["TMPDIR"] = before[1]
        shutil.rmtree(home, ignore_errors=True)


def _mine(path: Path) -> bool:
    """Whether `path` is a folder of this user's own, not a link to one."""
    try:
        found = path.lstat()
    except OSError:
        return False
    return stat.S_ISDIR(found.st_mode) and found.st_uid == os.getuid()


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)  # no signal sent: whether there is such a process
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's
        return True
    return True


def postgres(store: SqlStore) -> PostgresStore:
    """A store that holds the files (PostgreSQL) as its type says it."""
    from scorer.serve.postgres import PostgresStore

    if not isinstance(store, PostgresStore):
        raise UsageError("this needs a server whose store is PostgreSQL (init --db)")
    return store


def rules_of(folder: Path) -> Competition:
    """The competition a server's folder scores: its `competition.toml`, else lost items."""
    rules = folder / COMPETITION
    return Competition.load(rules) if rules.is_file() else LOST_ITEMS


def store_of(folder: Path) -> SqlStore:
    return open_store(folder, settings_of(folder))


def open_store(folder: Path, settings: Settings) -> SqlStore:
    """The folder's store: SQLite in it, or the PostgreSQL database its settings name."""
    if settings.db is None:
        return SqliteStore(folder / STORE, settings.limits)
    if not settings.db.startswith(("postgresql://", "postgres://")):
        raise UsageError(f"--db {settings.db!r}: expected a postgresql:// address")
    try:
        from scorer.serve.postgres import PostgresStore

        return PostgresStore(settings.db, settings.limits)
    except ModuleNotFoundError as exc:
        raise UsageError(
            f"a PostgreSQL store needs psycopg ({exc.name} is missing): "
            "pip install 'ranklist-scorer[postgres]'"
        ) from None
    except (StoreUnavailable, ValueError) as exc:  # no server, a refused login, a bad URL
        raise UsageError(f"cannot use the database: {exc}") from None
