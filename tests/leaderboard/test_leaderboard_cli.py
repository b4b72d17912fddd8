"""`scorer leaderboard …` through Typer's runner: exit codes, messages, JSON and files."""

from __future__ import annotations

import json
import shutil
import sqlite3
import tempfile
from pathlib import Path
from typing import Any

import pytest
from support.leaderboards import score_args
from typer.testing import CliRunner

import scorer
from scorer.cli import app
from scorer.leaderboard import worker
from scorer.leaderboard.store import Store

runner = CliRunner()


def cli(*args: str | Path) -> Any:
    return runner.invoke(app, ["leaderboard", *map(str, args)])


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The demo competition written and scored through the CLI."""
    root = tmp_path_factory.mktemp("cli") / "demo"
    made = cli("demo", root)
    assert made.exit_code == 0, made.output
    assert made.stdout.startswith(f"Wrote {root / 'solution.csv'}")
    scored = cli(*score_args(root))
    assert scored.exit_code == 0, scored.output
    return root


def test_score_lists_every_failure_and_exits_0(demo: Path, tmp_path: Path) -> None:
    shutil.copytree(demo, tmp_path / "d", ignore=shutil.ignore_patterns("board.db*"))
    result = cli(*score_args(tmp_path / "d"))
    assert result.exit_code == 0
    lines = result.stdout.splitlines()
    assert lines[0] == "manifest.csv: 12 submissions: 10 scored, 0 cached, 2 rejected, 0 failed"
    assert "Rejected or failed (2):" in lines
    assert "  delta / submissions/delta/partial.csv: rejected" in lines
    assert "      [missing_user] 30 times" in lines
    assert "  echo / submissions/echo/semicolons.csv: rejected" in lines
    assert "      [bad_delimiter] 1 time" in lines
    assert "ETA" not in result.output and "Scoring" not in result.output  # not a terminal: quiet


def test_score_json_second_run_is_cached(demo: Path) -> None:
    result = cli(*score_args(demo, "--json"))
    assert result.exit_code == 0
    data = json.loads(result.stdout)
    assert (data["command"], data["status"]) == ("leaderboard score", "ok")
    assert (data["total"], data["scored"], data["cached"], data["rejected"]) == (12, 0, 10, 2)
    assert data["audience"] == "organiser"
    assert all(s["cached"] for s in data["submissions"])
    assert [f["path"] for f in data["failures"]] == [
        "submissions/delta/partial.csv",
        "submissions/echo/semicolons.csv",
    ]
    assert data["failures"][0]["error"]["problems"][0]["code"] == "missing_user"
    for submission in data["submissions"]:  # never a private score, even for the organiser
        assert set(submission) == {"team", "path", "status", "cached", "public"}


def test_strict_exits_1_when_a_submission_is_rejected(demo: Path) -> None:
    result = cli(*score_args(demo, "--strict"))
    assert result.exit_code == 1
    assert "2 rejected" in result.stdout


def test_a_scorer_bug_on_one_file_exits_2_after_the_batch(
    demo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "d"
    shutil.copytree(demo, root, ignore=shutil.ignore_patterns("board.db*"))
    real = worker.score_submission

    def flaky(path: Path, *args: Any, **kwargs: Any) -> scorer.ScoreResult:
        if path.name == "tuned.csv":
            raise MemoryError("out of memory")
        return real(path, *args, **kwargs)

    monkeypatch.setattr(worker, "score_submission", flaky)
    result = cli(*score_args(root, "--json", "--workers", "0"))
    assert result.exit_code == 2
    data = json.loads(result.stdout)
    assert (data["scored"], data["failed"]) == (9, 1)
    assert data["failures"][0]["error"]["message"] == "MemoryError: out of memory"


def test_broken_manifest_exits_2(tmp_path: Path, demo: Path) -> None:
    (tmp_path / "manifest.csv").write_text("team,path,submitted_at\na,a.csv,soon\n")
    (tmp_path / "solution.csv").write_bytes((demo / "solution.csv").read_bytes())
    result = cli(*score_args(tmp_path))
    assert result.exit_code == 2
    assert result.stderr.startswith(
        "Error: the manifest file is broken (an organiser's problem, not the participant's): "
    )
    assert "[invalid_time] 1 time" in result.stderr
    as_json = json.loads(cli(*score_args(tmp_path, "--json")).stdout)
    assert as_json["status"] == "error"
    assert as_json["error"]["role"] == "manifest"
    assert as_json["error"]["problems"][0]["code"] == "invalid_time"
    assert not (tmp_path / "board.db").exists()  # the log is read before the database opens


def test_missing_or_broken_solution_exits_2(demo: Path, tmp_path: Path) -> None:
    args: list[str | Path] = [
        "score",
        demo / "manifest.csv",
        "--solution",
        tmp_path / "nope.csv",
        "--db",
        tmp_path / "b.db",
    ]
    result = cli(*args)
    assert result.exit_code == 2
    assert "the solution file is broken" in result.stderr
    (tmp_path / "nosplit.csv").write_text("user_id,edition_id\n1,2\n")
    args[3] = tmp_path / "nosplit.csv"
    result = cli(*args)
    assert result.exit_code == 2
    assert "needs a public/private split" in result.stderr


def test_usage_errors_exit_2(demo: Path, tmp_path: Path) -> None:
    assert cli("score", demo / "manifest.csv", "--db", tmp_path / "b.db").exit_code == 2
    assert cli("show", "--db", demo / "board.db", "--phase", "private").exit_code == 2
    assert cli("show", "--db", demo / "board.db", "--format", "xlsx").exit_code == 2
    missing = cli("show", "--db", tmp_path / "none.db")
    assert missing.exit_code == 2
    assert "no such database" in missing.stderr
    (tmp_path / "junk.db").write_text("not sqlite at all, " * 100)
    junk = cli("show", "--db", tmp_path / "junk.db")
    assert (junk.exit_code, "not a leaderboard database" in junk.stderr) == (2, True)
    nowhere = cli("show", "--db", demo / "board.db", "--output", tmp_path / "no" / "x.html")
    assert nowhere.exit_code == 2


def test_show_public_table(demo: Path) -> None:
    result = cli("show", "--db", demo / "board.db")
    assert result.exit_code == 0
    out = result.stdout
    assert "Public leaderboard — NDCG@20 on 200 public users" in out
    assert "Private leaderboard" not in out.replace("Private leaderboard: hidden", "")
    assert "Shake-up" not in out
    assert "Private leaderboard: hidden until the final phase." in out
    assert "Not ranked: delta (1 rejected)." in out
    rows = [line for line in out.splitlines() if line.startswith("│")]
    assert [row.split("│")[2].strip() for row in rows] == [
        "bravo",
        "alpha",
        "charlie",
        "golf",
        "foxtrot",
        "echo",
    ]


def test_show_final_table_has_the_shake_up(demo: Path) -> None:
    result = cli("show", "--db", demo / "board.db", "--phase", "final")
    assert result.exit_code == 0
    assert "Private leaderboard — NDCG@20 on 200 private users" in result.stdout
    assert "Shake-up" in result.stdout
    echo = next(line for line in result.stdout.splitlines() if "│ echo" in line and "+5" in line)
    assert "best public" in echo


@pytest.mark.parametrize("fmt", ["csv", "json", "md", "html"])
def test_show_every_format(demo: Path, fmt: str) -> None:
    result = cli("show", "--db", demo / "board.db", "--phase", "final", "--format", fmt)
    assert result.exit_code == 0
    out = result.stdout
    if fmt == "json":
        assert set(json.loads(out)) >= {"public", "private", "unranked", "confidence"}
    elif fmt == "csv":
        assert out.splitlines()[0].startswith('"board","rank","team","score","low","high"')
        assert len(out.splitlines()) == 1 + 6 + 6
    elif fmt == "md":
        assert "### Private leaderboard — NDCG@20 on 200 private users" in out
    else:
        assert out.startswith("<!DOCTYPE html>") and out.rstrip().endswith("</html>")


def test_show_json_flag_and_output_file(demo: Path, tmp_path: Path) -> None:
    flag = cli("show", "--db", demo / "board.db", "--json")
    assert flag.exit_code == 0
    assert json.loads(flag.stdout)["phase"] == "public"
    page = tmp_path / "board.html"
    written = cli(
        "show", "--db", demo / "board.db", "--phase", "final", "--format", "html", "--output", page
    )
    assert written.exit_code == 0
    assert written.stdout == ""
    assert written.stderr == f"Wrote the final leaderboard (html) to {page}\n"
    assert page.read_text().startswith("<!DOCTYPE html>")


def test_show_json_with_an_output_file_still_prints_its_one_object(
    demo: Path, tmp_path: Path
) -> None:
    """`--json` promises one JSON object on stdout for every outcome (issue 24: with
    `--output` it printed nothing): the object written to the file."""
    path = tmp_path / "board.json"
    written = cli("show", "--db", demo / "board.db", "--json", "--output", path)
    assert written.exit_code == 0, written.output
    printed = json.loads(written.stdout)
    assert printed["status"] == "ok" and printed == json.loads(path.read_text())
    assert "Wrote the public leaderboard (json)" in written.stderr


def test_demo_refuses_a_folder_in_use(demo: Path) -> None:
    result = cli("demo", demo)
    assert result.exit_code == 2
    assert "is not empty" in result.stderr


@pytest.mark.parametrize(
    ("name", "start"),
    [
        ("board.html", "<!DOCTYPE html>"),
        ("board.HTM", "<!DOCTYPE html>"),
        ("board.csv", '"board","rank"'),
        ("board.json", "{"),
        ("board.md", "### Public leaderboard"),
        ("board.txt", "Public leaderboard"),
    ],
)
def test_output_takes_its_format_from_its_suffix(
    demo: Path, tmp_path: Path, name: str, start: str
) -> None:
    result = cli("show", "--db", demo / "board.db", "--output", tmp_path / name)
    assert result.exit_code == 0, result.output
    assert (tmp_path / name).read_text().startswith(start)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--format", "md", "--output", "board.html"], "the name says html but the format is md"),
        (["--json", "--output", "board.csv"], "the name says csv but the format is json"),
        (["--output", "board.xlsx"], "cannot tell the format from the name"),
    ],
)
def test_output_refuses_a_format_its_name_contradicts(
    demo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, args: list[str], message: str
) -> None:
    monkeypatch.chdir(tmp_path)
    result = cli("show", "--db", demo / "board.db", *args)
    assert result.exit_code == 2
    error = json.loads(result.stdout)["error"]["message"] if "--json" in args else result.stderr
    assert message in error
    assert list(tmp_path.iterdir()) == []  # nothing written


def test_an_unknown_suffix_with_a_format_is_fine(demo: Path, tmp_path: Path) -> None:
    result = cli(
        "show", "--db", demo / "board.db", "--format", "csv", "--output", tmp_path / "b.out"
    )
    assert result.exit_code == 0
    assert (tmp_path / "b.out").read_text().startswith('"board"')


def test_title_names_the_page_and_the_post(demo: Path, tmp_path: Path) -> None:
    page = tmp_path / "b.html"
    title = "Lost items <2024> & co"
    assert cli("show", "--db", demo / "board.db", "--title", title, "--output", page).exit_code == 0
    html = page.read_text()
    assert "<h1>Lost items &lt;2024&gt; &amp; co</h1>" in html
    assert "page generated at" in html and 'id="legend"' in html
    default = cli("show", "--db", demo / "board.db", "--format", "html").stdout
    assert "<h1>Lost items leaderboard</h1>" in default  # the competition's name
    post = cli("show", "--db", demo / "board.db", "--format", "md", "--title", title).stdout
    assert post.startswith("## Lost items &lt;2024&gt; &amp; co\n")


def test_a_title_is_text_in_the_markdown_post(demo: Path) -> None:
    """`--title` is data: a link, an image, emphasis or a second heading stay text."""
    title = "Final [click](https://evil.example) ![x](https://evil.example/p.png) *b*\n# H"
    post = cli("show", "--db", demo / "board.db", "--format", "md", "--title", title).stdout
    first = post.splitlines()[0]
    assert first == (
        "## Final \\[click\\]\\(https\\://evil.example\\) \\!\\[x\\]\\(https\\://"
        "evil.example/p.png\\) \\*b\\*\\\\n\\# H"
    )
    assert post.splitlines()[1] == ""  # the heading is one line


def test_show_reads_a_database_it_may_not_write(demo: Path) -> None:
    """A published copy of the database in a folder no one may write to (issue 24): `show`
    opens it read-only (root, whom file modes do not stop, is stopped by the connection's
    own read-only mode) and prints the same boards."""
    folder = Path(tempfile.mkdtemp(prefix="readonly-board-"))
    try:
        shutil.copy(demo / "board.db", folder / "board.db")
        (folder / "board.db").chmod(0o444)
        folder.chmod(0o555)
        shown = cli("show", "--db", folder / "board.db", "--format", "csv")
        assert shown.exit_code == 0, shown.output
        assert shown.stdout == cli("show", "--db", demo / "board.db", "--format", "csv").stdout
        with (
            Store(folder / "board.db", create=False) as store,
            pytest.raises(sqlite3.OperationalError, match="readonly"),
        ):
            store.db.execute("CREATE TABLE written (x)")
    finally:
        folder.chmod(0o755)
        shutil.rmtree(folder)
