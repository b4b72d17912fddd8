"""Any competition, really (issue 22, item 3): specs drawn with any column names (the scorer's own
among them: rank, position, line, stage, user_id in the wrong roles, non-ASCII names), any k,
metric, row rule, relevance and split, and files in every format, scored equal to the
independent reference in `reference.py` to 1e-12, or rejected with a named code."""

from __future__ import annotations

import gzip
import json
import math
import re
import zipfile
from collections.abc import Collection
from dataclasses import dataclass
from pathlib import Path

import polars as pl
import pytest
from hypothesis import HealthCheck, assume, event, given, settings
from hypothesis import strategies as st
from support import reference as ref
from support.strategies import (
    ID_KINDS,
    ID_STYLES,
    NAME_POOL,
    SPLIT_WORDS,
    column_names,
    id_cell,
    id_kind,
)
from typer.testing import CliRunner

import scorer
from scorer import Competition, Metric, SubmissionError
from scorer.cli import app
from scorer.competition import Relevance, Rows
from scorer.errors import UsageError
from scorer.platforms import kit
from scorer.prepared import prepare

runner = CliRunner()

#: The formats a submission is written in: (suffix, layout). A frame is a polars frame given to
#: the public API (typed as a Parquet file's columns; the CLI reads that file).
FORMATS = [
    ("csv", "long"),
    ("csv", "wide"),
    ("csv.gz", "long"),
    ("csv.gz", "wide"),
    ("parquet", "long"),
    ("parquet", "wide"),
    ("zip", "long"),
    ("zip", "wide"),
    ("frame", "long"),
    ("frame", "wide"),
]

#: The flaws a drawn submission may have, each with the code that must name it.
FLAWS = {
    "missing_user": "missing_user",
    "unknown_user": "unknown_user",
    "bad_item": "invalid_id",
    "bad_rank": "invalid_rank",
    "repeat": "duplicate_edition",
    "short": "wrong_row_count",
}


@dataclass(frozen=True)
class Case:
    """A drawn competition: its spec (as TOML fields), solution rows, submission rows."""

    fields: dict[str, object]
    split: str | None
    words: tuple[str, str, str]
    solution: list[dict[str, str]]
    submission: list[dict[str, str]]
    targets: list[int]
    ids: str
    fmt: str
    layout: str
    flaw: str | None
    no_lost: str
    parts: int | None

    def spec(self) -> Competition:
        return Competition.of(self.fields)

    def rules(self) -> ref.Rules:
        columns: dict[str, str] = self.fields["columns"]  # type: ignore[assignment]
        public, private, ignored = self.words
        return ref.Rules(
            k=self.fields["k"],  # type: ignore[arg-type]
            metric=self.fields["metric"],  # type: ignore[arg-type]
            rows=self.fields["rows"],  # type: ignore[arg-type]
            split_columns=(self.split,) if self.split else ("stage", "Usage"),
            public=public,
            private=private,
            ignored=ignored,
            user_ids=id_kind(self.ids),
            item_ids=id_kind(self.ids),
            **columns,
        )


