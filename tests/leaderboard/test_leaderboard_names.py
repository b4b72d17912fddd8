"""Team names are data in every output: hostile names give no markup, link, formula, escape
sequence or look-alike, and never cost a score its digits."""

from __future__ import annotations

import csv
import io
import json
import re
import shutil
from datetime import UTC, datetime
from html.parser import HTMLParser
from pathlib import Path

import pytest
from support.leaderboards import ACCEPTED, FILES, REFUSED, write_manifest
from typer.testing import CliRunner

from scorer.cli import app
from scorer.errors import Code
from scorer.leaderboard import batch
from scorer.leaderboard.boards import Boards, load
from scorer.leaderboard.demo import make_demo
from scorer.leaderboard.literal import FORMULA_START, SHOWN_CHARS, markdown, neutralised, shown
from scorer.leaderboard.manifest import ManifestError, Submission, read_log
from scorer.leaderboard.names import MAX_TEAM_CHARS, escaped, same_team
from scorer.leaderboard.render import FORMATS, render
from scorer.leaderboard.schema import Phase
from scorer.leaderboard.store import Store
from scorer.leaderboard.terminal import batch_text, table_text

runner = CliRunner()
NOW = datetime(2024, 6, 1, tzinfo=UTC)


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("names")
    make_demo(root, n_users=100)
    return root


@pytest.fixture(scope="module")
def accepted(demo: Path) -> Path:
    """The accepted hostile names, scored through the CLI into `hostile.db`."""
    manifest = write_manifest(demo / "hostile.csv", ACCEPTED)
    db = demo / "hostile.db"
    solution = demo / "solution.csv"
    args = ["leaderboard", "score", str(manifest), "--solution", str(solution), "--db", str(db)]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    return db


@pytest.fixture(scope="module")
def unchecked(demo: Path) -> Path:
    """Every hostile name, the refused ones too, in a database written without the log's
    checks (as a database written before them would hold)."""
    names = ACCEPTED + list(REFUSED)
    entries = [
        Submission(name, f"{i}/{FILES[i % 2]}", demo / FILES[i % 2], NOW, False)
        for i, name in enumerate(names)
    ]
    db = demo / "unchecked.db"
    with Store(db) as store:
        batch.score_entries(entries, demo / "solution.csv", store)
    return db


def boards(db: Path, phase: Phase) -> Boards:
    return load(db, phase, resamples=50)


# -- the log ------------------------------------------------------------------------------------


def test_the_log_refuses_invisible_controlling_and_long_names(demo: Path) -> None:
    manifest = write_manifest(demo / "refused.csv", ACCEPTED + list(REFUSED))
    with pytest.raises(ManifestError) as caught:
        read_log(manifest)
    found = [(i.code, i.line) for p in caught.value.report.problems for i in p.examples]
    first = len(ACCEPTED) + 2  # the header is line 1
    assert sorted(found, key=lambda f: f[1] or 0) == [
        (code, first + i) for i, code in enumerate(REFUSED.values())
    ]
    text = str(caught.value)
    for shown_as in ("'\\x1b[31mred\\x1b[0m'", "U+202E RIGHT-TO-LEFT OVERRIDE", "U+200B"):
        assert shown_as in text
    assert "\x1b" not in text and "\u202e" not in text and "\u200b" not in text
    assert f"has 5,000 characters; at most {MAX_TEAM_CHARS} are accepted" in text


def test_names_are_nfc_and_one_team_has_one_spelling(demo: Path, tmp_path: Path) -> None:
    shutil.copy(demo / FILES[0], tmp_path / "a.csv")
    shutil.copy(demo / FILES[1], tmp_path / "b.csv")
    decomposed = "Cafe\u0301"  # e and a combining accent: the same name as a precomposed é
    path = tmp_path / "m.csv"
    path.write_text(
        f"team,path,submitted_at\n{decomposed},a.csv,2024-05-01\nCafé,b.csv,2024-05-02\n"
    )
    first, second = read_log(path)
    assert first.team == second.team == "Café"
    for other in ("café bar", "CAFÉ BAR", "Ｃａｆé Bar", "Café\u00a0Bar", "Café  Bar"):
        assert same_team(other) == same_team("Café Bar")  # case, full width, spaces
        path.write_text(
            f"team,path,submitted_at\nCafé Bar,a.csv,2024-05-01\n{other},b.csv,2024-05-02\n"
        )
        with pytest.raises(ManifestError) as caught:
            read_log(path)
        (problem,) = caught.value.report.problems
        assert (problem.code, problem.examples[0].line) == (Code.TEAM_NAME_CLASH, 3)


