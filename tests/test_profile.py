"""sbc-sql profile: the risk of a table before release, checked against figures known by hand
and against an independent computation on Adult (a pandas GROUP BY per combination)."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import duckdb
import pandas as pd
import pytest
import sqlglot
from helpers import adult_file, load_example, to_postgres

import sbc_sql
from sbc_sql.errors import InputError
from sbc_sql.quality.profile import WorkNames, profile, sets_sql, text
from sbc_sql.sql.dialects.postgres import SbcPostgres
from sbc_sql.sql.dialects.spark import SbcSpark

datasets = load_example("benchmarks/datasets.py")

# ten rows whose figures are counted by hand in the tests below; every value carries a
# marker so that a test can see that no message shows one
SMALL = pd.DataFrame(
    {
        "person_id": [f"CELL-p{i:02d}" for i in range(10)],
        "email": [f"CELL-m{i % 5}" for i in range(10)],
        "age": [30, 30, 30, 40, 40, 50, None, None, 60, None],
        "zip": ["CELL-A", "CELL-A", "CELL-B", "CELL-B", "CELL-B", "CELL-C", None, "CELL-C", "CELL-A", None],
        "diagnosis": [f"CELL-d{i % 3}" for i in range(10)],
        "visits": [1, 2, 3, 4, 5, 6, 7, 8, 9, None],
    }
)


@pytest.fixture
def small_db(tmp_path: Path, make_table) -> Path:
    path = tmp_path / "small.duckdb"
    with duckdb.connect(str(path)) as con:
        make_table(con, "people", SMALL, {"age": "INTEGER", "visits": "INTEGER"})
        con.execute("COMMENT ON COLUMN people.diagnosis IS 'sbc:sensitive'")
    return path


@pytest.fixture(scope="module")
def adult_db(tmp_path_factory) -> Path:
    return adult_file(tmp_path_factory.mktemp("adult"))


def adult_roles() -> dict[str, list[str]]:
    return {
        "qi": datasets.ADULT_QIS_8,
        "keep": [c for c in datasets.ADULT_COLUMNS if c not in datasets.ADULT_QIS_8],
    }


# ---------------------------------------------------------------------------------------
# a table known by hand


def test_small_table_figures_by_hand(small_db: Path) -> None:
    p = profile(small_db, "people", keep="visits")
    assert p.n_rows == 10
    col = {c.name: c for c in p.columns}
    # age: 30 x3, 40 x2, 50, 60, NULL x3 -> 4 distinct values, 2 rows unique (50, 60)
    assert (col["age"].distinct, col["age"].null_share, col["age"].unique_share) == (4, 0.3, 0.2)
    # zip: A x3, B x3, C x2, NULL x2 -> nothing unique
    assert (col["zip"].distinct, col["zip"].null_share, col["zip"].unique_share) == (3, 0.2, 0.0)
    # visits: 1..9 and one NULL: 9 distinct values, yet every row unique (a lone NULL is a value)
    assert (col["visits"].distinct, col["visits"].null_share, col["visits"].unique_share) == (9, 0.1, 1.0)
    assert (col["person_id"].distinct, col["person_id"].unique_share) == (10, 1.0)

    # the raw QIs: the undeclared columns anonymize would take, identifiers left out
    assert (p.qis, p.qi_source) == (("age", "zip"), "default")
    # classes on (age, zip): (30,A) 2, (30,B) 1, (40,B) 2, (50,C) 1, (NULL,NULL) 2 (NULL is
    # a value), (NULL,C) 1, (60,A) 1
    r = p.risk
    assert r is not None
    assert (r.records, r.classes, r.unique_records, r.smallest_class) == (10, 7, 4, 1)
    assert r.unique_share == 0.4
    assert r.prosecutor_highest == 1.0
    assert r.prosecutor_mean == pytest.approx(0.7)  # (2 * 1/2 * 3 + 4 * 1) / 10
    assert r.marketer == pytest.approx(0.7)  # 7 classes / 10 records
    assert (r.prosecutor_above_20, r.prosecutor_above_10, r.prosecutor_above_5) == (1.0, 1.0, 1.0)

    ranked = [(c.columns, c.unique_records) for c in p.combinations]
    assert ranked == [(("age", "zip"), 4), (("age",), 2), (("zip",), 0)]
    assert p.greedy == ()


def test_small_table_roles_and_reasons(small_db: Path) -> None:
    p = profile(small_db, "people", keep="visits")
    col = {c.name: c for c in p.columns}
    assert (col["person_id"].role, col["person_id"].declared) == ("identifier", False)
    assert "distinct on all 10 rows" in col["person_id"].reason
    assert (col["email"].role, col["email"].declared) == ("identifier", False)
    assert "named like a direct identifier ('email')" in col["email"].reason
    assert (col["diagnosis"].role, col["diagnosis"].declared) == ("sensitive", True)
    assert col["diagnosis"].reason == "declared by its comment 'sbc:sensitive'"
    assert (col["visits"].role, col["visits"].declared, col["visits"].reason) == (
        "insensitive",
        True,
        "declared by --keep",
    )
    for name in ("age", "zip"):
        assert (col[name].role, col[name].declared) == ("qi", False)
        assert "data alone cannot tell" in col[name].reason


def test_a_declared_role_wins_and_declared_qis_are_the_raw_qis(small_db: Path) -> None:
    # person_id is distinct on every row, yet declared a QI: reported as declared, with a note
    p = profile(small_db, "people", qi=["zip", "person_id"], drop="email")
    col = {c.name: c for c in p.columns}
    assert (col["person_id"].role, col["person_id"].declared) == ("qi", True)
    assert col["person_id"].reason.startswith("declared by --qi; note: it is distinct on all 10 rows")
    assert (col["email"].role, col["email"].reason) == ("identifier", "declared by --drop")
    assert (p.qis, p.qi_source) == (("person_id", "zip"), "declared")  # in table order
    assert "while QIs are named" in col["age"].reason
    assert p.risk is not None and p.risk.unique_records == 10


def test_greedy_path_beyond_three_qis(tmp_path: Path) -> None:
    frame = pd.DataFrame(
        {
            "a": [1, 1, 1, 1, 2, 2, 2, 2],
            "b": [1, 1, 2, 2, 1, 1, 2, 2],
            "c": [1, 2, 1, 2, 1, 2, 1, 2],
            "d": [1, 1, 1, 1, 1, 1, 1, 2],
            "e": [1, 1, 1, 1, 1, 1, 1, 1],
        }
    )
    path = tmp_path / "g.duckdb"
    with duckdb.connect(str(path)) as con:
        con.register("frame", frame)
        con.execute("CREATE TABLE g AS SELECT * FROM frame")
    p = profile(path, "g")
    # (a, b, c) makes all 8 rows unique; adding d or e changes nothing: the earlier one first
    assert p.combinations[0].columns == ("a", "b", "c") and p.combinations[0].unique_records == 8
    assert [(s.columns, s.added, s.unique_records) for s in p.greedy] == [
        (("a", "b", "c", "d"), "d", 8),
        (("a", "b", "c", "d", "e"), "e", 8),
    ]


def test_empty_table_and_hostile_names(tmp_path: Path) -> None:
    path = tmp_path / "h.duckdb"
    with duckdb.connect(str(path)) as con:
        con.execute('CREATE TABLE "we""ird" ("sbc_flag_0" INTEGER, "sbc_size" VARCHAR, "a ""b" INTEGER)')
        con.execute("CREATE TABLE empty (x INTEGER, y VARCHAR)")
        con.execute("""INSERT INTO "we""ird" VALUES (1, 'u', 1), (1, 'u', 2), (2, 'v', 2)""")
    p = profile(path, 'we"ird')
    assert p.risk is not None and (p.risk.classes, p.risk.unique_records) == (3, 3)
    assert [c.unique_records for c in p.combinations if len(c.columns) == 1] == [1, 1, 1]
    e = profile(path, "empty")
    assert e.n_rows == 0 and e.risk is not None
    assert (e.risk.classes, e.risk.unique_records, e.risk.prosecutor_highest) == (0, 0, None)
    assert all(c.unique_share == 0.0 and c.distinct == 0 for c in e.columns)
    assert "Riskiest QI combinations" in text(e)


# ---------------------------------------------------------------------------------------
# Adult, against pandas


def unique_rows(frame: pd.DataFrame, columns: list[str]) -> tuple[int, pd.Series]:
    sizes = frame.groupby(columns, dropna=False).size()
    return int((sizes == 1).sum()), sizes


def test_adult_equals_an_independent_computation(adult_db: Path) -> None:
    p = profile(adult_db, "adult", **adult_roles())
    with duckdb.connect(str(adult_db), read_only=True) as con:
        frame = con.execute("SELECT * FROM adult").df()
    qis = datasets.ADULT_QIS_8
    n = len(frame)
    assert p.n_rows == n == 30162
    assert p.qis == tuple(qis)

    unique, sizes = unique_rows(frame, qis)
    per_record = frame.groupby(qis, dropna=False)[qis[0]].transform("size")
    r = p.risk
    assert r is not None
    assert (r.classes, r.unique_records, r.smallest_class) == (len(sizes), unique, int(sizes.min()))
    assert r.unique_share == unique / n
    assert r.prosecutor_highest == pytest.approx(float((1 / per_record).max()))
    assert r.prosecutor_mean == pytest.approx(float((1 / per_record).mean()))
    assert r.prosecutor_above_20 == pytest.approx(float((1 / per_record > 0.20).mean()))
    assert r.prosecutor_above_10 == pytest.approx(float((1 / per_record > 0.10).mean()))
    assert r.prosecutor_above_5 == pytest.approx(float((1 / per_record > 0.05).mean()))
    assert r.marketer == pytest.approx(len(sizes) / n)

    combos = [c for size in (1, 2, 3) for c in itertools.combinations(range(len(qis)), size)]
    expected = {c: unique_rows(frame, [qis[i] for i in c])[0] for c in combos}
    ranked = sorted(combos, key=lambda c: (-expected[c], c))
    assert len(p.combinations) == 92
    assert [(c.columns, c.unique_records) for c in p.combinations] == [
        (tuple(qis[i] for i in c), expected[c]) for c in ranked
    ]

    # the greedy path from the best 3-combination, recomputed
    current = next(c for c in ranked if len(c) == 3)
    path = []
    while len(current) < len(qis):
        options = [tuple(sorted((*current, i))) for i in range(len(qis)) if i not in current]
        scored = {o: unique_rows(frame, [qis[i] for i in o])[0] for o in options}
        best = max(options, key=lambda o: (scored[o], -min(set(o) - set(current))))
        path.append((tuple(qis[i] for i in best), scored[best]))
        current = best
    assert [(s.columns, s.unique_records) for s in p.greedy] == path
    assert p.greedy[-1].unique_records == r.unique_records


# ---------------------------------------------------------------------------------------
# the command line and the API


def test_cli_text_and_json(small_db: Path, cli) -> None:
    res = cli(["profile", "--db", small_db, "-t", "people", "--keep", "visits", "-q"])
    assert res.exit_code == 0, res.stderr
    for heading in ("Columns", "Risk on the 2 quasi-identifiers", "Riskiest QI combinations"):
        assert heading in res.stdout
    assert "person_id" in res.stdout and "identifier" in res.stdout
    assert "CELL" not in res.stdout + res.stderr  # no cell value is ever shown

    res = cli(["profile", "--db", small_db, "-t", "people", "--keep", "visits", "--json"])
    assert res.exit_code == 0, res.stderr
    doc = json.loads(res.stdout)
    assert set(doc) == {
        "schema",
        "version",
        "ok",
        "table",
        "n_rows",
        "columns",
        "qis",
        "qi_source",
        "risk",
        "combinations",
        "greedy",
        "seconds",
        "population",
    }
    assert doc["population"] is None
    assert doc["risk"]["unique_records"] == 4 and doc["qis"] == ["age", "zip"]
    assert doc["combinations"][0]["columns"] == ["age", "zip"]
    assert {
        "name",
        "type",
        "distinct",
        "null_share",
        "unique_share",
        "role",
        "declared",
        "reason",
        "determines",
    } == set(doc["columns"][0])
    assert "profile: " in res.stderr  # the step lines
    assert "CELL" not in res.stdout + res.stderr


def test_cli_says_a_shared_reason_once(small_db: Path, cli) -> None:
    """A reason several columns share is printed once, as a numbered note under the table
    the rows refer to; a reason of one column stays on its row."""
    res = cli(["profile", "--db", small_db, "-t", "people", "--qi", "age,zip", "--keep", "visits", "-q"])
    assert res.exit_code == 0, res.stderr
    table = res.stdout.split("\n\n")[1].splitlines()
    assert table[0] == "Columns" and table[1].split() == [
        *("column", "type", "distinct", "NULL", "unique", "role", "reason")
    ]
    rows = {line.split()[0]: line for line in table[2:] if not line.lstrip().startswith("[")}
    notes = [line for line in table[2:] if line.lstrip().startswith("[")]
    assert rows["age"].endswith(" [1]") and rows["zip"].endswith(" [1]")
    assert notes == ["  [1] declared by --qi"]
    assert rows["diagnosis"].endswith(" declared by its comment 'sbc:sensitive'")
    assert rows["visits"].endswith(" declared by --keep")
    assert res.stdout.count("declared by --qi") == 1


def test_cli_bad_column_is_one_error_line(small_db: Path, cli) -> None:
    res = cli(["profile", "--db", small_db, "-t", "people", "--qi", "age,nope"])
    assert res.exit_code == 1
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: column 'nope' given to --qi does not exist")
    res = cli(["profile", "--db", small_db, "-t", "nobody", "-q"])
    assert res.exit_code == 1 and res.stderr.strip().startswith("Error: table 'nobody' does not exist")
    assert len(res.stderr.strip().splitlines()) == 1


def test_api_export_speaks_python(small_db: Path) -> None:
    assert sbc_sql.profile.__doc__ and isinstance(sbc_sql.profile(small_db, "people"), sbc_sql.Profile)
    with pytest.raises(InputError, match="given to qi="):
        sbc_sql.profile(small_db, "people", qi=["nope"])


# ---------------------------------------------------------------------------------------
# other engines


def test_sql_renders_in_spark_and_postgres() -> None:
    tree, used = sets_sql("t", ["age", "zip", "sex"], [(0,), (0, 2)], WorkNames.avoiding(["age"]))
    assert used == [0, 2]
    spark = tree.sql(dialect=SbcSpark)
    assert "GROUPING SETS ((`age`), (`age`, `sex`))" in spark and "GROUPING(`sex`)" in spark
    sqlglot.parse_one(spark, read="spark")
    postgres = tree.sql(dialect=SbcPostgres)
    assert "DOUBLE PRECISION" in postgres
    sqlglot.parse_one(postgres, read="postgres")


def test_postgres_figures_equal_duckdb(small_db: Path, adult_db: Path, postgres_url: str) -> None:
    def same(a: sbc_sql.Profile, b: sbc_sql.Profile) -> None:
        da, db = a.as_dict(), b.as_dict()
        for d in (da, db):
            d.pop("seconds")
            for c in d["columns"]:
                c.pop("type")
        assert da == db

    with duckdb.connect(str(small_db), read_only=True) as con:
        to_postgres(con, "people", postgres_url)
    same(profile(postgres_url, "people", keep="visits"), profile(small_db, "people", keep="visits"))
    with duckdb.connect(str(adult_db), read_only=True) as con:
        to_postgres(con, "adult", postgres_url)
    same(profile(postgres_url, "adult", **adult_roles()), profile(adult_db, "adult", **adult_roles()))
