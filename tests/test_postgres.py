"""PostgreSQL as the engine: the same release, figures and verification as DuckDB on the
same rows in the same order; the source untouched; names and errors handled as PostgreSQL
needs (case-sensitive names, 63-byte identifiers, error text that may quote values).

The stages' own tests (statistics, pull, edge cases, verification) run on PostgreSQL too,
through conftest's ``engine`` fixture; here is what only PostgreSQL has."""

from __future__ import annotations

import json
import time
import uuid
from pathlib import Path

import duckdb
import pytest
from helpers import assert_same_measures, make_table, pg_rows, q, run_cli, run_module, to_postgres
from test_engines import ROLES, TYPES, people

import sbc_sql
from sbc_sql import engines
from sbc_sql.engines.postgres import PostgresEngine, safe_url
from sbc_sql.engines.urls import shown_url
from sbc_sql.errors import EngineError, InputError
from sbc_sql.model import CsvOptions
from sbc_sql.sql.dialects.postgres import SbcPostgres


@pytest.fixture
def duck() -> duckdb.DuckDBPyConnection:
    con = duckdb.connect()
    make_table(con, "t", people(), TYPES)
    return con


@pytest.fixture
def pg(duck: duckdb.DuckDBPyConnection, postgres_url: str) -> str:
    to_postgres(duck, "t", postgres_url)
    return postgres_url


def anonymize(database, *args, **kwargs) -> sbc_sql.Result:
    """A run whose connection (if it opened one) is closed again."""
    with sbc_sql.anonymize(database, *args, **kwargs) as result:
        return result


def release_rows(rows: list[tuple]) -> list[tuple]:
    return sorted(rows, key=repr)


def test_a_release_equals_duckdbs_on_the_same_rows(duck, pg) -> None:
    on_duck = anonymize(duck, "t", 3, output="rel", **ROLES)
    on_pg = anonymize(pg, "t", 3, output="rel", **ROLES)
    assert on_pg.written and on_duck.written
    assert_same_measures(on_pg.measures, on_duck.measures)
    assert on_pg.verdict == on_duck.verdict
    columns = ", ".join(
        q(c) for c in ("eq_class", "age_min", "age_max", "born_min", "born_max", "sex", "zip", "dis", "pay")
    )
    want = duck.execute(f"SELECT {columns} FROM rel").fetchall()
    got = pg_rows(pg, f"SELECT {columns} FROM rel")
    assert release_rows(got) == release_rows(want)
    # the same tables and views, nothing else left behind
    assert sorted(
        r[0]
        for r in pg_rows(
            pg,
            "SELECT relname FROM pg_class WHERE relnamespace = "
            "'public'::regnamespace AND relkind IN ('r', 'v')",
        )
    ) == [
        "rel",
        "rel_classes",
        "rel_rows",
        "rel_view",
        "t",
    ]


def test_verify_and_measure_take_the_url_and_agree_with_duckdb(duck, pg) -> None:
    anonymize(duck, "t", 3, output="rel", **ROLES)
    anonymize(pg, "t", 3, output="rel", **ROLES)
    for k in (3, 4):
        on_duck, on_pg = sbc_sql.verify(duck, "t", "rel", k), sbc_sql.verify(pg, "t", "rel", k)
        assert on_pg == on_duck
    m_duck, m_pg = sbc_sql.measure(duck, "t", "rel"), sbc_sql.measure(pg, "t", "rel")
    assert_same_measures(m_pg, m_duck)


def test_the_source_is_not_modified(pg) -> None:
    before = pg_rows(pg, "SELECT ctid::text, * FROM t ORDER BY ctid")
    anonymize(pg, "t", 3, output="rel", **ROLES)
    assert pg_rows(pg, "SELECT ctid::text, * FROM t ORDER BY ctid") == before


def test_the_row_id_is_the_ctids_block_and_offset(postgres_url) -> None:
    """block * 65536 + offset of each row's ctid, on a table of some 300 pages (block
    numbers above one byte) with offsets above one."""
    engine = PostgresEngine.connect(postgres_url)
    try:
        engine.fetch_all(
            "CREATE TABLE wide AS SELECT i, repeat('x', 400) AS pad FROM generate_series(1, 5000) AS g(i)"
        )
        row_id = engine.sql(engine.row_id("s"))
        rows = engine.fetch_all(f"SELECT {row_id}, CAST(s.ctid AS TEXT) FROM wide AS s")
    finally:
        engine.close()
    blocks = set()
    for got, ctid in rows:
        block, offset = (int(part) for part in ctid.strip("()").split(","))
        assert got == block * 65536 + offset
        blocks.add(block)
    assert len(rows) == 5000 and max(blocks) > 255


def test_the_tables_a_run_makes_have_statistics_at_once(postgres_url) -> None:
    """A table made by CREATE TABLE ... AS (temporary or not) and an uploaded one are
    analyzed when made: autovacuum never analyzes a temporary table, and the planner then
    takes a million rows for a few hundred thousand and 100,000 classes for 200."""
    import pyarrow as pa
    import sqlglot

    def reltuples(engine: PostgresEngine, table: str) -> float:
        query = "SELECT reltuples FROM pg_catalog.pg_class WHERE relname = $1"
        return float(engine.fetch_one(query, {"name": table})[0])

    engine = PostgresEngine.connect(postgres_url)
    try:
        made = "CREATE {} TABLE {} AS SELECT i FROM generate_series(1, 3000) AS g(i)"
        engine.scratch(sqlglot.parse_one(made.format("TEMPORARY", "t_made"), read=SbcPostgres))
        engine.execute(sqlglot.parse_one(made.format("", "made_here"), read=SbcPostgres))
        assert reltuples(engine, "t_made") == 3000
        assert reltuples(engine, "made_here") == 3000
        with engine.upload("t_uploaded", pa.table({"i": list(range(2000))})):
            assert reltuples(engine, "t_uploaded") == 2000
        # a table made otherwise is left to autovacuum (never analyzed: -1)
        engine.execute(sqlglot.parse_one("CREATE TEMPORARY TABLE t_plain (i INT)", read=SbcPostgres))
        assert reltuples(engine, "t_plain") == -1
    finally:
        engine.fetch_all("DROP TABLE IF EXISTS made_here")
        engine.close()