def test_a_team_folder_is_checked_like_a_manifest_row(tmp_path: Path) -> None:
    for team in ("ok", "alpha\u200b", "OK"):
        (tmp_path / team).mkdir()
        (tmp_path / team / "s.csv").write_text("x\n")
    with pytest.raises(ManifestError) as caught:
        read_log(tmp_path)
    codes = {p.code: p.count for p in caught.value.report.problems}
    assert codes == {Code.TEAM_NAME_CHARACTER: 1, Code.TEAM_NAME_CLASH: 1}


# -- every format ---------------------------------------------------------------------------------


@pytest.mark.parametrize("phase", list(Phase))
@pytest.mark.parametrize("fmt", FORMATS)
def test_every_format_of_hostile_names_runs_and_keeps_every_score(
    accepted: Path, fmt: str, phase: Phase
) -> None:
    result = runner.invoke(
        app, ["leaderboard", "show", "--db", str(accepted), "--phase", phase, "--format", fmt]
    )
    assert result.exit_code == 0, result.output
    out = result.stdout
    shown_boards = boards(accepted, phase)
    rows = [
        row for board in (shown_boards.public, shown_boards.private) if board for row in board.rows
    ]
    assert {row.team for row in shown_boards.public.rows} == set(ACCEPTED)
    for row in rows:
        assert f"{row.score:.6f}" in out or repr(row.score) in out


def test_the_terminal_table_shows_markup_as_text(accepted: Path) -> None:
    out = table_text(boards(accepted, Phase.FINAL))
    for name in ACCEPTED:
        assert f"│ {name}" in out, name  # [/] did not close a style, [link] made no link
    assert "Click to claim prize" in out and "[link=https://evil.example/claim]" in out


def test_csv_cells_are_never_formulas(accepted: Path) -> None:
    text = render(boards(accepted, Phase.FINAL), "csv")
    rows = list(csv.DictReader(io.StringIO(text)))
    assert rows and all(set(row) >= {"team", "submission", "neutralised"} for row in rows)
    for row in rows:
        for key in ("team", "submission", "pick", "board"):
            assert not row[key].startswith(FORMULA_START), row
        original = row["team"][1:] if row["neutralised"] == "team" else row["team"]
        assert original in ACCEPTED
        assert (row["neutralised"] == "team") == original.startswith(FORMULA_START)
    assert "'=HYPERLINK" in text
    assert ',"team"\n' in text  # the row says which cell got its '


def test_csv_guard_is_reversible() -> None:
    for name in ("=1", "'=1", "''@x", "plain", "'quoted", "\t1", "\r1", "-", "a=b"):
        cell, changed = neutralised(name)
        assert not cell.startswith(FORMULA_START)
        assert (cell[1:] if changed else cell) == name
        assert changed == name.lstrip("'").startswith(FORMULA_START)


def test_markdown_makes_no_link_image_or_html(accepted: Path) -> None:
    text = render(boards(accepted, Phase.FINAL), "md")
    cells = [line.split(" | ")[1] for line in text.splitlines() if re.match(r"\| \d+ \|", line)]
    assert len(cells) == 2 * len(ACCEPTED)
    for cell in cells:
        assert not re.search(r"(?<!\\)[\[\]()!|`*_]", cell), cell  # every syntax char escaped
        assert "<" not in cell and ">" not in cell
        assert "https://" not in cell and "www." not in cell  # no autolink either
    assert markdown("[text](https://evil.example)") == r"\[text\]\(https\://evil.example\)"


