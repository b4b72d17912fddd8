"""Text ids (`[ids] user/item = "text"`): matched exactly as written, judged by their own
rules, numbered once against the solution's, and scored as the reference scores them."""

from __future__ import annotations

import csv
import io
import json
import math
from pathlib import Path

import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.paths import ROOT
from support.reference import Rules, score_rules
from typer.testing import CliRunner

import scorer
from scorer.cli import app
from scorer.competition import ITEM, USER, Columns, Competition, IdKind, Ids, Metric, Words
from scorer.contract import Codes
from scorer.errors import HostError, SubmissionError
from scorer.read import DEFAULT_LIMITS, Table
from scorer.read.text import scan_text

HM, KAGGLE = ROOT / "data" / "hm", ROOT / "data" / "hm-kaggle"

#: A small text-id competition: sessions and tracks, every column renamed, lists allowed short.
TRACKS = Competition(
    name="tracks",
    k=3,
    metric=Metric.NDCG,
    rows="at_most",
    ids=Ids(user=IdKind.TEXT, item=IdKind.TEXT),
    columns=Columns(user="session_id", item="track_id", rank="place", list="tracks"),
    relevance="binary",
    words=Words(),
)
#: The caps a reader of TRACKS applies (the line cap set from its k and ids).
LINES = DEFAULT_LIMITS.for_competition(TRACKS)
SOLUTION = "session_id,track_id\nU1,N001\nU1,N002\nU2,N01\nU3,\n"


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def problems(exc: pytest.ExceptionInfo[SubmissionError]) -> dict[str, list[str]]:
    return {str(p.code): [i.message for i in p.examples] for p in exc.value.report.problems}


def rejected(tmp_path: Path, submission: str) -> dict[str, list[str]]:
    """The problems of `submission` (written as sub.csv) against SOLUTION, under TRACKS."""
    solution = write(tmp_path, "sol.csv", SOLUTION)
    sub = write(tmp_path, "sub.csv", submission)
    with pytest.raises(SubmissionError) as exc:
        scorer.score(sub, solution, competition=TRACKS)
    return problems(exc)


def test_text_ids_match_exactly_as_written(tmp_path: Path) -> None:
    """`N01` is not `N1`, `0108775015` is not `108775015`: no number is read from them."""
    solution = write(tmp_path, "sol.csv", SOLUTION)
    sub = write(
        tmp_path,
        "sub.csv",
        "session_id,track_id,place\nU1,N002,1\nU1,N001,2\nU2,N1,1\nU2,N01,2\nU3,N5,1\n",
    )
    result = scorer.score(sub, solution, competition=TRACKS)
    assert result.overall == (1 + 1 / math.log2(3) + 0) / 3
    assert result.per_user.get_column("session_id").to_list() == ["U1", "U2", "U3"]
    assert result.per_user.get_column("hits").to_list() == [2, 1, 0]


def test_the_wide_layout_and_parquet_give_the_same_scores(tmp_path: Path) -> None:
    solution = write(tmp_path, "sol.csv", SOLUTION)
    long = write(
        tmp_path, "sub.csv", "session_id,track_id,place\nU1,N002,1\nU1,N001,2\nU2,N1,1\nU3,N5,1\n"
    )
    wide = write(tmp_path, "wide.csv", "session_id,tracks\nU1,N002 N001\nU2,N1\nU3,N5\n")
    frame = pl.DataFrame(
        {"session_id": ["U1", "U2", "U3"], "tracks": [["N002", "N001"], ["N1"], ["N5"]]}
    )
    frame.write_parquet(tmp_path / "wide.parquet")
    # A dictionary-encoded and a large_string column, as pandas and Spark write them.
    table = pa.table(
        {
            "session_id": pa.array(["U1", "U1", "U2", "U3"]).dictionary_encode(),
            "track_id": pa.array(["N002", "N001", "N1", "N5"], pa.large_string()),
            "place": pa.array([1, 2, 1, 1], pa.int8()),
        }
    )
    pq.write_table(table, tmp_path / "long.parquet")
    scores = {
        source.name: scorer.score(source, solution, competition=TRACKS).overall
        for source in (long, wide, tmp_path / "wide.parquet", tmp_path / "long.parquet")
    }
    assert len(set(scores.values())) == 1, scores
    assert scorer.score(frame, solution, competition=TRACKS).overall == scores["sub.csv"]


@pytest.mark.parametrize(
    ("cell", "code", "message"),
    [
        (" U1", "invalid_id", "' U1' is not a text id of 1 to 256 bytes"),
        ("U\x1b[31m1", "invalid_id", "'U\\x1b[31m1' is not a text id"),
        ("", "invalid_id", "session_id empty is not a text id"),
        ("U" * 257, "id_too_long", "is 257 bytes long; expected a text id of at most 256 bytes"),
    ],
)
def test_a_text_id_has_no_space_or_control_character_and_at_most_256_bytes(
    tmp_path: Path, cell: str, code: str, message: str
) -> None:
    found = rejected(tmp_path, f'session_id,track_id,place\n"{cell}",N1,1\n')
    assert message in found[code][0]
    assert "\x1b" not in str(found)  # a participant's escape is shown escaped


