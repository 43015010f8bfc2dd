"""Connections, catalog look-ups and result streaming: the only module that touches raw
DuckDB result objects (an unfinished result holds its connection)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa
from sqlglot import exp

from .errors import InputError
from .sql.templates import DIALECT

FILE_SUFFIXES = (".csv", ".tsv", ".csv.gz", ".tsv.gz", ".parquet", ".pq")
SOURCE_ALIAS = "sbc_source_file"

Connection = duckdb.DuckDBPyConnection


@dataclass(frozen=True)
class ColumnInfo:
    name: str
    type: str
    comment: str | None


@dataclass(frozen=True)
class TableInfo:
    name: str
    columns: tuple[ColumnInfo, ...]
    # a CSV/Parquet file read into a temporary table for this connection
    from_file: str | None = None


def connect(db: str | Path | Connection | None, *, must_exist: bool = True) -> Connection:
    """A connection to the database file (or the one given; None: in memory)."""
    if isinstance(db, duckdb.DuckDBPyConnection):
        return db
    if db is None or str(db) == ":memory:":
        return _quiet(duckdb.connect())
    path = Path(db)
    if must_exist and not path.exists():
        raise InputError(
            f"database file '{path}' does not exist; pass an existing DuckDB file "
            "with --db (examples/make_clinic_db.py makes one)"
        )
    try:
        return _quiet(duckdb.connect(str(path)))
    except duckdb.Error as err:
        first = str(err).splitlines()[0]
        raise InputError(
            f"cannot open '{path}' as a DuckDB database ({first}); pass a DuckDB database file with --db"
        ) from None


def _quiet(con: Connection) -> Connection:
    """Our own progress bar speaks for the run; DuckDB's would interleave with it."""
    con.execute("SET enable_progress_bar = false").fetchall()
    return con


def to_sql(tree: exp.Expression | str) -> str:
    return tree if isinstance(tree, str) else tree.sql(dialect=DIALECT)


def execute(con: Connection, tree: exp.Expression | str, params: Mapping[str, Any] | None = None) -> None:
    con.execute(to_sql(tree), dict(params) if params else None).fetchall()


def fetch_one(
    con: Connection, tree: exp.Expression | str, params: Mapping[str, Any] | None = None
) -> tuple[Any, ...]:
    rows = con.execute(to_sql(tree), dict(params) if params else None).fetchall()
    if len(rows) != 1:
        raise RuntimeError(f"expected one row, got {len(rows)}")
    return rows[0]


def fetch_all(
    con: Connection, tree: exp.Expression | str, params: Mapping[str, Any] | None = None
) -> list[tuple[Any, ...]]:
    return con.execute(to_sql(tree), dict(params) if params else None).fetchall()


def fetch_arrow(con: Connection, tree: exp.Expression | str) -> pa.Table:
    return con.sql(to_sql(tree)).to_arrow_table()


def stream(
    con: Connection, tree: exp.Expression | str, batch_size: int = 1 << 17
) -> Iterator[pa.RecordBatch]:
    """Arrow record batches of a query; the result is drained or closed before returning."""
    reader = con.sql(to_sql(tree)).to_arrow_reader(batch_size)
    try:
        yield from reader
    finally:
        reader.close()


def looks_like_file(table: str) -> bool:
    return table.lower().endswith(FILE_SUFFIXES)


def table_exists(con: Connection, name: str) -> bool:
    """A table or view of that name exists in the main schema."""
    return base_table_exists(con, name) or view_exists(con, name)


def object_kinds(con: Connection, names: Sequence[str]) -> dict[str, str]:
    """Which of these names are taken in the main schema, and by what: 'TABLE' or 'VIEW'
    (one catalog query for all of them)."""
    rows = fetch_all(
        con,
        "SELECT table_name, 'TABLE' FROM duckdb_tables() WHERE "
        "list_contains($names, table_name) AND schema_name = 'main' AND "
        "database_name = current_database() UNION ALL "
        "SELECT view_name, 'VIEW' FROM duckdb_views() WHERE NOT internal AND "
        "list_contains($names, view_name) AND schema_name = 'main' AND "
        "database_name = current_database()",
        {"names": list(names)},
    )
    return {name: kind for name, kind in rows}


def view_exists(con: Connection, name: str) -> bool:
    rows = fetch_all(
        con,
        "SELECT 1 FROM duckdb_views() WHERE view_name = $name AND NOT internal "
        "AND schema_name = 'main' AND database_name = current_database()",
        {"name": name},
    )
    return bool(rows)


def base_table_exists(con: Connection, name: str) -> bool:
    rows = fetch_all(
        con,
        "SELECT 1 FROM duckdb_tables() WHERE table_name = $name "
        "AND schema_name = 'main' AND database_name = current_database()",
        {"name": name},
    )
    return bool(rows)


def describe(con: Connection, name: str, *, temporary: bool = False) -> TableInfo:
    """Columns, types and comments of a base table, in column order."""
    database = "temp" if temporary else None
    rows = fetch_all(
        con,
        "SELECT column_name, data_type, comment FROM duckdb_columns() "
        "WHERE table_name = $name AND schema_name = 'main' AND database_name = "
        "COALESCE($database, current_database()) ORDER BY column_index",
        {"name": name, "database": database},
    )
    return TableInfo(name, tuple(ColumnInfo(r[0], r[1], r[2]) for r in rows))


def open_source(con: Connection, table: str) -> TableInfo:
    """The input table; a CSV or Parquet path is read into a temporary table first."""
    if looks_like_file(table):
        path = Path(table)
        if not path.exists():
            raise InputError(
                f"input file '{table}' does not exist; pass an existing CSV or "
                "Parquet file, or a table name, with --table"
            )
        reader = "read_parquet" if table.lower().endswith((".parquet", ".pq")) else "read_csv"
        execute(
            con,
            f'CREATE OR REPLACE TEMP TABLE "{SOURCE_ALIAS}" AS SELECT * FROM {reader}($path)',
            {"path": str(path)},
        )
        info = describe(con, SOURCE_ALIAS, temporary=True)
        return TableInfo(info.name, info.columns, from_file=str(path))
    if base_table_exists(con, table):
        return describe(con, table)
    if view_exists(con, table):
        # a view has no row positions: read it once into a temporary table
        view = exp.Table(this=exp.Identifier(this=table, quoted=True))
        execute(con, f'CREATE OR REPLACE TEMP TABLE "{SOURCE_ALIAS}" AS SELECT * FROM {to_sql(view)}')
        info = describe(con, SOURCE_ALIAS, temporary=True)
        return TableInfo(info.name, info.columns, from_file=table)
    raise InputError(
        f"table '{table}' does not exist in the database; pass an existing table or view with --table"
    )


def limit_memory(con: Connection, size: str) -> None:
    """Cap DuckDB's memory at ``size`` (already validated, e.g. '2GB'); DuckDB spills its
    sorts and joins to disk beyond it."""
    execute(con, f"SET memory_limit = {exp.Literal.string(size.strip()).sql(dialect='duckdb')}")