def test_json_keeps_every_name_exactly(accepted: Path) -> None:
    data = json.loads(render(boards(accepted, Phase.FINAL), "json"))
    assert {row["team"] for row in data["public"]["rows"]} == set(ACCEPTED)
    assert {row["team"] for row in data["private"]["rows"]} == set(ACCEPTED)


class Tags(HTMLParser):
    """The elements of a page and the text of each team cell."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: list[str] = []
        self.attrs: list[str] = []
        self.teams: list[str] = []
        self._in_team = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)
        self.attrs += [name for name, _ in attrs]
        if tag == "td" and ("class", "team") in attrs:
            self._in_team = True
            self.teams.append("")

    def handle_endtag(self, tag: str) -> None:
        if tag == "td":
            self._in_team = False

    def handle_data(self, data: str) -> None:
        if self._in_team:
            self.teams[-1] += data


#: Every element the page is made of; a name that made an element would add another.
PAGE_TAGS = {
    "html", "head", "meta", "title", "style", "body", "header", "h1", "h2", "p", "strong",
    "div", "span", "section", "table", "thead", "tbody", "tr", "th", "td", "bdi", "svg",
    "line", "circle",
}  # fmt: skip


def test_the_page_shows_every_name_as_text(accepted: Path) -> None:
    page = render(boards(accepted, Phase.FINAL), "html", now=NOW)
    parsed = Tags()
    parsed.feed(page)
    assert set(parsed.tags) <= PAGE_TAGS
    assert not {"onerror", "href", "src"} & set(parsed.attrs)
    assert sorted(parsed.teams) == sorted(ACCEPTED * 2)


# -- names the log never checked ------------------------------------------------------------------


def test_unchecked_names_are_shown_escaped_and_cut(unchecked: Path) -> None:
    final = boards(unchecked, Phase.FINAL)
    assert final.private is not None
    for fmt in ("table", "md", "html"):
        out = render(final, fmt, now=NOW)
        for raw in ("\x1b", "\u202e", "\u200b", "x" * SHOWN_CHARS):
            assert raw not in out, (fmt, raw)
        cut = "x" * (SHOWN_CHARS - 1) + "…"
        assert (cut in out) if fmt != "table" else ("x…" in out and cut not in out)
        for row in final.private.rows:
            assert f"{row.score:.6f}" in out
    table = render(final, "table")
    assert "\\x1b[31mred\\x1b[0m" in table and "\\u202eevil" in table and "alpha\\u200b" in table
    assert shown("x" * 5000) == "x" * (SHOWN_CHARS - 1) + "…"
    assert escaped("\u202eevil") == "\\u202eevil"


@pytest.mark.parametrize("width", [80, 60])
def test_a_narrow_terminal_keeps_rank_team_and_whole_scores(unchecked: Path, width: int) -> None:
    final = boards(unchecked, Phase.FINAL)
    assert final.private is not None
    out = table_text(final, width)
    assert max(len(line) for line in out.splitlines()) <= width
    for board in (final.public, final.private):
        starts = [line for line in out.splitlines() if re.match(r"│ +\d+ │", line)]
        for row in board.rows:
            assert any(
                re.match(rf"│ +{row.rank} │ .*│ {row.score:.6f} │", line) for line in starts
            ), (row.rank, row.score)
    assert "Left out to fit" in out
    assert "…" not in out.replace("x…", "")  # nothing cut but the over-long name


def test_a_run_lists_hostile_file_names_escaped(demo: Path, tmp_path: Path) -> None:
    """The folder layout takes file names as the uploads named them: the rejection list
    shows an escape sequence in one as text."""
    team = tmp_path / "uploads" / "team"
    team.mkdir(parents=True)
    (team / "clear\x1b[2J.csv").write_text("user_id;edition_id;rank\n")
    shutil.copy(demo / FILES[0], team / "good.csv")
    result = batch.score_log(
        tmp_path / "uploads", demo / "solution.csv", tmp_path / "b.db", force=True
    )
    text = batch_text(result, "uploads")
    assert "\x1b" not in text
    assert "team / team/clear\\x1b[2J.csv: rejected" in text
