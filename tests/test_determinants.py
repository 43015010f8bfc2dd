"""A kept column that determines a quasi-identifier (a code beside the label it codes, as
Adult's education-num beside education) would publish that QI as it is: anonymize refuses it
before anything is written, unless --allow-determinant lets it; verify reports it; profile
shows it per column. The figures are one SQL statement (sql/templates/kept_determinants.sql),
held here against pandas on every engine; the rule (sbc_sql/plan/determinants.py) on its own.
"""

from __future__ import annotations

import json
from pathlib import Path

import duckdb
import numpy as np
import pandas as pd
import pytest
from helpers import adult_file, connected, examples, make_table
from hypothesis import HealthCheck, given, settings
from strategies import TableCase, tables

import sbc_sql
from sbc_sql.errors import InputError, RoleError
from sbc_sql.model import Column
from sbc_sql.plan import determinants as rule
from sbc_sql.plan.determinants import Determination
from sbc_sql.stages import stats

#: the grades' cell values, which no message may show
GRADES = ("CELL-north", "CELL-south", "CELL-east", "CELL-west")
#: each grade's code: the kept column grade_code maps one to one to the QI grade
CODES = {"CELL-north": 71, "CELL-south": 72, "CELL-east": 73, "CELL-west": 74}
TYPES = {"visit_id": "INTEGER", "age": "INTEGER", "grade": "VARCHAR", "grade_code": "INTEGER"}
QI = "age,grade"
KEEP = "grade_code,ward,visit_id"


def clinic(n: int = 80, seed: int = 3) -> pd.DataFrame:
    """age and grade are QIs; grade_code codes grade one to one; ward is independent of both;
    visit_id is unique (identifier-like); dx is sensitive."""
    rng = np.random.default_rng(seed)
    grade = [GRADES[i] for i in rng.integers(0, len(GRADES), n)]
    return pd.DataFrame(
        {
            "visit_id": range(n),
            "age": rng.integers(20, 70, n),
            "grade": grade,
            "grade_code": [CODES[g] for g in grade],
            "ward": [f"CELL-w{i % 3}" for i in range(n)],
            "dx": [f"CELL-d{i % 4}" for i in range(n)],
        }
    )


@pytest.fixture
def db(tmp_path: Path) -> Path:
    path = tmp_path / "clinic.duckdb"
    with duckdb.connect(str(path)) as con:
        make_table(con, "t", clinic(), TYPES)
    return path


def objects(path: Path) -> list[str]:
    with duckdb.connect(str(path), read_only=True) as con:
        return sorted(
            r[0] for r in con.execute("SELECT table_name FROM information_schema.tables").fetchall()
        )


def error_line(stderr: str) -> str:
    (line,) = [line for line in stderr.splitlines() if line.startswith("Error:")]
    return line


def no_cell_value(text: str) -> None:
    assert "CELL" not in text, text
    assert not any(str(code) in text for code in CODES.values()), text


def anonymize_args(db: Path, *more: str) -> list[str]:
    return [
        "anonymize",
        "--db",
        db,
        "-t",
        "t",
        "-k",
        "5",
        "--qi",
        QI,
        "--keep",
        KEEP,
        "--sensitive",
        "dx",
        *more,
    ]


# ----------------------------------------------------------------------- the command line


def test_anonymize_refuses_a_kept_column_that_determines_a_qi_and_writes_nothing(cli, db):
    before = objects(db)
    res = cli(anonymize_args(db))
    assert res.exit_code == 1, res.stdout + res.stderr
    line = error_line(res.stderr)
    for needle in (
        "column 'grade_code' is released as it is (--keep)",
        "determines quasi-identifier 'grade'",
        "on 100% of the rows",
        "--qi 'grade_code'",
        "--drop 'grade_code'",
        "--allow-determinant 'grade_code'",
    ):
        assert needle in line, (needle, line)
    # ward (independent) and visit_id (unique: the identifier check's, with its warning) are not named
    assert "ward" not in line and "visit_id" not in line
    assert "warning: column 'visit_id' (--keep) is distinct on 100% of the rows" in res.stderr
    no_cell_value(res.stdout + res.stderr)
    assert objects(db) == before


