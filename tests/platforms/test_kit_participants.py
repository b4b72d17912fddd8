"""Every kit's `participants/` folder (issue 23): scorer's wheel made from the installed
package, the dependencies' wheels, the targets, the sample and a README whose first command
installs the validator with no index and whose second validates the sample."""

from __future__ import annotations

import base64
import csv
import hashlib
import io
import re
import zipfile
from pathlib import Path

import pytest
from support.kits import SOLUTION, follow_offline, readme_commands
from support.paths import DATA

from scorer.errors import UsageError
from scorer.platforms import participants
from scorer.platforms.kit import build


def test_the_wheel_is_the_installed_package_with_its_metadata(tmp_path: Path) -> None:
    """PEP 427: the package's files, a dist-info with METADATA, WHEEL, entry_points.txt and a
    RECORD holding every file's sha256 (urlsafe base64, no padding) and size."""
    path = participants.wheel(tmp_path)
    assert path.name == participants.WHEEL_NAME
    with zipfile.ZipFile(path) as archive:
        names = archive.namelist()
        info = next(n.split("/")[0] for n in names if n.endswith(".dist-info/RECORD"))
        rows = list(csv.reader(io.StringIO(archive.read(f"{info}/RECORD").decode())))
        for name, digest, size in rows:
            if name == f"{info}/RECORD":
                assert digest == size == ""
                continue
            data = archive.read(name)
            expected = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=")
            assert digest == f"sha256={expected.decode()}" and int(size) == len(data), name
        assert {r[0] for r in rows} == set(names)
        assert "scorer = scorer.__main__:main" in archive.read(f"{info}/entry_points.txt").decode()
        assert "Tag: py3-none-any" in archive.read(f"{info}/WHEEL").decode()
        assert "Name: ranklist-scorer" in archive.read(f"{info}/METADATA").decode()
    for needed in (
        "scorer/cli.py",
        "scorer/py.typed",
        "scorer/platforms/kaggle_metric.py",
        "scorer/platforms/templates/participants_README.md.tmpl",
    ):
        assert needed in names
    assert not [n for n in names if "__pycache__" in n or n.endswith(".pyc")]


def test_the_wheel_is_the_same_bytes_each_time(tmp_path: Path) -> None:
    for name in ("a", "b"):
        (tmp_path / name).mkdir()
    first, second = participants.wheel(tmp_path / "a"), participants.wheel(tmp_path / "b")
    assert first.read_bytes() == second.read_bytes()


@pytest.mark.parametrize("platform", ["kaggle", "codabench", "evalai"])
def test_every_kit_has_a_participants_folder(tmp_path: Path, platform: str) -> None:
    hm = DATA / "hm"
    out = tmp_path / "kit"
    build(platform, hm / "solution.csv", out, competition=hm / "competition.toml")
    folder = out / "participants"
    assert sorted(p.name for p in folder.iterdir()) == [
        "README.md",
        "competition.toml",
        "requirements.txt",
        "sample_submission.csv",
        "targets.csv",
        "wheels",
    ]
    assert [p.name for p in (folder / "wheels").iterdir()] == [participants.WHEEL_NAME]
    assert (folder / "targets.csv").read_text().splitlines()[0] == "customer_id"
    assert (folder / "sample_submission.csv").read_text().splitlines()[
        0
    ] == "customer_id,prediction"
    readme = (folder / "README.md").read_text()
    commands = re.findall(r"^\$ (.+)$", readme, re.M)
    assert commands[:2] == [
        "python -m pip install --find-links wheels ranklist-scorer",
        "scorer validate sample_submission.csv --targets targets.csv"
        " --competition competition.toml",
    ]
    assert "needs the network" in readme  # no dependency wheels: said plainly
    assert (folder / "requirements.txt").read_text().split() == participants.requirements()


def test_a_folder_without_wheels_is_refused(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    with pytest.raises(UsageError, match=r"no \.whl file there"):
        build("kaggle", SOLUTION, tmp_path / "kit", wheels=tmp_path / "empty")
    assert not (tmp_path / "kit").exists()  # never half a kit


def test_pip_that_cannot_download_is_the_organiser_s_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PIP_INDEX_URL", "http://127.0.0.1:9/simple")
    monkeypatch.setenv("PIP_RETRIES", "0")
    monkeypatch.setenv("PIP_TIMEOUT", "2")
    monkeypatch.setenv("PIP_NO_CACHE_DIR", "1")
    with pytest.raises(UsageError, match="pip could not download scorer's dependencies"):
        build("kaggle", SOLUTION, tmp_path / "kit", wheels=participants.DOWNLOAD)


@pytest.fixture(scope="session")
def dependency_wheels(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """scorer's dependencies as wheels for this machine, downloaded once (pip's cache)."""
    folder = tmp_path_factory.mktemp("wheels")
    participants.dependencies(folder, participants.DOWNLOAD)
    return folder


@pytest.mark.slow
def test_a_participant_installs_offline_and_validates_the_sample(
    tmp_path: Path, dependency_wheels: Path
) -> None:
    """participants/README.md, followed as printed in a fresh venv, with no index: its first
    command installs scorer from `wheels/`, its second validates the sample."""
    out = tmp_path / "kit"
    build("codabench", SOLUTION, out, wheels=dependency_wheels)
    folder = out / "participants"
    install, validate = readme_commands(folder)
    assert "--no-index" in install and "for Python" in (folder / "README.md").read_text()
    printed = follow_offline(folder, tmp_path, (install, validate))
    assert printed.startswith("sample_submission.csv: valid")