@pytest.mark.parametrize(
    ("text", "plain"),
    [
        (b"u,i,r\nU1,N1,1\r\nU2,N2,1\n", True),
        (b"u,i,r\nU1,N 1,1\n", False),
        (b"u,i,r\nU1,N1\t,1\n", False),
        (b"u,i,r\nU1,N\x7f1,1\n", False),
        ("u,i,r\nU1,N\u00a01,1\n".encode(), False),  # a no-break space: not ASCII
        ("u,i,r\nU1,Né,1\n".encode(), False),
    ],
)
def test_a_scan_tells_when_no_cell_can_hold_whitespace(text: bytes, plain: bool) -> None:
    """Then text ids are judged by length alone; any doubt runs the full rule."""
    assert scan_text("f.csv", text, LINES, texts=True).plain is plain
    assert not scan_text("f.csv", text, LINES).plain  # not looked for: no text ids


def test_a_no_break_space_in_a_text_id_is_refused(tmp_path: Path) -> None:
    found = rejected(tmp_path, "session_id,track_id,place\nU1,N\u00a01,1\n")
    assert r"track_id 'N\xa01' is not a text id" in found["invalid_id"][0]


def test_a_list_s_text_ids_are_judged_each_at_its_position(tmp_path: Path) -> None:
    found = rejected(tmp_path, f"session_id,tracks\nU1,N1 {'x' * 300}\nU2,N1\nU3,N2\n")
    assert found == {
        "id_too_long": [
            f"line 2, position 2: track_id '{'x' * 40}… (300 characters)' is 300 bytes "
            "long; expected a text id of at most 256 bytes (user U1)"
        ]
    }


def test_problems_name_the_ids_as_written(tmp_path: Path) -> None:
    """Ids are numbered to be checked fast; every message shows the text again."""
    found = rejected(
        tmp_path, "session_id,track_id,place\nU1,N002,1\nU1,N002,2\nU2,N1,1\nU9,N01,2\n"
    )
    assert found == {
        "duplicate_edition": ["line 3: item N002 repeats line 2 for user U1"],
        "missing_user": ["user U3 is missing; expected 1 to 3 rows for every target user"],
        "unknown_user": ["line 5: user U9 is not a target user (1 row)"],
    }
    targets = write(tmp_path, "targets.csv", "session_id\nU1\nU2\nU3\n")
    with pytest.raises(SubmissionError) as again:
        scorer.validate(tmp_path / "sub.csv", targets=targets, competition=TRACKS)
    assert problems(again) == found


def test_a_broken_solution_is_reported_in_its_own_ids(tmp_path: Path) -> None:
    solution = write(tmp_path, "sol.csv", "session_id,track_id\nU1,N001\nU2,N7\nU1,N001\n")
    sub = write(tmp_path, "sub.csv", "session_id,track_id,place\nU1,N1,1\nU2,N1,1\n")
    with pytest.raises(HostError) as exc:
        scorer.score(sub, solution, competition=TRACKS)
    messages = [i.message for p in exc.value.report.problems for i in p.examples]
    assert messages == ["line 4: pair (user U1, item N001) repeats line 2 for user U1"]


def test_an_integer_column_in_place_of_text_ids_is_refused(tmp_path: Path) -> None:
    """Integers where text ids are due lost what the ids were (the zero of 0108775015)."""
    solution = write(tmp_path, "sol.csv", SOLUTION)
    pl.DataFrame({"session_id": ["U1"], "track_id": [1], "place": [1]}).write_parquet(
        tmp_path / "sub.parquet"
    )
    with pytest.raises(SubmissionError) as exc:
        scorer.score(tmp_path / "sub.parquet", solution, competition=TRACKS)
    assert problems(exc) == {
        "column_type": ["sub.parquet: column 'track_id' holds Int64; expected text ids (strings)"]
    }
    assert exc.value.report.problems[0].hint == (
        "track_id holds ids as text, matched as written (0108775015 is not 108775015): read "
        'them as text, pd.read_csv(path, dtype={"track_id": str}), and write them so'
    )