def test_hashed_joins_turn_merge_joins_off_inside_and_restore_the_sessions_setting(postgres_url) -> None:
    engine = PostgresEngine.connect(postgres_url)
    setting = "SELECT current_setting('enable_mergejoin')"
    try:
        assert engine.fetch_one(setting) == ("on",)
        with engine.hashed_joins():
            assert engine.fetch_one(setting) == ("off",)
        assert engine.fetch_one(setting) == ("on",)
        engine.fetch_all("SET enable_mergejoin = off")  # the user's own choice stays
        with pytest.raises(EngineError), engine.hashed_joins():
            engine.fetch_all("SELECT * FROM no_such_table")
        assert engine.fetch_one(setting) == ("off",)
    finally:
        engine.close()


def test_the_session_compiles_no_statement(postgres_url) -> None:
    engine = PostgresEngine.connect(postgres_url)
    try:
        assert engine.fetch_all("SELECT current_setting('jit')") == [("off",)]
    finally:
        engine.close()


def test_a_name_in_another_case_is_a_clear_error(pg) -> None:
    with pytest.raises(InputError, match="'T' does not exist, but 't' does: names are case-sensitive"):
        anonymize(pg, "T", 3, output="rel", **ROLES)


def test_a_name_over_63_bytes_is_a_clear_error(pg) -> None:
    with pytest.raises(InputError, match="longer than PostgreSQL's 63 bytes"):
        anonymize(pg, "t" * 64, 3, output="rel", **ROLES)


def test_an_error_never_shows_a_value_nor_the_password(pg) -> None:
    engine = engines.connect(pg)
    try:
        with pytest.raises(EngineError) as caught:
            engine.fetch_all("SELECT CAST(\"dis\" || 'secret42' AS INTEGER) FROM t")
        assert "secret42" not in str(caught.value) and "d0" not in str(caught.value)
        assert "22P02" in str(caught.value) and caught.value.kind == "conversion"
    finally:
        engine.close()
    assert shown_url("postgresql://me:hunter2@db.example:5433/x") == "postgresql://me@db.example:5433/x"
    refused = (
        pg.replace("postgresql://postgres@", "postgresql://postgres:hunter2@").rsplit("/", 1)[0] + "/nosuchdb"
    )
    with pytest.raises(EngineError) as caught:
        PostgresEngine.connect(refused)
    assert "hunter2" not in str(caught.value) and "does not exist" in str(caught.value)


def test_the_dialect_aliases_a_subquery_in_from(pg) -> None:
    # PostgreSQL 15 rejects a derived table without an alias, which sqlglot prints as given
    import sqlglot

    tree = sqlglot.parse_one("SELECT COUNT(*) FROM (SELECT DISTINCT age FROM t) JOIN (SELECT 1) ON TRUE")
    text = tree.sql(dialect=SbcPostgres)
    assert text == (
        "SELECT COUNT(*) FROM (SELECT DISTINCT age FROM t) AS sbc_subquery_1 "
        "JOIN (SELECT 1) AS sbc_subquery_2 ON TRUE"
    )
    # the distinct ages, NULL included
    assert pg_rows(pg, text) == [(len(set(people()["age"].astype("Int64").tolist())),)]


def test_the_dialect_leaves_a_null_of_a_distinct_select_to_the_union(pg) -> None:
    # SELECT DISTINCT ..., NULL types the NULL as text at once; grouped, the UNION types it
    import sqlglot

    query = (
        "SELECT age, age AS k FROM t WHERE age < 30 "
        "UNION ALL SELECT DISTINCT age, NULL AS k FROM t WHERE age IS NULL"
    )
    text = sqlglot.parse_one(query, read="duckdb").sql(dialect=SbcPostgres)
    assert "DISTINCT" not in text and text.endswith("GROUP BY age")
    got = pg_rows(pg, text)
    assert (None, None) in got and len(got) == 1 + len(people().query("age < 30"))


def test_the_dialect_says_one_value_per_group_for_booleans_too(pg) -> None:
    # MIN(x) IS NOT DISTINCT FROM MAX(x): PostgreSQL has no MIN over booleans
    import sqlglot

    query = (
        "SELECT sex, MIN(age IS NULL) IS NOT DISTINCT FROM MAX(age IS NULL) FROM t GROUP BY sex ORDER BY sex"
    )
    text = sqlglot.parse_one(query, read="duckdb").sql(dialect=SbcPostgres)
    assert "COUNT(DISTINCT age IS NULL) <= 1" in text
    duck = duckdb.connect()
    make_table(duck, "t", people(), TYPES)
    assert pg_rows(pg, text) == duck.execute(query).fetchall() == [("F", False), ("M", False)]


def test_the_cli_anonymizes_verifies_and_evaluates_a_postgres_database(tmp_path, postgres_url) -> None:
    from test_cli import ROWS, K, make_clinic

    path = make_clinic(tmp_path / "clinic.duckdb")
    with duckdb.connect(str(path)) as con:
        to_postgres(con, "patients", postgres_url)
    before = pg_rows(postgres_url, "SELECT ctid::text, * FROM patients ORDER BY ctid")
    on_pg = run_cli(["anonymize", "--db", postgres_url, "-t", "patients", "-k", K, "--json"])
    assert on_pg.exit_code == 0, on_pg.stderr
    on_duck = run_cli(["anonymize", "--db", path, "-t", "patients", "-k", K, "--json"])
    assert on_duck.exit_code == 0, on_duck.stderr
    got, want = json.loads(on_pg.stdout), json.loads(on_duck.stdout)
    assert (got["rows"], got["released"], got["smallest_class"]) == (ROWS, ROWS, K)
    assert got["total_ncp"] == pytest.approx(want["total_ncp"], rel=1e-12, abs=1e-12)
    assert got["ncp"] == pytest.approx(want["ncp"], rel=1e-12, abs=1e-12)
    release = f"patients_k{K}"
    ok = run_cli(["verify", "--db", postgres_url, "--original", "patients", "--release", release, "--k", K])
    assert ok.exit_code == 0, ok.stderr
    assert ok.stdout.startswith(f"ok: '{release}' is {K}-anonymous and complete")
    bad = run_cli(
        ["verify", "--db", postgres_url, "--original", "patients", "--release", release, "--k", K + 1]
    )
    assert bad.exit_code == 3
    measured = run_cli(
        ["measure", "--db", postgres_url, "--original", "patients", "--release", release, "--json"]
    )
    assert measured.exit_code == 0, measured.stderr
    assert json.loads(measured.stdout)["total_ncp"] == pytest.approx(got["total_ncp"], abs=1e-12)
    args = ["evaluate", "--original", "patients", "--release", release]
    evaluated = run_cli([*args, "--db", postgres_url])
    assert evaluated.exit_code == 0, evaluated.stderr
    expected = run_cli([*args, "--db", path])
    assert evaluated.stdout == expected.stdout
    assert pg_rows(postgres_url, "SELECT ctid::text, * FROM patients ORDER BY ctid") == before


