"""Plain helpers shared by the test modules (conftest.py exposes them as fixtures too).

They are functions, not fixtures, so hypothesis tests can call them inside ``@given``.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import importlib.util
import json
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import duckdb
import pandas as pd
import pyarrow as pa
import pytest
import sqlglot
from sqlglot import exp

ROOT = Path(__file__).resolve().parents[1]
EPOCH = dt.date(1970, 1, 1)


def ctrl_c_after(seconds: float) -> threading.Timer:
    """A timer (not started) that sends SIGINT to this process's main thread after
    ``seconds``, as Ctrl-C in a terminal reaches it. ``os.kill(os.getpid(), ...)`` from the
    timer's thread lets the kernel hand the signal to any thread, the timer's own among them:
    Python then raises KeyboardInterrupt only once the main thread runs Python again, and a
    main thread blocked in a long native call (a DuckDB query, a Spark call's socket read)
    finished it first (seen under load, where the main thread was not on a CPU)."""
    main = threading.main_thread().ident
    assert main is not None
    return threading.Timer(seconds, signal.pthread_kill, (main, signal.SIGINT))


def q(name: str) -> str:
    """A quoted SQL identifier, for the tests' own SQL (the product quotes through sqlglot)."""
    return '"' + name.replace('"', '""') + '"'


def make_table(
    con: duckdb.DuckDBPyConnection, name: str, df: pd.DataFrame, types: Mapping[str, str] | None = None
) -> None:
    """CREATE TABLE name from a DataFrame, each column CAST to its SQL type (None -> NULL)."""
    types = dict(types or {})
    view = "sbc_test_frame"
    con.register(view, df)
    try:
        cols = ", ".join(f"CAST({q(c)} AS {types[c]}) AS {q(c)}" if c in types else q(c) for c in df.columns)
        con.execute(f"CREATE TABLE {q(name)} AS SELECT {cols} FROM {view}")
    finally:
        con.unregister(view)


def rows(
    con: duckdb.DuckDBPyConnection,
    sql: str,
    params: Sequence[Any] | None = None,
) -> list[dict[str, Any]]:
    """A query's rows as dicts of Python values (lists stay lists, dates stay dates)."""
    cur = con.execute(sql, params) if params is not None else con.execute(sql)
    names = [d[0] for d in cur.description]
    return [dict(zip(names, r, strict=True)) for r in cur.fetchall()]


def comment(con: duckdb.DuckDBPyConnection, name: str) -> str | None:
    """The comment on a table or view (where a release keeps its provenance)."""
    found = rows(
        con,
        "SELECT comment FROM duckdb_tables() WHERE table_name = ? UNION ALL "
        "SELECT comment FROM duckdb_views() WHERE view_name = ?",
        [name, name],
    )
    return found[0]["comment"] if found else None


def frame(con: duckdb.DuckDBPyConnection | str, sql: str) -> pd.DataFrame:
    """A query's result as an object-typed DataFrame of Python values (``con`` a DuckDB
    connection, or the URL of a PostgreSQL database)."""
    if isinstance(con, str):
        import adbc_driver_postgresql.dbapi as adbc

        with adbc.connect(con, autocommit=True) as pg, pg.cursor() as pg_cur:
            pg_cur.execute(sql)
            names = [d[0] for d in pg_cur.description]
            return pd.DataFrame([tuple(r) for r in pg_cur.fetchall()], columns=names, dtype=object)
    cur = con.execute(sql)
    names = [d[0] for d in cur.description]
    return pd.DataFrame(cur.fetchall(), columns=names, dtype=object)


def snapshot(con: duckdb.DuckDBPyConnection, table: str) -> tuple[list, list]:
    """Schema (names, types, comments) and every row of a table, in a stable order."""
    schema = con.execute(
        "SELECT column_name, data_type, comment FROM duckdb_columns() "
        "WHERE table_name = ? ORDER BY column_index",
        [table],
    ).fetchall()
    data = con.execute(f"SELECT * FROM {q(table)} ORDER BY ALL").fetchall()
    return schema, data


def catalog(con: duckdb.DuckDBPyConnection) -> list[tuple[str, str]]:
    """Every user table and view of the connection (temporary ones included)."""
    tables = con.execute(
        "SELECT 'table', table_name FROM duckdb_tables() WHERE NOT internal ORDER BY 2"
    ).fetchall()
    views = con.execute(
        "SELECT 'view', view_name FROM duckdb_views() WHERE NOT internal ORDER BY 2"
    ).fetchall()
    return sorted(tables + views)


def file_catalog(path: Path) -> list[tuple[str, str]]:
    with duckdb.connect(str(path)) as con:
        return catalog(con)


def days(value: dt.date) -> int:
    return (value - EPOCH).days


def as_number(value: Any) -> float:
    """Dates as days and timestamps as microseconds since 1970, like the product's SQL."""
    if isinstance(value, dt.datetime):
        return (value - dt.datetime(1970, 1, 1)) / dt.timedelta(microseconds=1)
    if isinstance(value, dt.date):
        return float(days(value))
    return float(value)


@dataclass
class CliResult:
    exit_code: int
    stdout: str
    stderr: str


def adult_file(folder: Path, columns: Sequence[str] | None = None) -> Path:
    """A DuckDB file in ``folder`` holding Adult's 30,162 clean rows as 'adult' (its
    ``columns``, default every one)."""
    datasets = load_example("benchmarks/datasets.py")
    path = folder / "adult.duckdb"
    with duckdb.connect(str(path)) as con:
        assert datasets.load_adult(con, "adult", columns=None if columns is None else list(columns)) == 30162
    return path


def assert_one_error(res: CliResult, message: str) -> None:
    """The command failed with exactly one ``Error:`` line, and it says ``message``."""
    assert res.exit_code != 0
    errors = [line for line in res.stderr.splitlines() if line.startswith("Error:")]
    assert len(errors) == 1 and message in errors[0], res.stderr


def run_cli(args: Sequence[str]) -> CliResult:
    """The typer app in-process, stdout and stderr kept apart."""
    from typer.testing import CliRunner

    from sbc_sql.cli import app

    res = CliRunner().invoke(app, [str(a) for a in args])
    if res.exception is not None and not isinstance(res.exception, SystemExit):
        raise res.exception
    return CliResult(res.exit_code, res.stdout, res.stderr)


def run_module(
    args: Sequence[str],
    cwd: Path | None = None,
    timeout: float = 120,
) -> subprocess.CompletedProcess[str]:
    """``python -m sbc_sql ARGS`` in a fresh interpreter (a true end-to-end run)."""
    return subprocess.run(
        [sys.executable, "-m", "sbc_sql", *map(str, args)],
        cwd=cwd,
        env=checkout_env(),
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def checkout_env() -> dict[str, str]:
    """The environment with this checkout first on PYTHONPATH, for fresh interpreters."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH")) if p)
    return env


def load_example(relative: str):
    """Import a script from examples/ (not a package) by path."""
    path = ROOT / relative
    name = f"sbc_test_script_{path.stem}"
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def banded_patients(n: int = 24) -> pd.DataFrame:
    """Two clear age bands with their own diagnoses, so classes never overlap in age."""
    return pd.DataFrame(
        {
            "pid": [f"p{i:03d}" for i in range(n)],
            "age": [(20 if i < n // 2 else 70) + i // 2 for i in range(n)],
            "zip": [f"9{i % 4}" for i in range(n)],
            "dis": [
                ("flu" if i % 2 else "cold") if i < n // 2 else ("gout" if i % 2 else "ache")
                for i in range(n)
            ],
        },
        dtype=object,
    )


BANDED_TYPES = {"pid": "VARCHAR", "age": "INTEGER", "zip": "VARCHAR", "dis": "VARCHAR"}


def to_postgres(con: duckdb.DuckDBPyConnection, table: str, url: str, name: str | None = None) -> None:
    """Copy a DuckDB table into the PostgreSQL database ``url`` (as ``name``), with its column
    comments (the roles); row order is kept, so both engines see the rows in the same order."""
    import adbc_driver_postgresql.dbapi as adbc
    import pyarrow as pa

    data = con.sql(f"SELECT * FROM {q(table)}").to_arrow_table()
    plain = [c.cast(c.type.value_type) if pa.types.is_dictionary(c.type) else c for c in data.columns]
    data = pa.table(plain, names=data.column_names)
    comments = con.execute(
        "SELECT column_name, comment FROM duckdb_columns() WHERE table_name = ? AND comment IS NOT NULL",
        [table],
    ).fetchall()
    target = name or table
    with adbc.connect(url, autocommit=True) as pg, pg.cursor() as cur:
        cur.adbc_ingest(target, data, mode="create")
        for column, text in comments:
            escaped = text.replace("'", "''")
            cur.execute(f"COMMENT ON COLUMN {q(target)}.{q(column)} IS '{escaped}'")


def pg_rows(url: str, sql: str) -> list[tuple[Any, ...]]:
    """Every row of a query on the PostgreSQL database ``url``."""
    import adbc_driver_postgresql.dbapi as adbc

    with adbc.connect(url, autocommit=True) as pg, pg.cursor() as cur:
        cur.execute(sql)
        return [tuple(r) for r in cur.fetchall()]


def assert_same_measures(got, want) -> None:
    """Counts equal; NCP figures equal but for the order a sum's terms were added in."""
    assert (got.n_rows, got.released, got.suppressed, got.classes, got.smallest, got.largest) == (
        want.n_rows,
        want.released,
        want.suppressed,
        want.classes,
        want.smallest,
        want.largest,
    )
    assert got.ncp == pytest.approx(want.ncp, rel=1e-12, abs=1e-12)
    assert got.total_ncp == pytest.approx(want.total_ncp, rel=1e-12, abs=1e-12)
    assert got.mean == pytest.approx(want.mean, rel=1e-12)


@dataclass(frozen=True)
class EngineUnderTest:
    """The ``engine`` fixture's value: the engine's name, ``fresh()``, an empty database of
    the engine (a DuckDB connection, a PostgreSQL URL, the SparkSession), ``copy``, which
    copies a table of a DuckDB connection (its types, the comments on its columns and its
    order of rows) into such a database, and ``explain``, the operators of a query's plan
    as the open sbc-sql engine plans it (see :meth:`operators`). Tables are built in DuckDB,
    from a DataFrame or by the tests' own SQL, and copied; what anonymize, verify and
    measure take is the database."""

    name: str
    fresh: Callable[[], Any]
    copy: Callable[[Any, duckdb.DuckDBPyConnection, str], None]
    explain: Callable[[Any, exp.Expression], list[str]]

    def __call__(self, case: Any) -> Any:
        """A fresh database holding the generated table 't' of ``case``."""
        return self.frame(case.df, case.types)

    def frame(self, df: pd.DataFrame, types: Mapping[str, str] | None = None, name: str = "t") -> Any:
        """A fresh database holding ``df`` as the table ``name``."""
        database = self.fresh()
        self.table(database, name, df, types)
        return database

    def table(
        self, database: Any, name: str, df: pd.DataFrame, types: Mapping[str, str] | None = None
    ) -> None:
        """``df`` as one more table ``name`` of ``database``, each column cast to its SQL type
        as DuckDB names it."""
        with self.building(database) as con:
            make_table(con, name, df, types)

    def built(self, *statements: str, database: Any = None) -> Any:
        """A fresh database (or ``database``) holding the tables DuckDB's ``statements``
        make (CREATE TABLE, INSERT, COMMENT ON COLUMN)."""
        database = self.fresh() if database is None else database
        with self.building(database) as con:
            for statement in statements:
                con.execute(statement)
        return database

    @contextlib.contextmanager
    def building(self, database: Any) -> Iterator[duckdb.DuckDBPyConnection]:
        """A DuckDB connection to make tables in; the tables it holds on the way out are
        copied into ``database`` (DuckDB's own: the tables are made in it)."""
        if isinstance(database, duckdb.DuckDBPyConnection):
            yield database
            return
        with duckdb.connect() as con:
            yield con
            for (name,) in con.execute(
                "SELECT table_name FROM duckdb_tables() WHERE NOT internal ORDER BY table_name"
            ).fetchall():
                self.copy(database, con, name)

    def catalog(self, database: Any) -> list[tuple[str, str]]:
        """Every table and view of the database's working schema, as ('table' or 'view',
        name), sorted (DuckDB's temporary ones included)."""
        if isinstance(database, duckdb.DuckDBPyConnection):
            return catalog(database)
        if isinstance(database, str):
            listed = pg_rows(
                database,
                "SELECT CASE relkind WHEN 'v' THEN 'view' ELSE 'table' END, relname FROM pg_class "
                "WHERE relnamespace = 'public'::regnamespace AND relkind IN ('r', 'v')",
            )
            return sorted((kind, name) for kind, name in listed)
        return sorted(("table", t.name) for t in database.catalog.listTables())

    def sql(self, database: Any, sql: str) -> list[tuple[Any, ...]]:
        """A statement of the tests' own SQL (DuckDB's) run on ``database`` as the engine's
        SQL, through sqlglot: its rows (none for a statement that returns none)."""
        with connected(database) as engine:
            return engine.fetch_all(sqlglot.parse_one(sql, read="duckdb"))

    def one(self, database: Any, sql: str) -> tuple[Any, ...]:
        """The one row of a query of the tests' own SQL (see :meth:`sql`)."""
        (row,) = self.sql(database, sql)
        return row

    def column_names(self, database: Any, table: str) -> list[str]:
        """A table's or view's column names, in order."""
        with connected(database) as engine:
            return [c.name for c in engine.describe(table).columns]

    def operators(self, database: Any, query: exp.Expression) -> list[str]:
        """The operators of the plan the engine makes for ``query`` (a tree), each a
        'grouping' (an aggregation, however the engine splits it into steps), a 'join', or
        the engine's own name for it. ``database`` is best the open sbc-sql engine that
        uploaded what the query reads (a PostgreSQL upload lives in its session only)."""
        with connected(database) as engine:
            return self.explain(engine, query)

    def rewrite(self, database: Any, table: str, change: Callable[[pd.DataFrame], pd.DataFrame]) -> None:
        """Replace every row of ``table`` by ``change`` of them (a DataFrame in the table's
        order of rows and columns): how a test deletes, duplicates or alters single rows
        without a row id of the engine's own. The table stays the same object, so views over
        it keep working."""
        with connected(database) as engine:
            rows = engine.fetch_arrow(sqlglot.parse_one(f"SELECT * FROM {q(table)}", read="duckdb"))
            changed = pa.Table.from_pandas(change(rows.to_pandas()), schema=rows.schema, preserve_index=False)
            with engine.transaction(), engine.upload("sbc_test_rows", changed):
                engine.execute(sqlglot.parse_one(f"DELETE FROM {q(table)}", read="duckdb"))
                engine.execute(
                    sqlglot.parse_one(f"INSERT INTO {q(table)} SELECT * FROM sbc_test_rows", read="duckdb")
                )


#: the share of a property test's examples an engine runs: a server's or Spark's database
#: costs far more to fill than DuckDB's in memory, for the same SQL tried
EXAMPLE_SHARE = {"duckdb": 1.0, "postgres": 0.25, "spark": 0.1}


def examples(engine: EngineUnderTest, duckdb_examples: int) -> int:
    """How many hypothesis examples a property test runs on ``engine``, of the number it
    runs on DuckDB (at least three)."""
    return max(3, round(duckdb_examples * EXAMPLE_SHARE[engine.name]))


@contextlib.contextmanager
def connected(database: Any) -> Iterator[Any]:
    """The sbc-sql engine of a test's database, closed on the way out (a DuckDB connection or
    a SparkSession passed in stays open; an engine passed in is yielded as it is, and left
    open: what it made for the test, such as Spark's source views, stays)."""
    from sbc_sql import engines

    engine = engines.connect(database)
    try:
        yield engine
    finally:
        if engine is not database:
            engine.close()


def duckdb_engine() -> EngineUnderTest:
    def copy(con: duckdb.DuckDBPyConnection, source: duckdb.DuckDBPyConnection, name: str) -> None:
        raise AssertionError("DuckDB's tables are made in the database itself")

    def explain(engine: Any, query: exp.Expression) -> list[str]:
        # the physical plan, as JSON: a tree of {"name", "children"}
        ((_, text),) = engine.fetch_all("EXPLAIN (FORMAT JSON) " + engine.sql(query))
        names: list[str] = []
        todo = json.loads(text)
        while todo:
            node = todo.pop()
            name = node["name"]
            names.append("grouping" if "GROUP_BY" in name else "join" if "JOIN" in name else name)
            todo.extend(node.get("children", []))
        return names

    return EngineUnderTest("duckdb", duckdb.connect, copy, explain)


def postgres_engine(url: str) -> EngineUnderTest:
    """Tables copied into the database ``url`` with their order of rows and their comments;
    a fresh database is its empty public schema."""

    def fresh() -> str:
        reset_postgres(url)
        return url

    def copy(database: str, source: duckdb.DuckDBPyConnection, name: str) -> None:
        to_postgres(source, name, database)

    def explain(engine: Any, query: exp.Expression) -> list[str]:
        # the plan, as JSON: a tree of {"Node Type", "Plans"}; read on the engine's own
        # connection (which holds its uploads), without the COPY the driver reads rows by,
        # which takes no EXPLAIN
        with contextlib.closing(engine.connection.cursor()) as cur:
            cur.adbc_statement.set_options(**{"adbc.postgresql.use_copy": "false"})
            cur.execute("EXPLAIN (FORMAT JSON) " + engine.runnable(query))
            ((text,),) = cur.fetchall()
        names: list[str] = []
        todo = [plan["Plan"] for plan in (json.loads(text) if isinstance(text, str) else text)]
        while todo:
            node = todo.pop()
            kind = node["Node Type"]
            joins = ("Hash Join", "Merge Join", "Nested Loop")
            names.append("grouping" if kind in ("Aggregate", "Group") else "join" if kind in joins else kind)
            todo.extend(node.get("Plans", []))
        return names

    return EngineUnderTest("postgres", fresh, copy, explain)


def spark_engine(session: Any, folder: Path) -> EngineUnderTest:
    """Tables as Parquet files DuckDB wrote (its types kept), read by the session as
    temporary views (which keep no comments); a fresh database is the session without the
    temporary views of the tables before."""

    def fresh() -> Any:
        for table in session.catalog.listTables():
            if table.isTemporary:
                session.catalog.dropTempView(table.name)
            else:
                session.sql(f"DROP TABLE IF EXISTS `{table.name}`")
        return session

    def copy(database: Any, source: duckdb.DuckDBPyConnection, name: str) -> None:
        path = folder / f"table_{len(list(folder.glob('*.parquet')))}.parquet"
        # Spark reads no nanosecond timestamps: microseconds, as Spark keeps them
        columns = ", ".join(
            f"CAST({q(column)} AS TIMESTAMP) AS {q(column)}" if kind == "TIMESTAMP_NS" else q(column)
            for column, kind in source.execute(
                "SELECT column_name, data_type FROM duckdb_columns() WHERE table_name = ? "
                "ORDER BY column_index",
                [name],
            ).fetchall()
        )
        source.execute(f"COPY (SELECT {columns} FROM {q(name)}) TO '{path}' (FORMAT parquet)")
        database.read.parquet(str(path)).createOrReplaceTempView(name)

    def explain(engine: Any, query: exp.Expression) -> list[str]:
        # the optimized logical plan: the physical one splits each aggregation into a partial
        # and a final step, with an exchange between them
        names: list[str] = []
        todo = [session.sql(engine.sql(query))._jdf.queryExecution().optimizedPlan()]
        while todo:
            node = todo.pop()
            name = node.nodeName()
            names.append({"Aggregate": "grouping", "Join": "join"}.get(name, name))
            children = node.children()
            todo.extend(children.apply(i) for i in range(children.length()))
        return names

    return EngineUnderTest("spark", fresh, copy, explain)


def reset_postgres(url: str) -> None:
    """An empty public schema: each generated table starts from nothing."""
    import adbc_driver_postgresql.dbapi as adbc

    with adbc.connect(url, autocommit=True) as con, con.cursor() as cur:
        cur.execute("DROP SCHEMA public CASCADE")
        cur.execute("CREATE SCHEMA public")
