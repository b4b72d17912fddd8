"""The competition page as a front door: the format a file must have, the sample, the
organiser's description, the times as people read them, and the participants' download (the
validator's wheels, the targets, the sample, the competition file and a README, one zip).

Nothing here reads the hidden solution: the sample's ids are the placeholders 1..k, the
same for every competition, and the download is made of the files a web process has."""

from __future__ import annotations

import hashlib
import json
import os
import shlex
import subprocess
import sys
import tempfile
import threading
import traceback
import zipfile
from html import escape
from pathlib import Path

import polars as pl
from starlette.responses import HTMLResponse, Response

from scorer.competition import Competition, IdKind, Rows
from scorer.contract import read_targets
from scorer.leaderboard.literal import markdown
from scorer.leaderboard.page import document
from scorer.platforms import participants
from scorer.serve import site
from scorer.serve.server import Server
from scorer.serve.settings import shown_time as shown_time  # the pages' times, written here
from scorer.version import __version__

#: Where a server keeps its participants' download, and what it was made from.
ZIP, STAMP = "participants.zip", "participants.json"

#: How long pip may wait for an index before a dependency is given up (seconds), and for the
#: whole download of one requirement: the server builds its zip with what it can have soon.
PIP_TIMEOUT, PIP_DEADLINE = 10, 300


def human_bytes(size: int) -> str:
    """A size in binary units as people read it: `1 GiB`, `1.5 MiB`, `512 bytes`."""
    for power, unit in ((40, "TiB"), (30, "GiB"), (20, "MiB"), (10, "KiB")):
        if size >= 1 << power:
            value = size / (1 << power)
            return f"{value:.0f} {unit}" if value == int(value) else f"{value:.1f} {unit}"
    return f"{size} byte{'s' if size != 1 else ''}"


# the format


def format_items(rules: Competition, max_upload: int) -> list[str]:
    """What a submission must be, as HTML list items: the columns, k, the row rule, the
    ids, the accepted files and the size cap."""
    c, k, words = rules.columns, rules.k, rules.words
    count = f"exactly {k}" if rules.rows is Rows.EXACTLY else f"at most {k}"

    def code(text: str) -> str:
        return f"<code>{escape(text)}</code>"

    def kind(which: IdKind) -> str:
        return "integers written in digits" if which is IdKind.INTEGER else "text, as written"

    items = [
        f"Long format: a header {code(f'{c.user},{c.item},{c.rank}')} (in any order), then "
        f"{count} rows for every target user, {code(c.rank)} an integer 1..{k}, no rank and "
        f"no {escape(words.item)} twice for a user.",
        f"Wide format: a header {code(f'{c.user},{c.list}')}, then one line a user: "
        f"{count} {escape(words.item)} ids in rank order in one cell, separated by spaces.",
        'Every target user (<a href="/api/v1/targets">targets.csv</a>) once, and no other '
        "user; row order does not matter.",
        f"Ids: {escape(words.user)} ids are {kind(rules.ids.user)}, {escape(words.item)} ids "
        f"{kind(rules.ids.item)}.",
        "Files: <code>.csv</code>, <code>.csv.gz</code>, <code>.parquet</code>, or "
        "<code>.zip</code> holding one <code>.csv</code> or <code>.parquet</code>; at most "
        f"{escape(human_bytes(max_upload))} an upload.",
        "Check a file before you upload it, with the rules and messages of the server: "
        f"{code('scorer validate FILE --targets targets.csv --competition competition.toml')}"
        " (the validator is in the participants' download).",
    ]
    return [f"<li>{item}</li>" for item in items]


# the description


#: The schemes a description's links may have: no `javascript:`, no `data:`.
SCHEMES = ("http:", "https:", "mailto:")


def description_html(text: str) -> str:
    """A description rendered from Markdown (CommonMark and tables) with any HTML in it
    shown as text, and links and images to http, https and mailto addresses only."""
    from markdown_it import MarkdownIt

    parser = MarkdownIt("commonmark", {"html": False}).enable("table")
    parser.validateLink = lambda url: url.strip().lower().startswith(SCHEMES)  # type: ignore[method-assign]
    return str(parser.render(text))


# the participants' download


