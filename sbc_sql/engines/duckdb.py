"""DuckDB, the embedded default engine: the only module that touches raw DuckDB result
objects (an unfinished result holds its connection)."""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa
from sqlglot import exp

from ..errors import InputError
from ..sql.dialects import SbcDuckDB
from ..sql.templates import ident
from .base import Capabilities, ColumnInfo, Engine, Params, TableInfo

FILE_SUFFIXES = (".csv", ".tsv", ".csv.gz", ".tsv.gz", ".parquet", ".pq")
#: the temporary table a file or view is read into for the run
SOURCE_ALIAS = "sbc_source_file"

_KINDS = (
    "SELECT table_name, 'TABLE' FROM duckdb_tables() WHERE list_contains($names, table_name) "
    "AND schema_name = 'main' AND database_name = current_database() UNION ALL "
    "SELECT view_name, 'VIEW' FROM duckdb_views() WHERE NOT internal AND "
    "list_contains($names, view_name) AND schema_name = 'main' AND "
    "database_name = current_database()"
)
_COMMENT = (
    "SELECT comment FROM duckdb_tables() WHERE table_name = $name AND schema_name = 'main' "
    "AND database_name = current_database() UNION ALL SELECT comment FROM duckdb_views() "
    "WHERE NOT internal AND view_name = $name AND schema_name = 'main' AND "
    "database_name = current_database()"
)
_COLUMNS = (
    "SELECT column_name, data_type, comment FROM duckdb_columns() WHERE table_name = $name "
    "AND schema_name = 'main' AND database_name = COALESCE($database, current_database()) "
    "ORDER BY column_index"
)


_INTEGER = {
    "TINYINT",
    "SMALLINT",
    "INTEGER",
    "BIGINT",
    "HUGEINT",
    "UTINYINT",
    "USMALLINT",
    "UINTEGER",
    "UBIGINT",
    "UHUGEINT",
    "INT",
    "INT4",
    "INT8",
    "INT2",
    "INT1",
}
_FLOAT = {"FLOAT", "DOUBLE", "REAL", "FLOAT4", "FLOAT8"}
_UNSUPPORTED = {"BLOB", "BIT", "INTERVAL", "BYTEA", "VARBINARY", "VARINT", "BIGNUM", "NULL"}


def type_kind(sql_type: str) -> tuple[str | None, str | None]:
    """(kind, temporal) of a DuckDB column type: numbers, dates and timestamps are numeric,
    other scalars categorical; kind None for nested, binary and interval types."""
    t = sql_type.upper().strip()
    base = re.split(r"[(\s]", t, maxsplit=1)[0]
    if t.endswith("]") or base in ("STRUCT", "MAP", "UNION", "LIST") or base in _UNSUPPORTED:
        return None, None
    if base == "DATE":
        return "numeric", "date"
    if base.startswith("TIMESTAMP") or base == "DATETIME":
        return "numeric", "timestamp"
    if base in _INTEGER or base in _FLOAT or base in ("DECIMAL", "NUMERIC"):
        return "numeric", None
    return "categorical", None


def looks_like_file(table: str) -> bool:
    return table.lower().endswith(FILE_SUFFIXES)