@st.composite
def cases(draw: st.DrawFn) -> Case:
    """A spec with column names from `column_names` in any role, a valid solution, and a
    submission in the drawn format and layout, valid or with one drawn flaw."""
    ids = draw(st.sampled_from(ID_STYLES))  # how ids are written: `id_kind(ids)` is the spec's
    # One spec in five may take a name that cannot work (and must be refused by name).
    refusable = draw(st.sampled_from([True, False, False, False, False]))
    user, item, rank, listed, split_name = draw(column_names(5, refusable))
    split = draw(st.sampled_from([None, split_name]))
    if split is None and not refusable and {"stage", "Usage"} & {user, item, rank, listed}:
        split = split_name  # without [splits], a column may not take a default split's name
    words = draw(st.sampled_from(SPLIT_WORDS))
    k = draw(st.one_of(st.integers(1, 5), st.integers(6, 100)))
    rows = draw(st.sampled_from(list(Rows)))
    graded = draw(st.sampled_from(list(Relevance))) is Relevance.GRADED
    fields: dict[str, object] = {
        "name": "drawn",
        "k": k,
        "metric": str(draw(st.sampled_from(list(Metric)))),
        "rows": str(rows),
        "relevance": "graded" if graded else "binary",
        "columns": {"user": user, "item": item, "rank": rank, "list": listed},
    }
    if ids != "integer":  # the spec's [ids] table (issue 22, item 1); integer is the default
        fields["ids"] = {"user": id_kind(ids), "item": id_kind(ids)}
    if split:
        public, private, ignored = words
        fields["splits"] = {
            "columns": [split],
            "public": public,
            "private": private,
            "ignored": ignored,
        }
    users = draw(st.lists(st.integers(0, 10**6), min_size=2, max_size=6, unique=True))
    pool = st.integers(1, 2 * k + 8)
    # One list in a few holds one item at most, in the solution and in the submission: a
    # column of one id a row is what a reader guessing types takes for numbers.
    most = draw(st.sampled_from([1, min(2 * k, 8), min(2 * k, 8)]))
    solution: list[dict[str, str]] = []
    for u in users:
        stage = draw(st.sampled_from(words))
        stage = draw(st.sampled_from([stage, stage.upper(), stage.lower()]))
        lost = draw(st.lists(pool, max_size=most, unique=True))
        for i in lost or [None]:
            row = {user: id_cell(ids, u), item: "" if i is None else id_cell(ids, i)}
            row |= {split: stage} if split else {}
            if graded:
                row["grade"] = "" if i is None else str(draw(st.integers(0, 10)))
            solution.append(row)
    fmt, layout = draw(st.sampled_from(FORMATS))
    lists: dict[int, list[tuple[str, str]]] = {}
    for u in users:
        low = k if rows is Rows.EXACTLY else (0 if layout == "wide" else 1)
        n = draw(st.integers(low, max(low, k if most > 1 else 1)))
        items = draw(st.lists(pool, min_size=n, max_size=n, unique=True))
        ranks = list(range(1, n + 1))
        if layout == "long" and rows is Rows.AT_MOST:  # an empty place is a rank nobody took
            ranks = sorted(draw(st.lists(st.integers(1, k), min_size=n, max_size=n, unique=True)))
        lists[u] = [(id_cell(ids, i), str(r)) for i, r in zip(items, ranks, strict=True)]
    flaw = draw(st.sampled_from([None, None, *FLAWS]))
    flaw = _flaw(draw, flaw, lists, users, k, rows, layout, ids)
    submission: list[dict[str, str]] = []
    for u, placed in lists.items():
        if layout == "wide":
            submission.append({user: id_cell(ids, u), listed: " ".join(i for i, _ in placed)})
        else:
            for i, r in placed:
                submission.append({user: id_cell(ids, u), item: i, rank: r})
    return Case(
        fields=fields,
        split=split,
        words=words,
        solution=solution,
        submission=submission,
        targets=users,
        ids=ids,
        fmt=fmt,
        layout=layout,
        flaw=flaw,
        no_lost=draw(st.sampled_from(["zero", "exclude"])),
        parts=draw(st.sampled_from([None, 2])) if fmt == "csv" else None,
    )


