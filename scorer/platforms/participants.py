"""Every kit's `participants/` folder: the validator as a wheel with its dependencies, the
targets, the sample, and a README whose first command installs it with no index.

Participants could not get the validator every kit told them to run: `ranklist-scorer` is on
no package index. So the kit builds scorer's wheel from the installed package itself (no
network, no build tool: a wheel is a zip of the package's files and its metadata, PEP 427)
and puts beside it the wheels of its dependencies, downloaded once by the organiser (`pip
download`, for the organiser's own platform and Python) or taken from a folder they give.
"""

from __future__ import annotations

import base64
import hashlib
import importlib.metadata
import platform
import shutil
import subprocess
import sys
import zipfile
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

import polars as pl

from scorer.errors import UsageError
from scorer.platforms.common import Kit, template
from scorer.version import __version__

__all__ = ["DOWNLOAD", "FOLDER", "Files", "folder", "requirements", "wheel", "write"]

#: The folder every kit writes for participants, and its wheels' folder inside it.
FOLDER, WHEELS = "participants", "wheels"

#: `--wheels download`: fetch the dependencies' wheels with pip, for this machine.
DOWNLOAD = "download"

#: The installed distribution, the import package it holds, and its wheel's name.
DISTRIBUTION, PACKAGE = "ranklist-scorer", "scorer"
WHEEL_NAME = f"ranklist_scorer-{__version__}-py3-none-any.whl"

#: Every entry of the wheel gets this time: the same package makes the same bytes.
EPOCH = (1980, 1, 1, 0, 0, 0)


def requirements() -> list[str]:
    """What scorer needs to run, as the installed distribution declares it (no extras)."""
    declared = importlib.metadata.distribution(DISTRIBUTION).requires or []
    return [line for line in declared if "extra ==" not in line]


def wheel(folder: Path) -> Path:
    """scorer's wheel, made from the installed package's files into `folder`; its path."""
    found = importlib.metadata.distribution(DISTRIBUTION)
    metadata = found.read_text("METADATA") or found.read_text("PKG-INFO")
    if not metadata:  # an installation without metadata: the organiser's environment
        raise UsageError(f"the installed {DISTRIBUTION} has no metadata to make its wheel from")
    root = Path(str(resources.files(PACKAGE)))
    files = {
        f"{PACKAGE}/{path.relative_to(root).as_posix()}": path.read_bytes()
        for path in sorted(root.rglob("*"))
        if path.is_file() and "__pycache__" not in path.parts and path.suffix != ".pyc"
    }
    info = f"ranklist_scorer-{__version__}.dist-info"
    files[f"{info}/METADATA"] = metadata.encode()
    files[f"{info}/WHEEL"] = (
        b"Wheel-Version: 1.0\nGenerator: scorer kit\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
    )
    files[f"{info}/entry_points.txt"] = (found.read_text("entry_points.txt") or "").encode()
    record = [f"{name},sha256={_digest(data)},{len(data)}" for name, data in files.items()]
    files[f"{info}/RECORD"] = ("\n".join([*record, f"{info}/RECORD,,"]) + "\n").encode()
    path = folder / WHEEL_NAME
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in files.items():
            entry = zipfile.ZipInfo(name, EPOCH)
            entry.external_attr = 0o644 << 16
            archive.writestr(entry, data, zipfile.ZIP_DEFLATED)
    return path


def _digest(data: bytes) -> str:
    """A RECORD hash: sha256, urlsafe base64 without padding (PEP 376, PEP 427)."""
    return base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()


