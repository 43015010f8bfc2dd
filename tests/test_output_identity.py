"""No output may be the input, however either is spelt: a release's names (the release view,
its row and class tables, its text view) are compared with the input, and with every table
and view a view input reads, as the catalog resolves them (DuckDB's database, schema and name,
case-insensitively; PostgreSQL's oids), never as text. ``--replace`` would otherwise drop the
source and put its release in its place."""

from __future__ import annotations

from pathlib import Path

import duckdb
import pg_cluster
import pytest
from helpers import make_table, pg_rows, run_cli, to_postgres
from test_engines import TYPES, people
from test_plpython import failure, sql

from sbc_sql import install_sql

ROLES = ["--qi", "age,zip", "--sensitive", "dis", "--keep", "sex,born,seen,pay", "--drop", "id"]
COLUMNS = ["id", "age", "born", "seen", "sex", "zip", "dis", "pay"]


@pytest.fixture
def clinic(tmp_path: Path) -> Path:
    db = tmp_path / "clinic.duckdb"
    with duckdb.connect(str(db)) as con:
        make_table(con, "patients", people(), TYPES)
    return db


def duckdb_table(db: Path, table: str) -> tuple[str, int, list[str]]:
    """The kind of ``table`` ('BASE TABLE' or 'VIEW'), its rows and its columns."""
    with duckdb.connect(str(db), read_only=True) as con:
        schema, name = table.split(".") if "." in table else ("main", table)
        (kind,) = con.execute(
            "SELECT table_type FROM information_schema.tables WHERE table_schema = ? AND table_name = ?",
            [schema, name],
        ).fetchone()
        (n,) = con.execute(f"SELECT count(*) FROM {table}").fetchone()
        columns = [r[0] for r in con.execute(f"DESCRIBE {table}").fetchall()]
    return kind, n, columns


def refused(args: list[str], *names: str) -> str:
    res = run_cli(["anonymize", *args, "-k", "3", *ROLES, "--replace"])
    assert res.exit_code == 1, res.stdout + res.stderr
    lines = [line for line in res.stderr.splitlines() if line.startswith("Error:")]
    assert len(lines) == 1, res.stderr
    for name in names:
        assert f"'{name}'" in lines[0]
    assert "choose another --output" in lines[0]
    return lines[0]


@pytest.mark.parametrize(
    ("table", "output", "shown"),
    [
        ("main.patients", "patients", "main.patients"),
        ("patients", "main.patients", "clinic.main.patients"),
        ("main.PATIENTS", "Patients", "main.PATIENTS"),
    ],
)
def test_a_qualified_name_never_lets_replace_drop_the_source(
    clinic: Path, table: str, output: str, shown: str
) -> None:
    line = refused(["--db", clinic, "-t", table, "-o", output], shown)
    assert "the input" in line
    assert duckdb_table(clinic, "patients") == ("BASE TABLE", 60, COLUMNS)
    with duckdb.connect(str(clinic), read_only=True) as con:
        assert con.execute("SELECT count(*) FROM duckdb_views() WHERE NOT internal").fetchone() == (0,)
    # a release of another name, and its replacement, are still written
    for _ in range(2):
        args = ["--db", clinic, "-t", table, "-o", "public", "-k", "3", *ROLES, "--replace"]
        res = run_cli(["anonymize", *args])
        assert res.exit_code == 0, res.stderr
    assert duckdb_table(clinic, "public")[:2] == ("VIEW", 60)
    assert duckdb_table(clinic, "patients") == ("BASE TABLE", 60, COLUMNS)