def _flaw(
    draw: st.DrawFn,
    flaw: str | None,
    lists: dict[int, list[tuple[str, str]]],
    users: list[int],
    k: int,
    rows: Rows,
    layout: str,
    ids: str = "integer",
) -> str | None:
    """Break the drawn lists as `flaw` says (in place), or return None when the lists cannot
    have that flaw; the flaw made. A bad item is negative, a word or a float; a bad rank is
    past k, 0 (the hint of ranks counted from 0) or a word."""
    full = [u for u in users if lists[u]]
    if flaw == "missing_user":
        del lists[draw(st.sampled_from(users))]
    elif flaw == "unknown_user":
        lists[max(users) + 1] = [(id_cell(ids, 1), "1")]
    elif flaw == "bad_item" and full:
        u = draw(st.sampled_from(full))
        # a text id may be '-1', 'x' or '1.5', but holds no control character
        bad = ["-1", "x", "1.5"] if ids == "integer" else ["x\x01", "\x7fx"]
        lists[u][0] = (draw(st.sampled_from(bad)), lists[u][0][1])
    elif flaw == "bad_rank" and layout == "long" and full:
        u = draw(st.sampled_from(full))
        lists[u][-1] = (lists[u][-1][0], draw(st.sampled_from([str(k + 1), "0", "r"])))
    elif flaw == "repeat" and [u for u in full if len(lists[u]) >= 2]:
        u = draw(st.sampled_from([u for u in full if len(lists[u]) >= 2]))
        lists[u][1] = (lists[u][0][0], lists[u][1][1])
    elif flaw == "short" and rows is Rows.EXACTLY and (k >= 2 or layout == "wide"):
        lists[draw(st.sampled_from(users))].pop()
    else:
        return None
    return flaw


def refusal(case: Case) -> str | None:
    """What a spec is refused with, when it truly cannot work; None when it must work. Its
    column names must differ (the solution's `grade` among them; a list column may share none
    with the long layout's, which names the layout); `line` numbers every reader's rows; the
    per-user table names its user beside `stage`, `n_relevant`, `hits` and the metrics."""
    columns: dict[str, str] = case.fields["columns"]  # type: ignore[assignment]
    splits = [case.split] if case.split else ["stage", "Usage"]  # no [splits]: the defaults
    names = [columns["user"], columns["item"], columns["rank"], *splits, "grade"]
    if len(set(names)) != len(names) or columns["list"] in names[:-1]:
        return "column names must differ"
    if "line" in [*names, columns["list"]]:
        return "column name 'line' is the scorer's own"
    if columns["user"] in ("stage", "n_relevant", "hits", *(str(m) for m in Metric)):
        return f"column name {columns['user']!r} is the scorer's own"
    return None


def write_table(
    rows: list[dict[str, str]],
    header: list[str],
    path: Path,
    fmt: str,
    texts: Collection[str] = (),
) -> Path:
    """Rows of text cells as a file of the format: CSV (plain, gzip, in a zip) or Parquet
    (integer columns where every cell is an integer, but the columns of `texts`, which hold
    text ids written as they are; a list column of integers for a wide list of integers,
    text otherwise)."""
    text = ",".join(header) + "\n" + "".join(",".join(r[c] for c in header) + "\n" for r in rows)
    if fmt == "csv":
        path.write_text(text, encoding="utf-8")
    elif fmt == "csv.gz":
        path.write_bytes(gzip.compress(text.encode()))
    elif fmt == "zip":
        with zipfile.ZipFile(path, "w") as archive:
            archive.writestr("submission.csv", text)
    else:
        columns = {c: _typed([r[c] for r in rows], c in texts) for c in header}
        pl.DataFrame(columns).write_parquet(path)
    return path


def _typed(cells: list[str], text: bool = False) -> pl.Series:
    """A column of text cells as integers when every cell is one (empty ones null), but
    for a column of `text` ids."""
    if not text and all(cell.lstrip("-").isdigit() or cell == "" for cell in cells):
        return pl.Series([int(cell) if cell else None for cell in cells], dtype=pl.Int64)
    return pl.Series([cell or None for cell in cells], dtype=pl.String)


def _parquet_lists(path: Path, column: str) -> None:
    """A wide Parquet file's list column as a list of integers, as pandas users write it."""
    frame = pl.read_parquet(path)
    if frame.schema[column] != pl.String:  # one id a list, every one an integer: kept so
        return
    ids = frame.get_column(column).str.split(" ").explode().drop_nulls()
    if ids.str.contains(r"^[0-9]*$").all():  # a list with a bad id stays text
        ids = pl.col(column).str.split(" ").list.eval(pl.element().filter(pl.element() != ""))
        frame.with_columns(ids.cast(pl.List(pl.Int64))).write_parquet(path)