def test_codes_follow_the_solution_and_tell_unknown_values_apart() -> None:
    """Users are numbered in the order the solution first lists them (a file in that order
    takes the fast paths), items in sorted order; unknown values get codes past the end,
    one a distinct text; runs and nulls are looked up as single values."""
    solution = pl.DataFrame({USER: ["b", "a", "a"], ITEM: ["x", None, "y"]})
    codes = Codes.of(solution, TRACKS)
    assert codes.users is not None and codes.users.to_list() == ["b", "a"]
    assert codes.items is not None and codes.items.to_list() == ["x", "y"]
    frame = pl.DataFrame(
        {USER: ["b"] * 5 + [None, "zz", "zz", "a"], ITEM: ["q", "x", "p", "q", None, *"yxyq"]}
    )
    encoded = codes.encode(frame)
    assert encoded.get_column(USER).to_list() == [0] * 5 + [None, 2, 2, 1]
    assert encoded.get_column(ITEM).to_list() == [3, 0, 2, 3, None, 1, 0, 1, 3]
    assert codes.users_of(pl.Series([1, 0])).to_list() == ["a", "b"]


def test_kaggle_s_ids_score_as_the_integer_competition_to_the_bit() -> None:
    """data/hm-kaggle is data/hm with 64-hex customers and zero-padded articles."""
    numbers = Competition.load(HM / "competition.toml")
    texts = Competition.load(KAGGLE / "competition.toml")
    assert texts.ids == Ids(user=IdKind.TEXT, item=IdKind.TEXT)
    a = scorer.score(HM / "sample_submission.csv", HM / "solution.csv", competition=numbers)
    for parts in (None, 3):
        b = scorer.score(
            KAGGLE / "sample_submission.csv",
            KAGGLE / "solution.csv",
            competition=texts,
            parts=parts,
        )
        assert b.to_dict() | {"parts": 1} == a.to_dict()
        assert (
            b.per_user.drop("customer_id")
            .sort(pl.all())
            .equals(a.per_user.drop("customer_id").sort(pl.all()))
        )


def test_a_prepared_solution_keeps_the_dictionaries(tmp_path: Path) -> None:
    solution = write(tmp_path, "sol.csv", SOLUTION)
    spec = write(
        tmp_path,
        "c.toml",
        'k = 3\nrows = "at_most"\n[ids]\nuser = "text"\nitem = "text"\n[columns]\n'
        'user = "session_id"\nitem = "track_id"\nrank = "place"\nlist = "tracks"\n',
    )
    sub = write(tmp_path, "sub.csv", "session_id,tracks\nU1,N002 N001\nU2,N1 N01\nU3,N5\n")
    runner = CliRunner()
    out = tmp_path / "sol.prepared"
    made = runner.invoke(
        app, ["prepare", str(solution), "--out", str(out), "--competition", str(spec)]
    )
    assert made.exit_code == 0, made.output
    scores = [
        json.loads(
            runner.invoke(
                app, ["score", str(sub), "--solution", str(s), "--competition", str(spec), "--json"]
            ).output
        )["overall"]
        for s in (solution, out)
    ]
    assert scores[0] == scores[1] == (1 + 1 / math.log2(3) + 0) / 3


# Ids as organisers of other competitions write them: zero-padded digits, letters and
# digits, non-ASCII text, URIs; never a space or a control character.
TEXT_ID = st.text(st.sampled_from(list("0123456789abcdefNU:/-_.é東")), min_size=1, max_size=8)


@st.composite
def competitions(draw: st.DrawFn) -> tuple[Competition, str, str, Rules]:
    """A text-id competition, a valid solution and a valid submission (long or wide) as CSV."""
    k = draw(st.integers(1, 5))
    metric = draw(st.sampled_from(list(Metric)))
    rows = draw(st.sampled_from(["exactly", "at_most"]))
    users = draw(st.lists(TEXT_ID, min_size=1, max_size=6, unique=True))
    items = draw(st.lists(TEXT_ID, min_size=k + 3, max_size=k + 8, unique=True))
    spec = Competition(
        k=k,
        metric=metric,
        rows=rows,
        relevance="binary",
        ids=Ids(user=IdKind.TEXT, item=IdKind.TEXT),
        columns=Columns(user="u", item="i", rank="r", list="l"),
    )
    solution = ["u,i"]
    for user in users:
        lost = draw(st.lists(st.sampled_from(items), max_size=4, unique=True))
        solution += [f"{user},{item}" for item in lost] or [f"{user},"]
    wide = draw(st.booleans())
    submission = ["u,l" if wide else "u,i,r"]
    for user in draw(st.permutations(users)):
        n = k if rows == "exactly" else draw(st.integers(1, k))
        ranked = draw(st.permutations(items))[:n]
        if wide:
            submission.append(f"{user},{' '.join(ranked)}")
        else:
            submission += [f"{user},{item},{r}" for r, item in enumerate(ranked, 1)]
    rules = Rules(
        k=k,
        metric=str(metric),
        rows=rows,
        user="u",
        item="i",
        rank="r",
        list="l",
        user_ids="text",
        item_ids="text",
    )
    return spec, "\n".join(solution) + "\n", "\n".join(submission) + "\n", rules


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(drawn=competitions())
def test_text_ids_score_as_the_reference_does(
    tmp_path: Path, drawn: tuple[Competition, str, str, Rules]
) -> None:
    spec, solution, submission, rules = drawn
    sol = write(tmp_path, "sol.csv", solution)
    sub = write(tmp_path, "sub.csv", submission)
    result = scorer.score(sub, sol, competition=spec)
    expected = score_rules(
        list(csv.DictReader(io.StringIO(submission))),
        list(csv.DictReader(io.StringIO(solution))),
        rules,
    )
    assert expected.splits["overall"] is not None
    for metric in Metric:
        assert result.splits["overall"].value(metric) == pytest.approx(  # type: ignore[union-attr]
            expected.splits["overall"][str(metric)], abs=1e-12
        )
    by_user = dict(
        zip(result.per_user.get_column("u"), result.per_user.get_column("ndcg"), strict=True)
    )
    assert by_user == pytest.approx({u: s.ndcg for u, s in expected.users.items()}, abs=1e-12)