def test_the_dry_run_refuses_it_too(cli, db):
    res = cli(anonymize_args(db, "--sql"))
    assert res.exit_code == 1
    assert "determines quasi-identifier 'grade'" in error_line(res.stderr)


def test_the_fixes_the_error_names_each_pass(cli, db):
    declared_qi = cli(
        ["anonymize", "--db", db, "-t", "t", "-k", "5", "--qi", QI + ",grade_code"]
        + ["--keep", "ward,visit_id", "--sensitive", "dx", "-o", "as_qi", "-q"]
    )
    assert declared_qi.exit_code == 0, declared_qi.stderr
    dropped = cli(
        ["anonymize", "--db", db, "-t", "t", "-k", "5", "--qi", QI, "--drop", "grade_code"]
        + ["--keep", "ward,visit_id", "--sensitive", "dx", "-o", "dropped", "-q"]
    )
    assert dropped.exit_code == 0, dropped.stderr


def test_allow_determinant_releases_it_with_a_warning(cli, db):
    res = cli(anonymize_args(db, "--allow-determinant", "grade_code", "-o", "rel", "-q"))
    assert res.exit_code == 0, res.stderr
    assert (
        "warning: column 'grade_code' is released as it is and determines quasi-identifier 'grade'"
        in res.stderr
    )
    no_cell_value(res.stderr)
    with duckdb.connect(str(db), read_only=True) as con:
        comment = con.execute("SELECT comment FROM duckdb_views() WHERE view_name = 'rel'").fetchone()[0]
    assert json.loads(comment)["options"]["allow_determinant"] == ["grade_code"]


def test_the_report_recurves_a_let_release_with_the_run_s_allowance(cli, db, tmp_path):
    """--report re-clusters the source at other k with the release's recorded options: the
    recorded --allow-determinant among them, or the curve's runs would be refused."""
    page = tmp_path / "report.html"
    res = cli(anonymize_args(db, "--allow-determinant", "grade_code", "-o", "rel", "--report", page, "-q"))
    assert res.exit_code == 0, res.stderr
    assert page.is_file() and "no verified release" not in res.stderr


@pytest.mark.parametrize(
    "command",
    [
        ["compare", "-k", "5", "--algorithms", "sbca"],
        ["suggest-k", "--max-loss", "0.5", "--k-max", "10", "-q"],
        ["cluster", "-k", "5", "--out", "{ids}", "-q"],
        ["sql", "-k", "5", "--dialect", "postgres"],
    ],
    ids=lambda c: c[0],
)
def test_every_command_that_prepares_a_run_refuses_and_takes_the_allowance(cli, db, tmp_path, command):
    args = [a.format(ids=tmp_path / "ids.parquet") for a in command]
    roles = [
        "--db",
        db,
        "-t",
        "t",
        "--qi",
        QI,
        "--keep",
        "grade_code,ward",
        "--drop",
        "visit_id",
        "--sensitive",
        "dx",
    ]
    refused = cli([*args[:1], *roles, *args[1:]])
    assert refused.exit_code == 1
    assert "determines quasi-identifier 'grade'" in error_line(refused.stderr)
    allowed = cli([*args[:1], *roles, "--allow-determinant", "grade_code", *args[1:]])
    assert allowed.exit_code == 0, allowed.stderr


def test_a_comment_keeps_a_column_as_a_flag_does(cli, db):
    with duckdb.connect(str(db)) as con:
        con.execute("COMMENT ON COLUMN t.grade_code IS 'sbc:insensitive'")
    res = cli(
        ["anonymize", "--db", db, "-t", "t", "-k", "5", "--qi", QI, "--keep", "ward,visit_id"]
        + ["--sensitive", "dx"]
    )
    line = error_line(res.stderr)
    assert res.exit_code == 1
    assert "(its comment 'sbc:insensitive')" in line and "determines quasi-identifier 'grade'" in line