def toml(fields: dict[str, object]) -> str:
    """A spec's fields as TOML: JSON strings are TOML basic strings."""
    lines = [f"{key} = {json.dumps(v)}" for key, v in fields.items() if not isinstance(v, dict)]
    for table, values in fields.items():
        if isinstance(values, dict):
            lines.append(f"[{table}]")
            lines += [f"{key} = {json.dumps(v, ensure_ascii=False)}" for key, v in values.items()]
    return "\n".join(lines) + "\n"


def files(case: Case, folder: Path, wide_lists: bool) -> tuple[Path, Path, Path]:
    """The case's spec, solution and submission written into `folder`."""
    spec = case.spec()
    columns = spec.columns
    sol_header = [columns.user, columns.item]
    sol_header += [case.split] if case.split else []
    sol_header += ["grade"] if spec.relevance is Relevance.GRADED else []
    texts = {columns.user, columns.item, columns.list} if case.ids != "integer" else set()
    solution = write_table(case.solution, sol_header, folder / "solution.csv", "csv")
    header = (
        [columns.user, columns.list]
        if case.layout == "wide"
        else [columns.user, columns.item, columns.rank]
    )
    fmt = "parquet" if case.fmt == "frame" else case.fmt
    sub = folder / f"submission.{fmt}"
    write_table(case.submission, header, sub, fmt, texts)
    if fmt == "parquet" and case.layout == "wide" and wide_lists and not texts:
        _parquet_lists(sub, columns.list)
    toml_path = folder / "competition.toml"
    toml_path.write_text(toml(case.fields), encoding="utf-8")
    return toml_path, solution, sub


def check_scores(case: Case, result: scorer.ScoreResult) -> None:
    """A result equals the reference's to 1e-12: every user's metrics, every split's means."""
    rules = case.rules()
    expected = ref.score_rules(case.submission, case.solution, rules, case.no_lost)
    user = case.spec().columns.user
    got = {row[user]: row for row in result.per_user.iter_rows(named=True)}
    assert set(got) == set(expected.users)
    for u, want in expected.users.items():
        for metric in ref.METRICS:
            assert got[u][metric] == pytest.approx(getattr(want, metric), abs=1e-12)
    for split in ("overall", "public", "private"):
        means, values = expected.splits[split], result.splits[split]  # type: ignore[index]
        assert (means is None) == (values is None), split
        if means is not None and values is not None:
            assert values.users == means["users"]
            for metric in Metric:
                assert values.value(metric) == pytest.approx(means[str(metric)], abs=1e-12)
    assert result.ignored == expected.ignored


def expected_codes(case: Case) -> set[str]:
    """The codes a flawed submission must be rejected with: the reference's for the long
    layout, the flaw's own code for the wide one (the reference judges long CSV only)."""
    assert case.flaw is not None
    if case.layout == "long":
        columns: dict[str, str] = case.fields["columns"]  # type: ignore[assignment]
        header = [columns["user"], columns["item"], columns["rank"]]
        text = ",".join(header) + "\n"
        text += "".join(",".join(r[c] for c in header) + "\n" for r in case.submission)
        targets = [u if case.ids == "integer" else id_cell(case.ids, u) for u in case.targets]
        return ref.codes(text, targets, case.rules())
    return {FLAWS[case.flaw]}