class Download:
    """A server's participants' zip: built once, in a thread of its own, the first time it is
    asked for, and kept in the server's folder (`ZIP`) with what it was made from (`STAMP`):
    the next start of the same server on the same system reuses it."""

    def __init__(self, server: Server) -> None:
        self.server = server
        self.lock = threading.Lock()
        self.thread: threading.Thread | None = None

    @property
    def folder(self) -> Path:
        return self.server.folder

    @property
    def rules(self) -> Competition:
        return self.server.competition

    @property
    def title(self) -> str:
        return self.server.settings.title

    @property
    def targets(self) -> Path:
        return self.server.folder / site.TARGETS

    def stamp(self) -> str:
        """What the zip holds and is for: scorer's version, this Python and system, the
        files' and the title's hashes."""
        sample = site.sample_file(self.folder, self.rules)
        made = {
            "scorer": __version__,
            "for": participants.made_for(),
            "title": self.title,
            "targets": hashlib.sha256(self.targets.read_bytes()).hexdigest(),
            "sample": hashlib.sha256(sample.read_bytes()).hexdigest(),
            "competition": self.competition_text(),
        }
        return json.dumps(made, sort_keys=True)

    def competition_text(self) -> str:
        """The competition file: the organiser's as given, else the rules the server keeps."""
        given = self.folder / site.COMPETITION
        return given.read_text(encoding="utf-8") if given.is_file() else self.rules.to_toml()

    def ready(self) -> Path | None:
        """The zip, if it is built for these files; otherwise None, and it is being built."""
        path, stamp = self.folder / ZIP, self.folder / STAMP
        with self.lock:
            if path.is_file() and stamp.is_file() and stamp.read_text() == self.stamp():
                return path
            if self.thread is None or not self.thread.is_alive():
                self.thread = threading.Thread(target=self._build, name="download", daemon=True)
                self.thread.start()
        return None

    def _build(self) -> None:
        try:
            self.build()
        except Exception as exc:  # told to the organiser; the next request tries again
            print(f"scorer serve: the participants' download failed: {exc}", file=sys.stderr)
            traceback.print_exception(exc, file=sys.stderr)

    def build(self) -> Path:
        """Make the zip in a private scratch folder and move it in whole."""
        stamp = self.stamp()
        with tempfile.TemporaryDirectory(dir=self.folder) as scratch:
            work = Path(scratch)
            deps = work / "deps"
            deps.mkdir()
            missing = fetch(deps, participants.requirements())
            files = participants.Files(
                markdown(self.title),
                shown_targets(self.targets, self.rules),
                pl.read_csv(site.sample_file(self.folder, self.rules), infer_schema=False),
                self.competition_text(),
            )
            wheels = deps if any(deps.glob("*.whl")) else None
            named = " ".join(shlex.quote(r) for r in missing)
            participants.folder(work / participants.FOLDER, files, wheels, named)
            made = work / ZIP
            zipped(work, participants.FOLDER, made)
            os.replace(made, self.folder / ZIP)
            (self.folder / STAMP).write_text(stamp, encoding="utf-8")
        return self.folder / ZIP


def shown_targets(path: Path, rules: Competition) -> pl.DataFrame:
    """The targets file as the participants' folder writes it: one column, sorted users."""
    users = read_targets(path, competition=rules).sort()
    return pl.DataFrame({rules.columns.user: users})


def fetch(folder: Path, requirements: list[str]) -> list[str]:
    """Download the wheels of `requirements` (with theirs) for this system into `folder`,
    with pip as this Python has it set up (its cache, its index); the requirements that
    could not be had within `PIP_TIMEOUT`, to be fetched from PyPI by the participants."""
    command = [sys.executable, "-m", "pip", "download", "--quiet", "--only-binary=:all:"]
    command += ["--timeout", str(PIP_TIMEOUT), "--retries", "1", "--dest", str(folder)]

    def got(wanted: list[str]) -> bool:
        try:
            done = subprocess.run(
                [*command, *wanted],
                capture_output=True,
                check=False,
                timeout=PIP_DEADLINE,
                stdin=subprocess.DEVNULL,
            )
        except subprocess.TimeoutExpired:
            return False
        return done.returncode == 0

    if got(requirements):
        return []
    return [wanted for wanted in requirements if not got([wanted])]


def zipped(root: Path, name: str, out: Path) -> None:
    """`root / name`, every file under it, into the zip `out` under `name/`."""
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
        for path in sorted((root / name).rglob("*")):
            if path.is_file():
                archive.write(path, path.relative_to(root).as_posix())


def error_page(answered: Response) -> Response:
    """A JSON error answer (`app.error`) as the HTML page a browser shows: the same status,
    headers (`Retry-After`, `WWW-Authenticate`) and message."""
    try:
        found = json.loads(bytes(answered.body))["error"]
        message, code = str(found["message"]), str(found["code"])
    except (ValueError, KeyError, TypeError):
        message, code = "the server could not answer", "error"
    body = [
        f"<h1>{answered.status_code}: {escape(code.replace('_', ' '))}</h1>",
        f'<p class="verdict rejected" role="alert">{escape(message)}</p>',
        '<p><a href="/">Back to the competition</a></p>',
    ]
    page = HTMLResponse(document(f"{answered.status_code} {code}", body), answered.status_code)
    for name in ("retry-after", "www-authenticate"):
        if name in answered.headers:
            page.headers[name] = answered.headers[name]
    return page