def test_a_target_that_determines_a_qi_is_refused_with_its_own_fix(cli, db):
    res = cli(
        ["anonymize", "--db", db, "-t", "t", "-k", "5", "--qi", QI, "--keep", "ward,visit_id"]
        + ["--sensitive", "dx", "--target", "grade_code"]
    )
    assert res.exit_code == 1
    line = error_line(res.stderr)
    assert "(--target)" in line and "choose another --target" in line and "--allow-determinant" in line


@pytest.mark.parametrize(
    ("given", "said"),
    [
        ("nope", "column 'nope' given to --allow-determinant does not exist in 't'"),
        ("age", "--allow-determinant names 'age', which is a quasi-identifier, not released as it is"),
    ],
)
def test_allow_determinant_names_a_kept_column(cli, db, given, said):
    res = cli(anonymize_args(db, "--allow-determinant", given))
    assert res.exit_code == 1
    assert said in error_line(res.stderr)


def test_verify_reports_a_kept_column_that_determines_a_qi(cli, db):
    made = cli(anonymize_args(db, "--allow-determinant", "grade_code", "-o", "rel", "-q"))
    assert made.exit_code == 0, made.stderr
    args = ["verify", "--db", db, "--original", "t", "--release", "rel", "-k", "5"]
    res = cli(args)
    assert res.exit_code != 0
    line = next(line for line in res.stderr.splitlines() if "grade_code" in line)
    for needle in (
        "column 'grade_code' is released as it is and determines quasi-identifier 'grade'",
        "'rel' publishes 'grade' as it is",
        "(the run let it, with --allow-determinant)",
        "verify --allow-determinant 'grade_code'",
    ):
        assert needle in line, (needle, line)
    no_cell_value(res.stdout + res.stderr)
    accepted = cli([*args, "--allow-determinant", "grade_code"])
    assert accepted.exit_code == 0, accepted.stderr
    assert accepted.stdout.startswith("ok: 'rel' is 5-anonymous")
    unknown = cli([*args, "--allow-determinant", "nope"])
    assert "column 'nope' given to --allow-determinant is not a column of 't'" in error_line(unknown.stderr)


def test_verify_passes_a_release_whose_kept_columns_determine_nothing(cli, db):
    made = cli(
        ["anonymize", "--db", db, "-t", "t", "-k", "5", "--qi", QI, "--drop", "grade_code"]
        + ["--keep", "ward,visit_id", "--sensitive", "dx", "-o", "clean", "-q"]
    )
    assert made.exit_code == 0, made.stderr
    res = cli(["verify", "--db", db, "--original", "t", "--release", "clean", "-k", "5"])
    assert res.exit_code == 0, res.stderr


def test_profile_shows_the_determinant_per_column_with_the_fix(cli, db):
    args = ["profile", "--db", db, "-t", "t", "--qi", QI, "--keep", KEEP, "--sensitive", "dx", "-q"]
    res = cli(args)
    assert res.exit_code == 0, res.stderr
    row = next(line for line in res.stdout.splitlines() if line.lstrip().startswith("grade_code"))
    assert "it determines quasi-identifier 'grade'" in row and "anonymize refuses it" in row
    assert "--allow-determinant 'grade_code'" in row
    assert "kept column 'grade_code' determines 'grade' (100% of the rows)" in res.stdout
    no_cell_value(res.stdout + res.stderr)

    doc = json.loads(cli([*args, "--json"]).stdout)
    by_name = {c["name"]: c for c in doc["columns"]}
    assert by_name["grade_code"]["determines"] == [{"qi": "grade", "share": 1.0}]
    assert by_name["ward"]["determines"] == [] and by_name["visit_id"]["determines"] == []
    assert "determinants" in doc["seconds"]

    allowed = cli([*args, "--allow-determinant", "grade_code"])
    row = next(line for line in allowed.stdout.splitlines() if line.lstrip().startswith("grade_code"))
    assert "anonymize releases it with a warning" in row