def test_the_dialect_rounds_a_double_to_places_through_numeric(pg) -> None:
    import sqlglot

    query = "SELECT ROUND(CAST(age AS DOUBLE) / 7, 3) FROM t WHERE age IS NOT NULL ORDER BY 1"
    text = sqlglot.parse_one(query, read="duckdb").sql(dialect=SbcPostgres)
    assert "ROUND(CAST(CAST(age AS DOUBLE PRECISION) / 7 AS DECIMAL), 3)" in text
    duck = duckdb.connect()
    make_table(duck, "t", people(), TYPES)
    assert [float(r[0]) for r in pg_rows(pg, text)] == [r[0] for r in duck.execute(query).fetchall()]


def test_the_dialect_types_an_empty_list_by_what_it_meets(pg) -> None:
    import sqlglot

    query = "SELECT COALESCE(CASE WHEN age > 60 THEN [sex] END, []) AS v FROM t ORDER BY id"
    text = sqlglot.parse_one(query, read="duckdb").sql(dialect=SbcPostgres)
    assert "'{}'" in text
    duck = duckdb.connect()
    make_table(duck, "t", people(), TYPES)
    assert pg_rows(pg, text) == duck.execute(query).fetchall()


def test_a_release_is_replaced_and_compare_drops_its_releases(pg) -> None:
    """PostgreSQL refuses to drop what a view depends on: the text view goes before the
    release view, and the release view before its tables."""
    from sbc_sql.compare import compare

    first = anonymize(pg, "t", 3, output="rel", **ROLES)
    again = anonymize(pg, "t", 4, output="rel", replace=True, **ROLES)
    assert again.written and again.measures.smallest >= 4 > first.measures.smallest
    engine = engines.connect(pg)
    try:
        rows = compare(engine, "t", [2, 3], ["sbca"], **ROLES)
    finally:
        engine.close()
    assert [r.k for r in rows] == [2, 3]
    left = (
        "SELECT relname FROM pg_class WHERE relnamespace = 'public'::regnamespace AND relkind IN ('r', 'v')"
    )
    assert sorted(pg_rows(pg, left)) == [("rel",), ("rel_classes",), ("rel_rows",), ("rel_view",), ("t",)]


def test_a_release_name_that_would_be_cut_is_refused_and_leaves_nothing(pg) -> None:
    # sbc_tmp_<output>_<8 hex>_classes: a 50-byte output makes a 74-byte working name
    with pytest.raises(InputError, match="longer than PostgreSQL's 63 bytes, which would cut it"):
        anonymize(pg, "t", 3, output="r" * 50, **ROLES)
    assert pg_rows(pg, "SELECT relname FROM pg_class WHERE relnamespace = 'public'::regnamespace") == [("t",)]