#: How a drawn case is run besides the public API on its files: not at all, through the CLI
#: (`score`, or `validate --targets` for a flawed file), with a prepared solution, or as a
#: leaderboard's one submission.
VIA = ("api", "cli", "prepared", "leaderboard")


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=cases(), wide_lists=st.booleans(), via=st.sampled_from(VIA))
def test_any_spec_scores_as_the_reference_or_is_refused_by_name(
    case: Case, wide_lists: bool, via: str, tmp_path_factory: pytest.TempPathFactory
) -> None:
    folder = tmp_path_factory.mktemp("case")
    refused = refusal(case)
    event("refused" if refused else f"{case.flaw or 'valid'}, {case.fmt} {case.layout}")
    if refused is not None:
        with pytest.raises(UsageError, match=re.escape(refused)):
            case.spec()
        return
    spec_path, solution, submission = files(case, folder, wide_lists)
    spec = Competition.load(spec_path)
    assert spec == case.spec()
    parts = case.parts
    if via == "prepared":
        prepare(solution, folder / "solution.scorer", competition=spec)
        solution, parts = folder / "solution.scorer", None
    rules = {"competition": spec, "no_lost": case.no_lost, "parts": parts}
    given: Path | pl.DataFrame = pl.read_parquet(submission) if case.fmt == "frame" else submission
    result: scorer.ScoreResult | None = None
    codes: set[str] = set()
    if case.flaw is None:
        result = scorer.score(given, solution, **rules)  # type: ignore[arg-type]
        check_scores(case, result)
    else:
        with pytest.raises(SubmissionError) as caught:
            scorer.score(given, solution, **rules)  # type: ignore[arg-type]
        codes = set(caught.value.report.codes)
        want = expected_codes(case)
        assert codes == want if case.layout == "long" else want <= codes
    spec_args = ["--competition", str(spec_path)]
    if via == "cli" and result is not None:  # the CLI prints the same numbers
        args = [str(submission), "--solution", str(solution), *spec_args, "--json"]
        out = runner.invoke(app, ["score", *args, "--no-lost", case.no_lost])
        assert out.exit_code == 0, out.output
        assert json.loads(out.stdout)["overall"] == result.overall
    elif via == "cli":  # the targets alone name the same problems, exit 1
        targets = folder / "targets.csv"
        rows = [{spec.columns.user: id_cell(case.ids, u)} for u in case.targets]
        write_table(rows, [spec.columns.user], targets, "csv")
        args = [str(submission), "--targets", str(targets), *spec_args, "--json"]
        out = runner.invoke(app, ["validate", *args])
        assert out.exit_code == 1, out.output
        assert {p["code"] for p in json.loads(out.stdout)["error"]["problems"]} == codes
    elif via == "leaderboard":  # a leaderboard scores it alike, or records its rejection
        manifest = folder / "log.csv"
        manifest.write_text(f"team,path,submitted_at\nteam,{submission},2026-01-01T00:00:00\n")
        args = [str(manifest), "--solution", str(solution), "--db", str(folder / "board.db")]
        # --force: a log of one submission missing a user looks like a wrong solution
        more = ["--workers", "0", "--no-lost", case.no_lost, "--json", "--force"]
        out = runner.invoke(app, ["leaderboard", "score", *args, *spec_args, *more])
        if case.split is None:  # its boards need public and private users
            assert out.exit_code == 2, out.output
            message = json.loads(out.stdout)["error"]["message"]
            assert message.endswith("add a 'stage' or 'Usage' column (public/private)")
            return
        assert out.exit_code == 0, out.output
        (entry,) = json.loads(out.stdout)["submissions"]
        assert entry["status"] == ("rejected" if result is None else "scored"), entry
        if result is not None and result.public is not None:
            assert entry["public"] == pytest.approx(result.public, abs=1e-12)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=cases())