def test_adults_education_num_kept_beside_education_is_refused(cli, tmp_path):
    """The case that was released: education-num kept beside the QI education."""
    path = adult_file(tmp_path, ["age", "education", "education_num", "sex", "income"])
    res = cli(
        ["anonymize", "--db", path, "-t", "adult", "-k", "10", "--qi", "age,education,sex"]
        + ["--keep", "education_num,income", "-q"]
    )
    assert res.exit_code == 1
    line = error_line(res.stderr)
    assert "column 'education_num' is released as it is (--keep)" in line
    assert "determines quasi-identifier 'education' (its value gives that QI's on 100% of the rows)" in line
    assert objects(path) == ["adult"]


# ------------------------------------------------------------------------------ the API

#: the roles of the API's runs: visit_id dropped, so that no warning but the one asked is raised
API_ROLES = {"qi": QI, "keep": "grade_code,ward", "drop": "visit_id", "sensitive": "dx"}


def test_the_api_refuses_in_python_terms_and_takes_allow_determinant(db):
    with pytest.raises(RoleError) as refused:
        sbc_sql.anonymize(str(db), "t", 5, **API_ROLES, output="api")
    message = str(refused.value)
    assert "qi='grade_code'" in message and "allow_determinant='grade_code'" in message
    assert "keep=..." in message and "--" not in message
    assert objects(db) == ["t"]
    with (
        pytest.warns(UserWarning, match="'grade_code' is released as it is and determines"),
        sbc_sql.anonymize(
            str(db), "t", 5, **API_ROLES, output="api", allow_determinant=["grade_code"]
        ) as result,
    ):
        assert result.measures is not None and result.measures.released == 80
    verdict = sbc_sql.verify(str(db), "t", "api", 5)
    assert not verdict.ok and any("determines quasi-identifier 'grade'" in p for p in verdict.problems)
    assert sbc_sql.verify(str(db), "t", "api", 5, allow_determinant="grade_code").ok
    found = sbc_sql.profile(str(db), "t", **API_ROLES)
    (code,) = [c for c in found.columns if c.name == "grade_code"]
    assert [(d.qi, d.share) for d in code.determines] == [("grade", 1.0)]
    with pytest.raises(InputError, match=r"given to allow_determinant=\.\.\. does not exist"):
        sbc_sql.profile(str(db), "t", qi=QI, keep="grade_code,ward", allow_determinant="nope")


# ------------------------------------------------------------------------------ the rule


def found(n: int, values: int, determined: int, constant: frozenset[str] = frozenset()) -> Determination:
    return Determination(n, {"k": values}, {("k", "q"): determined}, constant)


@pytest.mark.parametrize(
    ("figures", "determines"),
    [
        (found(200, 10, 200), True),
        (found(200, 10, 198), True),  # 99 %: nearly every value of k has one value of q
        (found(200, 10, 197), False),
        (found(200, 100, 200), True),  # half the rows: still a code, each value on two rows
        (found(200, 101, 200), False),  # above half: identifier-like, the identifier checks' (a warning)
        (found(200, 200, 200), False),  # unique on every row: determines all, tells nothing
        (found(200, 1, 200, frozenset({"q"})), False),  # a QI of one value is released as it is anyway
        (found(0, 0, 0), False),
    ],
)
def test_the_rule(figures, determines):
    hits = rule.determinants(figures, ["k"], ["q"])
    assert bool(hits) is determines
    if determines:
        assert hits[0].qis == ("q",) and hits[0].shares == (figures.determined[("k", "q")] / figures.n_rows,)


def test_a_share_below_all_never_reads_100():
    assert rule.share_text(1.0) == "100%"
    assert rule.share_text(0.9999) == "99.9%"
    assert rule.share_text(0.995) == "99.5%"


def test_several_qis_are_named_in_one_line():
    d = rule.Determinant("code", ("a", "b", "c"), (1.0, 1.0, 0.995))
    line = rule.refusal(d, "flag")
    assert (
        "determines quasi-identifiers 'a', 'b' and 'c' (its value gives theirs on 100% and 100% and 99.5%"
        in line
    )
    more = rule.refusal(d, "flag", [rule.Determinant("other", ("a",), (1.0,))])
    assert more.endswith("(1 more kept column(s) determine a quasi-identifier: 'other')")