def test_a_leaderboard_of_text_ids_equals_the_integer_one(tmp_path: Path) -> None:
    """The same log scored under data/hm and data/hm-kaggle: the same boards, intervals
    included (each user's score is placed by its code), and a broken file is recorded."""
    runner = CliRunner()
    boards = []
    for folder in (HM, KAGGLE):
        log = tmp_path / folder.name / "log.csv"
        log.parent.mkdir()
        (log.parent / "broken.csv").write_text("customer_id,prediction\nabc,0108775015\n")
        log.write_text(
            "team,path,submitted_at\n"
            f"alpha,{folder / 'sample_submission.csv'},2026-12-01T10:00:00Z\n"
            "beta,broken.csv,2026-12-01T11:00:00Z\n"
        )
        db = str(log.parent / "lb.db")
        spec = ["--competition", str(folder / "competition.toml")]
        scored = runner.invoke(
            app,
            [
                "leaderboard",
                "score",
                str(log),
                "--solution",
                str(folder / "solution.csv"),
                "--db",
                db,
                *spec,
            ],
        )
        assert scored.exit_code == 0, scored.output  # beta's file is recorded as rejected
        shown = runner.invoke(
            app, ["leaderboard", "show", "--db", db, "--phase", "final", "--format", "json"]
        )
        assert shown.exit_code == 0, shown.output
        board = json.loads(shown.output)
        fields = ("rank", "team", "score", "low", "high")
        boards.append(
            {
                split: [{f: row[f] for f in fields} for row in board[split]["rows"]]
                for split in ("public", "private")
            }
        )
    assert boards[0]["private"][0]["score"] == 0.20000132372108176  # Kaggle's rule
    assert boards[0] == boards[1]


@pytest.mark.parametrize(
    "users",
    [
        ["b", "b", "a", "c", "c"],  # each user one run: numbered by its runs
        ["b", "a", "b", "c", "c"],  # b in two runs
        ["b", None, "a", "a", "c"],  # a user cell that could not be read
    ],
)
def test_numbering_a_solution_by_its_runs_is_numbering_it_by_its_dictionary(
    users: list[str | None],
) -> None:
    frame = pl.DataFrame({USER: users, ITEM: ["x", "z", None, "x", "y"]})
    table = Table(file="s.csv", frame=frame, problems=(), unit="line", competition=TRACKS)
    codes, numbered = Codes.number(table)
    expected = Codes.of(frame, TRACKS)
    assert codes.users is not None and expected.users is not None
    assert codes.users.to_list() == expected.users.to_list()
    assert codes.items is not None and expected.items is not None
    assert codes.items.to_list() == expected.items.to_list()
    assert numbered.frame.equals(expected.encode(frame))


def test_a_file_of_none_of_the_targets_is_told_why_text_ids_may_not_match() -> None:
    """data/hm's file against data/hm-kaggle's targets: its ids are numbers, not Kaggle's."""
    with pytest.raises(SubmissionError) as exc:
        scorer.validate(
            HM / "sample_submission.csv",
            targets=KAGGLE / "targets.csv",
            competition=Competition.load(KAGGLE / "competition.toml"),
        )
    hints = {str(p.code): p.hint for p in exc.value.report.problems}
    assert hints == {
        "missing_user": None,
        "unknown_user": "no user of the file is a target user: customer_id values are text, "
        "matched exactly as the targets file writes them (0108775015 is not 108775015, ab is "
        "not AB); copy them from it as text",
    }


def test_a_repeated_rank_is_named_by_the_competition_s_rank_column(tmp_path: Path) -> None:
    found = rejected(tmp_path, "session_id,track_id,place\nU1,N2,1\nU1,N1,1\nU2,N1,1\nU3,x,1\n")
    assert found == {"duplicate_rank": ["line 3: place 1 repeats line 2 for user U1"]}
