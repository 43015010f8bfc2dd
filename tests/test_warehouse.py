"""A run split with another warehouse: ``sbc-sql cluster`` writes the class ids, ``sbc-sql sql``
prints the rest of the run for postgres, snowflake, bigquery, trino and spark.

The printed SQL is pinned per dialect in tests/golden/<dialect>/run.sql; after an intended
change, regenerate with ``SBC_UPDATE_GOLDEN=1 pytest tests/test_warehouse.py`` and review the
diff. The dialect fixes are each checked against what sqlglot gives without them.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import duckdb
import pandas as pd
import pyarrow.parquet as pq
import pytest
import sqlglot
from helpers import file_catalog, make_table
from sqlglot import exp
from test_engines import DUCKDB_ONLY, TYPES, people
from typer.testing import CliRunner

import sbc_sql
from sbc_sql import __version__, warehouse
from sbc_sql.cli import app
from sbc_sql.errors import InputError
from sbc_sql.privacy.criteria import Criteria
from sbc_sql.sql.dialects import ListHasNull, ValueSet
from sbc_sql.sql.dialects.bigquery import SbcBigQuery
from sbc_sql.sql.dialects.snowflake import SbcSnowflake
from sbc_sql.sql.dialects.trino import SbcTrino

GOLDEN = Path(__file__).resolve().parent / "golden"
UPDATE = os.environ.get("SBC_UPDATE_GOLDEN") == "1"
L_DIVERSE = Criteria(2, "distinct", None, None, False)
ROLES = {"qi": ["age", "born", "seen", "sex", "zip"], "sensitive": ["dis", "pay"]}
# functions each warehouse has that sqlglot's parser does not know by name
NATIVE: dict[str, set[str]] = {
    "postgres": {"CARDINALITY", "ISFINITE"},
    "snowflake": {"ARRAY_COMPACT"},
    "bigquery": set(),
    "trino": set(),
    "spark": set(),
}


# functions sqlglot knows (so reads back) but the warehouse does not have
ABSENT: dict[str, tuple[str, ...]] = {
    "postgres": ("UNIX_MICROS(", "TRANSFORM(", "ARRAY_SORT("),
    "snowflake": ("UNIX_MICROS(",),
    "bigquery": ("TRANSFORM(",),
    "trino": ("UNIX_MICROS(",),
    "spark": ("COLLECT_LIST(",),
}


def frame() -> pd.DataFrame:
    """people() with the categorical QIs free of NULL, so that BigQuery (whose arrays cannot
    hold one) prints the same run as the others; the numeric QIs keep their NULLs."""
    df = people()
    df["zip"] = df["zip"].fillna("00")
    return df


@pytest.fixture
def db(tmp_path) -> Path:
    path = tmp_path / "t.duckdb"
    con = duckdb.connect(str(path))
    make_table(con, "t", frame(), TYPES)
    con.close()
    return path


def statements(text: str) -> list[str]:
    return [s for s in text.split(";\n\n") if s.strip() and not s.lstrip().startswith("--")] or []


def body(text: str) -> str:
    """The printed SQL without its header comment."""
    return text.split("\n\n", 1)[1]


@pytest.mark.parametrize("dialect", warehouse.DIALECTS)
def test_golden_sql_per_dialect(db, dialect) -> None:
    # with l-diversity, so that its check is pinned too
    text = warehouse.print_sql(db, "t", 3, dialect, row_id="id", criteria=L_DIVERSE, **ROLES)
    text = text.replace(f"sbc-sql {__version__}:", "sbc-sql VERSION:")
    golden = GOLDEN / dialect / "run.sql"
    if UPDATE:
        golden.parent.mkdir(parents=True, exist_ok=True)
        golden.write_text(text, encoding="utf-8")
    assert golden.is_file(), f"no golden file; run with SBC_UPDATE_GOLDEN=1 to write {golden}"
    assert text == golden.read_text(encoding="utf-8")


@pytest.mark.parametrize("dialect", warehouse.DIALECTS)
def test_the_printed_sql_parses_in_its_dialect(db, dialect) -> None:
    text = warehouse.print_sql(db, "t", 3, dialect, row_id="id", **ROLES)
    sql = body(text)
    duckdb_only = DUCKDB_ONLY
    if dialect in ("bigquery", "trino"):  # where DATE_DIFF is native (the day count, exact)
        duckdb_only = re.compile(DUCKDB_ONLY.pattern.replace("|DATE_DIFF", ""), re.IGNORECASE)
    assert not duckdb_only.search(sql)
    assert "rowid" not in sql.lower()
    assert not [name for name in ABSENT[dialect] if name in sql]
    trees = sqlglot.parse(sql, read=dialect)
    assert len(trees) == len(statements(sql)) > 10
    for tree in trees:
        assert tree is not None
        unknown = {a.name.upper() for a in tree.find_all(exp.Anonymous)} - NATIVE[dialect]
        assert not unknown, (unknown, tree.sql(dialect=dialect))
        assert not list(tree.find_all(exp.Placeholder))


def run_printed(db: Path, table: str, ids: Path, output: str) -> tuple[dict[str, int], list[tuple]]:
    """The printed statements of a run of ``table`` (in DuckDB's own dialect) run on ``db``
    with the ids loaded as the labels table: each check's figure, and the release's rows."""
    text = warehouse.print_sql(db, table, 3, "duckdb", row_id="id", output=output, labels="ids", **ROLES)
    con = duckdb.connect(str(db))
    con.execute("CREATE OR REPLACE TABLE ids AS SELECT * FROM read_parquet(?)", [str(ids)])
    gates: dict[str, int] = {}
    for statement in statements(body(text)):
        cursor = con.execute(statement)
        if cursor.description is None:
            continue
        names = [d[0] for d in cursor.description]
        row = cursor.fetchall()
        for gate in ("violations", "missing", "extra", "unlabelled"):
            if gate in names and len(row) == 1:
                gates[gate] = gates.get(gate, 0) + row[0][names.index(gate)]
    released = con.execute(f'SELECT * EXCLUDE (eq_class) FROM "{output}" ORDER BY ALL').fetchall()
    con.close()
    return gates, released


def test_the_printed_sql_and_the_ids_give_anonymize_s_release(db, tmp_path) -> None:
    """The ids of `cluster` loaded as the labels table, and the printed statements run (here in
    DuckDB's own dialect): every check passes and the release is the one anonymize writes
    (the key follows the row order, so ties are broken alike)."""
    ids = tmp_path / "ids.parquet"
    written, suppressed = warehouse.cluster_ids(db, "t", 3, ids, row_id="id", **ROLES)
    labels = pq.read_table(ids)
    assert labels.column_names == ["row_id", "eq_class"]
    assert (written, suppressed) == (60, 0)
    assert sorted(labels.column("row_id").to_pylist()) == list(range(60))
    gates, printed = run_printed(db, "t", ids, "w")
    assert set(gates) == {"violations", "missing", "extra", "unlabelled"}
    assert not any(gates.values())

    sbc_sql.anonymize(str(db), "t", 3, output="a", drop=["id"], **ROLES)
    con = duckdb.connect(str(db))
    anonymized = con.execute('SELECT * EXCLUDE (eq_class) FROM "a" ORDER BY ALL').fetchall()
    con.close()
    assert printed == anonymized


def test_a_key_out_of_row_order_still_verifies_and_wrong_ids_do_not(db, tmp_path) -> None:
    con = duckdb.connect(str(db))
    con.execute("CREATE TABLE s AS SELECT * REPLACE ((id * 37) % 60 + 1000 AS id) FROM t")
    con.close()
    ids = tmp_path / "ids.parquet"
    warehouse.cluster_ids(db, "s", 3, ids, row_id="id", **ROLES)
    gates, released = run_printed(db, "s", ids, "w")
    assert not any(gates.values()) and len(released) == 60
    # a row moved to a class of its own: the printed checks catch it
    labels = pq.read_table(ids).to_pandas()
    labels.loc[0, "eq_class"] = labels["eq_class"].max() + 1
    labels.to_parquet(ids)
    gates, _ = run_printed(db, "s", ids, "w2")
    assert gates["violations"] > 0


def test_without_a_key_the_ids_are_row_positions_and_the_sql_joins_sbc_row_id(db, tmp_path) -> None:
    ids = tmp_path / "ids.csv"
    warehouse.cluster_ids(db, "t", 3, ids, drop=["id"], **ROLES)
    got = pd.read_csv(ids)
    assert list(got.columns) == ["row_id", "eq_class"]
    assert sorted(got["row_id"]) == list(range(60))
    text = warehouse.print_sql(db, "t", 3, "postgres", drop=["id"], **ROLES)
    assert f's."{warehouse.POSITION_COLUMN}" = l.row_id' in text
    assert f"column '{warehouse.POSITION_COLUMN}'" in text.split("\n\n")[0]


def test_a_row_id_must_be_an_integer_key(db, tmp_path) -> None:
    with pytest.raises(InputError, match="integer key"):
        warehouse.cluster_ids(
            db, "t", 3, tmp_path / "i.parquet", row_id="dis", qi=ROLES["qi"], sensitive=["pay"]
        )
    with pytest.raises(InputError, match="has no column"):
        warehouse.print_sql(db, "t", 3, "trino", row_id="nope", **ROLES)
    con = duckdb.connect(str(db))
    con.execute("CREATE TABLE twice AS SELECT * REPLACE (id // 2 AS id) FROM t")
    con.close()
    with pytest.raises(InputError, match="not unique"):
        warehouse.cluster_ids(db, "twice", 3, tmp_path / "i.parquet", row_id="id", **ROLES)
    assert not (tmp_path / "i.parquet").exists()
    with pytest.raises(InputError, match=r"parquet or \.csv"):
        warehouse.cluster_ids(db, "t", 3, tmp_path / "i.json", row_id="id", **ROLES)


def test_bigquery_refuses_a_categorical_qi_with_null(tmp_path) -> None:
    path = tmp_path / "n.duckdb"
    con = duckdb.connect(str(path))
    make_table(con, "t", people(), TYPES)
    con.close()
    with pytest.raises(InputError, match="BigQuery array"):
        warehouse.print_sql(path, "t", 3, "bigquery", row_id="id", **ROLES)
    # the others keep the NULL as a value set element
    assert "ARRAY_APPEND" in warehouse.print_sql(path, "t", 3, "snowflake", row_id="id", **ROLES)


def test_the_commands(db, tmp_path) -> None:
    runner = CliRunner()
    ids = tmp_path / "ids.parquet"
    roles = ["--qi", "age,born,seen,sex,zip", "--sensitive", "dis,pay"]
    got = runner.invoke(
        app,
        ["cluster", "--db", str(db), "-t", "t", "-k", "3", "--row-id", "id", "--out", str(ids), "-q", *roles],
    )
    assert got.exit_code == 0, got.output
    assert "wrote 60 class ids" in got.output and ids.is_file()
    got = runner.invoke(
        app,
        ["sql", "--dialect", "snowflake", "--db", str(db), "-t", "t", "-k", "3", "--row-id", "id", *roles],
    )
    assert got.exit_code == 0, got.output
    assert got.output == warehouse.print_sql(db, "t", 3, "snowflake", row_id="id", **ROLES)
    got = runner.invoke(app, ["sql", "--dialect", "oracle", "--db", str(db), "-t", "t", "-k", "3", *roles])
    assert got.exit_code == 2


def test_cluster_and_sql_run_beside_a_release_of_the_same_name(cli, db, tmp_path) -> None:
    """Neither writes to the database, so a release named as theirs would be (t_k3, from
    anonymize) is no reason to refuse, nor do they suggest options they do not have."""
    roles = ["--qi", "age,born,seen,sex,zip", "--sensitive", "dis,pay", "--drop", "id"]
    made = cli(["anonymize", "--db", db, "-t", "t", "-k", "3", "-q", *roles])
    assert made.exit_code == 0, made.stderr
    before = file_catalog(db)
    assert ("view", "t_k3") in before
    ids = tmp_path / "ids.parquet"
    got = cli(["cluster", "--db", db, "-t", "t", "-k", "3", "--row-id", "id", "--out", ids, "-q", *roles])
    assert got.exit_code == 0, got.stderr
    assert "wrote 60 class ids" in got.stdout and ids.is_file()
    got = cli(["sql", "--dialect", "snowflake", "--db", db, "-t", "t", "-k", "3", "--row-id", "id", *roles])
    assert got.exit_code == 0, got.stderr
    assert got.stderr == "" and 'CREATE VIEW "t_k3"' in got.stdout
    assert file_catalog(db) == before


# ---- each dialect fix against sqlglot's own output ----


def test_snowflake_value_sets_keep_null() -> None:
    # sqlglot: ARRAY_AGG, which omits NULLs in Snowflake, so a class's NULL is lost
    stock = sqlglot.transpile(
        "SELECT LIST(DISTINCT x ORDER BY x NULLS LAST) FROM t", read="duckdb", write="snowflake"
    )
    assert stock == ["SELECT ARRAY_AGG(DISTINCT x) WITHIN GROUP (ORDER BY x) FROM t"]
    ours = ValueSet(this=exp.column("x"), sets=exp.Literal.number(1)).sql(dialect=SbcSnowflake)
    assert ours == (
        "CASE WHEN COUNT(*) > COUNT(x) THEN "
        "ARRAY_APPEND(ARRAY_AGG(DISTINCT x) WITHIN GROUP (ORDER BY x ASC), NULL) "
        "ELSE ARRAY_AGG(DISTINCT x) WITHIN GROUP (ORDER BY x ASC) END"
    )


def test_a_null_element_is_found_in_snowflake_and_trino() -> None:
    # sqlglot: a comparison with NULL, which is never TRUE
    assert sqlglot.transpile("SELECT list_contains(l, NULL)", read="duckdb", write="trino") == [
        "SELECT CONTAINS(l, NULL)"
    ]
    assert sqlglot.transpile("SELECT list_contains(l, NULL)", read="duckdb", write="snowflake") == [
        "SELECT ARRAY_CONTAINS(CAST(NULL AS VARIANT), l)"
    ]
    has_null = ListHasNull(this=exp.column("l"))
    assert has_null.sql(dialect=SbcTrino) == "CARDINALITY(FILTER(l, sbc_v -> sbc_v IS NULL)) > 0"
    assert has_null.sql(dialect=SbcSnowflake) == "ARRAY_SIZE(l) > ARRAY_SIZE(ARRAY_COMPACT(l))"
    assert has_null.sql(dialect=SbcBigQuery) == "FALSE"


def test_bigquery_value_sets_skip_null() -> None:
    # sqlglot: ARRAY_AGG without IGNORE NULLS, which fails on a NULL in BigQuery
    stock = sqlglot.transpile("SELECT LIST(DISTINCT x ORDER BY x) FROM t", read="duckdb", write="bigquery")
    assert stock == ["SELECT ARRAY_AGG(DISTINCT x ORDER BY x) FROM t"]
    ours = ValueSet(this=exp.column("x"), sets=exp.Literal.number(1)).sql(dialect=SbcBigQuery)
    assert ours == "ARRAY_AGG(DISTINCT x IGNORE NULLS ORDER BY x ASC)"


def test_trino_value_sets_keep_null_last() -> None:
    stock = sqlglot.transpile(
        "SELECT LIST(DISTINCT x ORDER BY x NULLS LAST) FROM t", read="duckdb", write="trino"
    )
    assert stock == ["SELECT ARRAY_AGG(DISTINCT x ORDER BY x) FROM t"]  # the NULL order is dropped
    ours = ValueSet(this=exp.column("x"), sets=exp.Literal.number(1)).sql(dialect=SbcTrino)
    assert ours == "ARRAY_AGG(DISTINCT x ORDER BY x ASC NULLS LAST)"


def test_bigquery_maps_an_array_through_unnest() -> None:
    # sqlglot keeps TRANSFORM, a function BigQuery does not have
    query = "SELECT list_transform(l, v -> v || '!') FROM t"
    assert sqlglot.transpile(query, read="duckdb", write="bigquery") == [
        "SELECT TRANSFORM(l, v -> v || '!') FROM t"
    ]
    ours = sqlglot.parse_one(query, read="duckdb").sql(dialect=SbcBigQuery)
    assert ours == (
        "SELECT ARRAY(SELECT v || '!' FROM UNNEST(l) AS v WITH OFFSET AS sbc_n ORDER BY sbc_n) FROM t"
    )


@pytest.mark.parametrize(
    ("dialect", "stock", "ours"),
    [
        ("snowflake", "UNIX_MICROS(ts)", "DATE_PART(EPOCH_MICROSECOND, ts)"),
        ("trino", "UNIX_MICROS(ts)", "DATE_DIFF('microsecond', TIMESTAMP '1970-01-01 00:00:00', ts)"),
    ],
)
def test_timestamps_become_microseconds(dialect, stock, ours) -> None:
    # sqlglot keeps BigQuery's UNIX_MICROS, a function neither warehouse has
    micros = exp.UnixMicros(this=exp.column("ts"))
    assert micros.sql(dialect=dialect) == stock
    assert micros.sql(dialect=warehouse.dialect(dialect)) == ours


@pytest.mark.parametrize("dialect", ["snowflake", "bigquery", "trino", "spark"])
def test_no_materialized_hint_where_there_is_none(dialect) -> None:
    query = "WITH s AS MATERIALIZED (SELECT 1 AS a) SELECT a FROM s"
    if dialect != "spark":  # sqlglot keeps the hint, which these warehouses reject
        assert "MATERIALIZED" in sqlglot.transpile(query, read="duckdb", write=dialect)[0]
    tree = sqlglot.parse_one(query, read="duckdb")
    assert "MATERIALIZED" not in tree.sql(dialect=warehouse.dialect(dialect))


def test_an_unknown_dialect_is_an_input_error() -> None:
    with pytest.raises(InputError, match="unknown dialect"):
        warehouse.dialect("oracle")


def test_a_file_source_and_dotted_names(db, tmp_path) -> None:
    parquet = tmp_path / "people.parquet"
    con = duckdb.connect(str(db))
    con.execute("COPY t TO ? (FORMAT parquet)", [str(parquet)])
    con.close()
    ids = tmp_path / "ids.parquet"
    warehouse.cluster_ids(None, str(parquet), 3, ids, row_id="id", **ROLES)
    assert pq.read_table(ids).num_rows == 60
    text = warehouse.print_sql(None, str(parquet), 3, "postgres", row_id="id", **ROLES)
    assert 'FROM "people" AS s' in text and "sbc_source" not in text
    text = warehouse.print_sql(
        None, str(parquet), 3, "spark", row_id="id", source="wh.sales.people", labels="stage.ids", **ROLES
    )
    assert "FROM `wh`.`sales`.`people` AS s" in text and "JOIN `stage`.`ids` AS l" in text


@pytest.mark.parametrize("dialect", warehouse.DIALECTS)
def test_every_criterion_prints_in_every_dialect(db, dialect) -> None:
    # t-closeness on a numeric column orders a running sum, which BigQuery takes without
    # NULLS LAST only; each criterion on a categorical and a numeric sensitive column
    for criteria in (
        Criteria(None, "distinct", 0.5, None, False),
        Criteria(None, "distinct", None, 3.0, False),
        Criteria(2, "entropy", None, None, False),
    ):
        for sensitive, other in (("dis", "pay"), ("pay", "dis")):
            text = warehouse.print_sql(
                db,
                "t",
                3,
                dialect,
                row_id="id",
                qi=ROLES["qi"],
                sensitive=[sensitive],
                drop=[other],
                criteria=criteria,
                max_suppression=0.5,
            )
            assert all(tree is not None for tree in sqlglot.parse(body(text), read=dialect))


def test_the_postgres_sql_runs_on_postgresql(db, tmp_path, postgres_url) -> None:
    """The statements printed for PostgreSQL, run on a real server with the ids of `cluster`
    loaded as the labels table: every check passes, and the release verifies there and has
    the classes the DuckDB run of the same statements makes."""
    import adbc_driver_postgresql.dbapi as adbc
    from helpers import to_postgres

    ids = tmp_path / "ids.parquet"
    warehouse.cluster_ids(db, "t", 3, ids, row_id="id", **ROLES)
    con = duckdb.connect(str(db))
    to_postgres(con, "t", postgres_url)
    con.close()
    text = warehouse.print_sql(db, "t", 3, "postgres", row_id="id", output="w", labels="ids", **ROLES)
    gates: dict[str, int] = {}
    with adbc.connect(postgres_url, autocommit=True) as pg, pg.cursor() as cur:
        cur.adbc_ingest("ids", pq.read_table(ids), mode="create")
        for statement in statements(body(text)):
            cur.execute(statement)
            if cur.description is None:
                continue
            names = [d[0] for d in cur.description]
            rows = cur.fetchall()
            for gate in ("violations", "missing", "extra", "unlabelled"):
                if gate in names and len(rows) == 1:  # a SUM is NUMERIC, which ADBC gives as text
                    gates[gate] = gates.get(gate, 0) + int(float(rows[0][names.index(gate)]))
        cur.execute('SELECT count(*) FROM "w" GROUP BY eq_class ORDER BY 1, 1')
        sizes = [r[0] for r in cur.fetchall()]
    assert set(gates) == {"violations", "missing", "extra", "unlabelled"}
    assert not any(gates.values())
    assert sbc_sql.verify(postgres_url, "t", "w", 3).ok
    run_printed(db, "t", ids, "d")
    con = duckdb.connect(str(db))
    assert sizes == [
        r[0] for r in con.execute('SELECT count(*) FROM "d" GROUP BY eq_class ORDER BY 1').fetchall()
    ]
    con.close()