# --------------------------------------------------------------- the SQL, on every engine


def reference(df: pd.DataFrame, kept: str, qi: str) -> tuple[int, int]:
    """(groups of ``kept``, rows in groups holding one value of ``qi``), NULL a value of both."""
    key = df[kept].map(lambda v: ("v", v) if v is not None else ("null",))
    other = df[qi].map(lambda v: ("v", v) if v is not None else ("null",))
    groups = pd.DataFrame({"k": key, "q": other}).groupby("k", sort=False)["q"]
    sizes, distinct = groups.size(), groups.nunique()
    return len(sizes), int(sizes[distinct == 1].sum())


def figures(eng, df: pd.DataFrame, kept: list[str], qis: list[str]) -> Determination:
    described = {c.name: c for c in eng.describe("t").columns}

    def column(name: str, role: str) -> Column:
        c = described[name]
        return Column(c.name, c.type, role, c.kind, c.temporal)

    return stats.kept_determinants(
        eng, "t", [column(k, "insensitive") for k in kept], [column(q, "qi") for q in qis], list(described)
    )


def test_the_figures_match_pandas(engine):
    """Every column of a generated table as kept, against every QI: its groups, and the rows
    in groups holding one value of the QI, NULL a value of both."""

    @settings(max_examples=examples(engine, 25), deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(tables())
    def matches(case: TableCase) -> None:
        df = case.df
        columns = list(df.columns)
        with connected(engine(case)) as eng:
            got = figures(eng, df, columns, list(case.qis))
        assert got.n_rows == len(df)
        for k in columns:
            for q in case.qis:
                groups, rows = reference(df, k, q)
                assert (got.values[k], got.determined[(k, q)]) == (groups, rows), (k, q)
        for q in case.qis:
            one = len({("v", v) if v is not None else ("null",) for v in df[q]}) == 1
            assert (q in got.constant) is one, q

    matches()


BOOLEANS = pd.DataFrame(
    {
        "code": [1, 1, 2, 2, None, None, 3, 3],
        "flag": [True, True, False, False, None, None, True, None],
        "day": [
            "2020-01-01",
            "2020-01-01",
            None,
            None,
            "2021-05-05",
            "2021-05-05",
            "2020-01-01",
            "2020-01-02",
        ],
        "word": ["a", "a", "b", "b", None, None, "c", "c"],
    },
    dtype=object,
)


def test_booleans_dates_and_nulls_on_every_engine(engine):
    """A boolean QI (PostgreSQL has no MIN of booleans), a date, NULL a value on both sides:
    code's groups 1, 2 and NULL hold one value of each; group 3 does not (flag TRUE and NULL,
    day two dates) but holds one word."""
    types = {"code": "INTEGER", "flag": "BOOLEAN", "day": "DATE", "word": "VARCHAR"}
    with connected(engine.frame(BOOLEANS, types)) as eng:
        got = figures(eng, BOOLEANS, ["code"], ["flag", "day", "word"])
    assert got.n_rows == 8 and got.values == {"code": 4}
    assert got.determined == {("code", "flag"): 6, ("code", "day"): 6, ("code", "word"): 8}
    assert got.constant == frozenset()
    assert [d.qis for d in rule.determinants(got, ["code"], ["flag", "day", "word"])] == [("word",)]


def test_a_run_on_every_engine_refuses_and_allows(engine):
    """anonymize through each engine: refused with the line, then let."""
    df = clinic()
    roles = {"qi": QI, "keep": "grade_code,ward", "drop": "visit_id", "sensitive": "dx"}
    database = engine.frame(df, TYPES)
    with pytest.raises(RoleError, match="determines quasi-identifier 'grade'"):
        sbc_sql.anonymize(database, "t", 5, output="r", **roles)
    assert engine.catalog(database) == [("table", "t")]
    with sbc_sql.anonymize(
        database, "t", 5, output="r", allow_determinant="grade_code", log=lambda _: None, **roles
    ) as result:
        assert result.measures is not None and result.measures.released == len(df)