class DuckDBEngine(Engine):
    """A DuckDB connection: a database file, in memory, or one the caller opened."""

    name = "duckdb"
    dialect = SbcDuckDB
    capabilities = Capabilities(transactional_ddl=True, arrays=True, memory_limit=True)

    def __init__(self, connection: duckdb.DuckDBPyConnection) -> None:
        super().__init__()
        self.connection = connection

    @classmethod
    def connect(
        cls, db: str | Path | duckdb.DuckDBPyConnection | None, *, must_exist: bool = True
    ) -> DuckDBEngine:
        """An engine over the database file (or the connection given; None: in memory)."""
        if isinstance(db, duckdb.DuckDBPyConnection):
            return cls(db)
        if db is None or str(db) == ":memory:":
            return cls(_quiet(duckdb.connect()))
        path = Path(db)
        if must_exist and not path.exists():
            raise InputError(
                f"database file '{path}' does not exist; pass an existing DuckDB file "
                "with --db (examples/make_clinic_db.py makes one)"
            )
        try:
            return cls(_quiet(duckdb.connect(str(path))))
        except duckdb.Error as err:
            first = str(err).splitlines()[0]
            raise InputError(
                f"cannot open '{path}' as a DuckDB database ({first}); pass a DuckDB database file with --db"
            ) from None

    # ---- running ----

    def _fetch(self, sql: str, params: Params) -> list[tuple[Any, ...]]:
        return self.connection.execute(sql, dict(params) if params else None).fetchall()

    def _arrow(self, sql: str) -> pa.Table:
        return self.connection.sql(sql).to_arrow_table()

    def _stream(self, sql: str, batch_rows: int) -> Iterator[pa.RecordBatch]:
        reader = self.connection.sql(sql).to_arrow_reader(batch_rows)
        try:
            yield from reader
        finally:
            reader.close()

    # ---- catalog (not part of a run's log) ----

    def object_kinds(self, names: Sequence[str]) -> dict[str, str]:
        rows = self._fetch(_KINDS, {"names": list(names)})
        return dict(rows)

    def comment(self, name: str) -> str | None:
        rows = self._fetch(_COMMENT, {"name": name})
        return rows[0][0] if rows else None

    def describe(self, name: str, *, temporary: bool = False) -> TableInfo:
        rows = self._fetch(_COLUMNS, {"name": name, "database": "temp" if temporary else None})
        return TableInfo(name, tuple(ColumnInfo(r[0], r[1], r[2], *type_kind(r[1])) for r in rows))

    def database_files(self) -> list[Path]:
        rows = self._fetch("SELECT path FROM duckdb_databases() WHERE path IS NOT NULL", None)
        files = [Path(r[0]) for r in rows]
        return files + [f.with_name(f.name + ".wal") for f in files]

    def open_source(self, table: str) -> TableInfo:
        if looks_like_file(table):
            path = Path(table)
            if not path.exists():
                raise InputError(
                    f"input file '{table}' does not exist; pass an existing CSV or "
                    "Parquet file, or a table name, with --table"
                )
            reader = "read_parquet" if table.lower().endswith((".parquet", ".pq")) else "read_csv"
            self._fetch(
                f'CREATE OR REPLACE TEMP TABLE "{SOURCE_ALIAS}" AS SELECT * FROM {reader}($path)',
                {"path": str(path)},
            )
            info = self.describe(SOURCE_ALIAS, temporary=True)
            return TableInfo(info.name, info.columns, from_file=str(path))
        kinds = self.object_kinds([table])
        if kinds.get(table) == "TABLE":
            return self.describe(table)
        if kinds.get(table) == "VIEW":
            # a view has no row positions: read it once into a temporary table
            view = self.sql(exp.Table(this=ident(table)))
            self._fetch(f'CREATE OR REPLACE TEMP TABLE "{SOURCE_ALIAS}" AS SELECT * FROM {view}', None)
            info = self.describe(SOURCE_ALIAS, temporary=True)
            return TableInfo(info.name, info.columns, from_file=table)
        raise InputError(
            f"table '{table}' does not exist in the database; pass an existing table or view with --table"
        )

    # ---- rows, labels, transactions ----

    def row_id(self, table_alias: str) -> exp.Expression:
        # DuckDB's row position: stable while the table is not modified, which a run never does
        return exp.column("rowid", table=table_alias)

    @contextlib.contextmanager
    def upload(self, name: str, table: pa.Table) -> Iterator[None]:
        self.connection.register(name, table)
        try:
            yield
        finally:
            self.connection.unregister(name)

    def export_sql(self, table: str, path: str, final_name: str) -> exp.Expression:
        fmt = "PARQUET" if final_name.lower().endswith((".parquet", ".pq")) else "CSV"
        # in class order; within a class the row table's order (by released values)
        rows = exp.select(exp.Star()).from_(exp.Table(this=ident(table))).order_by(ident("eq_class"))
        return exp.Copy(
            this=exp.Subquery(this=rows),
            kind=False,
            files=[exp.Literal.string(path)],
            params=[exp.CopyParameter(this=exp.var("FORMAT"), expression=exp.var(fmt))],
        )

    def begin(self) -> None:
        self._fetch("BEGIN TRANSACTION", None)

    def commit(self) -> None:
        self._fetch("COMMIT", None)

    def rollback(self) -> None:
        self._fetch("ROLLBACK", None)

    def limit_memory(self, size: str) -> None:
        self._fetch(f"SET memory_limit = {self.sql(exp.Literal.string(size.strip()))}", None)


def _quiet(con: duckdb.DuckDBPyConnection) -> duckdb.DuckDBPyConnection:
    """Our own progress bar speaks for the run; DuckDB's would interleave with it."""
    con.execute("SET enable_progress_bar = false").fetchall()
    return con