def test_a_killed_run_leaves_nothing(pg) -> None:
    """SIGKILL in the middle of writing the release (its tables made, not yet renamed): the
    server rolls the transaction back and drops the connection's temporary tables."""
    import subprocess
    import sys
    import time

    script = (
        "import os, signal, sbc_sql\n"
        "from sbc_sql.stages import measure\n"
        "def kill(*a, **k):\n"
        "    os.kill(os.getpid(), signal.SIGKILL)\n"
        "measure.measure_tables = kill\n"
        f"sbc_sql.anonymize({pg!r}, 't', 3, output='rel', qi={ROLES['qi']!r}, "
        f"sensitive={ROLES['sensitive']!r}, drop={ROLES['drop']!r})\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert done.returncode == -9, done.stderr
    query = (
        "SELECT n.nspname, c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
        "WHERE n.nspname = 'public' OR n.nspname LIKE 'pg_temp%'"
    )
    deadline = time.monotonic() + 10
    while pg_rows(pg, query) != [("public", "t")] and time.monotonic() < deadline:
        time.sleep(0.1)  # the server notices the dropped connection on its own time
    assert pg_rows(pg, query) == [("public", "t")]


def test_an_out_file_is_refused_before_any_work(pg, tmp_path, monkeypatch) -> None:
    from sbc_sql.run import steps

    def never(*args, **kwargs):
        raise AssertionError("the run went on to its statistics")

    monkeypatch.setattr(steps, "prepare", never)
    with pytest.raises(InputError, match="is not available with the postgres engine"):
        anonymize(pg, "t", 3, output="rel", out_file=tmp_path / "r.parquet", **ROLES)
    assert not (tmp_path / "r.parquet").exists()


# ---- CSV and Parquet input: read on this side, typed as DuckDB types the file ----

FILE_ROLES = {
    "qi": ["age", "born", "seen", "sex", "zip", "ratio", "code"],
    "sensitive": ["dis", "pay"],
    "drop": ["id"],
}


@pytest.fixture
def people_file(duck, tmp_path):
    """people() as a CSV or Parquet file, with a DOUBLE column and a code written with
    leading zeros (text to DuckDB's reader)."""

    def write(suffix: str, options: str = "HEADER"):
        path = tmp_path / f"people{suffix}"
        fmt = "FORMAT PARQUET" if suffix == ".parquet" else options
        duck.execute(
            "COPY (SELECT *, age / 7.0 AS ratio, lpad(CAST(pay % 97 AS VARCHAR), 5, '0') AS code "
            f"FROM t) TO '{path}' ({fmt})"
        )
        return path

    return write


def columns_of(result: sbc_sql.Result) -> list[tuple]:
    return [(c.name, c.type, c.kind, c.temporal, c.role) for c in result.plan.columns]


@pytest.mark.parametrize("suffix", [".csv", ".parquet"])
def test_a_file_input_gives_duckdbs_release(people_file, postgres_url, suffix) -> None:
    path = str(people_file(suffix))
    on_duck = anonymize(duckdb.connect(), path, 3, output="rel", **FILE_ROLES)
    on_pg = anonymize(postgres_url, path, 3, output="rel", **FILE_ROLES)
    assert columns_of(on_pg) == columns_of(on_duck)
    assert ("code", "VARCHAR", "categorical", None, "qi") in columns_of(on_pg)
    assert on_pg.plan.source.from_file == path
    assert on_pg.verdict.ok and on_duck.verdict.ok
    assert_same_measures(on_pg.measures, on_duck.measures)
    # an auditor holds the release to the file's rows as a table of the database
    with duckdb.connect() as con:
        con.execute(f"CREATE TABLE people AS SELECT * FROM '{path}'")
        to_postgres(con, "people", postgres_url)
    assert sbc_sql.verify(postgres_url, "people", "rel", 3).ok
    assert not sbc_sql.verify(postgres_url, "people", "rel", on_pg.measures.smallest + 1).ok


@pytest.mark.parametrize("suffix", [".csv", ".parquet"])
def test_a_file_goes_in_by_parts_in_its_order(people_file, postgres_url, monkeypatch, suffix) -> None:
    from sbc_sql.engines import files
    from sbc_sql.engines.postgres import SOURCE_ALIAS

    path = str(people_file(suffix))
    # batches of a few rows, a part a batch or two
    monkeypatch.setattr(files, "BLOCK_BYTES", 1024)
    monkeypatch.setattr(files, "BATCH_ROWS", 7)
    monkeypatch.setattr(files, "PART_BYTES", 512)
    engine = PostgresEngine.connect(postgres_url)
    try:
        engine.open_source(path)
        got = engine.fetch_all(f"SELECT id, age, born, zip, code FROM {SOURCE_ALIAS} ORDER BY ctid")
        parts = list(files.parts(Path(path), CsvOptions(), "fix"))
    finally:
        engine.close()
    with duckdb.connect() as con:
        want = con.execute(f"SELECT id, age, born, zip, code FROM '{path}'").fetchall()
    assert len(parts) > 1 and sum(p.num_rows for p in parts) == 60
    assert got == [tuple(r) for r in want]


def test_the_sql_of_a_file_input_is_postgresqls(people_file, postgres_url) -> None:
    """--sql with a file on a PostgreSQL --db plans there (a URL is no database file to
    be made), and writes nothing."""
    shown = anonymize(postgres_url, str(people_file(".csv")), 3, output="rel", sql_only=True, **FILE_ROLES)
    assert not shown.written and shown.engine.name == "postgres"
    assert any("TIDSEND" in s for s in shown.statements)
    public = "SELECT relname FROM pg_class WHERE relnamespace = 'public'::regnamespace"
    assert pg_rows(postgres_url, public) == []


def test_csv_delimiter_and_header_are_honoured(people_file, postgres_url) -> None:
    path = str(people_file(".csv", "DELIMITER ';', HEADER false"))
    qi = ["column1", "column2", "column3", "column4", "column5", "column8", "column9"]
    roles = {"qi": qi, "sensitive": ["column6", "column7"], "drop": ["column0"]}
    kw = {"csv_delimiter": ";", "csv_header": False, **roles}
    on_duck = anonymize(duckdb.connect(), path, 3, output="rel", **kw)
    on_pg = anonymize(postgres_url, path, 3, output="rel", **kw)
    assert [c.name for c in on_pg.plan.columns] == [f"column{i}" for i in range(10)]
    assert columns_of(on_pg) == columns_of(on_duck)
    assert on_pg.measures.n_rows == 60
    assert_same_measures(on_pg.measures, on_duck.measures)
    # sniffed: the same file read without the options
    sniffed = anonymize(postgres_url, path, 3, output="rel2", **roles)
    assert columns_of(sniffed) == columns_of(on_pg)


def late_csv(path, last: str) -> str:
    """A CSV of more than pyarrow's first block (where the types are read), one bad line last."""
    rows = "".join(f"{30 + i % 40},{i % 7},flu and a longer text {i % 5}\n" for i in range(40000))
    path.write_text("age,zip,dis\n" + rows + last)
    return str(path)


@pytest.mark.parametrize(
    ("name", "needles"),
    [
        ("missing", ["input file", "does not exist", "CSV or Parquet file"]),
        ("ragged", ["line 40,002 has 4 field(s) where the header has 3", "fix or remove that line"]),
        ("late", ["line 40,002: a value of column 'age' cannot be read as BIGINT", "\\copy"]),
        ("latin1", ["column 'dis' holds bytes that are not UTF-8", "convert the file to UTF-8"]),
        ("parquet", ["is not a valid Parquet file"]),
    ],
)
def test_a_file_that_cannot_be_read_is_one_input_error(postgres_url, tmp_path, name, needles) -> None:
    path = {
        "missing": lambda: str(tmp_path / "nope.csv"),
        "ragged": lambda: late_csv(tmp_path / "r.csv", "31,3,SECRET-VALUE-123,extra\n"),
        "late": lambda: late_csv(tmp_path / "l.csv", "SECRET-VALUE-123,3,flu\n"),
        "latin1": lambda: late_csv(tmp_path / "u.csv", "31,3,SECRET-VALUE-\xe9\n"),
        "parquet": lambda: str(tmp_path / "p.parquet"),
    }[name]()
    if name == "latin1":
        data = (tmp_path / "u.csv").read_text().encode("latin-1")
        (tmp_path / "u.csv").write_bytes(data)
    if name == "parquet":
        (tmp_path / "p.parquet").write_bytes(b"PAR1" + b"SECRET-VALUE-123" * 40)
    with pytest.raises(InputError) as caught:
        anonymize(postgres_url, path, 2, output="rel")
    message = str(caught.value)
    assert "SECRET" not in message and "\n" not in message
    for needle in needles:
        assert needle in message
    public = "SELECT relname FROM pg_class WHERE relnamespace = 'public'::regnamespace"
    assert pg_rows(postgres_url, public) == []


# ---- a search_path trojan: another role's overloads of built-ins never run as the caller ----

#: what the trojan's functions do when called: record that they ran, as whom, and make their
#: owner superuser when the caller is one
_TROJAN_BODY = """
BEGIN
  INSERT INTO public.trojan_ran SELECT '{what}', current_user, r.rolsuper
    FROM pg_catalog.pg_roles r WHERE r.rolname = current_user;
  IF (SELECT r.rolsuper FROM pg_catalog.pg_roles r WHERE r.rolname = current_user) THEN
    EXECUTE 'ALTER ROLE {role} SUPERUSER';
  END IF;
  RETURN {result};
END
"""


def pg_run(url: str, *statements: str) -> list[tuple]:
    """Run statements on one connection (one session, autocommit, as the engine connects:
    with search_path pg_catalog, pg_temp from its start, so that the driver's own queries
    run no trojan); the rows of the last one that returns rows."""
    import adbc_driver_postgresql.dbapi as adbc

    rows: list[tuple] = []
    with adbc.connect(safe_url(url), autocommit=True) as con, con.cursor() as cur:
        for statement in statements:
            cur.execute(statement)
            if cur.description:
                rows = [tuple(r) for r in cur.fetchall()]
    return rows


def plant_trojan(url: str, table: str = "t", column: str = "sex", *, at_connect: bool = False) -> str:
    """As a new role without privileges but CREATE on schema public (which every role has on
    PostgreSQL 14 and older): overloads of array_agg for text and varchar and an = operator on
    varchar in public, each recording that it ran and making the role superuser when a
    superuser runs it. The source's ``column`` becomes a varchar, so that both match it
    exactly, which PostgreSQL prefers to pg_catalog's built-ins whatever the search_path's
    order. ``at_connect``: also a <> operator of regproc and integer, which the database
    driver's own catalog query compares with when it connects (that fires for every plain
    connection, a test's too). Checks the trojan is live for a superuser's plain query;
    returns the role."""
    role = f"trojan_{uuid.uuid4().hex[:8]}"
    body = _TROJAN_BODY.replace("{role}", role)
    pg_run(
        url,
        f"ALTER TABLE public.{table} ALTER COLUMN {column} TYPE varchar(16)",
        f"CREATE ROLE {role} NOLOGIN",
        f"GRANT CREATE ON SCHEMA public TO {role}",
        f"SET ROLE {role}",
        "CREATE TABLE public.trojan_ran (what text, who text, superuser boolean)",
        "GRANT INSERT ON public.trojan_ran TO PUBLIC",
        "CREATE FUNCTION public.trojan_step(s text[], v text) RETURNS text[] LANGUAGE plpgsql AS $t$"
        + body.format(what="array_agg(text)", result="pg_catalog.array_append(s, v)")
        + "$t$",
        "CREATE FUNCTION public.trojan_step_v(s text[], v varchar) RETURNS text[] LANGUAGE plpgsql AS $t$"
        + body.format(what="array_agg(varchar)", result="pg_catalog.array_append(s, v::text)")
        + "$t$",
        "CREATE AGGREGATE public.array_agg(text) (SFUNC = public.trojan_step, STYPE = text[])",
        "CREATE AGGREGATE public.array_agg(varchar) (SFUNC = public.trojan_step_v, STYPE = text[])",
        "CREATE FUNCTION public.trojan_eq(a varchar, b varchar) RETURNS boolean LANGUAGE plpgsql AS $t$"
        + body.format(what="=(varchar, varchar)", result="a::text OPERATOR(pg_catalog.=) b::text")
        + "$t$",
        "CREATE OPERATOR public.= (LEFTARG = varchar, RIGHTARG = varchar, FUNCTION = public.trojan_eq)",
        *(
            [
                "CREATE FUNCTION public.trojan_ne(a regproc, b integer) RETURNS boolean LANGUAGE plpgsql "
                "AS $t$"
                + body.format(what="<>(regproc, integer)", result="a::oid OPERATOR(pg_catalog.<>) b::oid")
                + "$t$",
                "CREATE OPERATOR public.<> "
                "(LEFTARG = regproc, RIGHTARG = integer, FUNCTION = public.trojan_ne)",
            ]
            if at_connect
            else []
        ),
        "RESET ROLE",
    )
    # live: a superuser's plain query under the default search_path runs both (undone here)
    ran = pg_run(
        url,
        "BEGIN",
        'SET LOCAL search_path = "$user", public',  # PostgreSQL's default
        f"SELECT array_agg(DISTINCT {column} ORDER BY {column}) FROM public.{table}",
        f"SELECT count(*) FROM public.{table} a JOIN public.{table} b ON a.{column} = b.{column}",
        "SELECT count(*) FROM pg_catalog.pg_type WHERE typreceive != 0",  # as the driver's
        "SELECT DISTINCT what, superuser FROM public.trojan_ran ORDER BY 1",
        "ROLLBACK",
    )
    live = [("=(varchar, varchar)", True), ("array_agg(varchar)", True)]
    assert ran == ([("<>(regproc, integer)", True)] if at_connect else []) + live
    return role


def trojan_ran(url: str, role: str) -> tuple[list[tuple], bool]:
    """What the trojan recorded, and whether its role is superuser now."""
    ran = pg_run(url, "SELECT what, who FROM public.trojan_ran ORDER BY 1, 2")
    (superuser,) = pg_run(url, f"SELECT rolsuper FROM pg_catalog.pg_roles WHERE rolname = '{role}'")[0]
    return ran, superuser


def drop_trojan(url: str, role: str) -> None:
    pg_run(url, f"DROP OWNED BY {role} CASCADE", f"DROP ROLE {role}")


def test_another_roles_overloads_of_built_ins_never_run_in_a_superusers_run(pg, tmp_path) -> None:
    """The search_path trojan: a role that may create in public overloads array_agg and = for
    the source's types; a superuser's anonymize, verify, measure and evaluate on the command
    line (and report, profile, suggest-k, a view as the source) run none of them, and the
    role stays without privileges."""
    role = plant_trojan(pg, at_connect=True)
    try:
        db = ["--db", pg]
        roles = ["--qi", "age,born,seen,sex,zip", "--sensitive", "dis,pay", "--drop", "id"]
        done = run_cli(["anonymize", *db, "-t", "t", "-k", "3", "-o", "rel", *roles, "--json"])
        assert done.exit_code == 0, done.stderr
        assert json.loads(done.stdout)["release"] == "rel"
        criteria = ["--l-diversity", "2", "--t-closeness", "0.9", "--beta-likeness", "50"]
        done = run_cli(["anonymize", *db, "-t", "public.t", "-k", "3", "-o", "rel2", *roles, *criteria])
        assert done.exit_code == 0, done.stderr
        done = run_cli(["anonymize", *db, "-t", "t", "-k", "3", "-o", "dry", *roles, "--sql"])
        assert done.exit_code == 0, done.stderr
        checked = run_cli(["verify", *db, "--original", "t", "--release", "rel", "--k", "3"])
        assert checked.exit_code == 0, checked.stderr
        for command in ("measure", "evaluate"):
            done = run_cli([command, *db, "--original", "t", "--release", "rel"])
            assert done.exit_code == 0, done.stderr
        page = tmp_path / "report.html"
        done = run_cli(["report", *db, "--original", "t", "--release", "rel", "-o", page])
        assert done.exit_code == 0 and page.is_file(), done.stderr
        done = run_cli(["profile", *db, "-t", "t", *roles, "-q"])
        assert done.exit_code == 0, done.stderr
        done = run_cli(["suggest-k", *db, "-t", "t", *roles, "--max-loss", "0.5"])
        assert done.exit_code == 0, done.stderr
        pg_run(pg, "CREATE VIEW public.v AS SELECT * FROM public.t")  # read into a temporary table
        done = run_cli(["anonymize", *db, "-t", "v", "-k", "3", "-o", "rel3", *roles])
        assert done.exit_code == 0, done.stderr
        assert trojan_ran(pg, role) == ([], False)
    finally:
        drop_trojan(pg, role)


def test_unqualified_names_are_in_the_schema_the_logins_search_path_makes_current(pg) -> None:
    """The session searches only pg_catalog and pg_temp, and an unqualified --table or
    --output is in the schema the login's search_path would make current: the database's
    setting, or the one the URL's options ask for."""
    pg_run(
        pg,
        "CREATE SCHEMA work",
        "CREATE TABLE work.w AS SELECT * FROM public.t",
        "DO $$ BEGIN EXECUTE pg_catalog.format('ALTER DATABASE %I SET search_path = work, public', "
        "pg_catalog.current_database()); END $$",
    )
    roles = ["--qi", "age,born,seen,sex,zip", "--sensitive", "dis,pay", "--drop", "id"]
    done = run_cli(["anonymize", "--db", pg, "-t", "w", "-k", "3", "-o", "wr", *roles])
    assert done.exit_code == 0, done.stderr
    assert pg_run(pg, "SELECT count(*) FROM work.wr") == [(60,)]
    asked = pg + "?options=-c%20search_path%3Dpublic"
    done = run_cli(["anonymize", "--db", asked, "-t", "t", "-k", "3", "-o", "pr", *roles])
    assert done.exit_code == 0, done.stderr
    assert pg_run(pg, "SELECT count(*) FROM public.pr") == [(60,)]
    assert pg_run(pg, "SELECT pg_catalog.to_regclass('work.pr') IS NULL") == [(True,)]


# ---- messages that name what is wrong and the fix ----


def pg_people(url: str, extra: str = "", name: str = "t") -> None:
    """A table of 60 people (age, zip, dis) and ``extra`` columns (SQL over i)."""
    pg_rows(
        url,
        f"CREATE TABLE {name} AS SELECT 20 + i % 9 AS age, 'z' || i % 4 AS zip, 'd' || i % 3 AS dis"
        f"{extra} FROM generate_series(1, 60) AS g(i)",
    )


def public_tables(url: str) -> list[tuple]:
    return sorted(pg_rows(url, "SELECT relname FROM pg_class WHERE relnamespace = 'public'::regnamespace"))


@pytest.mark.parametrize(
    ("role", "needle"),
    [
        ("--qi", "cannot be a quasi-identifier"),
        ("--keep", "cannot be kept"),
        ("--sensitive", "cannot be released as sensitive"),
    ],
)
@pytest.mark.parametrize(
    ("sql", "shown"),
    [
        ("point(i % 4, i % 3)", "POINT"),
        ("CAST('{\"a\": ' || i % 4 || '}' AS json)", "JSON"),
        ("CAST('<a>' || i % 4 || '</a>' AS xml)", "XML"),
        ("ARRAY[CAST('{}' AS json)]", "JSON[]"),
    ],
)
def test_a_column_without_equality_is_refused_before_any_work(postgres_url, role, needle, sql, shown) -> None:
    """point, json and xml have no equality: a QI of one failed when the class table was made
    (42883), a kept or sensitive one when the rows were, with no word of the column; each is
    refused at once, with the column, its type and the fix."""
    pg_people(postgres_url, f", {sql} AS spot")
    before = public_tables(postgres_url)
    sensitive = "dis,spot" if role == "--sensitive" else "dis"
    extra = [] if role == "--sensitive" else [role, "spot"]
    res = run_cli(
        ["anonymize", "--db", postgres_url, "--table", "t", "--k", "3", "--qi", "age,zip", *extra,
         "--sensitive", sensitive]
    )  # fmt: skip
    assert res.exit_code == 1
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1, res.stderr
    assert lines[0].startswith(f"Error: column 'spot' of type {shown} {needle}: its values have no equality")
    assert "declare it with --drop," in lines[0] and "casts it" in lines[0] and "SQLSTATE" not in lines[0]
    assert public_tables(postgres_url) == before


@pytest.mark.parametrize("sql_type", ["date", "timestamp", "timestamptz"])
def test_an_infinite_date_or_timestamp_qi_is_named_with_the_fix(postgres_url, sql_type) -> None:
    """'infinity' has no number: on PostgreSQL its conversion failed (0A000 for a timestamp,
    22008 for a date) with no word of the column; it is counted and refused as DuckDB's is."""
    pg_people(postgres_url, f", CAST('2020-01-01' AS {sql_type}) + i * interval '1 day' AS seen")
    pg_rows(postgres_url, "UPDATE t SET seen = 'infinity' WHERE age = 20")  # 6 rows
    pg_rows(postgres_url, "UPDATE t SET seen = '-infinity' WHERE age = 21")  # 7 rows
    res = run_cli(
        [
            "anonymize",
            "--db",
            postgres_url,
            "--table",
            "t",
            "--k",
            "3",
            "--qi",
            "age,zip,seen",
            "--sensitive",
            "dis",
        ]
    )
    assert res.exit_code == 1
    line = res.stderr.strip().splitlines()[-1]
    assert line.startswith("Error: numeric quasi-identifier 'seen' ("), line
    assert "holds 13 infinite value(s)" in line and "--keep/--drop" in line


def test_a_schema_the_user_may_not_use_is_named_with_the_grant(postgres_url, postgres_cluster) -> None:
    """A role without USAGE on a schema: PostgreSQL denies its tables without naming it, or
    (in the search path) acts as if it were not there."""
    import uuid

    role = f"sbc_reader_{uuid.uuid4().hex[:8]}"
    pg_rows(postgres_url, "CREATE SCHEMA s")
    pg_rows(postgres_url, "CREATE SCHEMA w")
    pg_people(postgres_url, name="s.t")
    pg_people(postgres_url)
    postgres_cluster.sql(f"CREATE ROLE {role} LOGIN")
    try:
        pg_rows(postgres_url, f"GRANT SELECT ON s.t, public.t TO {role}")
        pg_rows(postgres_url, f"GRANT CREATE ON SCHEMA public TO {role}")
        url = postgres_url.replace("://postgres@", f"://{role}@")
        assert url != postgres_url
        runs = {
            "s": ["--db", url, "--table", "s.t"],
            "s ": ["--db", url + "?options=-csearch_path%3Ds", "--table", "t"],
            "w": ["--db", url, "--table", "t", "--output", "w.rel"],
        }
        for schema, args in runs.items():
            schema = schema.strip()
            res = run_cli(["anonymize", *args, "--k", "3", "--sensitive", "dis"])
            assert res.exit_code == 1
            line = res.stderr.strip().splitlines()[-1]
            assert f"the database user '{role}' has no USAGE privilege on schema '{schema}'" in line, line
            assert f'GRANT USAGE ON SCHEMA "{schema}" TO "{role}"' in line
    finally:
        pg_rows(postgres_url, f"DROP OWNED BY {role} CASCADE")
        postgres_cluster.sql(f"DROP ROLE {role}")


def test_the_sql_functions_are_not_told_to_rerun_with_a_flag_they_lack() -> None:
    """--debug and --sql are the command line's: a SQL function's message (in_sql_terms)
    names only its own arguments, so the advice to rerun with them is left out."""
    from sbc_sql.engines.postgres import _CLASSES, _STATES, by_state
    from sbc_sql.errors import in_sql_terms

    for state in ["", "0A000", "42883", *_STATES, *(c + "000" for c in _CLASSES)]:
        said = in_sql_terms(str(by_state(state, "reading 't'")))
        assert "debug" not in said and "sql =>" not in said and "--" not in said, said
        assert said.startswith("reading 't': ")


# ------------------------------------------------------------- joins PostgreSQL can hash


def dated_people(con: duckdb.DuckDBPyConnection, n: int) -> None:
    """Table t of n rows: a DATE QI of about 13,000 distinct days, a text and a boolean QI,
    each with NULLs, a sensitive column with NULLs and an insensitive number released as is."""
    con.execute(
        f"""
        CREATE TABLE t AS
        SELECT
          CASE WHEN hash(i, 1) % 31 = 0 THEN NULL
               ELSE DATE '1950-01-01' + CAST(hash(i, 2) % 14000 AS INTEGER) END AS birth,
          CASE WHEN hash(i, 3) % 47 = 0 THEN NULL ELSE 'Z' || CAST(hash(i, 4) % 300 AS VARCHAR) END AS zip,
          CASE WHEN hash(i, 5) % 97 = 0 THEN NULL ELSE hash(i, 6) % 2 = 0 END AS smoker,
          CASE WHEN hash(i, 7) % 23 = 0 THEN NULL ELSE chr(97 + CAST(hash(i, 8) % 4 AS INTEGER)) END
            AS diagnosis,
          CAST(hash(i, 9) % 50 AS INTEGER) AS visit
        FROM range({n}) AS r(i)
        """
    )
    for column, role in (
        ("birth", "qi"),
        ("zip", "qi"),
        ("smoker", "qi"),
        ("diagnosis", "sensitive"),
        ("visit", "insensitive"),
    ):
        con.execute(f"COMMENT ON COLUMN t.{column} IS 'sbc:{role}'")


def verify_cli(url: str, release: str, k: int, timeout: float) -> tuple[int, str, float]:
    """``sbc-sql verify`` of ``release`` against t, in a fresh interpreter: exit code, output
    and seconds taken."""
    started = time.perf_counter()
    done = run_module(
        ["verify", "--db", url, "--original", "t", "--release", release, "--k", k], timeout=timeout
    )
    return done.returncode, done.stdout + done.stderr, time.perf_counter() - started


@pytest.mark.slow
def test_standalone_verify_of_a_release_with_many_dates_and_nulls_takes_seconds(postgres_url) -> None:
    # 30,000 rows, a DATE QI of some 13,000 distinct days and NULLs in every QI: joins whose
    # only key was IS NOT DISTINCT FROM ran as nested loops (20,000 rows: 50 s, 30,000 rows:
    # beyond this bound); as hash joins verify takes a few seconds
    con = duckdb.connect()
    dated_people(con, 30_000)
    to_postgres(con, "t", postgres_url)
    anonymize(postgres_url, "t", 10, output="rel")
    code, out, seconds = verify_cli(postgres_url, "rel", 10, timeout=60)
    assert code == 0, out
    assert "is 10-anonymous and complete" in out
    assert seconds < 60


@pytest.mark.parametrize(
    ("column", "sentinel"),
    [("diagnosis", "''"), ("zip", "''"), ("birth", "DATE '1970-01-01'"), ("smoker", "FALSE")],
)
def test_verify_tells_a_null_from_the_value_that_stands_for_it_in_a_join(postgres_url, column, sentinel):
    # the joins compare COALESCE(value, constant) and the NULL flags: a NULL turned into that
    # constant (in the source, after the release was made) must not match the NULL released
    con = duckdb.connect()
    dated_people(con, 600)
    to_postgres(con, "t", postgres_url)
    anonymize(postgres_url, "t", 5, output="rel")
    assert sbc_sql.verify(postgres_url, "t", "rel", 5).ok
    nulls = pg_rows(postgres_url, f"SELECT COUNT(*) FROM t WHERE {column} IS NULL")[0][0]
    assert nulls > 0
    import adbc_driver_postgresql.dbapi as adbc

    with adbc.connect(postgres_url, autocommit=True) as pg, pg.cursor() as cur:
        first_null = f"(SELECT MIN(ctid) FROM t WHERE {column} IS NULL)"
        cur.execute(f"UPDATE t SET {column} = {sentinel} WHERE ctid = {first_null}")
    verdict = sbc_sql.verify(postgres_url, "t", "rel", 5)
    assert not verdict.ok
    assert verdict.facts["overdrawn"] >= 1


def join_filters(plan: dict) -> list[str]:
    """Every join's filter in a plan of EXPLAIN (FORMAT JSON): the conditions it tests row
    pair by row pair, beyond its hash or merge keys."""
    found = [plan["Join Filter"]] if "Join Filter" in plan else []
    for child in plan.get("Plans", ()):
        found += join_filters(child)
    return found


def inlined(sql: str, params) -> str | None:
    """A statement with its parameters' values written in, for EXPLAIN (the values are the
    run's limits and thresholds, and names in catalog queries); None when one is a list."""
    from sbc_sql.engines.postgres import _positional

    text, values = _positional(sql, params)
    for i in reversed(range(len(values))):
        value = values[i]
        if isinstance(value, (list, tuple)):
            return None
        if isinstance(value, str):
            shown = "'" + value.replace("'", "''") + "'"
        else:
            shown = "NULL" if value is None else str(value).upper()
        text = text.replace(f"${i + 1}", shown)
    return text


def test_no_join_of_a_run_tests_null_safe_equality_pair_by_pair(postgres_url, monkeypatch) -> None:
    # every query anonymize, verify (with criteria on the sensitive column) and evaluate send
    # is EXPLAINed first, in the run's session: no join may keep IS NOT DISTINCT FROM as a
    # filter, which only a nested loop can apply (PostgreSQL neither hashes nor merges it)
    con = duckdb.connect()
    dated_people(con, 400)
    to_postgres(con, "t", postgres_url)
    plans: list[dict] = []
    queries: list[str] = []
    fetch = PostgresEngine._fetch

    def explained(self, sql, params):
        query = inlined(sql, params)
        if query is not None and query.lstrip().upper().startswith(("SELECT", "WITH", "CREATE TEMPORARY")):
            queries.append(query)
            explain = (
                "CREATE OR REPLACE FUNCTION pg_temp.sbc_plan(q text) RETURNS SETOF json LANGUAGE plpgsql "
                "AS $f$ BEGIN RETURN QUERY EXECUTE 'EXPLAIN (FORMAT JSON) ' || q; END $f$"
            )
            fetch(self, explain, None)
            (row,) = fetch(self, "SELECT pg_temp.sbc_plan($1) AS plan", {"q": query})
            plans.append(json.loads(row[0])[0]["Plan"])
        return fetch(self, sql, params)

    monkeypatch.setattr(PostgresEngine, "_fetch", explained)
    anonymize(postgres_url, "t", 5, output="rel", t_closeness=0.99, beta_likeness=1000.0)
    assert sbc_sql.verify(postgres_url, "t", "rel", 5, t_closeness=0.99, beta_likeness=1000.0).ok
    assert run_cli(["evaluate", "--db", postgres_url, "--original", "t", "--release", "rel"]).exit_code == 0
    filters = [f for plan in plans for f in join_filters(plan)]
    assert len(plans) > 20
    assert not [f for f in filters if "DISTINCT FROM" in f]
    # the run's labelled source (the source's one join to the labels) and each statement
    # that reads it were among those explained: the class checks, the label coverage and
    # the rows' comparison
    labelled = [q for q in queries if "_labelled" in q]
    assert len([q for q in labelled if q.lstrip().upper().startswith("CREATE TEMPORARY")]) == 1
    assert len([q for q in labelled if "sbc_label_id" in q and "COUNT" in q]) == 1
    assert len([q for q in labelled if "sbc_rows" in q]) == 1
    assert len([q for q in labelled if "distinct_classes" in q]) == 1
    # evaluate's coverage finds a row's classes by equal keys, which must be a join's hash
    # keys: tested pair by pair they make a nested loop of rows x classes (100,000 rows took
    # minutes where hashed they take seconds)
    assert not [f for f in filters if "sbc_key_" in f]


def test_evaluate_on_postgresql_measures_the_declared_sensitive_column(tmp_path, postgres_url) -> None:
    """evaluate reads the sensitive column from the release's provenance on PostgreSQL as on
    DuckDB: the same attribute-disclosure figures without --sensitive."""
    from test_evaluate import declared_clinic

    path = declared_clinic(tmp_path / "clinic.duckdb")
    with duckdb.connect(str(path)) as con:
        to_postgres(con, "t", postgres_url)
    roles = ["-t", "t", "-k", "4", "--qi", "age,zip", "--sensitive", "dx", "--keep", "ward"]
    for db in (postgres_url, str(path)):
        made = run_cli(["anonymize", "--db", db, *roles, "--l-diversity", "2", "-o", "r", "-q"])
        assert made.exit_code == 0, made.stderr
    args = ["evaluate", "--original", "t", "--release", "r", "--queries", "0", "--json"]
    on_pg = run_cli([*args, "--db", postgres_url])
    assert on_pg.exit_code == 0, on_pg.stderr
    got = json.loads(on_pg.stdout)["attribute_disclosure"]
    assert got["sensitive"]["value"] == "dx"
    want = json.loads(run_cli([*args, "--db", str(path)]).stdout)["attribute_disclosure"]
    assert {m: e["value"] for m, e in got.items()} == pytest.approx({m: e["value"] for m, e in want.items()})