def test_every_kit_builds_for_any_spec(
    case: Case, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """Every kit takes any competition: CodaBench's and EvalAI's, and Kaggle's but for a
    solution that grades its items (Kaggle's solution is a list of ids a user)."""
    assume(refusal(case) is None)
    folder = tmp_path_factory.mktemp("kit")
    spec_path, solution, submission = files(case, folder, wide_lists=False)
    if case.split is None:  # a kit's phases need public and private users
        with pytest.raises(UsageError, match="the solution has no split column"):
            kit.build("codabench", solution, folder / "codabench", competition=spec_path)
    else:
        written = kit.build("codabench", solution, folder / "codabench", competition=spec_path)
        assert folder / "codabench" / "bundle.zip" in written
        with zipfile.ZipFile(folder / "codabench" / "bundle.zip") as bundle:
            bundle.extractall(folder / "bundle")
        if case.flaw is None:  # its scoring program, on its own solution, scores as the reference
            rules = case.rules()
            expected = ref.score_rules(case.submission, case.solution, rules, "zero")
            for phase, split in (("public", "public"), ("final", "private")):
                scores = run_codabench(folder, submission, phase)  # the phase's split
                want = ref.primary(expected, rules, split)
                got = scores.get(str(rules.metric))
                assert (got is None) == (want is None), split
                assert got is None or got == pytest.approx(want, abs=1e-12)
    try:
        kit.build("kaggle", solution, folder / "kaggle", competition=spec_path)
    except UsageError as exc:
        columns = case.spec().columns
        if case.split is None:
            assert "no split column" in str(exc), exc
        elif "grades its items" in str(exc):
            assert case.fields["relevance"] == "graded", exc
        else:  # Kaggle's solution splits its users by its own column
            assert "Usage" in (columns.user, columns.list), exc
            assert "names a column 'Usage'" in str(exc), exc
    else:
        assert case.split is not None
        metric = (folder / "kaggle" / "metric.py").read_text(encoding="utf-8")
        assert json.dumps(case.spec().columns.list) in metric
    if case.split is not None:  # EvalAI's board: the competition's labels, ranked by its metric
        kit.build("evalai", solution, folder / "evalai", competition=spec_path)
        config = (folder / "evalai" / "challenge" / "challenge_config.yaml").read_text("utf-8")
        spec = case.spec()
        assert f'"default_order_by": "{spec.label(spec.metric)}"' in config


def run_codabench(folder: Path, submission: Path, phase: str) -> dict[str, float]:
    """The kit's scoring program of a phase on a submission: its scores.json."""
    bundle = folder / "bundle"
    if not (folder / "input").exists():
        (folder / "input" / "res").mkdir(parents=True)
        (folder / "input" / "res" / submission.name).write_bytes(submission.read_bytes())
        (folder / "input" / "ref").symlink_to(bundle / "reference_data")
    spec = bundle / f"scoring_program_{phase}" / "competition.toml"
    output = folder / f"output-{phase}"
    args = ["codabench", str(folder / "input"), str(output), "--phase", phase]
    out = runner.invoke(app, [*args, "--competition", str(spec)])
    assert out.exit_code == 0, out.output
    scores: dict[str, float] = json.loads((output / "scores.json").read_text())
    return scores


def test_the_strategy_reaches_the_scorer_s_own_names() -> None:
    """The pool holds every name the scorer once kept beside a file's columns."""
    pool = set(NAME_POOL)
    assert {"rank", "position", "item", "user_id", "edition_id", "line", "stage"} <= pool
    assert {"grade", "pair", "n_relevant", "_token", "_user"} <= pool
    assert any(not name.isascii() for name in pool)
    assert ID_KINDS == ("integer", "text") == tuple(dict.fromkeys(map(id_kind, ID_STYLES)))
    for style in ("text", "digits"):
        written = [id_cell(style, v) for v in [*range(2000), 10**6]]
        assert len(set(written)) == len(written)  # one text a value
        digits = [cell for cell in written if cell.isdigit()]
        assert all(cell.startswith("0") for cell in digits)  # zeros that count
        assert digits == written if style == "digits" else 0 < len(digits) < len(written)


# The crashes the drawn specs found, each kept as a plain case.


def spec_file(folder: Path, columns: dict[str, str], splits: dict[str, object] | None) -> Path:
    fields: dict[str, object] = {"name": "named", "k": 2, "rows": "at_most", "columns": columns}
    fields |= {"splits": splits} if splits else {}
    path = folder / "competition.toml"
    path.write_text(toml(fields), encoding="utf-8")
    return path


@pytest.mark.parametrize(
    ("columns", "text", "message"),
    [
        # parse_cells kept each bad cell's user in a column '_user' beside the file's
        (
            {"user": "u", "item": "_user", "rank": "r", "list": "l"},
            "u,_user,r\n1,x,1\n1,6,2\n",
            "line 2: _user 'x' is not a non-negative integer written in digits (user 1)",
        ),
        # the hint for ranks counted from 0 counted each user's rows in a column 'n'
        (
            {"user": "n", "item": "i", "rank": "r", "list": "l"},
            "n,i,r\n1,5,0\n1,6,1\n",
            "line 2: r '0' is not an integer 1..2 (user 1)",
        ),
    ],
)
def test_a_column_named_like_a_reader_s_own_is_judged(
    columns: dict[str, str], text: str, message: str, tmp_path: Path
) -> None:
    spec = spec_file(tmp_path, columns, None)
    (tmp_path / "solution.csv").write_text(f"{columns['user']},{columns['item']}\n1,5\n")
    (tmp_path / "submission.csv").write_text(text)
    args = ["validate", str(tmp_path / "submission.csv"), "--solution"]
    out = runner.invoke(app, [*args, str(tmp_path / "solution.csv"), "--competition", str(spec)])
    assert out.exit_code == 1, out.output
    assert message in out.stderr


def test_a_wide_solution_s_split_column_named_like_the_wide_reader_s_own(tmp_path: Path) -> None:
    """The wide reader numbers a list's places in its own columns, beside a wide solution's
    split column under the file's name: '_token' and 'position' once met them."""
    for split in ("_token", "position"):
        splits = {"columns": [split], "public": "A", "private": "B", "ignored": "skip"}
        spec = spec_file(tmp_path, {"user": "u", "item": "i", "rank": "r", "list": "l"}, splits)
        (tmp_path / "solution.csv").write_text(f"u,l,{split}\n1,5 6,A\n2,7,b\n3,8,nope\n")
        (tmp_path / "submission.csv").write_text("u,i,r\n1,6,1\n2,7,1\n3,1,1\n")
        args = ["score", str(tmp_path / "submission.csv"), "--solution"]
        args += [str(tmp_path / "solution.csv"), "--competition", str(spec)]
        out = runner.invoke(app, args)
        assert out.exit_code == 2, out.output
        assert f"line 4: {split} 'nope' is not A, B or skip" in out.stderr
        (tmp_path / "solution.csv").write_text(f"u,l,{split}\n1,5 6,A\n2,7,b\n3,8,SKIP\n")
        out = runner.invoke(app, [*args, "--json"])
        assert out.exit_code == 0, out.output
        printed = json.loads(out.stdout)
        # user 1 (public): 6 at rank 1 of lost 5 and 6; user 2 (private): 7 at rank 1
        assert printed["public"] == pytest.approx(1 / (1 + 1 / math.log2(3)), abs=1e-12)
        assert (printed["private"], printed["users"]["ignored"]) == (1.0, 1)


def test_a_prepared_solution_keeps_an_item_column_called_stage(tmp_path: Path) -> None:
    """A prepared solution renamed the item column's name in both of its frames, so an item
    column called 'stage' took the users' stage on load (an internal ColumnNotFoundError)."""
    splits = {"columns": ["board"], "public": "A", "private": "B", "ignored": "skip"}
    columns = {"user": "n_relevant_of", "item": "stage", "rank": "r", "list": "l"}
    spec = Competition.load(spec_file(tmp_path, columns, splits))
    solution = tmp_path / "solution.csv"
    solution.write_text("n_relevant_of,stage,board\n1,5,A\n2,6,B\n")
    submission = pl.DataFrame(
        {"n_relevant_of": [1, 1, 2, 2], "stage": [5, 6, 7, 6], "r": [1, 2] * 2}
    )
    prepare(solution, tmp_path / "solution.scorer", competition=spec)
    prepared = scorer.score(submission, tmp_path / "solution.scorer", competition=spec)
    assert prepared.splits == scorer.score(submission, solution, competition=spec).splits
    assert (prepared.public, prepared.private) == (1.0, pytest.approx(1 / math.log2(3)))