def test_a_view_input_never_lets_replace_drop_the_table_it_reads(clinic: Path) -> None:
    with duckdb.connect(str(clinic)) as con:
        con.execute("CREATE SCHEMA ward")
        con.execute("CREATE TABLE ward.base AS SELECT * FROM patients")
        con.execute("CREATE VIEW outer_v AS SELECT * FROM ward.base")
        con.execute("CREATE VIEW seen AS SELECT * FROM patients")
    # the release would go to schema ward, in place of the table the view reads
    refused(["--db", clinic, "-t", "outer_v", "-o", "ward.base"], "clinic.ward.base")
    assert duckdb_table(clinic, "ward.base") == ("BASE TABLE", 60, COLUMNS)
    # a view named with its schema reads a table of the working schema
    line = refused(["--db", clinic, "-t", "main.seen", "-o", "PATIENTS"], "clinic.main.patients")
    assert "reads" in line
    assert duckdb_table(clinic, "patients") == ("BASE TABLE", 60, COLUMNS)


@pytest.fixture
def shared(postgres_url: str) -> str:
    """A database whose working schema is alice_s (as for a user of that name), holding the
    people table as alice_s.victim."""
    con = duckdb.connect()
    make_table(con, "t", people(), TYPES)
    to_postgres(con, "t", postgres_url)
    database = postgres_url.rsplit("/", 1)[-1].split("?")[0]
    sql(
        postgres_url,
        "CREATE SCHEMA alice_s",
        "ALTER TABLE t SET SCHEMA alice_s",
        "ALTER TABLE alice_s.t RENAME TO victim",
        f"ALTER DATABASE {database} SET search_path = alice_s, public",
    )
    return postgres_url


def pg_table(url: str, table: str) -> tuple[str, int, list[str]]:
    (kind,) = pg_rows(url, f"SELECT relkind::text FROM pg_class WHERE oid = 'alice_s.{table}'::regclass")[0]
    (n,) = pg_rows(url, f"SELECT count(*) FROM alice_s.{table}")[0]
    columns = [
        r[0]
        for r in pg_rows(
            url,
            "SELECT attname FROM pg_attribute WHERE attrelid = "
            f"'alice_s.{table}'::regclass AND attnum > 0 ORDER BY attnum",
        )
    ]
    return kind, n, columns


def test_postgres_a_source_named_with_its_schema_is_never_replaced(shared: str) -> None:
    refused(["--db", shared, "-t", "alice_s.victim", "-o", "victim"], "alice_s.victim")
    assert pg_table(shared, "victim") == ("r", 60, COLUMNS)
    res = run_cli(["anonymize", "--db", shared, "-t", "alice_s.victim", "-o", "rel", "-k", "3", *ROLES])
    assert res.exit_code == 0, res.stderr
    assert pg_table(shared, "rel")[:2] == ("v", 60)


def test_postgres_a_view_input_never_lets_replace_drop_the_table_it_reads(shared: str) -> None:
    sql(shared, "CREATE SCHEMA other", "CREATE VIEW other.v AS SELECT * FROM alice_s.victim")
    line = refused(["--db", shared, "-t", "other.v", "-o", "victim"], "alice_s.victim")
    assert "reads" in line
    assert pg_table(shared, "victim") == ("r", 60, COLUMNS)


@pytest.fixture
def functions(shared: str, postgres_cluster: pg_cluster.Cluster) -> str:
    """``shared`` with the functions of install-sql (PL/Python as test_plpython requires it)."""
    reason = pg_cluster.plpython(postgres_cluster)
    if reason is not None:
        pytest.fail(f"no PL/Python for the server: {reason}")
    path = pg_cluster.python_path(postgres_cluster, install_sql.default_path())
    install_sql.install(shared, python_path=path)
    return shared


def test_sql_function_never_replaces_a_source_named_with_its_schema(functions: str) -> None:
    shared = functions
    state, message = failure(
        shared,
        "SELECT sbc.anonymize(source => 'alice_s.victim', k => 3, output => 'victim', "
        "qi => ARRAY['age', 'zip'], sensitive => ARRAY['dis'], drop_columns => ARRAY['id'], "
        "keep => ARRAY['sex', 'born', 'seen', 'pay'], replace => true)",
    )
    assert "would replace 'alice_s.victim', the input" in message, (state, message)
    assert pg_table(shared, "victim") == ("r", 60, COLUMNS)