def dependencies(folder: Path, wheels: Path | str | None) -> bool:
    """Put the dependencies' wheels into `folder`: downloaded with pip (`DOWNLOAD`), copied
    from a folder of wheels, or none (`None`); whether there are any."""
    if wheels is None:
        return False
    if str(wheels) == DOWNLOAD:
        command = [sys.executable, "-m", "pip", "download", "--quiet", "--only-binary=:all:"]
        done = subprocess.run(
            [*command, "--dest", str(folder), *requirements()],
            capture_output=True,
            text=True,
            check=False,
        )
        if done.returncode != 0:  # no network, most often: the organiser's environment
            last = (done.stderr.strip().splitlines() or ["no message"])[-1]
            raise UsageError(
                f"pip could not download scorer's dependencies ({last}); give a folder of "
                "wheels with --wheels DIR, or --wheels none to ship scorer's wheel alone"
            )
        return True
    source = Path(wheels)
    found = sorted(source.glob("*.whl")) if source.is_dir() else []
    if not found:
        raise UsageError(f"--wheels {source}: no .whl file there; expected a folder of wheels")
    for path in found:
        if path.name != WHEEL_NAME:  # scorer's own is made from this installation
            shutil.copyfile(path, folder / path.name)
    return True


def write(kit: Kit, wheels: Path | str | None) -> list[Path]:
    """Write `participants/` into the kit; the files written."""
    rules = None if kit.competition_path is None else kit.competition_path.read_text()
    files = Files(kit.readme["title"], kit.target_users(), kit.sample(), rules)
    return folder(kit.out / FOLDER, files, wheels)


@dataclass(frozen=True)
class Files:
    """What a participants' folder holds besides the wheels: the title its README names
    (Markdown), the targets, the sample, and the competition file's text (None: lost items,
    the validator's default, and no file)."""

    title: str
    targets: pl.DataFrame
    sample: pl.DataFrame
    competition: str | None


def folder(out: Path, files: Files, wheels: Path | str | None, missing: str = "") -> list[Path]:
    """Write a participants' folder into `out`: the wheels (`dependencies`), the targets,
    the sample, the competition file and the README; the files written. `missing`: the
    dependencies that could not be had, as `pip install` names them; the README's first
    command then fetches them from PyPI."""
    (out / WHEELS).mkdir(parents=True, exist_ok=True)
    written = [wheel(out / WHEELS)]
    offline = dependencies(out / WHEELS, wheels)
    written += sorted(p for p in (out / WHEELS).glob("*.whl") if p.name != WHEEL_NAME)
    files.targets.write_csv(out / "targets.csv")
    files.sample.write_csv(out / "sample_submission.csv")
    written += [out / "targets.csv", out / "sample_submission.csv"]
    option = ""
    if files.competition is not None:
        written.append(_text(out / "competition.toml", files.competition))
        option = " --competition competition.toml"
    written.append(_text(out / "requirements.txt", "\n".join(requirements()) + "\n"))
    index = "--no-index " if offline and not missing else ""
    said = OFFLINE if offline else ONLINE
    if offline and missing:
        said = MISSING.replace("@@MISSING@@", missing)
    text = template(
        "participants_README.md.tmpl",
        title=files.title,
        install=f"python -m pip install {index}--find-links {WHEELS} {DISTRIBUTION}",
        option=option,
        made_for=made_for() if offline else "no system: scorer's wheel only",
        offline=said,
    )
    written.append(_text(out / "README.md", text))
    return written


def _text(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


def made_for() -> str:
    """The platform and Python the downloaded wheels are for: this machine's."""
    python = f"Python {sys.version_info.major}.{sys.version_info.minor}"
    return f"{python} on {platform.system()} {platform.machine()}"


OFFLINE = (
    "The first command needs no network: every wheel is in `wheels/`. They were made for the "
    "system named above; on another, run it without `--no-index`, and pip fetches what is "
    "missing from PyPI."
)
ONLINE = (
    "`wheels/` holds scorer's wheel alone: pip fetches its dependencies (polars, pyarrow, "
    "pandas, numpy, typer, rich) from PyPI, so the first command needs the network."
)
MISSING = (
    "`wheels/` lacks the wheels of @@MISSING@@, which the server could not get: pip fetches "
    "them from PyPI, so the first command needs the network (alone, `python -m pip install "
    "@@MISSING@@`)."
)
